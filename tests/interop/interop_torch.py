#!/usr/bin/python3
"""interop_torch.py - checks that a GPT checkpoint written by
`attograd train --task text --save` loads into a PyTorch GPT (nanoGPT's
shape, written out below) with no renaming and no transposing, and that
PyTorch computes the same full validation loss as `attograd eval`, to 1e-4
relative. Optional: not run by `make check`; skipped (exit 0) without torch.
Use Debian's python3-torch:

    /usr/bin/python3 tests/interop/interop_torch.py                 # two small models
    /usr/bin/python3 tests/interop/interop_torch.py TEXT CKPT        # a checkpoint you trained

Without arguments it builds attograd (make), trains two small models on
examples/mill.txt (one bias-free as nanoGPT's GPT(bias=False), one with
--bias), and compares. The safetensors file is read with the safetensors
package when it is installed, else with the reference reader of
interop_numpy.py.
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("interop_torch: torch is not installed; skipped")
    sys.exit(0)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "float", "attograd")


# ---- the PyTorch GPT: nanoGPT's model.py, trimmed to what a forward needs ----

class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, bias):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        # nanoGPT's path without flash attention (Debian's torch predates it)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd, bias):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, bias):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias)
        self.attn = CausalSelfAttention(n_embd, n_head, bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.mlp = MLP(n_embd, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, bias):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, bias) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, bias),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight   # tied, as in nanoGPT

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


# ---- loading ----

def load_checkpoint(path):
    """(tensors, metadata) of a safetensors file, as torch tensors."""
    try:
        from safetensors import safe_open
        with safe_open(path, framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from interop_numpy import load_reference
        arrays, meta = load_reference(path)
        return {k: torch.from_numpy(v.copy()) for k, v in arrays.items()}, meta


def model_from(path):
    tensors, meta = load_checkpoint(path)
    weights = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
    model = GPT(int(meta["vocab_size"]), int(meta["block_size"]), int(meta["n_layer"]),
                int(meta["n_head"]), int(meta["n_embd"]), meta["bias"] == "true")
    # strict: every name and shape must be PyTorch's; no renaming, no transposing
    model.load_state_dict(weights, strict=True)
    return model.eval(), meta


def val_loss(model, meta, text_path):
    """The full validation loss: every non-overlapping window of the last 10%."""
    stoi = {c: i for i, c in enumerate(meta["vocab"])}
    text = open(text_path, encoding="utf-8").read()
    ids = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    val = ids[len(ids) * 9 // 10:]
    T = int(meta["block_size"])
    W = (len(val) - 1) // T
    total = 0.0
    with torch.no_grad():
        for i in range(0, W, 64):
            n = min(64, W - i)
            x = val[i * T:(i + n) * T].view(n, T)
            y = val[i * T + 1:(i + n) * T + 1].view(n, T)
            logits = model(x)
            total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1),
                                     reduction="sum").item()
    return total / (W * T), W


def attograd_eval(ckpt, text):
    out = subprocess.run([BIN, "eval", "--load", ckpt, "--text", text], check=True,
                         capture_output=True, text=True).stdout.strip()
    fields = dict(kv.split("=") for kv in out.split()[1:])
    return float(fields["val_loss"]), int(fields["windows"])


def compare(ckpt, text):
    model, meta = model_from(ckpt)
    ours, ours_w = attograd_eval(ckpt, text)
    theirs, w = val_loss(model, meta, text)
    rel = abs(ours - theirs) / theirs
    print("%s: attograd val_loss %.6f, PyTorch %.6f (%d windows), relative difference %.1e"
          % (os.path.basename(ckpt), ours, theirs, w, rel))
    assert w == ours_w, (w, ours_w)
    assert rel <= 1e-4, "the validation losses differ by %.2e" % rel


def main(argv):
    torch.manual_seed(0)
    if len(argv) == 3:
        compare(argv[2], argv[1])
        return 0
    subprocess.run(["make", "-s", "-C", ROOT], check=True)
    text = os.path.join(ROOT, "examples", "mill.txt")
    with tempfile.TemporaryDirectory() as tmp:
        for extra in ([], ["--bias"]):
            ckpt = os.path.join(tmp, "gpt%s.safetensors" % "".join(extra))
            subprocess.run([BIN, "train", "--task", "text", "--text", text, "--layers", "2",
                            "--heads", "2", "--dim", "32", "--seq", "32", "--steps", "150",
                            "--warmup", "10", "--lr", "3e-3", "--quiet", "--save", ckpt] + extra,
                           check=True, stdout=subprocess.DEVNULL)
            compare(ckpt, text)
    print("interop_torch: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
