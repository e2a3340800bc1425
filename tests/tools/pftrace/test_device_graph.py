#!/usr/bin/env python3
"""A graph launch's kernels share its one correlation id. In the Chrome trace each still has a
flow of its own from the launch (Perfetto keeps one arrow per flow id, cat and name), with the
same ids in the trace `cutrace export` rebuilds from the stream, which holds the device work in
another order than the process did.

usage: test_device_graph.py CUTRACE DEVICE_OPS TRACE_CHECK
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, device_run, eq, finish  # noqa: E402

CUTRACE, DEVICE_OPS, TRACE_CHECK = (os.path.abspath(a) for a in sys.argv[1:4])
STEPS = 5


def graph_flows(path):
    """Per cudaGraphLaunch (by its ts), the ids of the flows that start in it."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    launches = {round(e["ts"] * 1000) for e in events if e.get("name") == "cudaGraphLaunch"}
    flows = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "s" and e["cat"] == "flow" and round(e["ts"] * 1000) - 1 in launches:
            flows[round(e["ts"] * 1000) - 1].append(e["id"])
    return flows, [e["id"] for e in events if e["ph"] in "sf"]


with tempfile.TemporaryDirectory() as tmp:
    stem = device_run(DEVICE_OPS, os.path.join(tmp, "run"), STEPS, graph=True)
    exported = os.path.join(tmp, "exported")
    p = subprocess.run([CUTRACE, "export", "-o", exported, stem + ".pftrace"], capture_output=True, text=True)
    eq(p.returncode, 0, f"cutrace export ({p.stderr})")
    rebuilt = os.path.join(exported, os.path.basename(stem))
    for trace in (stem, rebuilt):
        # Among its checks: each flow id is one start and one end.
        p = subprocess.run([TRACE_CHECK, trace + ".trace.json", "--folded", trace + ".folded"], capture_output=True, text=True)
        eq(p.returncode, 0, f"trace_check {trace}.trace.json ({p.stderr.strip()})")
        flows, ids = graph_flows(trace + ".trace.json")
        eq(len(flows), STEPS, f"{trace}: graph launches with flows")
        for ts, launched in sorted(flows.items()):
            eq(len(set(launched)), 3, f"{trace}: distinct flows from the graph launch at {ts} ns ({launched})")
        check(all(isinstance(i, int) and 0 < i < 1 << 53 for i in ids), f"{trace}: flow ids are integers below 2^53")
    p = subprocess.run([TRACE_CHECK, "--compare", stem + ".trace.json", rebuilt + ".trace.json"], capture_output=True, text=True)
    eq(p.returncode, 0, f"the rebuilt trace is the process's, flow ids included ({p.stderr.strip()})")
finish()
