"""DSGD's float64 twin, from README.md here (Lian et al., NeurIPS 2017): round k mixes
x_i <- sum_j W_ij x_j over the round-k values, then steps x_i <- x_i - a_k grad f_i(x_i) at the
mixed point (or the local optimizer's step at rate a_k). update_order sequential: the in-place
sweep in node order (lower ids already mixed), then every node's step."""


def run(c):
    o = c.opts
    X = c.start()
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, X)
    for k in c.rounds():
        a = c.rate(o["alpha0"], o["mu"], k)
        if o.get("update_order") == "sequential":
            for i in range(c.N):  # Gauss-Seidel: X[i] is overwritten before higher ids read it
                X[i] = c.W[i] @ X
            M = X
        else:
            M = c.W @ X
        for i in range(c.N):
            _, g = c.grad(i, M[i])
            M[i] = M[i] - a * g if opt is None else opt[i].step(M[i], g, a)
        X = M
        c.end_round(k, X)
