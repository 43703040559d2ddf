#!/usr/bin/python3
"""interop_attend.py - checks that `attograd attend --out` writes the
attention weights PyTorch computes: a trained checkpoint is loaded into
nanoGPT's model (interop_torch.py's, strict names and layouts), each block's
softmax weights are captured during a forward pass of the same prompt, and
every weight must equal attograd's to 1e-5. Optional: not run by `make
check` (which holds attend --out to a plain computation in C,
tests/test_attend.c); skipped (exit 0) without torch. Use Debian's
python3-torch:

    /usr/bin/python3 tests/interop/interop_attend.py              # two small models of mill.txt
    /usr/bin/python3 tests/interop/interop_attend.py CKPT PROMPT  # a checkpoint you trained

Without arguments it builds attograd (make), trains two small models on
examples/mill.txt (without and with --bias) and compares prompts of a few
lengths, the longest beyond the context. The --out file is read with the
plain numpy reader of interop_numpy.py (no safetensors package needed).
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("interop_attend: torch is not installed; skipped")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interop_torch  # noqa: E402  (the PyTorch GPT and the checkpoint loader)
from interop_numpy import load_reference  # noqa: E402

ROOT = interop_torch.ROOT
BIN = interop_torch.BIN


def capture_attention(model):
    """Make every block's attention keep its softmax weights in .att."""
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        self.att = att.detach()
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)
    for block in model.transformer.h:
        block.attn.forward = forward.__get__(block.attn)


def compare(ckpt, prompt, tmp):
    model, meta = interop_torch.model_from(ckpt)
    capture_attention(model)
    out = os.path.join(tmp, "attn.safetensors")
    subprocess.run([BIN, "attend", "--load", ckpt, "--prompt", prompt, "--out", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    arrays, st_meta = load_reference(out)
    attn, ids = arrays["attn"], arrays["ids"]
    stoi = {c: i for i, c in enumerate(meta["vocab"])}
    T = min(len(prompt), int(meta["block_size"]))
    want_ids = [stoi[c] for c in prompt[:T]]
    assert attn.dtype.name == "float32" and ids.dtype.name == "int64", (attn.dtype, ids.dtype)
    assert list(ids) == want_ids, (list(ids), want_ids)
    assert st_meta["prompt"] == prompt[:T], st_meta
    with torch.no_grad():
        model(torch.tensor([want_ids], dtype=torch.long))
    theirs = torch.stack([b.attn.att[0] for b in model.transformer.h]).numpy()
    assert attn.shape == theirs.shape, (attn.shape, theirs.shape)
    worst = float(abs(attn.astype("float64") - theirs.astype("float64")).max())
    print("%s, %d characters: %d weights, largest difference from PyTorch %.1e"
          % (os.path.basename(ckpt), T, attn.size, worst))
    assert worst <= 1e-5, "attend --out differs from PyTorch by %.2e" % worst


def main(argv):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        if len(argv) == 3:
            compare(argv[1], argv[2], tmp)
            print("interop_attend: ok")
            return 0
        subprocess.run(["make", "-s", "-C", ROOT], check=True)
        text = os.path.join(ROOT, "examples", "mill.txt")
        prompts = ["M", "MARGERY:\nGood day", "MARGERY:\nThe wheel goes round, and the bread is good."]
        for extra in ([], ["--bias"]):
            ckpt = os.path.join(tmp, "gpt%s.safetensors" % "".join(extra))
            subprocess.run([BIN, "train", "--task", "text", "--text", text, "--layers", "2",
                            "--heads", "2", "--dim", "32", "--seq", "32", "--steps", "150",
                            "--warmup", "10", "--lr", "3e-3", "--quiet", "--save", ckpt] + extra,
                           check=True, stdout=subprocess.DEVNULL)
            for prompt in prompts:
                compare(ckpt, prompt, tmp)
    print("interop_attend: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
