"""PyTorch side of test_torch's optimizer check: reads a start vector and a sequence of
gradients written by the C test, takes those steps with a torch.optim optimizer (its defaults,
plus the options named), and writes the final vector.

usage: torch_optim.py IN OUT NAME   (NAME: sgd-nesterov | adam | adamw | rmsprop | rmsprop-momentum | adadelta)
IN: int64 n, int64 steps, float32 x[n], float32 g[steps][n]; OUT: float32 x[n]
"""
import struct
import sys

import torch

OPTIMIZERS = {
    "sgd-nesterov": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda p: torch.optim.Adam(p, weight_decay=0.01),
    "adamw": lambda p: torch.optim.AdamW(p),
    "rmsprop": lambda p: torch.optim.RMSprop(p, weight_decay=0.01),
    "rmsprop-momentum": lambda p: torch.optim.RMSprop(p, momentum=0.5),
    "adadelta": lambda p: torch.optim.Adadelta(p, weight_decay=0.01),
}


def main():
    src, dst, name = sys.argv[1:4]
    torch.set_num_threads(1)
    with open(src, "rb") as f:
        n, steps = struct.unpack("<qq", f.read(16))
        x = torch.frombuffer(bytearray(f.read(4 * n)), dtype=torch.float32).clone()
        grads = torch.frombuffer(bytearray(f.read(4 * n * steps)), dtype=torch.float32).reshape(steps, n)
    param = torch.nn.Parameter(x)
    opt = OPTIMIZERS[name]([param])
    for t in range(steps):
        param.grad = grads[t].clone()
        opt.step()
    with open(dst, "wb") as f:
        f.write(param.detach().numpy().astype("<f4").tobytes())


if __name__ == "__main__":
    main()
