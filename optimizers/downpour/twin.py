"""Downpour SGD's float64 twin, from README.md here (Dean et al. 2012, mpi_learn's form). The
server starts at the common start. Round k: every worker from its fetched x takes sync_every
worker-optimizer steps at worker_lr and pushes D = fetched - current; the push of round k reaches
the server in round k + d (d from the trace: DLAY); the server applies what arrives in round k,
older rounds first and in node order within a round, each as one step of its optimizer with D
as the gradient at lr / (1 + mu k); every worker fetches the server's parameters."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    server = X[0].clone()
    wopt = c.optimizers(o.get("worker_optimizer", "sgd"), X, {})
    sopt = c.optimizer(o.get("optimizer", "sgd"), server, None)
    inflight = {}  # arrival round -> [(sent round, node, push)]
    for k in c.rounds():
        lr = float(o["lr"]) / (1 + float(o["mu"]) * k)
        start = X.clone()
        for _ in range(int(o["sync_every"])):
            for i in range(c.N):
                X[i] = wopt[i].step(X[i], c.grad(i, X[i])[1], float(o["worker_lr"]))
        for i in range(c.N):
            d = int(c.draw(i, "DLAY")[0])
            inflight.setdefault(k + d, []).append((k, i, start[i] - X[i], ((start[i].float() - X[i].float()).double() - (start[i] - X[i])).abs()))
        for _, _, push, err in sorted(inflight.pop(k, []), key=lambda t: (t[0], t[1])):
            server = sopt.step(server, push, lr, err)
        X = server.expand_as(X).clone()
        c.end_round(k, X)
