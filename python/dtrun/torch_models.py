"""dtrun's named models as PyTorch modules, and a run's saved models loaded into them.

Each definition builds the modules of dtrun's model of that name (src/nn/zoo.c) with the same
module names, so that a saved model's manifest (`<problem>_models.tsv`: name, role, offset and
shape of every tensor, in state_dict order) is the module's state_dict:

    import dtrun.torch_models as tm
    model = tm.from_run("outputs/<run>", "dsgdm", node=0)   # the architecture of its config.yaml
    model.eval()
    logits = model(images)                                   # N x C x H x W, normalised as dtrun does

or, knowing the architecture, `tm.load(tm.resnet20(classes=10), "outputs/<run>", "dsgdm")`.

- seed_cnn: the DiNNO paper's CNN (conv, relu, 2x2 max pool, linear, relu, linear), the model of
  `mnist` and `fashion_mnist` by default; unnamed layers, so nn.Sequential's positions;
- lenet5: the model of `cifar10` and `cifar100` by default (positions as well);
- mlp: flatten, fc1 (linear_width), relu, fc2;
- resnet20: He et al.'s CIFAR ResNet with torchvision's names and 1x1 projection shortcuts;
- vgg11: the CIFAR variant (features.N, classifier).
`norm` is "batch", "group" (with `groups` groups) or "none", as `experiment.model.norm`.

Needs PyTorch (not a dependency of dtrun itself); `from_run` also needs python3-yaml.
"""
import csv
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["seed_cnn", "lenet5", "mlp", "resnet20", "vgg11", "build", "load", "from_run"]


def _norm(kind, channels, groups):
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    if kind == "group":
        return nn.GroupNorm(groups, channels)
    return None


def seed_cnn(num_filters=3, kernel_size=5, linear_width=64, in_shape=(1, 28, 28), classes=10):
    c, h, w = in_shape
    side_h, side_w = (h - kernel_size + 1) // 2, (w - kernel_size + 1) // 2
    return nn.Sequential(nn.Conv2d(c, num_filters, kernel_size), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(num_filters * side_h * side_w, linear_width), nn.ReLU(), nn.Linear(linear_width, classes))


def lenet5(in_shape=(3, 32, 32), classes=10):
    c, h, w = in_shape
    h, w = ((h - 4) // 2 - 4) // 2, ((w - 4) // 2 - 4) // 2
    return nn.Sequential(nn.Conv2d(c, 6, 5), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Linear(16 * h * w, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, classes))


class MLP(nn.Module):
    def __init__(self, inputs, width, classes):
        super().__init__()
        self.fc1 = nn.Linear(inputs, width)
        self.fc2 = nn.Linear(width, classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def mlp(linear_width=64, in_shape=(1, 28, 28), classes=10):
    c, h, w = in_shape
    return MLP(c * h * w, linear_width, classes)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride, norm, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = _norm(norm, cout, groups)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = _norm(norm, cout, groups)
        self.downsample = None
        if stride != 1 or cin != cout:
            proj = [nn.Conv2d(cin, cout, 1, stride=stride, bias=False)]
            if norm != "none":
                proj.append(_norm(norm, cout, groups))
            self.downsample = nn.Sequential(*proj)

    def forward(self, x):
        out = self.conv1(x)
        out = F.relu(out if self.bn1 is None else self.bn1(out))
        out = self.conv2(out)
        out = out if self.bn2 is None else self.bn2(out)
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet20(nn.Module):
    def __init__(self, in_channels, classes, norm, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 16, 3, padding=1, bias=False)
        self.bn1 = _norm(norm, 16, groups)
        cin = 16
        for stage, cout in enumerate((16, 32, 64)):
            blocks = []
            for b in range(3):
                blocks.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1, norm, groups))
                cin = cout
            setattr(self, "layer%d" % (stage + 1), nn.Sequential(*blocks))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x if self.bn1 is None else self.bn1(x))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def resnet20(in_shape=(3, 32, 32), classes=10, norm="batch", groups=2):
    return ResNet20(in_shape[0], classes, norm, groups)


class VGG11(nn.Module):
    def __init__(self, in_shape, classes, norm, groups):
        super().__init__()
        c, h, w = in_shape
        layers = []
        for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
                h, w = h // 2, w // 2
                continue
            layers.append(nn.Conv2d(c, v, 3, padding=1))
            if norm != "none":
                layers.append(_norm(norm, v, groups))
            layers.append(nn.ReLU())
            c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c * h * w, classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def vgg11(in_shape=(3, 32, 32), classes=10, norm="batch", groups=2):
    return VGG11(in_shape, classes, norm, groups)


def build(name, in_shape, classes, norm="batch", groups=2, num_filters=3, kernel_size=5, linear_width=64):
    """The module of `experiment.model.name` (default: the seed CNN on 1-channel images, LeNet-5 on
    colour ones, as dtrun's problems choose) on inputs of in_shape (C, H, W)."""
    if name == "default":
        name = "seed_cnn" if in_shape[0] == 1 else "lenet5"
    if name == "seed_cnn":
        return seed_cnn(num_filters, kernel_size, linear_width, in_shape, classes)
    if name == "lenet5":
        return lenet5(in_shape, classes)
    if name == "mlp":
        return mlp(linear_width, in_shape, classes)
    if name == "resnet20":
        return resnet20(in_shape, classes, norm, groups)
    if name == "vgg11":
        return vgg11(in_shape, classes, norm, groups)
    raise ValueError("no PyTorch definition of dtrun's model %r (layer lists given in a config are not named models)" % name)


def load(model, run, problem, node=0):
    """model with node `node`'s saved parameters and buffers from run/<problem>_models.npy, placed
    by the manifest run/<problem>_models.tsv (batch norm's num_batches_tracked: 0, not saved)."""
    rows = np.load(os.path.join(run, problem + "_models.npy"), mmap_mode="r")
    state = {}
    with open(os.path.join(run, problem + "_models.tsv"), newline="") as f:
        for m in csv.DictReader(f, delimiter="\t"):
            if m["role"] == "count":
                state[m["name"]] = torch.tensor(0)
                continue
            shape = [int(d) for d in m["shape"].split("x")] if m["shape"] else []
            n, at = int(np.prod(shape)), int(m["offset"])
            state[m["name"]] = torch.from_numpy(np.array(rows[node, at:at + n]).reshape(shape))
    model.load_state_dict(state)
    return model


_SHAPES = {"mnist": ((1, 28, 28), 10), "fashion_mnist": ((1, 28, 28), 10), "cifar10": ((3, 32, 32), 10),
           "cifar100": ((3, 32, 32), 100)}


def from_run(run, problem, node=0):
    """The PyTorch module of a run's model (its config.yaml's experiment.model on its dataset), with
    node `node`'s saved weights (experiment.save_models: true) of problem `problem`."""
    import yaml
    with open(os.path.join(run, "config.yaml")) as f:
        exp = yaml.safe_load(f)["experiment"]
    model_cfg = exp.get("model") or {}
    if model_cfg.get("layers"):
        raise ValueError("%s: a model given as a list of layers has no PyTorch definition here; build the same "
                         "nn.Sequential (its manifest names the modules) and use dtrun.torch_models.load" % run)
    dataset = exp.get("dataset", "mnist")
    if dataset not in _SHAPES:
        raise ValueError("%s: dataset %s has no image model" % (run, dataset))
    in_shape, classes = _SHAPES[dataset]
    if dataset == "cifar100" and (exp.get("cifar") or {}).get("label") == "coarse":
        classes = 20
    model = build(model_cfg.get("name", "default"), in_shape, classes, model_cfg.get("norm", "batch"), model_cfg.get("groups", 2),
                  model_cfg.get("num_filters", 3), model_cfg.get("kernel_size", 5), model_cfg.get("linear_width", 64))
    return load(model, run, problem, node)
