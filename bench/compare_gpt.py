#!/usr/bin/env python3
"""compare_gpt.py - a training step of attograd's character GPT against the same
step in PyTorch, single-threaded, measured side by side (issue 10).

The step, at the text task's defaults (layers 4, dim 128, heads 4, seq 64,
batch 12, vocabulary 65): token + position embeddings; per block
x = x + attn(ln_1(x)), x = x + mlp(ln_2(x)) with causal multi-head attention
and mlp = gelu(x W_fc) W_proj (exact erf GELU, 4x width); final layer norm;
logits through the tied token embedding; mean cross-entropy; backward;
global-norm clip at 1; AdamW (betas 0.9/0.99, weight decay 0.1 on 2-D
weights). Layer norms without bias, linears without bias (nanoGPT's
bias=False). Random token ids: the data does not change the time.

attograd runs it with `attograd bench gpt`; PyTorch with TORCH_CODE below
(torch.set_num_threads(1)). Each side reports the median time of a step after
warming up. Rounds are interleaved (the side that goes first alternates) and
the ratio is the median over rounds of torch / attograd within a round. The
PyTorch side is the fastest configuration compare_attention.py found:
OpenBLAS with its AVX-512 kernels (OPENBLAS_CORETYPE unset), one BLAS thread,
glibc told to reuse freed blocks. Also runs attograd with --threads 2 and
prints the speedup over one thread, measured in the same rounds.

--cpu also compares CPU time per step (one thread on each side): PyTorch's
from process_time around each step, attograd's from two runs of different
lengths (the difference of their CPU times over the difference of their
steps, so start-up cancels). On a busy shared machine that leaves out the
time other work held the core. --also BIN runs a second attograd binary
(say, the build before a change) in the same rounds, one thread and two.

--paired STEPS runs all three in one process instead: PyTorch's step, and
attograd's on one thread and on two (two copies of the build/gpt_pair.so that
bench/step_ab.sh makes, through ctypes), in turn, step after step, so all
three see the same moment of a shared machine. A round's ratios
are medians over its turns of the ratios within a turn. On this project's
noisy VM they vary far less from round to round than separate processes' do.
attograd then runs under the allocator settings given to PyTorch (it
allocates nothing during a step) and always from this tree.

Usage (from the repository root, after `make`):
    bench/compare_gpt.py                  # 3 rounds
    bench/compare_gpt.py --rounds 5
    bench/compare_gpt.py --torch-only     # PyTorch's step alone
    bench/compare_gpt.py --cpu --also OLD/build/float/attograd
    bench/compare_gpt.py --paired 100 --rounds 5
Only the standard library is needed here; torch runs under --python (default
/usr/bin/python3, Debian's python3-torch). Not part of the build or of make check.
"""
import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas import LOADED_BLAS_CODE, OPENBLAS_TUNING, find_openblas, openblas_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEEDUP_TARGET = 1.6
THREADS_TARGET = 1.8

TORCH_MODEL = LOADED_BLAS_CODE + r"""
import math, statistics, sys, time
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
L, C, H, T, B, V = (int(a) for a in sys.argv[1:7])
g = torch.Generator().manual_seed(1)

def normal(*shape, std=0.02):
    return (torch.randn(*shape, generator=g) * std).requires_grad_()

wte, wpe = normal(V, C), normal(T, C)
blocks = [dict(ln_1=torch.ones(C, requires_grad=True), ln_2=torch.ones(C, requires_grad=True),
               c_attn=normal(3 * C, C), c_proj=normal(C, C, std=0.02 / math.sqrt(2 * L)),
               c_fc=normal(4 * C, C), m_proj=normal(C, 4 * C, std=0.02 / math.sqrt(2 * L)))
          for _ in range(L)]
ln_f = torch.ones(C, requires_grad=True)
params = [wte, wpe, ln_f] + [p for b in blocks for p in b.values()]
decay = [p for p in params if p.dim() >= 2]
no_decay = [p for p in params if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.99))
mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
idx = torch.randint(0, V, (B, T), generator=g)
tgt = torch.randint(0, V, (B, T), generator=g)

def attn(x, b):
    q, k, v = F.linear(x, b["c_attn"]).split(C, dim=2)
    q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
    a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
    a = torch.softmax(a.masked_fill(~mask, float("-inf")), dim=-1)
    return F.linear((a @ v).transpose(1, 2).reshape(B, T, C), b["c_proj"])

def step():
    opt.zero_grad(set_to_none=True)
    x = wte[idx] + wpe
    for b in blocks:
        x = x + attn(F.layer_norm(x, (C,), b["ln_1"], None, 1e-5), b)
        h = F.gelu(F.linear(F.layer_norm(x, (C,), b["ln_2"], None, 1e-5), b["c_fc"]))
        x = x + F.linear(h, b["m_proj"])
    logits = F.layer_norm(x, (C,), ln_f, None, 1e-5) @ wte.t()
    loss = F.cross_entropy(logits.view(-1, V), tgt.view(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
"""

TORCH_CODE = TORCH_MODEL + r"""
t0 = time.perf_counter()
for _ in range(3):
    step()
once = (time.perf_counter() - t0) / 3
steps = max(10, min(300, int(3.0 / once))) if once > 0 else 300
times, cpu = [], []
for _ in range(steps):
    t0, c0 = time.perf_counter(), time.process_time()
    step()
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
print("us_per_step=%.2f cpu_us_per_step=%.2f steps=%d blas=%s" % (
    statistics.median(times) * 1e6, statistics.median(cpu) * 1e6, steps, loaded_blas()))
"""

# --paired: PyTorch's step and attograd's (through two copies of
# build/gpt_pair.so, one on one thread, one on two) in turn, in one process;
# prints the seconds of each per turn.
PAIRED_CODE = TORCH_MODEL + r"""
import ctypes
libs = {"ag1": ctypes.CDLL(sys.argv[7]), "ag2": ctypes.CDLL(sys.argv[8])}
for side, lib in libs.items():
    lib.gpt_pair_step.restype = ctypes.c_double
    if lib.gpt_pair_open(V, L, C, H, T, B, 1 if side == "ag1" else 2) != 0:
        sys.exit(1)
n = int(sys.argv[9])
for k in range(-3, n):                 # three to warm up
    t = {}
    for side in ("torch", "ag1", "ag2") if k % 2 == 0 else ("ag2", "ag1", "torch"):
        if side == "torch":
            t0 = time.perf_counter()
            step()
            t[side] = time.perf_counter() - t0
        else:
            t[side] = libs[side].gpt_pair_step()
            if t[side] < 0:
                sys.exit(1)
    if k >= 0:
        print("pair torch=%.6f ag1=%.6f ag2=%.6f" % (t["torch"], t["ag1"], t["ag2"]))
print("blas=%s" % loaded_blas())
"""

SHAPE = (4, 128, 4, 64, 12, 65)   # layers, dim, heads, seq, batch, vocabulary


def torch_env(openblas):
    env = openblas_env(dict(os.environ, MKL_NUM_THREADS="1"), openblas, OPENBLAS_TUNING)
    env["MALLOC_MMAP_THRESHOLD_"] = str(1 << 32)
    env["MALLOC_TRIM_THRESHOLD_"] = str(1 << 36)
    return env


def run_torch(python, env):
    out = subprocess.run([python, "-c", TORCH_CODE] + [str(v) for v in SHAPE], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, text=True)
    if out.returncode != 0:
        sys.exit("torch failed:\n%s" % out.stderr)
    m = re.search(r"us_per_step=([0-9.]+) cpu_us_per_step=([0-9.]+) steps=(\d+) blas=(\S+)",
                  out.stdout)
    return float(m.group(1)), float(m.group(2)), m.group(4)


def run_bench(binary, threads, steps=None):
    """One `bench gpt` run: the fields of its line."""
    L, C, H, T, B, _ = SHAPE
    cmd = [binary, "bench", "gpt", "--layers", str(L), "--dim", str(C), "--heads", str(H),
           "--seq", str(T), "--batch", str(B), "--threads", str(threads)]
    if steps:
        cmd += ["--steps", str(steps)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = p.communicate()
    if p.returncode != 0:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), stderr))
    line = [l for l in stdout.splitlines() if l.startswith("bench:")][-1]
    return dict(kv.split("=", 1) for kv in line.split()[1:])


def run_attograd(binary, threads, cpu=False):
    """us per step (the bench's median), and with cpu the CPU us per step."""
    if not cpu:
        fields = run_bench(binary, threads)
        return float(fields["us_per_step"]), None, fields
    short, long_ = 10, 60
    used = []
    for steps in (short, long_):
        before = os.times()
        fields = run_bench(binary, threads, steps)
        after = os.times()
        used.append(after.children_user + after.children_system -
                    before.children_user - before.children_system)
    return float(fields["us_per_step"]), (used[1] - used[0]) / (long_ - short) * 1e6, fields


def build_pair_libs():
    """build/gpt_pair.so (bench/gpt_pair.c with a position-independent build
    of the library in it, made by bench/step_ab.sh) and a copy: two
    libraries, two thread pools."""
    subprocess.run([os.path.join(ROOT, "bench", "step_ab.sh"), ROOT], check=True)
    libs = [os.path.join(ROOT, "build", name) for name in ("gpt_pair.so", "gpt_pair2.so")]
    shutil.copyfile(libs[0], libs[1])
    return libs


def run_paired(python, env, libs, steps):
    """One process of PAIRED_CODE: per turn, the seconds of each side."""
    argv = [python, "-c", PAIRED_CODE] + [str(v) for v in SHAPE] + libs + [str(steps)]
    out = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                         text=True)
    if out.returncode != 0:
        sys.exit("paired run failed:\n%s" % out.stderr)
    lines = out.stdout.splitlines()
    pairs = [{k: float(v) for k, v in (kv.split("=") for kv in l.split()[1:])}
             for l in lines if l.startswith("pair ")]
    blas = [l.split("=", 1)[1] for l in lines if l.startswith("blas=")][0]
    return pairs, blas


def paired(args, env):
    """--paired: rounds of processes that alternate the three steps."""
    libs = build_pair_libs()
    runs = {"ratio": [], "threads": []}
    for r in range(args.rounds):
        pairs, blas = run_paired(args.python, env, libs, args.paired)
        ratio = statistics.median(p["torch"] / p["ag1"] for p in pairs)
        threads = statistics.median(p["ag1"] / p["ag2"] for p in pairs)
        runs["ratio"].append(ratio)
        runs["threads"].append(threads)
        med = {k: statistics.median(p[k] for p in pairs) * 1e6 for k in ("torch", "ag1", "ag2")}
        least = {k: min(p[k] for p in pairs) * 1e6 for k in ("torch", "ag1", "ag2")}
        blas = ",".join(os.path.basename(b) for b in blas.split(","))
        print("round %d (load %s, %d steps each, torch on %s): median (least) torch %.0f (%.0f) "
              "us, attograd %.0f (%.0f) us, 2 threads %.0f (%.0f) us; per step: x%.2f faster "
              "than torch, threads x%.2f" %
              (r + 1, open("/proc/loadavg").read().split()[0], len(pairs), blas, med["torch"],
               least["torch"], med["ag1"], least["ag1"], med["ag2"], least["ag2"], ratio, threads),
              flush=True)
    print("median of rounds: x%.2f faster than torch (target %.1f), 2 threads x%.2f (target %.1f)"
          % (statistics.median(runs["ratio"]), SPEEDUP_TARGET, statistics.median(runs["threads"]),
             THREADS_TARGET))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "float", "attograd"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--openblas-dir", default=os.environ.get("AG_OPENBLAS_DIR"))
    ap.add_argument("--torch-only", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="compare CPU time per step too")
    ap.add_argument("--also", help="a second attograd binary, run in the same rounds")
    ap.add_argument("--paired", type=int, metavar="STEPS",
                    help="alternate the steps in one process, STEPS of each per round")
    args = ap.parse_args()
    if args.paired is not None:
        if args.paired < 1:
            ap.error("--paired: STEPS must be 1 or more")
        if args.also or args.cpu or args.torch_only or args.bin != ap.get_default("bin"):
            ap.error("--paired times this tree's library: not with --also, --cpu, --torch-only "
                     "or --bin")
    openblas = find_openblas(args.openblas_dir)
    env = torch_env(openblas)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("# OPENBLAS_CORETYPE for torch: %s" % env.get("OPENBLAS_CORETYPE", "unset (detected)"))
    print("# %s, load average %s, shape layers,dim,heads,seq,batch,vocab = %s" %
          (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), load,
           ",".join(map(str, SHAPE))))
    if args.paired is not None:
        paired(args, env)
        return
    keys = ["ratio", "threads", "cpu_ratio", "also_ratio", "also_threads", "also_cpu_ratio"]
    got_all = {k: [] for k in keys}
    for r in range(args.rounds):
        sides = ["torch", "ag"] if r % 2 == 0 else ["ag", "torch"]
        if args.also:
            sides.insert(1 if r % 2 == 0 else 0, "also")
        got = {}
        for side in sides:
            if side == "torch":
                got["torch"], got["torch_cpu"], blas = run_torch(args.python, env)
            elif not args.torch_only:
                binary = args.bin if side == "ag" else args.also
                got[side], got[side + "_cpu"], fields = run_attograd(binary, 1, args.cpu)
                got[side + "2"], _, _ = run_attograd(binary, 2)
                if side == "ag":
                    ours = fields
        line = "round %d (load %s): torch %.0f us" % (r + 1, open("/proc/loadavg").read().split()[0],
                                                     got["torch"])
        if args.cpu:
            line += " (cpu %.0f)" % got["torch_cpu"]
        if not args.torch_only:
            for side, pre in (("ag", ""), ("also", "also_")):
                if side not in got:
                    continue
                got_all[pre + "ratio"].append(got["torch"] / got[side])
                got_all[pre + "threads"].append(got[side] / got[side + "2"])
                line += "; %s %.0f us" % ("attograd" if side == "ag" else "also", got[side])
                if args.cpu:
                    got_all[pre + "cpu_ratio"].append(got["torch_cpu"] / got[side + "_cpu"])
                    line += " (cpu %.0f, x%.2f)" % (got[side + "_cpu"], got_all[pre + "cpu_ratio"][-1])
                line += ", 2 threads %.0f us: x%.2f faster than torch, threads x%.2f" % (
                    got[side + "2"], got_all[pre + "ratio"][-1], got_all[pre + "threads"][-1])
            line += " [gflops %s, peak_bytes %s, allocs_per_step %s]" % (
                ours.get("gflops"), ours.get("peak_bytes"), ours.get("allocs_per_step"))
        print(line, flush=True)
    for pre, name in (("", "attograd"), ("also_", "also")):
        if got_all[pre + "ratio"]:
            text = "median %s: x%.2f faster than torch (target %.1f), 2 threads x%.2f (target %.1f)" % (
                name, statistics.median(got_all[pre + "ratio"]), SPEEDUP_TARGET,
                statistics.median(got_all[pre + "threads"]), THREADS_TARGET)
            if got_all[pre + "cpu_ratio"]:
                text += ", CPU time x%.2f" % statistics.median(got_all[pre + "cpu_ratio"])
            print(text)


if __name__ == "__main__":
    main()
