#!/usr/bin/env python3
"""`cutrace export --from/--to` of a GPU run whose window holds kernels but not the calls that
launched them (the GPU runs behind the host): such a kernel keeps the op the stream gave it
(op and op_id, as in the whole trace) and says its launch is outside the window, not that it
was never linked; the window's .gpu.folded holds all its device time, such kernels under a
"[launched before the window]" frame and their op.

usage: test_export_window_ops.py CUTRACE DEVICE_OPS
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, device_run, eq, finish  # noqa: E402

CUTRACE, DEVICE_OPS = (os.path.abspath(a) for a in sys.argv[1:3])


def events(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def kernels(trace):
    """By correlation id: the kernel's args."""
    return {e["args"]["correlation"]: e["args"] for e in trace if e.get("ph") == "X" and e.get("cat") == "kernel"}


with tempfile.TemporaryDirectory() as tmp:
    # The GPU idles between kernels: the last ones run well after the host's last call.
    stem = device_run(DEVICE_OPS, os.path.join(tmp, "run"), 3, idle=True)
    whole = events(stem + ".trace.json")
    ops = [e for e in whole if e.get("ph") == "X" and e.get("cat") == "nvtx" and "op_id" in e.get("args", {})]
    launches = sorted(e["ts"] for e in whole if e.get("name") == "cudaLaunchKernel")
    # From the first op range after the first launch on: the first step's launches are left out.
    second = min(e["ts"] for e in ops if e["ts"] > launches[0])
    last = max(e["ts"] + e["dur"] for e in whole if e.get("ph") == "X")
    out = os.path.join(tmp, "window")
    p = subprocess.run([CUTRACE, "export", "-o", out, "--from", f"{second:.3f}us", "--to", f"{last + 1:.3f}us",
                        stem + ".pftrace"], capture_output=True, text=True)
    eq(p.returncode, 0, f"cutrace export --from/--to ({p.stderr.strip()})")
    [exported] = glob.glob(os.path.join(out, "*.trace.json"))
    full, window = kernels(whole), kernels(events(exported))
    outside = [c for c, a in window.items() if a.get("launch_outside_window")]
    check(len(outside) >= 2, f"kernels whose launch is outside the window: {outside}")
    for c, a in sorted(window.items()):
        eq((a.get("op"), a.get("op_id")), (full[c].get("op"), full[c].get("op_id")), f"kernel {c}: op and op_id")
        check("unlinked" not in a, f"kernel {c}: linked in the run, not 'unlinked' ({a})")
    check(any(full[c].get("op") for c in outside), f"a kernel launched outside the window in an op: {outside}")
    device_ns = round(sum(e["dur"] for e in events(exported) if e.get("ph") == "X" and e.get("cat") == "kernel") * 1000)
    [gpu_folded] = glob.glob(os.path.join(out, "*.gpu.folded"))
    with open(gpu_folded) as f:
        lines = [line.rsplit(" ", 1) for line in f.read().splitlines()]
    eq(sum(int(n) for _, n in lines), device_ns, ".gpu.folded total: the window's device time")
    before = sorted(stack for stack, _ in lines if stack.startswith("[launched before the window];"))
    eq(len(before), len(outside), f"stacks of kernels launched before the window ({before})")
    check(any(stack.count(";") == 2 for stack in before), f"their op among their frames ({before})")
finish()
