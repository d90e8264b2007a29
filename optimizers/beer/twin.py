"""BEER's float64 twin, from README.md here (Zhao, Li, Richtarik & Chi, NeurIPS 2022): h = g = 0,
v = g_prev = grad f_i(x^0); round k: x <- x + gamma (sum_j W_ij h_j - h_i) - a_k v;
q_h = C(x - h); g+ = grad f_i(x); v <- v + gamma (sum_j W_ij g_j - g_i) + g+ - g_prev;
g_prev = g+; q_g = C(v - g); h += q_h; g += q_g. The compression operators are Choco's twin's
(optimizers/choco/twin.py: sign recomputed, top_k checked and taken, random_k's coordinates and
qsgd's message from dtrun's trace, QMSH and QMSV)."""
import torch

from twin import load_twin


def run(c):
    o = c.opts
    compress = load_twin("choco").compress
    comp = o.get("compression", {})
    op, ratio, gamma = comp.get("operator", "top_k"), float(comp.get("ratio", 0.01)), float(o.get("gamma", 0.2))
    X = c.start()
    V = torch.stack([c.grad(i, X[i])[1] for i in range(c.N)])  # before round 0
    Gp = V.clone()
    H, G = torch.zeros_like(X), torch.zeros_like(X)
    for k in c.rounds():
        a = c.rate(o["alpha"], 0.0, k)
        X = X + gamma * (c.W @ H - H) - a * V
        Qh = torch.stack([compress(op, X[i] - H[i], ratio, c.draw(i, "QMSH")) for i in range(c.N)])
        Gn = torch.stack([c.grad(i, X[i])[1] for i in range(c.N)])
        V = V + gamma * (c.W @ G - G) + Gn - Gp
        Gp = Gn
        Qg = torch.stack([compress(op, V[i] - G[i], ratio, c.draw(i, "QMSV")) for i in range(c.N)])
        H, G = H + Qh, G + Qg
        c.end_round(k, X)
