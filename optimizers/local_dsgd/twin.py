"""Local-DSGD's float64 twin, from README.md here (Koloskova et al., ICML 2020): round k takes
tau local steps x_i <- x_i - a_k grad f_i(x_i) (one minibatch each; another local optimizer:
its step), then gossips x_i <- sum_j W_ij x_j."""


def run(c):
    o = c.opts
    X = c.start()
    tau = int(o.get("local_steps", 4))
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, X)
    for k in c.rounds():
        a = c.rate(o["alpha0"], o.get("mu", 0.0), k, steps=tau)
        for _ in range(tau):
            for i in range(c.N):
                _, g = c.grad(i, X[i])
                X[i] = X[i] - a * g if opt is None else opt[i].step(X[i], g, a)
        X = c.W @ X
        c.end_round(k, X)
