#!/usr/bin/env python3
"""Independent reference for `attograd grad`: the attention layer of docs/attention-layer.md
written in numpy (forward and a hand-derived backward), and in PyTorch
(autograd) when it is installed. Optional: never part of the build or of
`make check`. Use Debian's interpreter, /usr/bin/python3 (python3-numpy,
python3-torch).

  attention_ref.py make  MODEL BATCH --dim 8 --heads 2 [--causal] --batch 2 --seq 5 --seed 1
  attention_ref.py check MODEL BATCH GRADS [--rtol 1e-4]

`check` recomputes out, attn, loss and every gradient and compares them with
the tensors attograd wrote in GRADS; exit status 1 when any differs by more
than rtol (relative, with a floor of 1% of the tensor's largest entry).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
from interop_numpy import load_reference, save_reference  # noqa: E402


def read_st(path):
    """Tensors (as float64) and metadata of a safetensors file, read with the
    reference layout's checks (tests/interop/interop_numpy.py)."""
    tensors, meta = load_reference(path)
    return {name: arr.astype(np.float64) for name, arr in tensors.items()}, meta


def write_st(path, tensors, meta=None):
    """Write float32 tensors the way the safetensors library lays them out."""
    save_reference(path, {n: np.asarray(a, dtype=np.float32) for n, a in tensors.items()}, meta)


def numpy_reference(m, x, y, heads, causal):
    """Forward with the layer's math (docs/attention-layer.md), then the backward derived by hand."""
    wq, wk, wv, wo = m["wq"], m["wk"], m["wv"], m["wo"]
    B, T, d = x.shape
    dh = d // heads

    def split(a):  # (B,T,d) -> (B,H,T,dh)
        return a.reshape(B, T, heads, dh).transpose(0, 2, 1, 3)

    def merge(a):  # (B,H,T,dh) -> (B,T,d)
        return a.transpose(0, 2, 1, 3).reshape(B, T, d)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    if causal:
        s = np.where(np.triu(np.ones((T, T), bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = merge(p @ v)
    out = o @ wo
    loss = np.mean((out - y) ** 2)

    dout = 2 * (out - y) / out.size
    g = {"grad.wo": np.einsum("btd,bte->de", o, dout)}
    do = split(dout @ wo.T)
    dp = do @ v.transpose(0, 1, 3, 2)
    dv = p.transpose(0, 1, 3, 2) @ do
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / np.sqrt(dh)
    dq = ds @ k
    dk = ds.transpose(0, 1, 3, 2) @ q
    dq, dk, dv = merge(dq), merge(dk), merge(dv)
    g["grad.wq"] = np.einsum("btd,bte->de", x, dq)
    g["grad.wk"] = np.einsum("btd,bte->de", x, dk)
    g["grad.wv"] = np.einsum("btd,bte->de", x, dv)
    g["grad.x"] = dq @ wq.T + dk @ wk.T + dv @ wv.T
    g.update({"out": out, "attn": p, "loss": np.array([loss])})
    return g


def torch_reference(m, x, y, heads, causal):
    import torch

    t = {n: torch.tensor(m[n], dtype=torch.float64, requires_grad=True) for n in ("wq", "wk", "wv", "wo")}
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    B, T, d = x.shape
    dh = d // heads

    def split(a):
        return a.reshape(B, T, heads, dh).transpose(1, 2)

    q, k, v = split(xt @ t["wq"]), split(xt @ t["wk"]), split(xt @ t["wv"])
    s = q @ k.transpose(-1, -2) / dh**0.5
    if causal:
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    p = torch.softmax(s, -1)
    out = (p @ v).transpose(1, 2).reshape(B, T, d) @ t["wo"]
    loss = torch.mean((out - torch.tensor(y)) ** 2)
    loss.backward()
    g = {"grad." + n: t[n].grad.numpy() for n in t}
    g["grad.x"] = xt.grad.numpy()
    g.update({"out": out.detach().numpy(), "attn": p.detach().numpy(), "loss": np.array([loss.item()])})
    return g


def compare(name, ref, got, rtol):
    ref = np.asarray(ref, np.float64).reshape(-1)
    got = np.asarray(got, np.float64).reshape(-1)
    if ref.shape != got.shape:
        print(f"{name}: shape {got.shape} != reference {ref.shape}")
        return False
    # relative error, with a floor of 1% of the tensor's largest entry: an
    # entry far below the tensor's scale comes out of sums that cancel, where
    # float32 round-off (about 1e-7 of the terms) is all that is left
    floor = 1e-2 * max(float(np.abs(ref).max()) if ref.size else 0.0, 1e-30)
    err = np.abs(ref - got) / np.maximum(np.abs(ref), floor)
    worst = float(err.max()) if err.size else 0.0
    ok = worst <= rtol
    print(f"  {name:8s} max rel error {worst:.2e}  {'ok' if ok else 'MISMATCH'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("model")
    mk.add_argument("batch")
    mk.add_argument("--dim", type=int, default=8)
    mk.add_argument("--heads", type=int, default=2)
    mk.add_argument("--causal", action="store_true")
    mk.add_argument("--batch-size", "--batch", dest="b", type=int, default=2)
    mk.add_argument("--seq", type=int, default=5)
    mk.add_argument("--seed", type=int, default=1)
    ck = sub.add_parser("check")
    ck.add_argument("model")
    ck.add_argument("batch")
    ck.add_argument("grads")
    ck.add_argument("--rtol", type=float, default=1e-4)
    a = ap.parse_args()

    if a.cmd == "make":
        rng = np.random.default_rng(a.seed)
        d = a.dim
        m = {n: rng.normal(0, d**-0.5, (d, d)) for n in ("wq", "wk", "wv", "wo")}
        write_st(a.model, m, {"n_heads": str(a.heads), "causal": "true" if a.causal else "false"})
        write_st(a.batch, {"x": rng.normal(size=(a.b, a.seq, d)), "y": rng.normal(size=(a.b, a.seq, d))})
        return 0

    m, meta = read_st(a.model)
    b, _ = read_st(a.batch)
    got, _ = read_st(a.grads)
    heads = int(meta["n_heads"])
    causal = meta["causal"] == "true"
    refs = [("numpy", numpy_reference)]
    try:
        import torch  # noqa: F401

        refs.append(("torch", torch_reference))
    except ImportError:
        print("(PyTorch is not installed: comparing with numpy only)")
    ok = True
    for label, fn in refs:
        print(f"{label} reference:")
        ref = fn(m, b["x"], b["y"], heads, causal)
        for name in ("out", "attn", "loss", "grad.wq", "grad.wk", "grad.wv", "grad.wo", "grad.x"):
            if name not in got:
                print(f"  {name}: missing from {a.grads}")
                ok = False
                continue
            ok &= compare(name, ref[name], got[name], a.rtol)
    print("result: " + ("agree" if ok else "DISAGREE"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
