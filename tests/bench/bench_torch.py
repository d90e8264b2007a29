"""PyTorch side of the NN benchmark, one thread: the seed CNN and the larger CNN (1x28x28, batch
64, Adam; evaluation in batches of 1000) and ResNet-20 and VGG-11 with batch norm (3x32x32,
batch 32, SGD with momentum 0.9; evaluation in eval mode, batches of 200): training and
evaluation (no_grad) throughput, the evaluation timed first, after three warm-up steps and one
untimed pass, as bench_nn does. Prints one "result:" line per model."""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 3)[0] + "/tests/unit")
from torch_crosscheck import large_cnn, seed_cnn  # noqa: E402
from torch_resnet20 import ResNet20  # noqa: E402


def vgg11():
    """The CIFAR VGG-11 with batch norm, as dtrun's model.name vgg11 builds it."""
    layers, c = [], 3
    for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(c, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU()]
            c = v
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512, 10))


def bench(name, model, seconds, shape=(1, 28, 28), batch=64, eval_batch=1000, sgd=False):
    torch.manual_seed(0)
    x = torch.randn(1000, *shape)
    y = torch.randint(0, 10, (1000,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if sgd else torch.optim.Adam(model.parameters(), lr=1e-3)
    cycle = 1000 // batch

    def step(i):
        off = (i % cycle) * batch
        opt.zero_grad()
        loss = F.nll_loss(F.log_softmax(model(x[off:off + batch]), dim=1), y[off:off + batch])
        loss.backward()
        opt.step()

    for i in range(3):
        step(i)
    # evaluation first, of the model after the three warm-up steps: what it evaluates must not
    # depend on how many training steps the machine fits in the window (batch norm's running
    # statistics), and its first pass (oneDNN's primitives for the new batch size) is not timed
    model.eval()
    with torch.no_grad():
        F.log_softmax(model(x[:eval_batch]), dim=1)
        evals, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for off in range(0, 1000, eval_batch):
                F.log_softmax(model(x[off:off + eval_batch]), dim=1)
            evals += 1
    evaluate = 1000 * evals / (time.perf_counter() - t0)
    model.train()
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step(steps)
        steps += 1
    train = batch * steps / (time.perf_counter() - t0)
    print(f"result: {name} train={train:.0f} eval={evaluate:.0f}", flush=True)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}", flush=True)
    bench("seed_cnn", seed_cnn(), seconds)
    bench("large_cnn", large_cnn(), seconds)
    bench("resnet20", ResNet20("batch"), seconds, (3, 32, 32), 32, 200, True)
    bench("vgg11", vgg11(), seconds, (3, 32, 32), 32, 200, True)


if __name__ == "__main__":
    main()
