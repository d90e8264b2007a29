"""QG-DSGDm's float64 twin, from README.md here (Lin et al., ICML 2021): per node, with the
quasi-global buffer mh (from 0): g = grad f_i(x) + wd x; m = beta mh + g; u = g + beta m
(Nesterov) or m; x_half = x - a_k u; x <- sum_j W_ij x_half_j; d = (x_old - x) / a_k;
mh <- qg_mu mh + (1 - qg_mu) d (not at a rate of 0)."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    beta, wd = float(o.get("momentum", 0.9)), float(o.get("weight_decay", 0.0))
    nesterov, q = bool(o.get("nesterov", False)), float(o.get("qg_mu", 0.9))
    Mh = torch.zeros_like(X)
    for k in c.rounds():
        a = c.rate(o["alpha0"], o.get("mu", 0.0), k)
        H = torch.empty_like(X)
        for i in range(c.N):
            _, g = c.grad(i, X[i])
            g = g + wd * X[i]
            m = beta * Mh[i] + g
            H[i] = X[i] - a * (g + beta * m if nesterov else m)
        Xn = c.W @ H
        if a != 0:
            Mh = q * Mh + (1 - q) * (X - Xn) / a
        X = Xn
        c.end_round(k, X)
