"""DSGT's float64 twin, from README.md here (gradient tracking; Pu & Nedic 2021, Nedic, Olshevsky
& Shi 2017). Start: g_i = y_i = grad f_i(x_i^0) (init_grads) or 0. Round k:
x_i <- sum_j W_ij (x_j - a y_j) (the local optimizer's step from x_j along y_j otherwise);
g+ = grad f_i(x_i); y_i <- sum_j W_ij y_j + g+ - g_i; g_i <- g+.
update_order sequential, the reference's sweep: in node order
x_i <- sum_j W_ij x_j - a sum_j W_ij y_j with the current x (lower ids already swept) and the
round-start y; every g+; then in node order y_i <- W_ii y_i + (g+ - g_i) + sum_{j != i} W_ij y_j."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    N = c.N
    if o.get("init_grads", True):
        G = torch.stack([c.grad(i, X[i])[1] for i in range(N)])  # before round 0
    else:
        G = torch.zeros_like(X)
    Y = G.clone()
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, X)
    seq = o.get("update_order") == "sequential"
    for k in c.rounds():
        a = c.rate(o["alpha"], 0.0, k)
        if seq:
            for i in range(N):
                X[i] = c.W[i] @ X - a * (c.W[i] @ Y)
            Gp = torch.stack([c.grad(i, X[i])[1] for i in range(N)])
            for i in range(N):
                Y[i] = c.W[i] @ Y + Gp[i] - G[i]
        else:
            if opt is None:
                S = X - a * Y
            else:
                S = torch.stack([opt[i].step(X[i], Y[i], a) for i in range(N)])
            X = c.W @ S
            Gp = torch.stack([c.grad(i, X[i])[1] for i in range(N)])
            Y = c.W @ Y + Gp - G
        G = Gp
        c.end_round(k, X)
