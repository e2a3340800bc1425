#!/usr/bin/env python3
"""cutrace export of a window or of steps holds the events inside the window, not the stream's:
a program with 400 k CUDA calls, run under the preload, exported whole, by steps and by time;
the peak RSS of the windowed exports stays near that of exporting a stream of a few events.

And a whole export (what the exit's read-back for the Chrome trace holds too) takes no more per
event than the rates the exit counts before reading back (exporters/perfetto_reader.h,
rebuildBytes): measured on a GPU run's stream, made with no GPU, of 120 k steps.

usage: test_export_memory.py CUTRACE LIBTRACE STANDIN_DIR MANY_STEPS PEAK_RSS rss|no-rss DEVICE_OPS
(no-rss: a sanitizer build, whose allocator keeps freed memory; the RSS is printed, not bounded;
DEVICE_OPS: pftrace_device_ops)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, device_run, eq, finish, peak_rss  # noqa: E402

CUTRACE, LIBTRACE, STANDIN, PROG, PEAK_RSS = (os.path.abspath(a) for a in sys.argv[1:6])
BOUND_RSS = sys.argv[6] == "rss"
DEVICE_OPS = os.path.abspath(sys.argv[7])
# rebuildBytes' rates: a host event, a PyTorch op range, a device event.
REBUILD_EVENT, REBUILD_OP_RANGE, REBUILD_DEVICE = 96, 160, 288
GPU_STEPS = 120000
STEPS, CALLS = 100, 1000
PER_STEP = 4 * CALLS + 2  # cudaMalloc, cuMemAlloc_v2, cudaFree, cuMemFree_v2; the range, the mark
# The old export rebuilt every event (about 80 bytes each) before cutting the window: 32 MB here.
# A window's export may pass the small stream's by this much (interned names, buffers, noise).
SLACK_KIB = 8 * 1024


def traced_run(out, steps, calls):
    os.mkdir(out)
    # No Chrome trace at exit (as a run past CUTRACE_JSON_LIMIT): the stream is what is left. A
    # ring that holds the whole run: no event dropped however slow the drain.
    env = dict(os.environ, LD_PRELOAD=LIBTRACE, LD_LIBRARY_PATH=STANDIN, CUTRACE_OUTPUT=out, CUTRACE_JSON_LIMIT="1",
               CUTRACE_RING_SIZE="64M")
    p = subprocess.run([PROG, str(steps), str(calls)], env=env, capture_output=True)
    err = p.stderr.decode("utf-8", "replace")
    eq(p.returncode, 0, f"many_steps {steps} {calls}: exit status ({err})")
    m = re.search(r", (\d+) events, 0 dropped; no Chrome trace", err)
    check(m is not None and int(m.group(1)) >= steps * (4 * calls + 2), f"many_steps {steps} {calls}: every event ({err})")
    streams = [f for f in os.listdir(out) if f.endswith(".pftrace")]
    eq(len(streams), 1, f"one stream in {out}")
    return os.path.join(out, streams[0]), int(m.group(1)) if m else None


def export(args, tmp):
    """Exit status, stderr and peak RSS (KiB) of `cutrace export ARGS`."""
    return peak_rss(PEAK_RSS, [CUTRACE, "export", *args], tmp)


def counted(stderr):
    m = re.search(r", (\d+) events.*?(?:: (\d+) of (\d+) events)?$", stderr.strip())
    check(m is not None, f"an event count on stderr ({stderr!r})")
    return (int(m.group(1)), int(m.group(3) or m.group(1))) if m else (None, None)


def events(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    small, _ = traced_run(os.path.join(tmp, "small"), 2, 1)
    big, total = traced_run(os.path.join(tmp, "big"), STEPS, CALLS)

    rc, err, base_kib = export(["-o", out, small], tmp)
    eq(rc, 0, f"export of the small stream ({err})")
    rc, err, whole_kib = export(["-o", out, big], tmp)
    eq(rc, 0, f"export of the whole stream ({err})")
    eq(counted(err), (total, total), "whole export: every event")

    stem = os.path.join(out, os.path.basename(big)[:-len(".pftrace")])
    rc, err, steps_kib = export(["-o", out, "--steps", "50", big], tmp)
    eq(rc, 0, f"export --steps 50 ({err})")
    eq(counted(err), (PER_STEP, total), "--steps 50: the step's events of all")
    evs = events(stem + ".steps-50-50.trace.json")
    step = [e for e in evs if e["ph"] == "X" and e["cat"] == "nvtx"]
    eq([e["name"] for e in step], ["step 50"], "--steps 50: its range")
    eq(sorted(e["name"] for e in evs if e["ph"] == "i"), ["mark 50"], "--steps 50: its mark")
    eq(len([e for e in evs if e["ph"] == "X" and e["cat"].startswith("cuda")]), 4 * CALLS, "--steps 50: its calls")

    # The first quarter of step 50, in microseconds of the trace.
    t0 = step[0]["ts"]
    t1 = t0 + step[0]["dur"] / 4
    rc, err, time_kib = export(["-o", out, "--from", f"{t0:.3f}us", "--to", f"{t1:.3f}us", big], tmp)
    eq(rc, 0, f"export --from/--to ({err})")
    inside, of = counted(err)
    eq(of, total, "--from/--to: of all events")
    check(inside is not None and 2 < inside < PER_STEP, f"--from/--to: a part of step 50 ({inside})")

    print(f"peak RSS: small stream {base_kib} KiB, whole ({total} events, {os.path.getsize(big)} bytes) "
          f"{whole_kib} KiB, --steps {steps_kib} KiB, --from/--to {time_kib} KiB")
    # Not vacuous: the stream's events, all kept, cost far more than the slack.
    check(not BOUND_RSS or whole_kib > base_kib + 3 * SLACK_KIB, f"whole export: {whole_kib} KiB, not above the bound")
    for what, kib in (("--steps 50", steps_kib), ("--from/--to", time_kib)):
        check(not BOUND_RSS or kib <= base_kib + SLACK_KIB,
              f"{what}: peak RSS {kib} KiB, over the small stream's {base_kib} KiB + {SLACK_KIB} KiB")

    # A step of pftrace_device_ops: 2 op ranges, 3 launches (host events) and 3 kernels. The
    # peak over that of a stream of one step, against the rates at GPU_STEPS (the peak of a
    # read holds the vectors it doubled, so it is checked whole, not as a slope).
    gpu_kib = []
    for steps in (1, GPU_STEPS):
        stem = device_run(DEVICE_OPS, os.path.join(tmp, f"device{steps}"), steps)
        rc, err, kib = export(["-o", os.path.dirname(stem), stem + ".pftrace"], tmp)
        eq(rc, 0, f"export of {steps} GPU steps ({err})")
        gpu_kib.append(kib)
    held = (gpu_kib[1] - gpu_kib[0]) * 1024
    estimate = GPU_STEPS * (3 * REBUILD_EVENT + 2 * REBUILD_OP_RANGE + 3 * REBUILD_DEVICE)
    print(f"whole export of a GPU run of {GPU_STEPS} steps: {held >> 20} MiB held, counted at {estimate >> 20} MiB before a read-back")
    check(not BOUND_RSS or held <= estimate, f"a GPU run takes {held} bytes to read back, counted at {estimate}")
finish()
