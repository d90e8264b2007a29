"""Gossip SGD's float64 twin, from README.md here (Boyd et al. 2006 pairwise; GoSGD, Blot et al.
2016, push-sum). Round k: local_steps local-optimizer steps at lr_k; then pairwise, matched pairs
set both ends to their average; or push, each pushing node halves its weight and every receiver
merges the pushes in increasing sender id, x_j <- (w_j x_j + w_i x_i)/(w_j + w_i),
w_j <- w_j + w_i. The draws (partners, push targets) come from dtrun's trace (PEER)."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    steps, mode = int(o.get("local_steps", 1)), o.get("mode", "pairwise")
    opt = c.optimizers(o.get("local_optimizer", "sgd"), X)
    w = torch.ones(c.N)
    for k in c.rounds():
        lr = c.rate(o["lr"], o["mu"], k, steps)
        for _ in range(steps):
            for i in range(c.N):
                X[i] = opt[i].step(X[i], c.grad(i, X[i])[1], lr)
        peer = [int(c.draw(i, "PEER")[0]) for i in range(c.N)]
        if mode == "pairwise":
            for i in range(c.N):
                j = peer[i]
                if j >= 0 and peer[j] != i:
                    raise AssertionError("round %d: %d is matched with %d, but %d with %d" % (k, i, j, j, peer[j]))
            X = torch.stack([(X[i] + X[peer[i]]) / 2 if peer[i] >= 0 else X[i] for i in range(c.N)])
        else:
            sent = X.clone()
            for i in range(c.N):
                if peer[i] >= 0:
                    w[i] /= 2
            neww = w.clone()
            for j in range(c.N):
                for i in range(c.N):  # increasing sender id
                    if peer[i] == j:
                        X[j] = (neww[j] * X[j] + w[i] * sent[i]) / (neww[j] + w[i])
                        neww[j] += w[i]
            w = neww
        c.end_round(k, X)
