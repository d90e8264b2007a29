"""PowerGossip's float64 twin, from README.md here (Vogels et al., NeurIPS 2020; the authors'
algorithms.PowerGossip inside OnlyOnLargeParameters and DPSGD): the gradient at x_i, then the
vectors mixed with W, and for every edge {lo, hi} one power step on the difference
D = M_hi - M_lo of each weight matrix (odd rounds P = D Q^, even rounds Q = D^T P^, round 0
none), M_lo += gamma W P Q^T, M_hi -= gamma W P Q^T; then the local step with the gradient.

The orthonormalized factor (Q^ or P^) starts a product whose inputs, near a repeated singular
value, float32 and float64 may turn in different directions, as power iteration does with a
small spectral gap; so the twin checks its own against dtrun's (both ends' copies must be
identical, the twin's within 1e-2) and then takes dtrun's, as it takes qsgd's rounding in choco.
Everything after it (the differences, the updates, the mixing, the step) is the twin's."""
import torch

from twin import TwinMismatch


def orthogonalize(a):
    a = a.clone()
    for c in range(a.shape[1]):
        a[:, c] /= torch.sqrt(torch.sum(a[:, c] ** 2)) + 1e-8
        for c2 in range(c + 1, a.shape[1]):
            a[:, c2] -= torch.sum(a[:, c] * a[:, c2]) * a[:, c]
    return a


def run(c):
    o = c.opts
    X = c.start()
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, X)
    rank, gamma = int(o.get("rank", 1)), float(o.get("gamma", 1.0))
    mats, vecs, np_, nq = [], [], 0, 0
    for _, off, dims in sorted(c.model.tensors, key=lambda t: t[1]):
        n = 1
        for s in dims:
            n *= s
        if len(dims) >= 2:
            m, cols = dims[0], n // dims[0]
            r = min(rank, m, cols)
            mats.append((off, m, cols, r, np_, nq))
            np_ += m * r
            nq += cols * r
        else:
            vecs.append((off, n))
    edges = sorted({(min(i, j), max(i, j)) for i in range(c.N) for j in c.nbrs[i]})
    P, Q = {}, {}
    for k in c.rounds():
        a = c.rate(o["lr"], o.get("mu", 0.0), k)
        G = [c.grad(i, X[i])[1] for i in range(c.N)]
        if k == 0:  # every edge's starting factors, the same at both ends
            got = {}
            for i in range(c.N):
                for j in sorted(c.nbrs[i]):
                    got.setdefault((min(i, j), max(i, j)), []).append(torch.tensor(c.draw(i, "PGPQ"), dtype=torch.float64))
            for e, (x, y) in got.items():
                if not torch.equal(x, y):
                    raise TwinMismatch("edge %s: the two ends start from different factors" % (e,))
                P[e], Q[e] = x[:np_].clone(), x[np_:].clone()
        new = X.clone()
        for off, n in vecs:
            new[:, off:off + n] = c.W @ X[:, off:off + n]
        if k > 0:
            dr = {}
            for i in range(c.N):
                for j in sorted(c.nbrs[i]):
                    dr.setdefault((min(i, j), max(i, j)), []).append(torch.tensor(c.draw(i, "PGDR"), dtype=torch.float64))
            for e in edges:
                lo, hi = e
                if not torch.equal(dr[e][0], dr[e][1]):
                    raise TwinMismatch("round %d, edge %s: the two ends orthogonalized to different factors" % (k, e))
                for off, m, cols, r, pa, qa in mats:
                    D = (X[hi, off:off + m * cols] - X[lo, off:off + m * cols]).reshape(m, cols)
                    if k % 2 == 1:
                        mine = orthogonalize(Q[e][qa:qa + cols * r].reshape(cols, r))
                        theirs = dr[e][0][qa:qa + cols * r].reshape(cols, r)
                    else:
                        mine = orthogonalize(P[e][pa:pa + m * r].reshape(m, r))
                        theirs = dr[e][0][pa:pa + m * r].reshape(m, r)
                    redrawn = float(mine.norm()) < 1e-6  # a zero factor: dtrun redrew it from the edge's stream
                    if not redrawn and float((mine - theirs).norm()) > 1e-2 * max(float(theirs.norm()), 1e-30):
                        raise TwinMismatch("round %d, edge %s: dtrun's orthogonalized factor differs from the twin's by %.3g"
                                           % (k, e, float((mine - theirs).norm())))
                    if k % 2 == 1:
                        Q[e][qa:qa + cols * r] = theirs.reshape(-1)
                        p = D @ theirs
                        P[e][pa:pa + m * r] = p.reshape(-1)
                        U = p @ theirs.T
                    else:
                        P[e][pa:pa + m * r] = theirs.reshape(-1)
                        q = D.T @ theirs
                        Q[e][qa:qa + cols * r] = q.reshape(-1)
                        U = theirs @ q.T
                    new[lo, off:off + m * cols] += c.W[lo, hi] * gamma * U.reshape(-1)
                    new[hi, off:off + m * cols] -= c.W[hi, lo] * gamma * U.reshape(-1)
        for i in range(c.N):
            new[i] = new[i] - a * G[i] if opt is None else opt[i].step(new[i], G[i], a)
        X = new
        c.end_round(k, X)
