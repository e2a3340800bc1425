#!/usr/bin/env python3
"""What a Python call stack costs cutrace's traced thread, in instructions (callgrind), per CPython.

A Python loop, DEPTH frames below the module, calls the runtime through ctypes (which releases
the GIL around the call: cutrace reads the interpreter's frames without it), from one call site
("same site": the thread's last stack repeats) or from two alternating ones ("two sites": the
outer frames repeat, the inner two do not). Each is run bare and under LD_PRELOAD=libtrace.so on
the stand-in CUDA libraries, counting only inside libffi's call (ffi_call: exported, so named in
a stripped distribution build too, where ctypes' own functions are not); the figure is
(traced - bare) / calls: what cutrace adds to one call, the runtime call's driver call included.
Instruction counts do not wobble as nanoseconds do on a shared machine.

    bench/python_stacks.py --libtrace build/preload/libtrace.so --standin build/tests/standin \
        [--python /root/.pyenv/versions/3.12.1/bin/python3 ...] [--depth 20] [--calls 5000]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

LOOP = """
import ctypes, sys
sync = ctypes.CDLL("libcudart.so.13").cudaDeviceSynchronize
def site_a(): return sync()
def site_b(): return sync()
def same(n):
    for _ in range(n):
        site_a()
def two(n):
    for _ in range(n // 2):
        site_a()
        site_b()
def deep(d, loop, n):
    if d == 0:
        return loop(n)
    return deep(d - 1, loop, n)
deep(int(sys.argv[1]), same if sys.argv[2] == "same" else two, int(sys.argv[3]))
"""


def instructions(python, script, args, env):
    """Instructions counted inside ffi_call over the whole run."""
    with tempfile.TemporaryDirectory() as out:
        cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--toggle-collect=ffi_call",
               f"--callgrind-out-file={out}/callgrind.%p"]
        if "LD_PRELOAD" in env:
            # Through env, so that valgrind's own start-up is not preloaded.
            cmd += ["env", "LD_PRELOAD=" + env.pop("LD_PRELOAD")]
        run = subprocess.run(cmd + [python, script] + args, env=env, capture_output=True, text=True, cwd=out)
        if run.returncode != 0:
            sys.exit(f"python_stacks: {python} failed:\n{run.stderr[-2000:]}")
        counts = [int(m.replace(",", "")) for m in re.findall(r"Collected : ([\d,]+)", run.stderr)]
        if not counts:
            sys.exit(f"python_stacks: no callgrind count for {python}")
        return max(counts)  # the python process (env, when used, counts nothing)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--libtrace", required=True)
    p.add_argument("--standin", required=True, help="directory of the stand-in libcuda.so.1 and libcudart.so.13")
    p.add_argument("--python", action="append", help="interpreters (default: ~/.pyenv/versions/3.1[0-3]* and those scripts/fetch_python.sh fetched)")
    p.add_argument("--depth", type=int, default=20)
    p.add_argument("--calls", type=int, default=5000)
    a = p.parse_args()
    fetched = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".python", "3.*", "usr", "bin", "python3")
    pythons = a.python or sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0-3].*/bin/python3"))) + sorted(
        os.path.realpath(p) for p in glob.glob(fetched))
    if not pythons:
        sys.exit("python_stacks: no interpreter (give --python)")
    libtrace = os.path.abspath(a.libtrace)
    standin = os.path.abspath(a.standin)
    with tempfile.TemporaryDirectory() as work:
        script = os.path.join(work, "loop.py")
        with open(script, "w") as f:
            f.write(LOOP)
        print(f"cutrace python_stacks: ctypes calls {a.depth} frames below the module, {a.calls} calls a run, "
              "instructions a call (callgrind, inside ffi_call)")
        print(f"{'python':28} {'case':10} {'bare':>8} {'traced':>8} {'added':>8}")
        for python in pythons:
            for case in ("same", "two"):
                args = [str(a.depth), case, str(a.calls)]
                env = dict(os.environ, LD_LIBRARY_PATH=standin)
                bare = instructions(python, script, args, dict(env))
                traced = instructions(python, script, args,
                                      dict(env, LD_PRELOAD=libtrace, CUTRACE_OUTPUT=os.path.join(work, "out")))
                name = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                      capture_output=True, text=True).stdout.strip() or python
                print(f"{name:28} {case + ' site' if case == 'same' else 'two sites':10} {bare / a.calls:8.0f} "
                      f"{traced / a.calls:8.0f} {(traced - bare) / a.calls:8.0f}")


if __name__ == "__main__":
    main()
