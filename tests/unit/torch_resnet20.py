"""PyTorch side of test_torch's ResNet-20 check: an independent torch.nn definition of ResNet-20
for CIFAR (He et al. 2016, 3x3 basic blocks of 16/32/64 channels, projection shortcuts where the
shape changes, torchvision's module names) loads a dtrun model row through dtrun's manifest, takes
one SGD step with momentum and weight decay on one minibatch in train mode, and writes the loss,
the parameters and running statistics after the step (in the row's layout) and the eval-mode
logits after it.

usage: torch_resnet20.py IN OUT NORM   (NORM: batch | group)
"""
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_layers import load_by_manifest, state_row


def norm(c, kind):
    return nn.BatchNorm2d(c) if kind == "batch" else nn.GroupNorm(2, c)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride, kind):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = norm(cout, kind)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = norm(cout, kind)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), norm(cout, kind))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet20(nn.Module):
    def __init__(self, kind, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = norm(16, kind)
        cin = 16
        for stage, cout in enumerate((16, 32, 64)):
            blocks = []
            for b in range(3):
                blocks.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1, kind))
                cin = cout
            setattr(self, "layer%d" % (stage + 1), nn.Sequential(*blocks))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def main():
    src, dst, kind = sys.argv[1:4]
    torch.set_num_threads(1)
    with open(src, "rb") as f:
        n_params, n_buf, batch, man_len = struct.unpack("<4q", f.read(32))
        lr, momentum, wd = struct.unpack("<3d", f.read(24))
        manifest = [l.split("\t") for l in f.read(man_len).decode().splitlines()[1:]]
        row = torch.frombuffer(bytearray(f.read(4 * (n_params + n_buf))), dtype=torch.float32)
        x = torch.frombuffer(bytearray(f.read(4 * batch * 3072)), dtype=torch.float32).reshape(batch, 3, 32, 32)
        y = torch.frombuffer(bytearray(f.read(4 * batch)), dtype=torch.int32).long()
    model = ResNet20(kind)
    load_by_manifest(model, manifest, row)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=wd)
    model.train()
    opt.zero_grad()
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    loss.backward()
    opt.step()
    out = state_row(model, manifest, n_params + n_buf)
    model.eval()
    with torch.no_grad():
        logits = model(x)
    with open(dst, "wb") as f:
        f.write(struct.pack("<d", loss.item()))
        f.write(out.numpy().tobytes())
        f.write(logits.reshape(-1).numpy().tobytes())


if __name__ == "__main__":
    main()
