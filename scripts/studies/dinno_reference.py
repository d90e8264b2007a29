#!/usr/bin/env python3
"""The reference's DiNNO on the DiNNO paper's MNIST figure config, for the comparison in
optimizers/cadmm/README.md ("Against the reference code").

It runs javieryu/nn_distributed_training's own optimizers/dinno.py, problems/dist_mnist_problem.py
and models/mnist_conv_nn.py unchanged (a checkout at REF; measured at commit 6a0cfc7), on
experiments/dist_mnist_PAPER.yaml's problem1 settings: 10 nodes on a cycle, one digit per node,
batch 64, 2000 rounds of Adam primal steps. Three things differ from its own driver
(experiments/dist_mnist_ex.py), none of them in the algorithm: MNIST is read from dtrun's
data/mnist IDX files (normalised with 0.1307/0.3081 as torchvision's transform does) instead of
torchvision, the cycle is built without networkx, and the mean top-1 over the nodes on the 10,000
test images is printed after the given rounds (the reference evaluates every 20).

The model is drawn in float64 after torch.manual_seed(SEED), as the reference does (it sets
torch.DoubleTensor); with float32 the same weights are rounded and everything after runs in
float32 (same initial weights, same minibatches), to measure what float32 arithmetic changes.

usage: dinno_reference.py REF SEED float64|float32 ROUND [ROUND ...]
  e.g. for s in 0 1 2; do scripts/studies/dinno_reference.py ~/nn_distributed_training $s float32 500 1000; done
"""
import os
import sys
import time

import numpy as np
import torch


def idx(path, off, shape):
    return np.fromfile(path, dtype=np.uint8)[off:].reshape(shape)


def main():
    ref, seed, dt, marks = sys.argv[1], int(sys.argv[2]), sys.argv[3], [int(a) for a in sys.argv[4:]]
    sys.path.insert(0, ref)
    from models.mnist_conv_nn import MNISTConvNet
    from optimizers.dinno import DiNNO
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
    n = 10

    class Cycle:
        def number_of_nodes(self):
            return n

        def neighbors(self, i):
            return [(i + 1) % n, (i - 1) % n]

    torch.manual_seed(seed)
    base = MNISTConvNet(3, 5, 64)
    if dt == "float32":
        base = base.float()
        torch.set_default_tensor_type(torch.FloatTensor)
        xtr, xte = xtr.float(), xte.float()
    train = torch.utils.data.TensorDataset(xtr, ytr)
    subsets = [torch.utils.data.Subset(train, torch.nonzero(ytr == c).reshape(-1)) for c in range(n)]
    val = torch.utils.data.TensorDataset(xte, yte)
    conf = {"problem_name": "dinno", "train_batch_size": 64, "val_batch_size": 128, "metrics": [],
            "metrics_config": {"evaluate_frequency": 20}}
    oc = {"alg_name": "dinno", "rho_init": 0.5, "rho_scaling": 1.0003, "outer_iterations": 2000, "primal_iterations": 2,
          "primal_optimizer": "adam", "persistant_primal_opt": False, "primal_lr_start": 0.005,
          "primal_lr_finish": 0.0005, "lr_decay_type": "log", "profile": False}
    pr = DistMNISTProblem(Cycle(), base, torch.nn.NLLLoss(), subsets, val, torch.device("cpu"), conf)
    opt = DiNNO(pr, torch.device("cpu"), oc)
    t0 = time.time()
    for k in range(max(marks) + 1):
        if k in marks:  # after k rounds, as the reference's evaluation at iteration k
            accs = [pr.validate(i)[1] for i in range(n)]
            print("seed %d %s round %d mean_top1 %.4f min %.4f max %.4f (%.0f s)"
                  % (seed, dt, k, np.mean(accs), min(accs), max(accs), time.time() - t0), flush=True)
            if k == max(marks):
                break
        # DiNNO.train's round (optimizers/dinno.py), its evaluation left out
        ths = {i: torch.nn.utils.parameters_to_vector(pr.models[i].parameters()).clone().detach() for i in range(n)}
        opt.rho *= opt.rho_scaling
        for i in range(n):
            thj = torch.stack([ths[j] for j in pr.graph.neighbors(i)])
            opt.duals[i] += opt.rho * torch.sum(ths[i] - thj, dim=0)
            opt.primal_update(i, (thj + ths[i]) / 2.0, k)


if __name__ == "__main__":
    main()
