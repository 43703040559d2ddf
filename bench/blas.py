"""blas.py - where an OpenBLAS build lives, shared by the comparison scripts
(compare_matmul.py, compare_attention.py): numpy and PyTorch are compared
against OpenBLAS, never the reference BLAS Debian may have installed."""
import os

OPENBLAS_DIRS = [
    "/usr/lib/x86_64-linux-gnu/openblas-pthread",
    "/usr/lib/x86_64-linux-gnu/openblas-serial",
    "/usr/lib/x86_64-linux-gnu/openblas-openmp",
    "/usr/lib/aarch64-linux-gnu/openblas-pthread",
]


def find_openblas(explicit):
    """The directory holding OpenBLAS's libblas.so.3: explicit first, then
    Debian's usual places; None when there is none."""
    for d in ([explicit] if explicit else []) + OPENBLAS_DIRS:
        if d and os.path.exists(os.path.join(d, "libblas.so.3")):
            return d
    return None
