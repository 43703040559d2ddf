#!/usr/bin/env python3
"""compare_matmul.py - attograd's gemm against numpy's float32 matmul (OpenBLAS),
single-threaded, measured side by side.

Each round runs `attograd bench matmul --n N` and then numpy's a @ b at the same n
in two OpenBLAS configurations: the machine's environment as it is, and the same
with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (OpenBLAS then picks its kernel
from the CPU itself). Rounds are interleaved so a busy machine slows all of them
alike, and the one that goes first alternates. The ratio compares with the faster
numpy configuration (the honest comparison: the best OpenBLAS can do here); it is
the median over rounds of attograd / numpy within each round, which cancels load
that changes more slowly than a round. ratio_of_best compares the best round of
each (the least disturbed). Every number is printed so nothing is hidden. On a
shared machine, look at the load average it prints: other work moves single runs
by 10-30%.

numpy must actually be using OpenBLAS. Debian's numpy links libblas.so.3, which is
OpenBLAS only when libopenblas0 is installed (apt-get install libopenblas0-pthread);
with the reference BLAS it is ~30x slower and the ratio would mean nothing. This
script looks for OpenBLAS's libblas.so.3 in the Debian locations (or in the
directory given by --openblas-dir / $AG_OPENBLAS_DIR, e.g. a libopenblas0-pthread
.deb unpacked with dpkg-deb -x) and puts it first on LD_LIBRARY_PATH for numpy;
it reports which BLAS numpy loaded and refuses to compare against a non-OpenBLAS
one.

Usage (from the repository root, after `make`):
    bench/compare_matmul.py                      # n = 512, 5 rounds
    bench/compare_matmul.py --n 128 512 1024 --rounds 7
Only the standard library is needed here; numpy runs under --python
(default /usr/bin/python3, Debian's numpy). Not part of the build or of make check.
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blas import LOADED_BLAS_CODE, OPENBLAS_TUNING, find_openblas, openblas_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Timed the same way as `attograd bench matmul`: warm up, size each repetition
# to ~50 ms, report the median over repetitions. The output buffer is reused
# (attograd's bench also writes into one preallocated C).
NUMPY_CODE = LOADED_BLAS_CODE + r"""
import statistics, sys, time
import numpy as np

n, reps = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
a = (rng.random((n, n), dtype=np.float32) - 0.5)
b = (rng.random((n, n), dtype=np.float32) - 0.5)
c = np.empty((n, n), dtype=np.float32)
np.matmul(a, b, out=c)
t = time.perf_counter(); np.matmul(a, b, out=c); once = time.perf_counter() - t
calls = max(1, min(100000, int(0.05 / once) if once > 0 else 1000))
rates = []
for _ in range(reps):
    t = time.perf_counter()
    for _ in range(calls):
        np.matmul(a, b, out=c)
    dt = time.perf_counter() - t
    rates.append(2.0 * n ** 3 * calls / dt / 1e9)
print("%.3f %s" % (statistics.median(rates), loaded_blas()))
"""


def run_attograd(binary, n, reps):
    out = subprocess.run([binary, "bench", "matmul", "--n", str(n), "--threads", "1",
                          "--reps", str(reps)], check=True, capture_output=True, text=True,
                         env=dict(os.environ, AG_GEMM=os.environ.get("AG_GEMM", "auto")))
    line = out.stdout.strip().splitlines()[-1]
    fields = dict(kv.split("=", 1) for kv in line.split()[1:])
    return float(fields["gflops"])


def run_numpy(python, n, reps, openblas_dir, unset):
    out = subprocess.run([python, "-c", NUMPY_CODE, str(n), str(reps)], check=True,
                         capture_output=True, text=True,
                         env=openblas_env(os.environ, openblas_dir, unset))
    rate, blas = out.stdout.split()
    return float(rate), blas


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[512], help="matrix sizes (default 512)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--reps", type=int, default=7, help="repetitions inside each run (default 7)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "float", "attograd"),
                    help="the attograd binary (float build)")
    ap.add_argument("--python", default="/usr/bin/python3", help="a python with numpy")
    ap.add_argument("--openblas-dir", default=os.environ.get("AG_OPENBLAS_DIR"),
                    help="directory holding OpenBLAS's libblas.so.3")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit("compare_matmul: %s not found: run `make` first" % args.bin)
    if any(n < 1 or n > 8192 for n in args.n) or args.rounds < 1 or args.reps < 1:
        sys.exit("compare_matmul: --n must be 1..8192, --rounds and --reps at least 1")
    openblas = find_openblas(args.openblas_dir)

    configs = [("env", ()), ("unset", OPENBLAS_TUNING)]
    env_note = " ".join("%s=%s" % (k, os.environ[k]) for k in OPENBLAS_TUNING if k in os.environ)
    print("# %s  attograd=%s  numpy via %s  machine env: %s  load average: %.2f" % (
        datetime.date.today().isoformat(), args.bin, args.python, env_note or "(none)",
        os.getloadavg()[0]))
    summary = []
    for n in args.n:
        ag, npy = [], {name: [] for name, _ in configs}
        blas_seen = set()
        for r in range(args.rounds):
            # alternate who goes first, so neither side always meets a warmer
            # (or busier) machine
            if r % 2 == 0:
                ag.append(run_attograd(args.bin, n, args.reps))
            for name, unset in configs:
                rate, blas = run_numpy(args.python, n, args.reps, openblas, unset)
                npy[name].append(rate)
                blas_seen.add(blas)
            if r % 2 == 1:
                ag.append(run_attograd(args.bin, n, args.reps))
            print("round %d n=%d attograd=%.1f numpy[env]=%.1f numpy[unset]=%.1f" % (
                r + 1, n, ag[-1], npy["env"][-1], npy["unset"][-1]), flush=True)
        if not any("openblas" in b for b in blas_seen):
            sys.exit("compare_matmul: numpy loaded %s, not OpenBLAS: install libopenblas0-pthread "
                     "or pass --openblas-dir (see the top of this script)" % ",".join(blas_seen))
        med = {name: statistics.median(v) for name, v in npy.items()}
        best = max(med, key=med.get)
        # the ratio: median over rounds of attograd / numpy within the round,
        # which cancels load that comes and goes slower than a round
        ratio = statistics.median(a / b for a, b in zip(ag, npy[best]))
        summary.append((n, statistics.median(ag), med["env"], med["unset"], best, ratio,
                        max(ag) / max(npy[best])))
        print("# numpy BLAS: %s" % ",".join(sorted(blas_seen)))
    print("# load average after: %.2f" % os.getloadavg()[0])
    for n, a, e, u, best, ratio, ratio_max in summary:
        print("compare: op=matmul n=%d threads=1 attograd_gflops=%.1f numpy_env_gflops=%.1f "
              "numpy_unset_gflops=%.1f numpy_best=%s ratio=%.2f ratio_of_best=%.2f" % (
                  n, a, e, u, best, ratio, ratio_max))

if __name__ == "__main__":
    main()
