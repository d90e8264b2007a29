"""CADMM / DiNNO's float64 twin, from README.md here (Yu, Vincent & Schwager 2022). Round k:
rho_k = rho_init rho_scaling^(k+1); from the round-start values, p_i += rho_k sum_j (th_i - th_j);
then primal_iterations optimizer steps from th = th_i on new minibatches, on
f_i(th) + <th, p_i> + rho_k sum_j ||th - (th_i + th_j)/2||^2, at the round's rate (constant,
linear or log from primal_lr_start to primal_lr_finish over t = k/(K-1)); the optimizer is fresh
every round unless persistent_primal_opt."""
import math

import torch


def run(c):
    o = c.opts
    X = c.start()
    N, K = c.N, c.rounds_total
    P = torch.zeros_like(X)
    P32 = torch.zeros_like(X, dtype=torch.float32)
    kind = o.get("primal_optimizer", "adam")
    persistent = bool(o.get("persistent_primal_opt", o.get("persistant_primal_opt", False)))
    a, b = float(o["primal_lr_start"]), float(o["primal_lr_finish"])
    decay = o.get("lr_decay_type", "log")
    opts = [c.optimizer(kind, X[i], i) for i in range(N)] if persistent else None
    for k in c.rounds():
        rho = float(o["rho_init"]) * float(o["rho_scaling"]) ** (k + 1)
        t = k / (K - 1) if K > 1 else 0.0
        if decay == "constant":
            lr = a
        elif decay == "linear":
            lr = a + (b - a) * t
        else:
            lr = 10 ** (math.log10(a) + (math.log10(b) - math.log10(a)) * t)
        T = X.clone()  # the round-start values every node reads
        new = X.clone()
        for i in range(N):
            nb = c.nbrs[i]
            P[i] += rho * sum(T[i] - T[j] for j in nb)
            P32[i] += torch.tensor(rho, dtype=torch.float32) * sum(T[i].float() - T[j].float() for j in nb)
            opt = opts[i] if persistent else c.optimizer(kind, T[i], i)
            th = T[i].clone()
            for _ in range(int(o["primal_iterations"])):
                _, g = c.grad(i, th)
                pen = P[i] + 2 * rho * sum(th - (T[i] + T[j]) / 2 for j in nb)
                # float32's error on the dual and penalty terms (the same sums in float32), for
                # the conditioning of adaptive steps
                t32, r32 = th.float(), torch.tensor(rho, dtype=torch.float32)
                pen32 = P32[i] + 2 * r32 * sum(t32 - (T[i].float() + T[j].float()) / 2 for j in nb)
                th = opt.step(th, g + pen, lr, (pen32.double() - pen).abs())
            new[i] = th
        X = new
        c.end_round(k, X)
