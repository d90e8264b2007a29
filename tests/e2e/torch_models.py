"""A run's saved model in PyTorch (dtrun.torch_models.from_run) evaluates the test set as dtrun did:
node NODE's loss and top-1 accuracy at the run's last evaluation, from the run's results CSV,
against the PyTorch module's on the same images with the same normalisation (the run's
config.yaml: experiment.normalize), in eval mode.

usage: torch_models.py RUN:PROBLEM:NODE...    (a line each; exit 1 when one differs)
"""
import csv
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import yaml

import dtrun.torch_models as tm


def test_images(exp):
    """The run's test images (N x C x H x W, normalised) and labels."""
    d = exp["data_dir"]
    mean, std = np.array(exp["normalize"]["mean"], np.float32), np.array(exp["normalize"]["std"], np.float32)
    if exp["dataset"] == "cifar10":
        for where in (d, os.path.join(d, "cifar-10-batches-bin")):  # the folder, or the root it unpacks into
            if os.path.exists(os.path.join(where, "test_batch.bin")):
                d = where
        raw = np.fromfile(os.path.join(d, "test_batch.bin"), np.uint8).reshape(-1, 3073)
        y, x = raw[:, 0].astype(np.int64), raw[:, 1:].reshape(-1, 3, 32, 32)
    else:
        x = np.fromfile(os.path.join(d, "t10k-images-idx3-ubyte"), np.uint8, offset=16).reshape(-1, 1, 28, 28)
        y = np.fromfile(os.path.join(d, "t10k-labels-idx1-ubyte"), np.uint8, offset=8).astype(np.int64)
    x = (x.astype(np.float32) / 255 - mean[None, :, None, None]) / std[None, :, None, None]
    return torch.from_numpy(x), torch.from_numpy(y)


def check(run, problem, node):
    with open(os.path.join(run, "config.yaml")) as f:
        exp = yaml.safe_load(f)["experiment"]
    rows = [r for r in csv.DictReader(open(os.path.join(run, problem + "_results.csv"))) if int(r["node"]) == node]
    last = rows[-1]
    model = tm.from_run(run, problem, node).eval()
    x, y = test_images(exp)
    with torch.no_grad():
        logp = F.log_softmax(model(x).double(), dim=1)
    loss = F.nll_loss(logp, y).item()
    acc = (logp.argmax(1) == y).double().mean().item()
    want_loss, want_acc = float(last["validation_loss"]), float(last["top1_accuracy"])
    same = abs(loss - want_loss) <= 1e-4 * max(1.0, abs(want_loss)) and abs(acc - want_acc) <= 1.5 / len(y)
    print("%s %s node %d round %s: dtrun loss %.6f top-1 %.4f, PyTorch loss %.6f top-1 %.4f: %s" %
          ((exp.get("model") or {}).get("name", "default"), problem, node, last["round"], want_loss, want_acc, loss, acc,
           "same" if same else "DIFFERENT"))
    return same


def main():
    torch.set_num_threads(1)
    results = []
    for spec in sys.argv[1:]:
        run, problem, node = spec.rsplit(":", 2)
        results.append(check(run, problem, int(node)))
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
