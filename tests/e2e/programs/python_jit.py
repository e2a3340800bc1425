# A loop CPython's JIT compiles (3.14+, PYTHON_JIT=1): once it runs, its CUDA calls are made from
# JIT code, which has no unwind information and no frame a walk can follow. Exits 1 where the JIT
# is not on (the test would check nothing).
import ctypes
import sys

rt = ctypes.CDLL("libcudart.so.13")


def leaf():
    rt.cudaDeviceSynchronize()


def loop(n):
    for _ in range(n):
        leaf()


loop(10000)
jit = getattr(sys, "_jit", None)
sys.exit(0 if jit is not None and jit.is_enabled() else 1)
