"""The float64 twins' harness: reads a trace written by `dtrun run --dump-trace DIR`, gives an
algorithm's twin (optimizers/<name>/twin.py) what fixes the run and a float64 model, and compares
the twin's parameters and losses with dtrun's, round by round.

A twin is a function run(c) written from its algorithm's README and paper, not from dtrun's C
code. It asks c for the start (c.start()), the rounds (for k in c.rounds()), each round's rate
(c.rate), gradients on the node's recorded minibatches (c.grad(i, x)), recorded random draws
(c.draw(i, tag)) and local optimizers (c.optimizers(...)), and hands back every node's
parameters after each round (c.end_round(k, X)), where they are compared with dtrun's. The first
round, node and tensor whose error passes the bound stops the run with a report (TwinMismatch).

The bound (README.md here): float32 rounding makes dtrun's parameters drift from the exact
(float64) path by a relative amount that grows at most linearly with the rounds while the
dynamics are stable: ||x_dtrun - x_twin|| <= C u (k + 1) ||x_twin||, u = 2^-24, for every node
and round k, C = Trace.C unless the twin sets BOUND_C (measured headroom is printed).
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
import yaml

if __name__ == "__main__":  # twins import "twin": the running script, not a second copy of it
    sys.modules.setdefault("twin", sys.modules["__main__"])

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unit"))
import torch_layers  # noqa: E402  (the layer builder the layer cross-check uses)

U = 2.0 ** -24  # float32's unit roundoff


class TwinMismatch(Exception):
    pass


def read_stream(path):
    """A node's records: {round: [(tag, values), ...]} in file order."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"DTTRACE1":
        raise SystemExit("%s: not a dtrun trace" % path)
    out, p = {}, 8
    while p < len(data):
        tag = data[p:p + 4].decode()
        rnd, typ, n = struct.unpack_from("<iii", data, p + 4)
        p += 16
        arr = np.frombuffer(data, dtype="<i4" if typ == 0 else "<f4", count=n, offset=p)
        p += 4 * n
        out.setdefault(rnd, []).append((tag, arr))
    return out


class _MaskedReLU(torch.autograd.Function):
    """ReLU whose backward mask is (x > 0) with the entries of flip inverted: the other side of
    the kink for pre-activations within rounding of 0 (the forward values differ by less than
    that rounding)."""

    @staticmethod
    def forward(ctx, x, flip):
        ctx.save_for_backward((x > 0) ^ flip)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask, None


class KinkReLU(torch.nn.Module):
    """nn.ReLU that keeps its last input (to find pre-activations near 0) and can take the other
    side of the kink on chosen entries (flip: a bool tensor of the input's shape, or None)."""

    def __init__(self):
        super().__init__()
        self.flip, self.last = None, None

    def forward(self, x):
        self.last = x.detach()
        return F.relu(x) if self.flip is None else _MaskedReLU.apply(x, self.flip)

    def candidates(self, window):
        """(closeness, entry) of the inputs within window (relative to the largest) of 0; exact
        zeros are not candidates (both arithmetics block them alike)."""
        z = self.last.abs()
        near = (z > 0) & (z <= window * z.max())
        return [(float(z[tuple(e)]), tuple(e)) for e in torch.nonzero(near).tolist()]


class KinkMaxPool(torch.nn.Module):
    """nn.MaxPool2d (no padding) that keeps each window's two largest inputs and can route a
    window's output (and so its gradient) to the second largest instead (flip: a bool tensor of
    the output's shape): where the two are within rounding, float32 may have picked either. The
    largest is the first one in the window, as max_pool2d picks; exact ties are not candidates
    (both arithmetics pick the same entry)."""

    def __init__(self, m):
        super().__init__()
        pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)
        self.k, self.s = pair(m.kernel_size), pair(m.stride if m.stride is not None else m.kernel_size)
        self.flip, self.gap = None, None

    def forward(self, x):
        (kh, kw), (sh, sw) = self.k, self.s
        p = x.unfold(2, kh, sh).unfold(3, kw, sw)
        p = p.reshape(p.shape[:4] + (kh * kw,))
        v1, i1 = p.max(-1, keepdim=True)  # the first maximum, as max_pool2d
        if kh * kw > 1:
            v2, i2 = p.scatter(-1, i1, float("-inf")).max(-1, keepdim=True)
            self.gap = (v1 - v2).squeeze(-1).detach()
        else:
            i2, self.gap = i1, torch.full(v1.shape[:-1], float("inf"))
        self.scale = float(x.detach().abs().max())
        idx = i1 if self.flip is None else torch.where(self.flip.unsqueeze(-1), i2, i1)
        return p.gather(-1, idx).squeeze(-1)

    def candidates(self, window):
        g = self.gap
        near = (g > 0) & (g <= window * self.scale)
        return [(float(g[tuple(e)]), tuple(e)) for e in torch.nonzero(near).tolist()]


def _kink_modules(module):
    """Replaces every nn.ReLU and nn.MaxPool2d under module by its Kink form; returns them in
    forward order."""
    out = []
    for name, m in module.named_children():
        if isinstance(m, torch.nn.ReLU):
            k = KinkReLU()
        elif isinstance(m, torch.nn.MaxPool2d) and m.padding == 0 and m.dilation == 1 and not m.ceil_mode:
            k = KinkMaxPool(m)
        else:
            out += _kink_modules(m)
            continue
        setattr(module, name, k)
        out.append(k)
    return out


MAX_KINKS = 64  # the most pre-activations near 0 one gradient call may examine


class Model:
    """dtrun's model in float64: gradients and losses at a flat parameter vector (dtrun's
    layout, read through the manifest), with per-node buffers (running statistics)."""

    def __init__(self, d):
        with open(os.path.join(d, "model.json")) as f:
            layers = json.load(f)
        with open(os.path.join(d, "trace.json")) as f:
            self.info = json.load(f)
        with open(os.path.join(d, "manifest.tsv")) as f:
            self.manifest = [line.rstrip("\n").split("\t") for line in f.readlines()[1:]]
        shape = tuple(self.info["input_shape"])
        mods, _ = torch_layers.build(layers, shape)
        if any(isinstance(m, torch.nn.Dropout) for m in mods):
            raise SystemExit("the twins follow models without dropout (its masks are not traced)")
        self.net = torch.nn.Sequential(*mods).double()
        self.kinks = _kink_modules(self.net)
        self.shape = shape
        self.P, self.B = self.info["num_params"], self.info["num_buffers"]
        self.params = {n: p for n, p in self.net.named_parameters()}
        self.tensors = [(name, int(off), [int(s) for s in dims.split("x")])
                        for name, role, off, dims in self.manifest if role == "param"]
        self.buffers = [(name, int(off) - self.P, [int(s) for s in dims.split("x")])
                        for name, role, off, dims in self.manifest if role == "buffer"]

    def load(self, x, buf):
        state = self.net.state_dict()
        with torch.no_grad():
            for name, off, shape in self.tensors:
                n = int(np.prod(shape))
                self.params[name].copy_(x[off:off + n].reshape(shape))
            for name, off, shape in self.buffers:
                n = int(np.prod(shape))
                state[name].copy_(buf[off:off + n].reshape(shape))

    def save_buffers(self, buf):
        state = self.net.state_dict()
        for name, off, shape in self.buffers:
            n = int(np.prod(shape))
            buf[off:off + n] = state[name].reshape(-1)

    def _pass(self, x, buf, X, y, l2):
        """One forward and backward from x and buf (buf itself is not changed)."""
        self.load(x, buf)
        self.net.train()
        self.net.zero_grad()
        loss = F.nll_loss(F.log_softmax(self.net(X), dim=1), y)
        loss.backward()
        g = torch.zeros(self.P, dtype=torch.float64)
        for name, off, shape in self.tensors:
            n = int(np.prod(shape))
            g[off:off + n] = self.params[name].grad.reshape(-1)
        value = loss.item()
        if l2:
            g += l2 * x
            value += 0.5 * l2 * float(x @ x)
        return value, g

    def loss_grad(self, x, buf, X, y, l2, kinks=None):
        """Mean NLL (+ l2/2 ||x||^2) on (X, y) in train mode and its gradient; buf moves.

        kinks = (dtrun's gradient of the call, tolerance, window): where the gradient is farther
        than tolerance (relative) from dtrun's, the entries within window of a kink — a ReLU's
        input near 0 (relative to the layer's largest), a max-pool window whose two largest
        inputs are that close — are candidates for float32 having put them on the other side;
        each is taken there, nearest first, where that brings the gradient nearer to dtrun's.
        Returns (loss, gradient, entries taken to the other side)."""
        for m in self.kinks:
            m.flip = None
        value, g = self._pass(x, buf, X, y, l2)
        self.save_buffers(buf)  # the running statistics do not depend on the kinks' sides
        taken = 0
        if kinks is None or not self.kinks:
            return value, g, taken
        gd, tol, window = kinks
        dist = float((g - gd).norm())
        if dist <= tol * float(gd.norm()):
            return value, g, taken
        near = []
        for m in self.kinks:
            near += [(d, m, e) for d, e in m.candidates(window)]
            m.flip = None
        for _, m, e in sorted(near, key=lambda t: t[0])[:MAX_KINKS]:
            if m.flip is None:
                m.flip = torch.zeros_like(m.last if isinstance(m, KinkReLU) else m.gap, dtype=torch.bool)
            m.flip[e] = True
            v, ge = self._pass(x, buf, X, y, l2)
            de = float((ge - gd).norm())
            if de < dist:
                g, dist, taken = ge, de, taken + 1
            else:
                m.flip[e] = False
        for m in self.kinks:
            m.flip = None
        return value, g, taken

    def grad32(self, x, buf, X, y, l2):
        """The same gradient computed in float32 (buffers left as they are): for the size of
        float32's rounding error on each coordinate."""
        if not hasattr(self, "net32"):
            import copy
            self.net32 = copy.deepcopy(self.net).float()
            self.params32 = {n: p for n, p in self.net32.named_parameters()}
        state = self.net32.state_dict()
        with torch.no_grad():
            for name, off, shape in self.tensors:
                n = int(np.prod(shape))
                self.params32[name].copy_(x[off:off + n].reshape(shape))
            for name, off, shape in self.buffers:
                n = int(np.prod(shape))
                state[name].copy_(buf[off:off + n].reshape(shape))
        self.net32.train()
        self.net32.zero_grad()
        F.nll_loss(F.log_softmax(self.net32(X.float()), dim=1), y).backward()
        g = torch.zeros(self.P, dtype=torch.float64)
        for name, off, shape in self.tensors:
            n = int(np.prod(shape))
            g[off:off + n] = self.params32[name].grad.reshape(-1).double()
        if l2:
            g += l2 * x.float().double()
        return g

    def tensor_errors(self, xd, xt):
        """(name, relative error) of every parameter tensor, worst first."""
        out = []
        for name, off, shape in self.tensors:
            n = int(np.prod(shape))
            a, b = xd[off:off + n], xt[off:off + n]
            out.append((name, float((a - b).norm() / max(b.norm(), 1e-300))))
        return sorted(out, key=lambda t: -t[1])


ADAPTIVE = ("adam", "adamw", "rmsprop", "adadelta", "nadam")
KAPPA = 1e-3      # an adaptive step is ill-conditioned where float32's gradient error passes KAPPA |g|
MAX_ADOPT = 0.05  # ... and at most this share of a node's coordinates may be in a round


class LocalOptimizer:
    """One node's local optimizer, torch.optim's class for the config's name, stepping a float64
    vector x along a given direction g at a given rate.

    Adaptive optimizers divide by the gradient's running magnitude: on a coordinate whose gradient
    is near zero (a dead unit), float32's rounding of g, relative error O(1) there, becomes a step
    of O(lr) (Adam's first step is lr sign(g)). No float32 run can follow the exact path on such
    coordinates, so the optimizer marks those where float32's error of the gradient (measured on
    the same call in float32, times 4) passes KAPPA |g| for the context, which compares the
    others and takes dtrun's values on these (README.md, "Bound")."""

    def __init__(self, kind, x, momentum=0.0, nesterov=False, weight_decay=0.0, ctx=None, node=None):
        self.kind, self.ctx, self.node = kind, ctx, node
        self.p = torch.nn.Parameter(x.clone())
        if kind == "sgd":
            self.opt = torch.optim.SGD([self.p], lr=1.0, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay)
        elif kind == "adam":
            self.opt = torch.optim.Adam([self.p], lr=1.0, weight_decay=weight_decay)
        elif kind == "adamw":
            self.opt = torch.optim.AdamW([self.p], lr=1.0, weight_decay=weight_decay or 0.01)
        elif kind == "rmsprop":
            self.opt = torch.optim.RMSprop([self.p], lr=1.0, momentum=momentum, weight_decay=weight_decay)
        elif kind == "adadelta":
            self.opt = torch.optim.Adadelta([self.p], lr=1.0, weight_decay=weight_decay)
        elif kind == "nadam":
            self.opt = torch.optim.NAdam([self.p], lr=1.0, weight_decay=weight_decay)
        else:
            raise SystemExit("no twin for local optimizer " + kind)

    def step(self, x, g, lr, extra=None):
        """x after one step from x along g at rate lr (x is not changed). extra: float32's error
        on the terms the twin added to the node's gradient to make g (a penalty, a dual),
        measured by the twin as the gradient's is, for the conditioning test."""
        with torch.no_grad():
            self.p.copy_(x)
        self.p.grad = g.clone()
        if self.ctx is not None and self.kind in ADAPTIVE:
            self.ctx.mark_unstable(self.node, g, extra)
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.step()
        return self.p.detach().clone()


class Context:
    """What a twin sees of one problem of the trace."""

    def __init__(self, d, problem, model, bound_c):
        with open(os.path.join(d, "config.yaml")) as f:
            cfg = yaml.safe_load(f)
        with open(os.path.join(d, "graph.yaml")) as f:
            graph = yaml.safe_load(f)
        self.problem = problem
        self.pc = cfg["problem_configs"][problem]
        self.opts = self.pc["optimizer_config"]
        self.experiment = cfg["experiment"]
        self.N = graph["num_nodes"]
        W = np.zeros((self.N, self.N))
        self.nbrs = [[] for _ in range(self.N)]
        for row in graph["mixing_weights"]:
            i = row["node"]
            W[i, i] = row["self"]
            for j, w in zip(row["neighbors"], row["weights"]):
                W[i, j] = w
                self.nbrs[i].append(j)
        self.W = torch.tensor(W, dtype=torch.float64)
        self.model = model
        self.l2 = float(self.pc.get("l2", 0.0))
        self.rounds_total = int(self.opts["outer_iterations"])
        self.streams = [read_stream(os.path.join(d, problem, "node_%d.trace" % i)) for i in range(self.N)]
        self.pos = [{} for _ in range(self.N)]  # per node and round: records consumed
        self.k = -1
        self.bound_c = bound_c
        self.worst = (0.0, None)  # (error / bound, where)
        self.worst_err = 0.0
        self.losses = 0
        self.kinks = 0  # pre-activations taken to dtrun's side of a ReLU's kink
        self.buf = [self.initial("BUFS", i) for i in range(self.N)] if model.B else [None] * self.N
        self.samples = [0] * self.N
        self.unstable = [torch.zeros(model.P, dtype=torch.bool) for _ in range(self.N)]
        self.gerr = [torch.zeros(model.P) for _ in range(self.N)]  # |float32 - float64| of each node's last gradient
        self.adopted = 0.0  # the largest share of a node's coordinates taken from dtrun in a round

    # ---- what fixes the run -----------------------------------------------------------------
    def initial(self, tag, i):
        rec = [a for t, a in self.streams[i].get(-1, []) if t == tag]
        if not rec:
            raise SystemExit("node %d's trace has no %s before round 0" % (i, tag))
        return torch.tensor(rec[0], dtype=torch.float64)

    def start(self):
        """Every node's start: θ0 as dtrun recorded it (float64 copies), N × dim."""
        X = torch.stack([self.initial("THET", i) for i in range(self.N)])
        for i in range(1, self.N):
            if not torch.equal(X[i], X[0]):
                raise TwinMismatch("node %d does not start at node 0's parameters" % i)
        return X

    def _next(self, i, tags):
        recs = self.streams[i].get(self.k, [])
        p = self.pos[i].get(self.k, 0)
        while p < len(recs) and recs[p][0] in ("THET", "BUFS"):
            p += 1
        if p >= len(recs) or recs[p][0] != tags[0]:
            found = recs[p][0] if p < len(recs) else "nothing"
            raise TwinMismatch("round %d, node %d: the twin asks for %s, dtrun recorded %s next" % (self.k, i, tags[0], found))
        out = []
        for t in tags:
            if p >= len(recs) or recs[p][0] != t:
                raise TwinMismatch("round %d, node %d: trace record %s missing" % (self.k, i, t))
            out.append(recs[p][1])
            p += 1
        self.pos[i][self.k] = p
        return out

    def peek(self, i, tag):
        """Node i's next record of this round if it is a `tag` draw (not consumed), else None: for
        twins that merge the nodes' records in an order the records carry (AEVT)."""
        recs = self.streams[i].get(self.k, [])
        p = self.pos[i].get(self.k, 0)
        while p < len(recs) and recs[p][0] in ("THET", "BUFS"):
            p += 1
        return recs[p][1] if p < len(recs) and recs[p][0] == tag else None

    def draw(self, i, tag):
        """Node i's next recorded draw of this round under tag (PEER, DLAY, QMSG)."""
        return self._next(i, [tag])[0]

    def grad(self, i, x):
        """(loss, gradient) of node i at x on its next recorded minibatch, in float64; the loss
        is compared with the one dtrun recorded for that call."""
        idx, lab, xin, loss_d, grad_d = self._next(i, ["BIDX", "BLAB", "BXIN", "LOSS", "GRAD"])
        b = len(idx)
        X = torch.tensor(xin, dtype=torch.float64).reshape((b,) + self.model.shape)
        y = torch.tensor(lab, dtype=torch.long)
        bnd = self.bound(max(self.k, 0))
        gd = torch.tensor(grad_d, dtype=torch.float64)
        loss, g, taken = self.model.loss_grad(x, self.buf[i], X, y, self.l2, kinks=(gd, bnd, bnd))
        self.kinks += taken
        self.gerr[i] = (self.model.grad32(x, self.buf[i], X, y, self.l2) - g).abs()
        self.samples[i] += b
        self.losses += 1
        bound = self.bound(max(self.k, 0)) * 16 * max(1.0, abs(loss))
        if abs(float(loss_d[0]) - loss) > bound:
            raise TwinMismatch("round %d, node %d: minibatch loss dtrun %.9g, twin %.9g (difference %.3g, bound %.3g)"
                               % (self.k, i, float(loss_d[0]), loss, abs(float(loss_d[0]) - loss), bound))
        return loss, g

    def optimizers(self, kind, X, o=None):
        """One local optimizer per node (kind: sgd, adam, ...) with the momentum, nesterov and
        weight_decay of the options o (default: the problem's optimizer_config)."""
        o = self.opts if o is None else o
        return [LocalOptimizer(kind, X[i], float(o.get("momentum", 0.0)), bool(o.get("nesterov", False)),
                               float(o.get("weight_decay", 0.0)), self, i) for i in range(self.N)]

    def optimizer(self, kind, x, node):
        """One local optimizer with PyTorch's defaults for node (None: a state every node's
        parameters follow, such as a parameter server's)."""
        return LocalOptimizer(kind, x, ctx=self, node=node)

    def mark_unstable(self, node, g, extra=None):
        """Marks the coordinates of an adaptive step along g (made from node's last gradient; None:
        from every node's, plus terms whose float32 error is extra) where 4 times float32's error
        passes KAPPA |g|."""
        err = torch.stack(self.gerr).max(0).values if node is None else self.gerr[node]
        if extra is not None:
            err = err + extra
        mask = 4 * err > KAPPA * g.abs()
        for i in range(self.N) if node is None else [node]:
            self.unstable[i] |= mask

    def plain_sgd(self, kind, o=None):
        o = self.opts if o is None else o
        return kind == "sgd" and float(o.get("momentum", 0.0)) == 0 and float(o.get("weight_decay", 0.0)) == 0

    def rate(self, base, mu, k, steps=1):
        """Round k's rate under the problem's lr_schedule (configs/README.md's table)."""
        s = self.opts.get("lr_schedule") or {}
        typ, unit = s.get("type", "inverse"), s.get("unit", "rounds")
        T = self.rounds_total
        if unit == "epochs":
            if self.pc.get("full_batch"):
                per_epoch = 1.0 / steps
            else:
                mean_samples = sum(self.model.info["node_samples"]) / self.N
                per_epoch = mean_samples / (self.pc["train_batch_size"] * steps)
            t, Tu = k / per_epoch, T / per_epoch
        elif unit == "fraction":
            t, Tu = k / T, 1.0
        else:
            t, Tu = float(k), float(T)
        warm = float(s.get("warmup", 0.0))
        if typ == "inverse":
            r = base / (1 + mu * t)
        elif typ == "constant":
            r = base
        elif typ == "multistep":
            r = base * float(s.get("gamma", 0.1)) ** sum(1 for m in s.get("milestones", []) if float(m) <= t)
        elif typ == "cosine":
            p = (t - warm) / (Tu - warm) if t >= warm else 0.0
            fin = float(s.get("final_lr", 0.0))
            r = fin + (base - fin) * (1 + math.cos(math.pi * p)) / 2
        else:
            raise SystemExit("no twin for lr_schedule " + typ)
        if warm > 0 and t < warm:
            ws = float(s.get("warmup_start", 0.0))
            r *= ws + (1 - ws) * t / warm
        return r

    # ---- the rounds and the comparison --------------------------------------------------------
    def bound(self, k):
        return self.bound_c * U * (k + 1)

    def rounds(self):
        for k in range(self.rounds_total):
            self.k = k
            self.unstable = [torch.zeros(self.model.P, dtype=torch.bool) for _ in range(self.N)]
            yield k

    def end_round(self, k, X):
        """Compares every node's parameters (and buffers) after round k with dtrun's."""
        bnd = self.bound(k)
        if self.pc.get("buffers") == "mix" and self.model.B:  # every node's b_i <- sum_j W_ij b_j
            self.buf = list(self.W @ torch.stack(self.buf))
        for i in range(self.N):
            recs = self.streams[i].get(k, [])
            left = [t for t, _ in recs[self.pos[i].get(k, 0):] if t not in ("THET", "BUFS")]
            if left:
                raise TwinMismatch("round %d, node %d: dtrun recorded %s that the twin did not use" % (k, i, ", ".join(left)))
            th = [a for t, a in recs if t == "THET"]
            if not th:
                raise TwinMismatch("round %d, node %d: no parameters in dtrun's trace (it ran fewer rounds?)" % (k, i))
            xd = torch.tensor(th[0], dtype=torch.float64)
            xt = X[i]
            keep = ~self.unstable[i]
            share = 1.0 - float(keep.double().mean())
            self.adopted = max(self.adopted, share)
            if share > MAX_ADOPT:
                raise TwinMismatch("round %d, node %d: %.1f%% of the coordinates took adaptive steps on gradients near 0 "
                                   "(more than %.0f%%: too few left to compare)" % (k, i, 100 * share, 100 * MAX_ADOPT))
            err = float((xd - xt)[keep].norm() / max(xt.norm(), 1e-300))
            self.worst_err = max(self.worst_err, err)
            if err / bnd > self.worst[0]:
                self.worst = (err / bnd, "round %d node %d" % (k, i))
            if not err <= bnd:
                worst = self.model.tensor_errors(xd, xt)[0]
                raise TwinMismatch("round %d, node %d: parameters differ by %.3g relative (bound %.3g); worst tensor %s (%.3g)"
                                   % (k, i, err, bnd, worst[0], worst[1]))
            if share > 0:
                with torch.no_grad():
                    xt[~keep] = xd[~keep]  # dtrun's values where no float32 run can follow
            bf = [a for t, a in recs if t == "BUFS"]
            if bf and self.buf[i] is not None:
                bd = torch.tensor(bf[0], dtype=torch.float64)
                e = float((bd - self.buf[i]).norm() / max(self.buf[i].norm(), 1e-300))
                if not e <= bnd:
                    raise TwinMismatch("round %d, node %d: running statistics differ by %.3g relative (bound %.3g)" % (k, i, e, bnd))


def load_twin(alg):
    """optimizers/<alg>/twin.py's module (aliases: dinno is cadmm)."""
    import importlib.util
    root = os.path.join(HERE, "..", "..", "optimizers")
    name = {"dinno": "cadmm", "choco_sgd": "choco"}.get(alg, alg)
    path = os.path.join(root, name, "twin.py")
    if not os.path.exists(path):
        raise SystemExit("no twin for %s (%s)" % (alg, path))
    spec = importlib.util.spec_from_file_location("twin_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check(d, problems=None, bound_c=64.0, out=sys.stdout):
    """Runs the twin of every problem of the trace in d (or those named); returns the failures."""
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    model = Model(d)
    failures = []
    for p in problems or model.info["problems"]:
        c = Context(d, p, model, bound_c)
        alg = c.opts["alg_name"]
        twin = load_twin(alg)
        c.bound_c = getattr(twin, "BOUND_C", bound_c)
        try:
            twin.run(c)
            adopted = ", %.2f%% of coordinates ill-conditioned" % (100 * c.adopted) if c.adopted else ""
            if c.kinks:
                adopted += ", %d kink%s on dtrun's side" % (c.kinks, "s" if c.kinks > 1 else "")
            out.write("%-17s %-11s %3d rounds, %4d minibatches: worst relative error %.2e, %.0f%% of the bound at %s%s\n"
                      % (p, alg, c.rounds_total, c.losses, c.worst_err, 100 * c.worst[0], c.worst[1], adopted))
        except TwinMismatch as e:
            msg = str(e) if str(e).startswith("round") else "round %d: %s" % (c.k, e)
            out.write("%-17s %-11s FAILED: %s\n" % (p, alg, msg))
            failures.append(p)
    return failures


def main():
    import argparse
    ap = argparse.ArgumentParser(description="compare dtrun's trace with the algorithms' float64 twins")
    ap.add_argument("trace", help="a folder written by dtrun run --dump-trace")
    ap.add_argument("problems", nargs="*", help="the problems to check (default: all)")
    a = ap.parse_args()
    sys.exit(1 if check(a.trace, a.problems) else 0)


if __name__ == "__main__":
    main()
