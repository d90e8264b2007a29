"""PyTorch side of test_torch's layer cross-check. The C test writes a model's layer list (JSON),
its manifest (dt_model_manifest: name, role, offset, shape per tensor, in state_dict order), its
parameters, buffers and a batch. This script builds the same architecture from torch.nn modules,
checks that the manifest's names are the module's state_dict keys in order, loads the tensors
by the manifest, runs one training step's forward and backward (train mode: batch statistics,
running statistics moved) and the evaluation forward after it, and writes the loss, the gradient
and the buffers in dtrun's layout, and the evaluation logits.

usage: torch_layers.py IN OUT
"""
import json
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Linear(nn.Linear):
    """dtrun's linear layer also takes a C×1×1 input (after global average pooling)."""

    def forward(self, x):
        return super().forward(x.flatten(1) if x.dim() > 2 else x)


class Residual(nn.Module):
    """A block (children "0", "1", ...) plus the identity or a `downsample` projection."""

    def __init__(self, block, downsample):
        super().__init__()
        for i, m in enumerate(block):
            self.add_module(str(i), m)
        self.n = len(block)
        if downsample is not None:
            self.downsample = downsample

    def forward(self, x):
        out = x
        for i in range(self.n):
            out = getattr(self, str(i))(out)
        return out + (self.downsample(x) if hasattr(self, "downsample") else x)


def norm_of(kind, c, spec):
    eps = spec.get("eps", 1e-5)
    if kind == "batchnorm2d":
        return nn.BatchNorm2d(c, eps=eps, momentum=spec.get("momentum", 0.1))
    return nn.GroupNorm(spec["groups"], c, eps=eps)


def build(layers, shape):
    """Modules for a layer list on input shape (c, h, w); returns them and the output shape."""
    mods = []
    for s in layers:
        t = s["type"]
        c, h, w = shape
        if t == "conv2d":
            m = nn.Conv2d(c, s["out_channels"], s["kernel_size"], stride=s.get("stride", 1),
                          padding=s.get("padding", 0), bias=s.get("bias", True))
        elif t == "linear":
            m = Linear(c * h * w, s["out_features"], bias=s.get("bias", True))
        elif t == "maxpool2d":
            m = nn.MaxPool2d(s["kernel_size"], stride=s.get("stride") or s["kernel_size"])
        elif t == "avgpool2d":
            m = nn.AvgPool2d(s["kernel_size"], stride=s.get("stride") or s["kernel_size"])
        elif t == "global_avgpool":
            m = nn.AdaptiveAvgPool2d(1)
        elif t == "relu":
            m = nn.ReLU()
        elif t == "flatten":
            m = nn.Flatten()
        elif t == "dropout":
            m = nn.Dropout(s["p"])
        elif t in ("batchnorm2d", "groupnorm"):
            m = norm_of(t, c, s)
        elif t == "residual":
            block, out = build(s["layers"], shape)
            down = None
            if out != shape:
                stride = next(k for k in range(1, h + 1) if (h - 1) // k + 1 == out[1] and (w - 1) // k + 1 == out[2])
                parts = [nn.Conv2d(c, out[0], 1, stride=stride, bias=False)]
                norm = next((b for b in s["layers"] if b["type"] in ("batchnorm2d", "groupnorm")), None)
                if norm is not None:
                    parts.append(norm_of(norm["type"], out[0], norm))
                down = nn.Sequential(*parts)
            m = Residual(block, down)
        else:
            raise SystemExit("unknown layer type " + t)
        mods.append(m)
        m.eval()  # the shape only: no running statistics move
        with torch.no_grad():
            y = m(torch.zeros(2, c, h, w))
        m.train()
        shape = tuple(y.shape[1:]) if y.dim() == 4 else (y.shape[1], 1, 1)
    return mods, shape


def load_by_manifest(model, manifest, row):
    """Loads a saved dtrun row (parameters, then buffers) into model through the manifest's
    lines (name, role, offset, shape), after checking that its names are the model's state_dict
    keys in order and its shapes theirs."""
    state = model.state_dict()
    names = [m[0] for m in manifest]
    if names != list(state.keys()):
        sys.exit("manifest names differ from the state_dict's:\n  dtrun: %s\n  torch: %s" % (names, list(state.keys())))
    loaded = {}
    for name, role, off, dims in manifest:
        if role == "count":  # batch norm's num_batches_tracked: not stored
            loaded[name] = torch.tensor(0, dtype=torch.long)
            continue
        shape = [int(d) for d in dims.split("x")]
        if list(state[name].shape) != shape:
            sys.exit("%s: dtrun shape %s, torch %s" % (name, shape, list(state[name].shape)))
        n = state[name].numel()
        loaded[name] = row[int(off):int(off) + n].reshape(shape).clone()
    model.load_state_dict(loaded)


def state_row(model, manifest, size, grads=False):
    """The model's state in a saved row's layout (size floats): its parameters and buffers, or
    with grads the parameters' gradients (buffers left 0)."""
    out = torch.zeros(size)
    tensors = {n: p.grad for n, p in model.named_parameters()} if grads else model.state_dict()
    for name, role, off, _ in manifest:
        if role == "count" or name not in tensors:
            continue
        v = tensors[name].reshape(-1)
        out[int(off):int(off) + v.numel()] = v
    return out


def main():
    src, dst = sys.argv[1:3]
    torch.set_num_threads(1)
    with open(src, "rb") as f:
        n_params, n_buf, batch, c, h, w, classes, arch_len, man_len = struct.unpack("<9q", f.read(72))
        arch = json.loads(f.read(arch_len).decode())
        manifest = [line.split("\t") for line in f.read(man_len).decode().splitlines()[1:]]
        params = torch.frombuffer(bytearray(f.read(4 * n_params)), dtype=torch.float32)
        bufs = torch.frombuffer(bytearray(f.read(4 * n_buf)), dtype=torch.float32) if n_buf else torch.zeros(0)
        x = torch.frombuffer(bytearray(f.read(4 * batch * c * h * w)), dtype=torch.float32).reshape(batch, c, h, w)
        y = torch.frombuffer(bytearray(f.read(4 * batch)), dtype=torch.int32).long()
    mods, _ = build(arch, (c, h, w))
    model = nn.Sequential(*mods)
    row = torch.cat([params, bufs])  # a saved model's row: parameters, then buffers
    load_by_manifest(model, manifest, row)
    model.train()
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    loss.backward()
    grad = state_row(model, manifest, n_params + n_buf, grads=True)[:n_params]
    buf_after = state_row(model, manifest, n_params + n_buf)[n_params:]
    model.eval()
    with torch.no_grad():
        logits = model(x)
    with open(dst, "wb") as f:
        f.write(struct.pack("<d", loss.item()))
        f.write(grad.numpy().tobytes())
        f.write(buf_after.numpy().tobytes())
        f.write(logits.reshape(-1).numpy().tobytes())


if __name__ == "__main__":
    main()
