#!/usr/bin/env python3
"""compare_long.py - long sequences (issue 11): a causal training step of the
attention layer at B=1, d=256, H=8 for T = 256 .. 16384, attograd against
PyTorch where PyTorch fits in memory, one thread each, interleaved.

For every T, each round runs `attograd bench attention --batch 1 --seq T
--dim 256 --heads 8 --causal` and the same step in PyTorch (compare_attention.py's
code, with scores above the diagonal set to -inf before the softmax), the
side that goes first alternating. Each side
reports its median step time; the script also takes each process's peak
resident memory from the kernel (wait4), so both sides' memory is measured
the same way, and prints attograd's own peak_bytes (the tape's high-water
mark plus parameters, gradients and Adam's state). Times are given as wall
time and as CPU time per step; the table's ratio uses CPU time, which on a
busy shared machine leaves out the time other work held the core. At the 4096 point it also
runs attograd with --threads 2 and, with --also BIN, a second attograd
binary (an older build, say) in the same rounds.

PyTorch keeps several (B,H,T,T) tensors; it is skipped (and says so) where
six of them would take more than half of the memory the machine has free
(MemAvailable), so as not to push other work on a shared machine out of
memory. Its configuration is compare_attention.py's `best` one (OpenBLAS
with its AVX-512 kernels, freed blocks kept by malloc), which also keeps its
resident memory high.

Writes bench/long_context.tsv (medians, one row per T) for long_context.gp,
which draws bench/long_context.png:

    bench/compare_long.py --rounds 3
    gnuplot bench/long_context.gp

Only the standard library is needed here; torch runs under --python (default
/usr/bin/python3, Debian's python3-torch). Not part of the build or of make check.
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas import find_openblas  # noqa: E402
from compare_attention import TORCH_CODE, parse_torch, torch_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

B, D, H = 1, 256, 8
SEQS = [256, 512, 1024, 2048, 4096, 8192, 16384]
THREADS_AT = 4096

def run_measured(cmd, env=None):
    """Run cmd, return (stdout, peak resident bytes) or exit on failure."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), err))
    return out, usage.ru_maxrss * 1024


def steps_for(T):
    """Timed steps: about a second's worth at short T, three at long T."""
    return 3 if T >= 4096 else 5 if T >= 1024 else 0


def run_attograd(binary, T, threads=1):
    cmd = [binary, "bench", "attention", "--batch", str(B), "--seq", str(T), "--dim", str(D),
           "--heads", str(H), "--causal", "--threads", str(threads)]
    if steps_for(T):
        cmd += ["--steps", str(steps_for(T))]
    out, rss = run_measured(cmd)
    fields = dict(kv.split("=", 1) for kv in out.split()[1:])
    fields["rss_bytes"] = rss
    return fields


def run_torch(python, T, env):
    out, rss = run_measured([python, "-c", TORCH_CODE, str(B), str(T), str(D), str(H), "1",
                             str(steps_for(T) or 5)], env)
    return dict(parse_torch(out), rss_bytes=rss)


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def torch_fits(T):
    return 6 * B * H * T * T * 4 < mem_available() / 2


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seq", type=int, nargs="*", default=SEQS, help="the T values")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "float", "attograd"))
    ap.add_argument("--also", help="a second attograd binary, run at T=%d too" % THREADS_AT)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--openblas-dir", default=os.environ.get("AG_OPENBLAS_DIR"))
    ap.add_argument("--out", default=os.path.join(HERE, "long_context.tsv"))
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit("%s not found: run make first" % args.bin)
    openblas = find_openblas(args.openblas_dir)
    env = torch_env("best", openblas)

    print("date %s, load average %s, B=%d d=%d H=%d causal, one thread" % (
        datetime.datetime.now().isoformat(timespec="minutes"), load(), B, D, H))
    print("torch: OpenBLAS from %s" % openblas if openblas else "torch: no OpenBLAS found")
    ours = {T: [] for T in args.seq}
    theirs = {T: [] for T in args.seq}
    extra = {"threads=2": [], "also": []}
    blas = "?"
    for r in range(args.rounds):
        for i, T in enumerate(args.seq):
            with_torch = not args.no_torch and torch_fits(T)
            runs = [("attograd", lambda: run_attograd(args.bin, T))]
            if with_torch:
                runs.append(("torch", lambda: run_torch(args.python, T, env)))
            if T == THREADS_AT:
                runs.append(("threads=2", lambda: run_attograd(args.bin, T, threads=2)))
                if args.also:
                    runs.append(("also", lambda: run_attograd(args.also, T)))
            if (r + i) % 2:
                runs.reverse()
            got = {name: fn() for name, fn in runs}
            a = got["attograd"]
            ours[T].append(a)
            line = "round %d  T=%-6d attograd %11.1f us (CPU %11.1f) peak %6.1f MB rss %6.1f MB" % (
                r + 1, T, float(a["us_per_step"]), float(a["cpu_us_per_step"]),
                float(a["peak_bytes"]) / 1e6, a["rss_bytes"] / 1e6)
            if "torch" in got:
                t = got["torch"]
                theirs[T].append(t)
                blas = t["blas"]
                line += "  torch %11.1f us (CPU %11.1f) rss %6.0f MB (x%.2f, CPU x%.2f)" % (
                    t["us_per_step"], t["cpu_us_per_step"], t["rss_bytes"] / 1e6,
                    t["us_per_step"] / float(a["us_per_step"]),
                    t["cpu_us_per_step"] / float(a["cpu_us_per_step"]))
            elif not args.no_torch:
                line += "  torch skipped (6 (T,T) tensors > half of MemAvailable)"
            # two threads save wall time; an older build is compared in CPU time
            for name, key in (("threads=2", "us_per_step"), ("also", "cpu_us_per_step")):
                if name in got:
                    mine, other = float(a[key]), float(got[name][key])
                    extra[name].append((mine, other))
                    line += "  %s %.1f us (x%.2f)" % (name, other, mine / other)
            print(line, flush=True)
    print("torch's BLAS: %s; load average at the end %s" % (blas, load()))
    print()
    print("| T | attograd ms/step | CPU ms/step | GFLOPS (CPU) | peak_bytes (MB) | RSS (MB) "
          "| torch ms/step | CPU ms/step | torch RSS (MB) | torch / attograd (CPU) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for T in args.seq:
        med = lambda xs, k: statistics.median(float(x[k]) for x in xs)
        a_us, a_cpu = med(ours[T], "us_per_step"), med(ours[T], "cpu_us_per_step")
        a_gf = statistics.median(float(x["gflops"]) * float(x["us_per_step"]) /
                                 float(x["cpu_us_per_step"]) for x in ours[T])
        a_peak, a_rss = med(ours[T], "peak_bytes"), med(ours[T], "rss_bytes")
        if theirs[T]:
            t_us, t_cpu = med(theirs[T], "us_per_step"), med(theirs[T], "cpu_us_per_step")
            t_rss = med(theirs[T], "rss_bytes")
            ratio = statistics.median(float(t["cpu_us_per_step"]) / float(x["cpu_us_per_step"])
                                      for t, x in zip(theirs[T], ours[T]))
            tcols = "%.1f | %.1f | %.0f | %.1f" % (t_us / 1e3, t_cpu / 1e3, t_rss / 1e6, ratio)
        else:
            t_us = t_cpu = t_rss = float("nan")
            tcols = "- | - | - | -"
        print("| %d | %.1f | %.1f | %.1f | %.1f | %.0f | %s |" % (
            T, a_us / 1e3, a_cpu / 1e3, a_gf, a_peak / 1e6, a_rss / 1e6, tcols))
        rows.append((T, a_us, a_cpu, a_gf, a_peak, a_rss, t_us, t_cpu, t_rss))
    for name, label in (("threads=2", "one thread's wall time over two threads'"),
                        ("also", "--also's CPU time over --bin's")):
        if extra[name]:
            print("T=%d: %s x%.2f (median of per-round ratios; %s)" % (
                THREADS_AT, label, statistics.median(other / mine for mine, other in extra[name])
                if name == "also" else statistics.median(mine / other for mine, other in extra[name]),
                ", ".join("%.0f/%.0f us" % p for p in extra[name])))
    with open(args.out, "w") as f:
        f.write("# T\tattograd_us\tattograd_cpu_us\tattograd_gflops_cpu\tattograd_peak_bytes\t"
                "attograd_rss_bytes\ttorch_us\ttorch_cpu_us\ttorch_rss_bytes\n")
        for row in rows:
            f.write("\t".join("NaN" if v != v else "%g" % v for v in row) + "\n")
    print("wrote %s" % args.out)


if __name__ == "__main__":
    main()
