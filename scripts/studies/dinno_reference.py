#!/usr/bin/env python3
"""The reference code of the DiNNO paper's MNIST figure, driven for the comparisons in
optimizers/cadmm/README.md ("Against the reference code") and docs/studies.md.

It runs javieryu/nn_distributed_training's own optimizers (dinno.py, dsgd.py, dsgt.py),
problems/dist_mnist_problem.py and models/mnist_conv_nn.py unchanged (a checkout at REF; measured
at commit 6a0cfc7), through their own train() loops, on experiments/dist_mnist_PAPER.yaml's
settings: 10 nodes, one digit per node, batch 64, outer_iterations 2000 (so DiNNO's log-spaced
rate is the paper's). What differs from its driver (experiments/dist_mnist_ex.py), none of it in
the algorithms:
  - MNIST is read from dtrun's data/mnist IDX files (normalised with 0.1307/0.3081 as
    torchvision's transform does) instead of torchvision;
  - the graph is complete, a cycle, or the edges of a dtrun graph.yaml (the random graphs of
    configs/dinno_figure.yaml are drawn by dtrun, so both sides train on the same graph);
  - evaluation (mean top-1 over the nodes on the 10,000 test images) happens only after the
    rounds in --marks, and the run stops after the last one;
  - --dtype float32 rounds the float64 initial weights (drawn as the reference draws them) and
    runs everything after in float32.

The random draws can be exchanged with dtrun's (issue 53, the exchange experiment):
  --dump-init F.npz     the initial weights, named as dtrun's manifest names them (0.weight, ...),
                        for experiment.model.init_file
  --dump-batches F.npz  every node's minibatches as the DataLoaders drew them: node_<i> is a
                        steps x 64 int32 array of training-set indices, -1 past a short batch,
                        for experiment.batch_order
  --init F.npz          start from these weights instead of the reference's draw
  --batches F.npz       take every node's minibatches from this file instead of its DataLoader

One CSV row per mark is appended to --csv (or printed):
  source,alg,graph,dtype,draws,seed,round,mean_top1,min_top1,max_top1,seconds

usage: dinno_reference.py --ref REF --seed S [--alg dinno|dsgd|dsgt] [--graph complete|cycle|FILE]
                          [--dtype float32|float64] [--marks 500,1000] [--draws LABEL] [--csv F] ...
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

N = 10


class Stop(Exception):
    pass


def idx(path, off, shape):
    return np.fromfile(path, dtype=np.uint8)[off:].reshape(shape)


def graph_of(spec):
    import networkx as nx

    if spec == "cycle":
        return nx.cycle_graph(N)
    if spec == "complete":
        return nx.complete_graph(N)
    edges, on = [], False
    with open(spec) as f:  # a dtrun graph.yaml: "edges:" then "- [i, j]" lines
        for line in f:
            if line.startswith("edges:"):
                on = True
            elif on and line.startswith("- ["):
                i, j = line.strip()[3:-1].split(",")
                edges.append((int(i), int(j)))
            elif on:
                break
    g = nx.Graph()
    g.add_nodes_from(range(N))
    g.add_edges_from(edges)
    return g


class Recorded(torch.utils.data.Subset):
    """A Subset that records the training-set index of every sample the DataLoader takes."""

    def __init__(self, dataset, indices, log):
        super().__init__(dataset, indices)
        self.log = log

    def __getitem__(self, k):
        self.log.append(int(self.indices[k]))
        return super().__getitem__(k)

    def __getitems__(self, ks):  # newer torch fetches a batch at once
        return [self[k] for k in ks]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--alg", default="dinno", choices=["dinno", "dsgd", "dsgt"])
    ap.add_argument("--graph", default="cycle")
    ap.add_argument("--graph-label")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--marks", default="500,1000")
    ap.add_argument("--draws", default="own", help="label of the draws in the CSV")
    ap.add_argument("--csv")
    ap.add_argument("--init")
    ap.add_argument("--batches")
    ap.add_argument("--dump-init")
    ap.add_argument("--dump-batches")
    a = ap.parse_args()
    marks = sorted(int(m) for m in a.marks.split(","))
    sys.path.insert(0, a.ref)
    from models.mnist_conv_nn import MNISTConvNet
    from optimizers.dinno import DiNNO
    from optimizers.dsgd import DSGD
    from optimizers.dsgt import DSGT
    from problems.dist_mnist_problem import DistMNISTProblem

    torch.set_num_threads(1)
    torch.set_default_tensor_type(torch.DoubleTensor)  # as experiments/dist_mnist_ex.py
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "mnist")

    def images(name, n):
        x = torch.tensor(idx(os.path.join(data, name), 16, (n, 1, 28, 28)), dtype=torch.get_default_dtype()) / 255
        return (x - 0.1307) / 0.3081

    ytr = torch.tensor(idx(os.path.join(data, "train-labels-idx1-ubyte"), 8, (60000,)), dtype=torch.long)
    yte = torch.tensor(idx(os.path.join(data, "t10k-labels-idx1-ubyte"), 8, (10000,)), dtype=torch.long)
    xtr, xte = images("train-images-idx3-ubyte", 60000), images("t10k-images-idx3-ubyte", 10000)

    torch.manual_seed(a.seed)
    base = MNISTConvNet(3, 5, 64)
    names = [k[len("seq."):] for k in base.state_dict()]  # dtrun's manifest names: the Sequential's
    if a.dump_init:
        np.savez(a.dump_init, **{n: v.detach().numpy().astype(np.float32) for n, v in zip(names, base.state_dict().values())})
    if a.init:
        got = np.load(a.init)
        missing = sorted(set(names) ^ set(got.files))
        if missing:
            sys.exit("%s: tensors %s do not match the model's %s" % (a.init, missing, names))
        base.load_state_dict({"seq." + n: torch.tensor(got[n].astype(np.float64)) for n in names})
    if a.dtype == "float32":
        base = base.float()
        torch.set_default_tensor_type(torch.FloatTensor)
        xtr, xte = xtr.float(), xte.float()
    train = torch.utils.data.TensorDataset(xtr, ytr)
    logs = [[] for _ in range(N)]
    subsets = [Recorded(train, torch.nonzero(ytr == c).reshape(-1), logs[c]) for c in range(N)]
    val = torch.utils.data.TensorDataset(xte, yte)
    conf = {"problem_name": a.alg, "train_batch_size": 64, "val_batch_size": 128, "metrics": [],
            "metrics_config": {"evaluate_frequency": 1}}
    oc = {"dinno": {"alg_name": "dinno", "rho_init": 0.5, "rho_scaling": 1.0003, "outer_iterations": 2000,
                    "primal_iterations": 2, "primal_optimizer": "adam", "persistant_primal_opt": False,
                    "primal_lr_start": 0.005, "primal_lr_finish": 0.0005, "lr_decay_type": "log", "profile": False},
          "dsgt": {"alg_name": "dsgt", "outer_iterations": 2000, "alpha": 0.005, "init_grads": True, "profile": False},
          "dsgd": {"alg_name": "dsgd", "outer_iterations": 2000, "alpha0": 0.005, "mu": 0.001, "profile": False}}[a.alg]
    graph = graph_of(a.graph)
    pr = DistMNISTProblem(graph, base, torch.nn.NLLLoss(), subsets, val, torch.device("cpu"), conf)
    steps = [0] * N
    if a.batches:  # every node's minibatches from the file, in its order
        got = np.load(a.batches)
        rows = [got["node_%d" % i] for i in range(N)]

        def from_file(i):
            def batches():
                for r in rows[i]:
                    r = torch.tensor(r[r >= 0].astype(np.int64))
                    yield xtr[r], ytr[r]
                raise Stop("%s: node %d has no more batches" % (a.batches, i))
            return batches()

        pr.train_iters = {i: from_file(i) for i in range(N)}
    opt = {"dinno": DiNNO, "dsgd": DSGD, "dsgt": DSGT}[a.alg](pr, torch.device("cpu"), oc)
    out = open(a.csv, "a") if a.csv else sys.stdout
    t0, k = time.time(), [0]

    def evaluate(at_end=False):  # called by train() before round k (evaluate_frequency 1)
        if k[0] in marks:
            accs = [pr.validate(i)[1] for i in range(N)]
            out.write("reference,%s,%s,%s,%s,%d,%d,%.4f,%.4f,%.4f,%.0f\n"
                      % (a.alg, a.graph_label or a.graph, a.dtype, a.draws, a.seed, k[0], np.mean(accs), min(accs),
                         max(accs), time.time() - t0))
            out.flush()
            if k[0] == marks[-1]:
                raise Stop()
        k[0] += 1

    pr.evaluate_metrics = evaluate
    try:
        opt.train()
    except Stop as e:
        if str(e):
            sys.exit(str(e))
    if a.dump_batches:
        arrays = {}
        for i in range(N):  # the log is flat: cut it into the DataLoader's batches, short at each epoch's end
            m, b, flat, rows = len(subsets[i]), 64, logs[i], []
            p = 0
            while p < len(flat):
                taken = min(b, m - (p % m) if (p % m) + b > m else b)
                rows.append(flat[p:p + taken] + [-1] * (b - taken))
                p += taken
            arrays["node_%d" % i] = np.array(rows, dtype=np.int32).reshape(-1, b)
        np.savez_compressed(a.dump_batches, **arrays)


if __name__ == "__main__":
    main()
