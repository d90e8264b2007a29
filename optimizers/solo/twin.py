"""solo's float64 twin, from README.md here: every node alone, one `optimizer` step per round on
a new minibatch at rate lr_k; nothing is sent."""


def run(c):
    o = c.opts
    X = c.start()
    kind = o.get("optimizer", "adam")
    opt = c.optimizers(kind, X)
    for k in c.rounds():
        lr = c.rate(o["lr"], o["mu"], k)
        for i in range(c.N):
            X[i] = opt[i].step(X[i], c.grad(i, X[i])[1], lr)
        c.end_round(k, X)
