#!/usr/bin/env python3
"""PyTorch's best on the GPU for tests/bench/gpu.sh: M copies of the larger CNN of
tests/unit/models.h, each trained with SGD on its own batches of 64 (MNIST-shaped random data
already on the GPU), two ways: a Python loop over the models, and torch.func (functional_call +
grad, vmapped over the stacked parameters of all models). Prints training samples/s per model.
PyTorch's default math (cuDNN convolutions in TF32, matrix products in float32), or with --fp32
float32 everywhere (allow_tf32 off), which is what dtrun computes unless experiment.tf32 is set."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, stack_module_state, vmap


def large_cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))


def timed(step, steps):
    for _ in range(3):  # warm-up: kernels, cuBLAS handles, allocator
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--fp32", action="store_true", help="allow_tf32 off for convolutions and matrix products")
    ap.add_argument("--no-loop", action="store_true", help="time torch.func + vmap only")
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    if a.fp32:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    math = "float32" if a.fp32 else "default math"
    M, B = a.models, a.batch
    x = torch.randn(M, B, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (M, B), device=dev)

    models = [large_cnn().to(dev) for _ in range(M)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]

    def loop_step():
        for i in range(M):
            opts[i].zero_grad(set_to_none=True)
            F.cross_entropy(models[i](x[i]), y[i]).backward()
            opts[i].step()

    if not a.no_loop:
        t = timed(loop_step, a.steps)
        print(f"large CNN, {M} models, PyTorch loop ({math}):     {a.steps * B / t:9.0f} training samples/s per model")

    params, buffers = stack_module_state(models)
    base = large_cnn().to("meta")

    def loss_fn(p, b, xb, yb):
        return F.cross_entropy(functional_call(base, (p, b), (xb,)), yb)

    grads = vmap(grad(loss_fn), in_dims=(0, 0, 0, 0))

    def vmap_step():
        g = grads(params, buffers, x, y)
        with torch.no_grad():
            for k in params:
                params[k].sub_(0.01 * g[k])

    t = timed(vmap_step, a.steps)
    print(f"large CNN, {M} models, torch.func + vmap ({math}): {a.steps * B / t:9.0f} training samples/s per model")


if __name__ == "__main__":
    main()
