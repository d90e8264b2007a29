"""EASGD's float64 twin, from README.md here (Zhang, Choromanska & LeCun 2015, synchronous).
Round k: tau worker-optimizer steps at lr_k (sgd with momentum m: Nesterov steps); xbar the
workers' mean; then from the values before it, x_i <- x_i - alpha (x_i - c), c <- c + beta (xbar - c),
beta = min(1, N alpha) when the config's beta is 0."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    centre = X[0].clone()
    m = float(o.get("momentum", 0.0))
    kind = o.get("worker_optimizer", "sgd")
    opt = c.optimizers(kind, X, {"momentum": m, "nesterov": kind == "sgd" and m > 0})
    alpha = float(o["alpha"])
    beta = float(o.get("beta", 0.0)) or min(1.0, c.N * alpha)
    for k in c.rounds():
        lr = c.rate(o["lr"], o["mu"], k, int(o["tau"]))
        for _ in range(int(o["tau"])):
            for i in range(c.N):
                X[i] = opt[i].step(X[i], c.grad(i, X[i])[1], lr)
        xbar = X.mean(0)
        X, centre = X - alpha * (X - centre), centre + beta * (xbar - centre)
        c.end_round(k, X)
