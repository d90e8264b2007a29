"""SGP's float64 twin, from README.md here (Assran et al., ICML 2019, Algorithm 1): the gradient
at the de-biased z_i = x_i / w_i steps the numerator, x_i <- x_i - a_k g (a local optimizer: its
displacement step(z) - z added to x), then push-sum mixing of [x, w] with the column-stochastic
W: x <- W x, w <- W w. overlap: a node keeps W_ii of its own message at once and adds what its
in-neighbours pushed one round later."""
import torch


def run(c):
    o = c.opts
    Z = c.start()
    X = Z.clone()
    w = torch.ones(c.N, dtype=torch.float64)
    inbox = torch.zeros_like(X)
    inbox_w = torch.zeros_like(w)
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, Z)
    D = torch.diagonal(c.W)
    off = c.W - torch.diag(D)
    for k in c.rounds():
        a = c.rate(o["alpha0"], o["mu"], k)
        for i in range(c.N):
            _, g = c.grad(i, Z[i])
            X[i] = X[i] - a * g if opt is None else X[i] + (opt[i].step(Z[i].clone(), g, a) - Z[i])
        if o.get("overlap"):
            X, w, inbox, inbox_w = D[:, None] * X + inbox, D * w + inbox_w, off @ X, off @ w
        else:
            X, w = c.W @ X, c.W @ w
        Z = X / w[:, None]
        c.end_round(k, Z)
