"""D2's float64 twin, from README.md here (Tang et al., ICML 2018):
x^1 = W (x^0 - d^0);  x^{k+1} = W (2 x^k - x^{k-1} - d^k + d^{k-1}), where d^k = a_k g^k,
g^k = grad f_i(x^k) on one minibatch (another local optimizer: its displacement x - step(x, g))."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    kind = o.get("local_optimizer", "sgd")
    opt = None if c.plain_sgd(kind) else c.optimizers(kind, X)
    Xp, Dp = X.clone(), torch.zeros_like(X)
    for k in c.rounds():
        a = c.rate(o["alpha"], o.get("mu", 0.0), k)
        G = torch.stack([c.grad(i, X[i])[1] for i in range(c.N)])
        D = a * G if opt is None else torch.stack([X[i] - opt[i].step(X[i], G[i], a) for i in range(c.N)])
        Xn = c.W @ (2 * X - Xp - D + Dp)
        Xp, Dp, X = X, D, Xn
        c.end_round(k, X)
