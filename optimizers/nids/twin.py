"""NIDS's float64 twin, from README.md here (Li, Shi & Yan 2019), with W~ = I - c (I - W):
x^1 = W~ (x^0 - d^0);  x^{k+1} = W~ (2 x^k - x^{k-1} - d^k + d^{k-1}), where d^k = a_k g^k,
g^k = grad f_i(x^k) on one minibatch (another local optimizer: its displacement x - step(x, g))."""
import torch


def run(c, cc=None):
    o = c.opts
    cc = float(o.get("c", 0.5)) if cc is None else cc
    X = c.start()
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, X)
    I = torch.eye(c.N)
    Wt = I - cc * (I - c.W)
    Xp, Dp = X.clone(), torch.zeros_like(X)
    for k in c.rounds():
        a = c.rate(o["alpha"], o.get("mu", 0.0), k)
        G = torch.stack([c.grad(i, X[i])[1] for i in range(c.N)])
        D = a * G if opt is None else torch.stack([X[i] - opt[i].step(X[i], G[i], a) for i in range(c.N)])
        Xn = Wt @ (2 * X - Xp - D + Dp)
        Xp, Dp, X = X, D, Xn
        c.end_round(k, X)
