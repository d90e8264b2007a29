"""PyTorch side of test_torch's learning-rate schedule check: the rate of each of 100 steps of
SGD at base rate 0.1 under torch.optim.lr_scheduler, for the schedules dtrun's lr_schedule
names (test_torch computes the same with dt_lr_at and compares).

usage: torch_schedule.py IN OUT NAME   (IN is unused; OUT: float64 lr[100])
  inverse             LambdaLR 1 / (1 + 0.01 t)                       (type inverse, mu 0.01)
  multistep           MultiStepLR([30, 60, 90], 0.1)                  (multistep)
  multistep-warmup    ChainedScheduler(LinearLR(0.1, 5), MultiStepLR([50, 75], 0.1))
  cosine              CosineAnnealingLR(100, eta_min=0.001)           (cosine, final_lr 0.001)
  cosine-warmup       SequentialLR(LinearLR(0.25, 10), CosineAnnealingLR(90), milestones=[10])
"""
import struct
import sys
import warnings

import torch

S = torch.optim.lr_scheduler
SCHEDULES = {
    "inverse": lambda o: S.LambdaLR(o, lambda t: 1 / (1 + 0.01 * t)),
    "multistep": lambda o: S.MultiStepLR(o, [30, 60, 90], 0.1),
    "multistep-warmup": lambda o: S.ChainedScheduler([S.LinearLR(o, 0.1, total_iters=5), S.MultiStepLR(o, [50, 75], 0.1)]),
    "cosine": lambda o: S.CosineAnnealingLR(o, 100, eta_min=0.001),
    "cosine-warmup": lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.25, total_iters=10), S.CosineAnnealingLR(o, 90)], milestones=[10]),
}


def main():
    _, dst, name = sys.argv[1:4]
    warnings.simplefilter("ignore")  # SequentialLR's deprecation notes about step(epoch)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = SCHEDULES[name](opt)
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    with open(dst, "wb") as f:
        f.write(struct.pack("<100d", *lrs))


if __name__ == "__main__":
    main()
