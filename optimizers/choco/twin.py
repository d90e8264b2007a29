"""Choco-SGD's float64 twin, from README.md here (Koloskova, Stich & Jaggi 2019, Algorithm 2):
x_i^{k+1/2} = one local step; q_i = Q(x_i^{k+1/2} - xhat_i); xhat_i += q_i;
s_i += sum_j W_ij q_j; x_i = x_i^{k+1/2} + gamma (s_i - xhat_i); xhat and s start at 0.
sign is computed here from the twin's own vector (dtrun's sign taken where a coordinate is
within rounding of 0); top_k checks that the coordinates dtrun sent
(the support of its message QMSG) are k largest of the twin's vector up to rounding and takes
them (near-ties may fall either way in float32); random_k takes the coordinates dtrun drew; qsgd,
whose rounding draws are not separable from the values, takes dtrun's decoded message as is."""
import math

import torch

from twin import TwinMismatch


def compress(op, d, ratio, msg):
    n = d.numel()
    if op == "top_k":
        # the k largest |d|: dtrun's choice (the support of its message) is checked to be a top-k
        # of the twin's d up to rounding, then taken, since near-ties may fall either way
        k = math.ceil(ratio * n)
        chosen = torch.tensor(msg != 0)
        a = d.abs()
        if int(chosen.sum()) > k:
            raise TwinMismatch("top_k sent %d coordinates, k = %d" % (int(chosen.sum()), k))
        kth = float(a.topk(k).values[-1])
        low = float(a[chosen].min()) if chosen.any() else 0.0
        if low < kth * (1 - 1e-4) and low != 0.0:
            raise TwinMismatch("top_k sent a coordinate of |d| = %.6g below the k-th largest %.6g" % (low, kth))
        return torch.where(chosen, d, torch.zeros_like(d))
    if op == "random_k":
        return torch.where(torch.tensor(msg != 0), d, torch.zeros_like(d))
    if op == "sign":
        # the twin's own signs and scale; where |d_i| is within rounding of 0 (1e-4 of the
        # largest), float32 may have put it on either side: dtrun's sign is taken there, and
        # required to agree everywhere else
        scale = d.abs().sum() / n
        own = d >= 0
        theirs = torch.tensor(msg >= 0)
        near = d.abs() <= 1e-4 * d.abs().max()
        if bool(((own != theirs) & ~near).any()):
            raise TwinMismatch("sign: dtrun sent another sign for a coordinate far from 0")
        return torch.where(torch.where(near, theirs, own), scale, -scale)
    return torch.tensor(msg, dtype=torch.float64)  # qsgd


def run(c):
    o = c.opts
    X = c.start()
    comp = o.get("compression", {})
    op, ratio, gamma = comp.get("operator", "top_k"), float(comp.get("ratio", 0.01)), float(o["gamma"])
    opt = c.optimizers(o.get("local_optimizer", "sgd"), X)
    Xh = torch.zeros_like(X)
    S = torch.zeros_like(X)
    for k in c.rounds():
        lr = c.rate(o["lr"], o["mu"], k)
        for i in range(c.N):
            X[i] = opt[i].step(X[i], c.grad(i, X[i])[1], lr)
        Q = torch.stack([compress(op, X[i] - Xh[i], ratio, c.draw(i, "QMSG")) for i in range(c.N)])
        Xh += Q
        S += c.W @ Q
        X = X + gamma * (S - Xh)
        c.end_round(k, X)
