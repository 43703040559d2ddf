#!/usr/bin/env python3
"""compare_gpt_ops.py - the transformer block's own ops (layernorm, gelu, relu,
dropout) in attograd against PyTorch, single-threaded, on the GPT's shapes
(768 rows: batch 12 x 64 positions; C = 128, the MLP 4C = 512), measured side
by side.

attograd: bench/gpt_ops.c (build it first, see its header), which prints the
median forward and backward time of each op for 1 and 2 threads. PyTorch: the
same ops in TORCH_CODE below (F.layer_norm with a weight and no bias, F.gelu,
F.relu, F.dropout p = 0.1 in training mode), forward = the op's call on an
input that requires a gradient, backward = y.backward(dy), medians.
Rounds alternate which side goes first; the ratio is torch / attograd per
round, its median printed. PyTorch runs in compare_attention.py's `best`
configuration (freed blocks reused rather than returned to the kernel).

Usage (from the repository root):
    cc -O2 -Iinclude -Isrc bench/gpt_ops.c build/float/libattograd.a -lm -lpthread \\
       -o build/gpt_ops
    bench/compare_gpt_ops.py [--rounds 5]
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas import find_openblas  # noqa: E402
from compare_attention import torch_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["layernorm", "gelu", "relu", "dropout"]

TORCH_CODE = r"""
import statistics, sys, time
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
reps = int(sys.argv[1])
g = torch.Generator().manual_seed(1)
w = (1 + 0.1 * torch.randn(128, generator=g)).requires_grad_()
ops = {
    "layernorm": (128, lambda x: F.layer_norm(x, (128,), w, None, 1e-5)),
    "gelu": (512, F.gelu),
    "relu": (512, F.relu),
    "dropout": (128, lambda x: F.dropout(x, 0.1, training=True)),
}
for name, (cols, f) in ops.items():
    x = torch.randn(768, cols, generator=g).requires_grad_()
    dy = torch.randn(768, cols, generator=g)
    fwd, bwd = [], []
    for r in range(reps + 3):
        t0 = time.perf_counter()
        y = f(x)
        t1 = time.perf_counter()
        y.backward(dy)
        t2 = time.perf_counter()
        if r >= 3:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    print("torch: op=%s forward_us=%.1f backward_us=%.1f" % (
        name, 1e6 * statistics.median(fwd), 1e6 * statistics.median(bwd)))
"""


def parse(text, pattern):
    """{(op, threads): (forward_us, backward_us)} from the lines of one side."""
    out = {}
    for m in re.finditer(pattern, text):
        d = m.groupdict()
        out[(d["op"], int(d.get("threads") or 1))] = (float(d["f"]), float(d["b"]))
    return out


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       check=False)
    if p.returncode != 0:
        sys.exit("%s failed:\n%s" % (cmd[0], p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "gpt_ops"))
    ap.add_argument("--python", default="/usr/bin/python3")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit("%s not found: build it first (see this script's header)" % args.bin)
    env = torch_env("best", find_openblas(os.environ.get("AG_OPENBLAS_DIR")))
    ours_re = (r"bench: op=(?P<op>\w+) shape=\S+ threads=(?P<threads>\d+) "
               r"forward_us=(?P<f>[0-9.]+) backward_us=(?P<b>[0-9.]+)")
    torch_re = r"torch: op=(?P<op>\w+) forward_us=(?P<f>[0-9.]+) backward_us=(?P<b>[0-9.]+)"
    print("date %s, load average %s" % (datetime.datetime.now().isoformat(timespec="minutes"),
                                        " ".join(open("/proc/loadavg").read().split()[:3])))
    ours, theirs = [], []
    for r in range(args.rounds):
        sides = [lambda: ours.append(parse(run([args.bin, str(args.reps)]), ours_re)),
                 lambda: theirs.append(parse(run([args.python, "-c", TORCH_CODE, str(args.reps)],
                                                 env), torch_re))]
        for side in sides if r % 2 == 0 else sides[::-1]:
            side()
        line = "round %d" % (r + 1)
        for op in OPS:
            a, t = sum(ours[-1][(op, 1)]), sum(theirs[-1][(op, 1)])
            line += "  %s %.0f/%.0f us" % (op, a, t)
        print(line + "  (attograd/torch, forward + backward)", flush=True)
    print()
    print("| op | shape | attograd fwd | bwd | threads=2 fwd | bwd | torch fwd | bwd | torch / attograd |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for op in OPS:
        med = lambda runs, key, k: statistics.median(run_[key][k] for run_ in runs)  # noqa: E731
        ratio = statistics.median(sum(t[(op, 1)]) / sum(a[(op, 1)]) for a, t in zip(ours, theirs))
        print("| %s | 768x%d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f |" % (
            op, 128 if op in ("layernorm", "dropout") else 512, med(ours, (op, 1), 0),
            med(ours, (op, 1), 1), med(ours, (op, 2), 0), med(ours, (op, 2), 1),
            med(theirs, (op, 1), 0), med(theirs, (op, 1), 1), ratio))


if __name__ == "__main__":
    main()
