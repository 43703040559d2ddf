"""blas.py - what the comparison scripts (compare_matmul.py, compare_attention.py)
share about BLAS: where an OpenBLAS build lives, the environment that runs numpy
or PyTorch on it, and the code that reports which BLAS a child process loaded.
numpy and PyTorch are compared against OpenBLAS, never the reference BLAS Debian
may have installed."""
import os

OPENBLAS_DIRS = [
    "/usr/lib/x86_64-linux-gnu/openblas-pthread",
    "/usr/lib/x86_64-linux-gnu/openblas-serial",
    "/usr/lib/x86_64-linux-gnu/openblas-openmp",
    "/usr/lib/aarch64-linux-gnu/openblas-pthread",
]

# Set in this machine's environment; unset, OpenBLAS picks its kernel from the CPU.
OPENBLAS_TUNING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# Put in front of a child script: loaded_blas() names the BLAS libraries the
# child has mapped, comma-separated ("none" when there is none).
LOADED_BLAS_CODE = r"""
def loaded_blas():
    with open("/proc/self/maps") as maps:
        libs = {l.split()[-1] for l in maps if "blas" in l.lower() and "/" in l}
    return ",".join(sorted(libs)) or "none"
"""


def find_openblas(explicit):
    """The directory holding OpenBLAS's libblas.so.3: explicit first, then
    Debian's usual places; None when there is none."""
    for d in ([explicit] if explicit else []) + OPENBLAS_DIRS:
        if d and os.path.exists(os.path.join(d, "libblas.so.3")):
            return d
    return None


def openblas_env(base, openblas_dir, unset=()):
    """A copy of base for a child on one BLAS thread: openblas_dir (if any)
    first on LD_LIBRARY_PATH, and the variables named in unset removed."""
    env = dict(base, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if openblas_dir:
        rest = env.get("LD_LIBRARY_PATH")
        # no trailing ':' when there is no rest: an empty entry means the current directory
        env["LD_LIBRARY_PATH"] = openblas_dir + (os.pathsep + rest if rest else "")
    for k in unset:
        env.pop(k, None)
    # On a VM that hides its CPU model OpenBLAS detects "Prescott" (OPENBLAS_VERBOSE=2
    # says so) and runs its slowest kernels; AG_OPENBLAS_CORETYPE names the real core
    # (e.g. Cooperlake, SkylakeX, Zen) for every comparison script at once.
    coretype = os.environ.get("AG_OPENBLAS_CORETYPE")
    if coretype and "OPENBLAS_CORETYPE" in unset:
        env["OPENBLAS_CORETYPE"] = coretype
    return env
