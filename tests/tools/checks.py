"""Assertions shared by the tools' test scripts: every failed check is printed and counted, so
one run reports all that is wrong, and finish() turns the count into the exit status. Also
peak_rss(), for the tests that bound a tool's memory, and device_run(), a GPU run's files made
with no GPU."""
import os
import subprocess
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def eq(got, want, what):
    check(got == want, f"{what}: got {got!r}, want {want!r}")


def peak_rss(peak_rss_program, command, tmp):
    """Exit status, stderr and peak RSS (KiB) of COMMAND, run under the peak_rss program (a
    process forked from this Python one would count its pages)."""
    rss = os.path.join(tmp, "rss")
    p = subprocess.run([peak_rss_program, rss, *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(rss) as f:
        return p.returncode, p.stderr.decode("utf-8", "replace"), int(f.read())


def device_run(device_ops_program, directory, steps=None, idle=False, graph=False):
    """The stem (directory/prog-4242) of the .pftrace and .trace.json that pftrace_device_ops
    writes into DIRECTORY, made here: a GPU run of STEPS steps (its default without), the GPU
    idle between kernels with IDLE; with GRAPH each step ends in a graph launch too, and the
    folded files are written as the process writes them."""
    os.mkdir(directory)
    mode = ["idle"] if idle else ["graph"] if graph else []
    args = [str(steps if steps is not None else 40)] + mode if mode or steps is not None else []
    p = subprocess.run([device_ops_program, directory] + args, capture_output=True)
    eq(p.returncode, 0, f"pftrace_device_ops {steps} ({p.stderr!r})")
    return os.path.join(directory, "prog-4242")


def finish():
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("OK")
    sys.exit(0)
