#!/usr/bin/env python3
"""Tests of `cutrace export`.

usage: test_export.py CUTRACE errors
       test_export.py CUTRACE killed LIBTRACE LIFECYCLE STANDIN_DIR
       test_export.py CUTRACE h100_graph TRACE_CHECK
h100_graph: the stream of tests/gpu/programs/graph_replay.cu as a traced run on an H100 wrote it
(CUPTI's own records, 2026-11-27): every kernel of the 100 replays linked to its cudaGraphLaunch
by a flow of its own.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, eq, finish  # noqa: E402

CUTRACE, CASE = os.path.abspath(sys.argv[1]), sys.argv[2]


def export(args, **kw):
    p = subprocess.run([CUTRACE, "export", *args], capture_output=True, **kw)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def one_message(stderr, what):
    lines = [l for l in stderr.splitlines() if l.strip()]
    eq(len(lines), 1, f"{what}: one line on stderr ({stderr!r})")


def errors():
    rc, out, err = export(["--help"])
    eq(rc, 0, "--help exits 0")
    check(out.startswith("usage: cutrace export"), "--help prints the usage on stdout")
    eq(export([])[0], 2, "no input: usage error")
    eq(export(["--bogus", "x.pftrace"])[0], 2, "unknown option: usage error")
    eq(export(["-o"])[0], 2, "-o without a directory: usage error")
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = export([os.path.join(tmp, "missing.pftrace")])
        eq(rc, 3, "a missing input: exit 3")
        one_message(err, "missing input")
        cases = {
            "json.pftrace": b'{"traceEvents":[]}',
            "empty.pftrace": b"",
            # A packet announcing 2^40 bytes: refused by the size cap, not allocated.
            "huge.pftrace": bytes([0x0A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]),
            # A whole packet whose track event names an event name never interned.
            "unknown_iid.pftrace": bytes([0x0A, 0x11,  # packet, 17 bytes
                                          0x40, 0x05,  # timestamp 5
                                          0xD0, 0x03, 0x03,  # on clock 3 (MONOTONIC)
                                          0x50, 0x02,  # sequence 2
                                          0x68, 0x01,  # incremental state cleared
                                          0x5A, 0x06, 0x48, 0x01, 0x58, 0x07, 0x50, 0x09]),  # BEGIN, track 7, name iid 9
        }
        for name, data in cases.items():
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            rc, _, err = export(["-o", os.path.join(tmp, "out"), path])
            eq(rc, 3, f"{name}: exit 3 ({err.strip()})")
            one_message(err, name)
            check(name in err, f"{name}: the message names the input ({err.strip()})")
        check(not os.path.exists(os.path.join(tmp, "out")) or not os.listdir(os.path.join(tmp, "out")),
              "nothing written for malformed inputs")


def killed(libtrace, lifecycle, standin):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        env = dict(os.environ, LD_LIBRARY_PATH=standin)
        env.pop("LD_PRELOAD", None)
        p = subprocess.run([CUTRACE, "run", "--libtrace", libtrace, "-o", out, "--", lifecycle, "sigkill"],
                           capture_output=True, env=env)
        err = p.stderr.decode("utf-8", "replace")
        eq(p.returncode, 128 + 9, "the killed command's status")
        streams = [f for f in os.listdir(out) if f.endswith(".pftrace")]
        eq(len(streams), 1, f"one stream left: {os.listdir(out)}")
        check(not any(f.endswith(".trace.json") for f in os.listdir(out)), "no Chrome trace from the killed process")
        check(re.search(r"ended before writing its Chrome trace; its events are in .*\.pftrace.*'cutrace export'", err),
              f"cutrace run points at the stream and at cutrace export ({err!r})")
        stream = os.path.join(out, streams[0])
        stem = streams[0][:-len(".pftrace")]
        rc, stdout, err = export([stream])
        eq(rc, 0, f"export of the killed process's stream ({err.strip()})")
        eq(stdout, "", "nothing on stdout")
        check("did not end normally" in err, f"export says the process did not end ({err.strip()})")
        files = sorted(os.listdir(out))
        eq(files, sorted([streams[0], stem + ".trace.json", stem + ".folded", stem + ".calls.folded"]),
           "next to the stream: the trace and the folded files, same stem")
        trace = json.load(open(os.path.join(out, stem + ".trace.json")))
        names = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"]
        eq(names.count("before the kill"), 1, "the NVTX range closed before the kill")
        eq(names.count("cudaDeviceSynchronize"), 5, "the calls made before the kill")
        still = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["name"] == "open at the kill"]
        eq(len(still), 1, "the NVTX range open at the kill")
        eq(still[0]["args"].get("unclosed"), True, "the range open at the kill is unclosed")
        eq(trace["metadata"]["exe"], "lifecycle", "metadata from the process's start")
        # Again: the names are taken, the next free stem is used, nothing overwritten.
        rc, _, err = export([stream])
        eq(rc, 0, "a second export")
        check(os.path.exists(os.path.join(out, stem + ".1.trace.json")), f"the second export took {stem}.1 ({err.strip()})")
        # An output directory that cannot be created: exit 4.
        blocker = os.path.join(tmp, "file")
        open(blocker, "w").close()
        rc, _, err = export(["-o", os.path.join(blocker, "sub"), stream])
        eq(rc, 4, f"an unwritable output: exit 4 ({err.strip()})")
        one_message(err, "unwritable output")


def h100_graph(trace_check):
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "h100_graph_replay.pftrace")
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = export(["-o", tmp, fixture])
        eq(rc, 0, f"export of the H100 stream ({err})")
        trace = os.path.join(tmp, "h100_graph_replay.trace.json")
        c = subprocess.run([trace_check, trace, "--view", "launches"], capture_output=True, text=True)
        eq(c.returncode, 0, f"trace_check of the exported trace ({c.stderr})")
        check("device kernel 302 flows 302" in c.stdout, f"302 kernels, each with a flow: {c.stdout[:300]}")
        with open(trace) as f:
            doc = json.load(f)
    events = doc["traceEvents"]
    eq(doc["metadata"]["cupti"]["linked_to_host"], 302, "every device record linked")
    graph = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "cudaGraphLaunch")
    eq(len(graph), 100, "graph launches")
    starts = sorted(e["ts"] for e in events if e["ph"] == "s" and e["cat"] == "flow")
    per_launch = [sum(1 for ts in starts if a < ts < b) for a, b in graph]
    eq(per_launch, [3] * 100, "flows from each graph launch")
    ids = [e["id"] for e in events if e["ph"] == "s" and e["cat"] == "flow"]
    eq(len(set(ids)), len(ids), "a flow id of its own for each kernel")


if CASE == "errors":
    errors()
elif CASE == "h100_graph":
    h100_graph(os.path.abspath(sys.argv[3]))
elif CASE == "killed":
    killed(*sys.argv[3:6])
else:
    sys.exit(f"unknown case {CASE}")
finish()
