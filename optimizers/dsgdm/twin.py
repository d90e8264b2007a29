"""DSGDm's float64 twin, from README.md here: z_i = sum_j W_ij x_j (round-k values);
g_i = grad f_i(z_i) (+ weight_decay z_i); m_i <- beta m_i + g_i (m from 0);
x_i <- z_i - a_k m_i, or z_i - a_k (g_i + beta m_i) with Nesterov. Written out, not through
torch.optim, so that it checks DSGD's momentum path too."""
import torch


def run(c):
    o = c.opts
    X = c.start()
    beta, wd, nesterov = float(o["momentum"]), float(o.get("weight_decay", 0.0)), bool(o.get("nesterov", False))
    Mom = torch.zeros_like(X)
    for k in c.rounds():
        a = c.rate(o["alpha0"], o["mu"], k)
        Z = c.W @ X
        for i in range(c.N):
            _, g = c.grad(i, Z[i])
            g = g + wd * Z[i]
            Mom[i] = beta * Mom[i] + g
            X[i] = Z[i] - a * (g + beta * Mom[i] if nesterov else Mom[i])
        c.end_round(k, X)
