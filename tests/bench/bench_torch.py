"""PyTorch side of the NN benchmark: the same two models, batch 64, Adam, one thread; training
and evaluation (no_grad, batches of 1000) throughput. Prints one "result:" line per model."""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 3)[0] + "/tests/unit")
from torch_crosscheck import large_cnn, seed_cnn  # noqa: E402


def bench(name, model, seconds):
    torch.manual_seed(0)
    x = torch.randn(1000, 1, 28, 28)
    y = torch.randint(0, 10, (1000,))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(i):
        off = (i % 15) * 64
        opt.zero_grad()
        loss = F.nll_loss(F.log_softmax(model(x[off:off + 64]), dim=1), y[off:off + 64])
        loss.backward()
        opt.step()

    for i in range(3):
        step(i)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step(steps)
        steps += 1
    train = 64 * steps / (time.perf_counter() - t0)
    evals, t0 = 0, time.perf_counter()
    with torch.no_grad():
        while time.perf_counter() - t0 < seconds:
            F.log_softmax(model(x), dim=1)
            evals += 1
    evaluate = 1000 * evals / (time.perf_counter() - t0)
    print(f"result: {name} train={train:.0f} eval={evaluate:.0f}", flush=True)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}", flush=True)
    bench("seed_cnn", seed_cnn(), seconds)
    bench("large_cnn", large_cnn(), seconds)


if __name__ == "__main__":
    main()
