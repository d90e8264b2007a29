"""centralized's float64 twin, from README.md here. local_steps times per round: mode gradient,
every node's gradient at the common x, their mean, the same optimizer step on every node; mode
model, every node's own step, then after the steps every node takes the mean of the models."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    kind, mode, steps = o.get("optimizer", "adam"), o.get("mode", "gradient"), int(o.get("local_steps", 1))
    opt = c.optimizers(kind, X, {})
    for k in c.rounds():
        lr = c.rate(o["lr"], o["mu"], k, steps)
        for _ in range(steps):
            G = torch.stack([c.grad(i, X[i])[1] for i in range(c.N)])
            if mode == "gradient":
                gbar = G.mean(0)
                X = torch.stack([opt[i].step(X[i], gbar, lr) for i in range(c.N)])
            else:
                X = torch.stack([opt[i].step(X[i], G[i], lr) for i in range(c.N)])
        if mode != "gradient":
            X = X.mean(0).expand_as(X).clone()
        c.end_round(k, X)
