"""PyTorch side of test_torch: reads parameters, a batch and labels written by the C test, runs
the same model in PyTorch (float32, one thread), and writes the loss, the flat gradient and the
parameters after one Adam step, in model.parameters() order.

usage: torch_crosscheck.py IN OUT ARCH   (ARCH: seed | large)
"""
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def seed_cnn():
    return nn.Sequential(nn.Conv2d(1, 3, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(432, 64), nn.ReLU(), nn.Linear(64, 10))


def large_cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def main():
    src, dst, arch = sys.argv[1:4]
    torch.set_num_threads(1)
    model = seed_cnn() if arch == "seed" else large_cnn()
    with open(src, "rb") as f:
        n_params, batch, lr = struct.unpack("<qqd", f.read(24))
        flat = torch.frombuffer(bytearray(f.read(4 * n_params)), dtype=torch.float32)
        x = torch.frombuffer(bytearray(f.read(4 * batch * 784)), dtype=torch.float32)
        y = torch.frombuffer(bytearray(f.read(4 * batch)), dtype=torch.int32)
    x = x.reshape(batch, 1, 28, 28)
    y = y.long()
    assert sum(p.numel() for p in model.parameters()) == n_params
    with torch.no_grad():
        offset = 0
        for p in model.parameters():
            p.copy_(flat[offset:offset + p.numel()].reshape(p.shape))
            offset += p.numel()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    opt.zero_grad()
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    loss.backward()
    grad = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    opt.step()
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    with open(dst, "wb") as f:
        f.write(struct.pack("<d", loss.item()))
        f.write(grad.numpy().tobytes())
        f.write(after.numpy().tobytes())


if __name__ == "__main__":
    main()
