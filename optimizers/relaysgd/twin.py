"""RelaySGD's float64 twin, from README.md here (Vogels et al., NeurIPS 2021): on the
breadth-first spanning tree from `root` (neighbours in increasing id), round k: one local step
x_i^{+1/2}; m_{i->j} = x_i^{+1/2} + sum_{k != j} m_{k->i} (last round's), c_{i->j} = 1 +
sum_{k != j} c_{k->i}; x_i = (x_i^{+1/2} + sum_j m_{j->i} + (n - 1 - sum_j c_{j->i}) x0) / n.
Messages and counts start at 0; x0 is the shared start."""
import torch


def tree(c, root):
    """Directed tree edges (u, v) of the breadth-first tree, as a set."""
    seen, queue, edges = {root}, [root], set()
    while queue:
        u = queue.pop(0)
        for v in sorted(c.nbrs[u]):
            if v not in seen:
                seen.add(v)
                queue.append(v)
                edges |= {(u, v), (v, u)}
    return edges


def run(c):
    o = c.opts
    X = c.start()
    x0 = X[0].clone()
    T = tree(c, int(o.get("root", 0)))
    nb = {i: sorted(j for j in c.nbrs[i] if (i, j) in T) for i in range(c.N)}
    M = {e: torch.zeros_like(x0) for e in T}  # M[(j, i)]: the last message j sent i
    C = {e: 0 for e in T}
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, X)
    for k in c.rounds():
        a = c.rate(o["lr"], o.get("mu", 0.0), k)
        for i in range(c.N):
            _, g = c.grad(i, X[i])
            X[i] = X[i] - a * g if opt is None else opt[i].step(X[i], g, a)
        Mn = {(i, j): X[i] + sum((M[(q, i)] for q in nb[i] if q != j), torch.zeros_like(x0)) for (i, j) in T}
        Cn = {(i, j): 1 + sum(C[(q, i)] for q in nb[i] if q != j) for (i, j) in T}
        M, C = Mn, Cn
        for i in range(c.N):
            got = 1 + sum(C[(j, i)] for j in nb[i])
            X[i] = (X[i] + sum((M[(j, i)] for j in nb[i]), torch.zeros_like(x0)) + (c.N - got) * x0) / c.N
        c.end_round(k, X)
