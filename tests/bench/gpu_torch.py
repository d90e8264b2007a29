#!/usr/bin/env python3
"""PyTorch's best on the GPU for tests/bench/gpu.sh: M copies of a CNN, each trained with SGD on
its own batches (random data already on the device), two ways: a Python loop over the models,
and torch.func (functional_call + grad, vmapped over the stacked parameters of all models).
Prints training samples/s per model. The models (--model):
- large: the larger CNN of tests/unit/models.h on MNIST-shaped data (1x28x28);
- resnet20: dtrun's zoo ResNet-20 (src/nn/zoo.c: He et al.'s CIFAR ResNet, 3 stages of 3 basic
  blocks, 16/32/64 channels, convolutions without bias, 1x1-projection shortcuts with their norm
  where the shape changes, global average pool, linear 64 -> 10; 272,474 parameters with group
  norm) on CIFAR-shaped data (3x32x32), with --norm group (--groups, dtrun's default 2) or batch
  (batch norm's running statistics do not go under vmap: the loop only).
PyTorch's default math (cuDNN convolutions in TF32, matrix products in float32), or with --fp32
float32 everywhere (allow_tf32 off), which is what dtrun computes unless experiment.tf32 is set.
--device cpu runs the same on the CPU (tiny sizes, to test the script)."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.func import functional_call, grad, stack_module_state, vmap
except ImportError:  # PyTorch before 2.0: functorch and torch.nn.utils.stateless
    from functorch import grad, vmap
    from torch.nn.utils import stateless

    def functional_call(module, tensors, args):
        params, buffers = tensors
        return stateless.functional_call(module, {**params, **buffers}, args)

    def stack_module_state(models):
        stack = lambda named: {k: torch.stack([d[k].detach() for d in named]) for k in named[0]}
        return (stack([dict(m.named_parameters()) for m in models]), stack([dict(m.named_buffers()) for m in models]))


def large_cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))


def norm_layer(norm, groups, c):
    return nn.GroupNorm(groups, c, eps=1e-5) if norm == "group" else nn.BatchNorm2d(c, eps=1e-5, momentum=0.1)


class BasicBlock(nn.Module):
    """dtrun's basic_block: conv1 (3x3, stride), bn1, relu, conv2, bn2, plus the skip (identity,
    or downsample: 1x1 convolution at the stride and a norm of the same kind), then relu."""

    def __init__(self, c_in, c, stride, norm, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(norm, groups, c)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(norm, groups, c)
        self.downsample = None
        if stride != 1 or c_in != c:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c, 1, stride, 0, bias=False), norm_layer(norm, groups, c))

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet20(nn.Module):
    """dtrun's zoo resnet20, with its (torchvision's) module names: conv1, bn1, layer1.0 ...
    layer3.2, fc."""

    def __init__(self, norm="group", groups=2, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = norm_layer(norm, groups, 16)
        c_in = 16
        for stage in range(3):
            c = 16 << stage
            blocks = [BasicBlock(c_in if b == 0 else c, c, 2 if stage > 0 and b == 0 else 1, norm, groups) for b in range(3)]
            setattr(self, f"layer{stage + 1}", nn.Sequential(*blocks))
            c_in = c
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(x.mean(dim=(2, 3)))


def timed(step, steps, dev):
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(3):  # warm-up: kernels, cuBLAS handles, allocator
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=("large", "resnet20"), default="large")
    ap.add_argument("--norm", choices=("group", "batch"), help="resnet20: the norm after every convolution (default group)")
    ap.add_argument("--groups", type=int, help="resnet20 with group norm: channel groups of each norm (default 2, as dtrun)")
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--fp32", action="store_true", help="allow_tf32 off for convolutions and matrix products")
    ap.add_argument("--no-loop", action="store_true", help="time torch.func + vmap only")
    a = ap.parse_args()
    if a.model == "large" and (a.norm is not None or a.groups is not None):
        ap.error("--norm and --groups are for --model resnet20")
    norm = a.norm or "group"
    groups = 2 if a.groups is None else a.groups
    if a.model == "resnet20" and norm == "group" and (groups < 1 or 16 % groups != 0):
        ap.error(f"--groups {groups} must divide 16 (the first stage's channels)")
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        if a.fp32:
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
    math = "float32" if a.fp32 else "default math"
    M, B = a.models, a.batch
    if a.model == "large":
        make, name, shape = large_cnn, "large CNN", (1, 28, 28)
    else:
        make, name, shape = (lambda: ResNet20(norm, groups)), f"resnet20 ({norm} norm)", (3, 32, 32)
    x = torch.randn(M, B, *shape, device=dev)
    y = torch.randint(0, 10, (M, B), device=dev)

    models = [make().to(dev) for _ in range(M)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]

    def loop_step():
        for i in range(M):
            opts[i].zero_grad(set_to_none=True)
            F.cross_entropy(models[i](x[i]), y[i]).backward()
            opts[i].step()

    vmap_ok = not (a.model == "resnet20" and norm == "batch")
    if not a.no_loop or not vmap_ok:
        t = timed(loop_step, a.steps, dev)
        print(f"{name}, {M} models, PyTorch loop ({math}):     {a.steps * B / t:9.0f} training samples/s per model")
    if not vmap_ok:
        print(f"{name}, {M} models, torch.func + vmap: skipped (batch norm's running statistics do not go under vmap)")
        return

    params, buffers = stack_module_state(models)
    base = make().to("meta")

    def loss_fn(p, b, xb, yb):
        return F.cross_entropy(functional_call(base, (p, b), (xb,)), yb)

    grads = vmap(grad(loss_fn), in_dims=(0, 0, 0, 0))

    def vmap_step():
        g = grads(params, buffers, x, y)
        with torch.no_grad():
            for k in params:
                params[k].sub_(0.01 * g[k])

    t = timed(vmap_step, a.steps, dev)
    print(f"{name}, {M} models, torch.func + vmap ({math}): {a.steps * B / t:9.0f} training samples/s per model")


if __name__ == "__main__":
    main()
