"""AD-PSGD's and asynchronous push-sum's float64 twin, from README.md here (Lian et al. 2018;
Assran and Rabbat 2020). The events come from dtrun's trace (AEVT: the event's global number,
step end 0 or arrival 1, the peer, the message kind, delivered), merged over the nodes in that
number's order; what each event does is the twin's.
pairwise: a step end applies the gradient taken when the step began, then a request carries x_i
(kind 0); at j, a = x_j/2 + m/2, x_j <- a, and the reply (kind 1) carries a - m; at i, x_i += it.
push_sum: a step end steps the numerator, then halves (x_i, w_i) and pushes the halves; an
arrival adds them; the model is x / w."""
import torch


def run(c):
    o = c.opts
    T = c.start()  # theta: the evaluated model (push_sum: x / w)
    X = T.clone()
    w = torch.ones(c.N, dtype=torch.float64)
    push = o.get("mode", "pairwise") == "push_sum"
    opt = c.optimizers(o.get("local_optimizer", "sgd"), X)
    G = [None] * c.N
    box = {}  # (from, to, kind): the payload in flight
    for k in c.rounds():
        if k == 0:  # every node starts its first step at time 0
            for i in range(c.N):
                G[i] = c.grad(i, T[i])[1]
        lr = c.rate(o["lr"], o["mu"], k)
        while True:
            nxt = [(c.peek(i, "AEVT"), i) for i in range(c.N)]
            nxt = [(int(e[0]), i, e) for e, i in nxt if e is not None]
            if not nxt:
                break
            _, i, e = min(nxt)
            c.draw(i, "AEVT")
            typ, peer, kind, delivered = int(e[1]), int(e[2]), int(e[3]), int(e[4])
            if typ == 0:  # step end, then the next step starts
                X[i] = opt[i].step(X[i], G[i], lr)
                if push and peer >= 0:
                    X[i] /= 2
                    w[i] /= 2
                    box[(i, peer, 0)] = (X[i].clone(), w[i].clone())
                elif peer >= 0:
                    box[(i, peer, 0)] = X[i].clone()
                T[i] = X[i] / w[i] if push else X[i]
                G[i] = c.grad(i, T[i])[1]
            elif delivered and push:
                m, mw = box.pop((peer, i, 0))
                X[i] += m
                w[i] += mw
                T[i] = X[i] / w[i]
            elif delivered and kind == 0:  # a request: average, and reply with the correction
                m = box.pop((peer, i, 0))
                X[i] = 0.5 * X[i] + 0.5 * m
                box[(i, peer, 1)] = X[i] - m
                T[i] = X[i]
            elif delivered:  # the reply
                X[i] += box.pop((peer, i, 1))
                T[i] = X[i]
            else:
                box.pop((peer, i, kind), None)
        c.end_round(k, T)
