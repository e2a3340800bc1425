#!/usr/bin/env python3
"""Tests of `cutrace merge`.

usage: test_merge.py CUTRACE FIXTURES CASE [LIBTRACE PIPELINE STANDIN_DIR]
Fixture clocks (fixtures/*.json): rank0 starts at realtime 1000123456 + 5000000000 ns,
rank1 at 2000000000 + 4000000000 = 6000000000 ns, the earlier, so rank0's events move by
123.456 us and rank1's by 0. Both have pid 100 (two hosts) and flow id 1.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, eq, finish  # noqa: E402

CUTRACE, FIXTURES, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
R0 = os.path.join(FIXTURES, "train-100-rank0.trace.json")
R1 = os.path.join(FIXTURES, "train-100-rank1.trace.json")


def run(*args, env=None):
    p = subprocess.run([CUTRACE, *args], capture_output=True, env=env)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def merge(tmp, *inputs):
    out = os.path.join(tmp, "merged.json")
    rc, _, err = run("merge", "-o", out, *inputs)
    eq(rc, 0, f"merge exit ({err.strip()})")
    with open(out) as f:
        return json.load(f), err


def by_pid(doc):
    out = {}
    for e in doc["traceEvents"]:
        out.setdefault(e["pid"], []).append(e)
    return out


def fixtures():
    with tempfile.TemporaryDirectory() as tmp:
        doc, err = merge(tmp, R0, R1)
        src0 = json.load(open(R0))["traceEvents"]
        src1 = json.load(open(R1))["traceEvents"]
        pids = by_pid(doc)
        eq(sorted(pids), [100, 101], "pids: the second pid 100 remapped to 101 (max + 1)")
        check("pid 100 on hostB already used" in err and "shown as pid 101" in err, f"remap said on stderr: {err!r}")
        meta = doc["metadata"]
        eq(meta["tool"], "cutrace-merge", "tool")
        eq(doc["displayTimeUnit"], "ns", "displayTimeUnit")
        eq(meta["clock"], {"domain": "CLOCK_REALTIME", "ts_origin_ns": 6000000000}, "merged origin = min over inputs")
        eq([(i["pid"], i["merged_pid"], i["exe"], i["host"], i["rank"], i["offset_us"]) for i in meta["inputs"]],
           [(100, 100, "train", "hostA", 0, 123.456), (100, 101, "train", "hostB", 1, 0.0)], "inputs metadata")
        eq(meta["pid_remaps"], [{"file": R1, "host": "hostB", "pid": 100, "merged_pid": 101}], "pid_remaps")
        eq((meta["events"], meta["dropped_events"]), (17, 2), "events copied (8 + 9) and dropped summed")
        # Exact shifts: every timed event of rank0 by 123.456 us, rank1 unchanged.
        for src, got, shift, what in ((src0, pids[100], 123.456, "rank0"), (src1, pids[101], 0.0, "rank1")):
            timed_src = [round(e["ts"] + shift, 3) for e in src if "ts" in e]
            timed_got = [e["ts"] for e in got if "ts" in e]
            eq(timed_got, timed_src, f"{what} ts shifted by {shift} us")
            eq([e.get("dur") for e in got if "ts" in e], [e.get("dur") for e in src if "ts" in e], f"{what} dur unchanged")
        eq(pids[100][3]["ts"], 133.956, "rank0 launch 10.5 -> 133.956")
        eq(pids[100][7]["ts"], 153.457, "rank0 range end 30.001 -> 153.457")
        raw = open(os.path.join(tmp, "merged.json")).read()
        check('"ts":133.956,' in raw and '"ts":0.000,' in raw, "ts written with 3 decimals")
        names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
        # Viewers append the pid themselves: only the remapped process names the pid it had.
        eq(names, {100: "train rank 0 @hostA", 101: "train rank 1 @hostB (real pid 100)"},
           "process names (rank 1 from the file name)")
        sort = {e["pid"]: e["args"]["sort_index"] for e in doc["traceEvents"] if e["name"] == "process_sort_index"}
        eq(sort, {100: 0, 101: 1}, "processes sorted by rank")
        flows = [(e["pid"], e["ph"], e["id"]) for e in doc["traceEvents"] if e["ph"] in "sf"]
        eq(flows, [(100, "s", 2), (100, "f", 2), (101, "s", 3), (101, "f", 3)], "flow ids: id * inputs + index")
        asyncs = [(e["pid"], e["ph"], e["id"]) for e in doc["traceEvents"] if e["ph"] in "be"]
        eq(asyncs, [(100, "b", "0:0x1"), (100, "e", "0:0x1"), (101, "b", "1:0x1"), (101, "e", "1:0x1")], "async ids per input")
        eq(pids[100][3]["args"]["note"], 'a "quoted" \u00e9 name', "other fields copied verbatim")
        thread = [e for e in pids[101] if e["name"] == "thread_name"]
        eq(thread, [{"ph": "M", "name": "thread_name", "pid": 101, "tid": 100, "args": {"name": "main"}}], "thread names kept")
        # The merged file is a trace the other commands read: 2 processes, both launches.
        rc, out, err = run("report", "--format", "json", os.path.join(tmp, "merged.json"))
        eq(rc, 0, f"report reads the merge ({err.strip()})")
        if rc == 0:
            rep = json.loads(out)
            eq(rep["processes"], 2, "report: two processes")
            eq({r["name"]: r["calls"] for r in rep["sections"]["api"]}, {"cudaLaunchKernel": 2}, "report: both launches")
        # Order of inputs does not change the alignment; a directory stands for its traces.
        doc2, _ = merge(tmp, FIXTURES)
        eq([i["offset_us"] for i in doc2["metadata"]["inputs"]], [123.456, 0.0], "directory input, sorted")
        doc3, _ = merge(tmp, R1, R0)
        eq([(i["rank"], i["merged_pid"], i["offset_us"]) for i in doc3["metadata"]["inputs"]],
           [(1, 100, 0.0), (0, 101, 123.456)], "reversed inputs: the later one remapped")
        eq({e["pid"]: e["args"]["sort_index"] for e in doc3["traceEvents"] if e["name"] == "process_sort_index"},
           {101: 0, 100: 1}, "sort index by rank whatever the input order")


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def malformed():
    good = open(R0).read()
    cases = {
        "notjson.json": "this is not json",
        "truncated.json": good[: len(good) // 2],
        "array.json": '[{"ph":"X"}]',
        "noclock.json": good.replace('"clock":', '"clock_":'),
        "nopid.json": good.replace('"pid":100,"hostname"', '"hostname"'),
        "eventsobject.json": '{"traceEvents":{},"metadata":{}}',
        "badts.json": good.replace('"ts":10.5,"dur":2', '"ts":"10.5","dur":2'),
        "badtoken.json": good.replace('"correlation":1', '"correlation":tru'),
        "deep.json": good.replace('"args":{}', '"args":' + "[" * 100 + "]" * 100),
        "trailing.json": good + "{}",
        "hugets.json": good.replace('"ts":20.25,"dur"', '"ts":1e300,"dur"'),
        # Each origin in range, their distance past what a shifted ts may add (int64 overflow).
        "farorigin.json": good.replace('"ts_origin_ns":1000123456', '"ts_origin_ns":9000000000000000000'),
        "farbefore.json": good.replace('"ts_origin_ns":1000123456', '"ts_origin_ns":-9000000000000000000'),
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out", "merged.json")
        os.mkdir(os.path.dirname(out))
        for name, text in cases.items():
            bad = write(tmp, name, text)
            rc, _, err = run("merge", "-o", out, R1, bad)
            eq(rc, 3, f"{name}: exit 3 ({err.strip()})")
            check(name in err, f"{name}: message names the file: {err!r}")
            check(not name.startswith("far") or "clock origins too far apart" in err, f"{name}: message says why: {err!r}")
            eq(os.listdir(os.path.dirname(out)), [], f"{name}: nothing written, no temp file left")
        rc, _, err = run("merge", "-o", out, R0, os.path.join(tmp, "missing.json"))
        eq(rc, 3, "missing input: exit 3")
        check("missing.json" in err, "missing input named")
        eq(run("merge", R0)[0], 2, "no -o: exit 2")
        eq(run("merge", "-o", out)[0], 2, "no inputs: exit 2")
        eq(run("merge", "--bogus", "-o", out, R0)[0], 2, "unknown option: exit 2")
        rc, out_text, _ = run("merge", "--help")
        check(rc == 0 and "usage: cutrace merge" in out_text, "--help")
        rc, _, err = run("merge", "-o", os.path.join(tmp, "nodir", "x.json"), R0)
        eq(rc, 4, f"unwritable output: exit 4 ({err.strip()})")


def real(libtrace, program, standin):
    """Two real runs of examples/pipeline, merged: shifts follow their clock metadata."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=libtrace, LD_LIBRARY_PATH=standin, CUTRACE_OUTPUT=tmp, CUTRACE_CUPTI="off")
        for _ in range(2):
            p = subprocess.run([program], env=env, capture_output=True)
            eq(p.returncode, 0, "pipeline ran")
        traces = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".trace.json"))
        eq(len(traces), 2, "two traces")
        if len(traces) != 2:
            return
        srcs = [json.load(open(t)) for t in traces]
        origins = [s["metadata"]["clock"]["ts_origin_ns"] + s["metadata"]["clock"]["realtime_minus_monotonic_ns"] for s in srcs]
        doc, _ = merge(tmp, *traces)
        eq(doc["metadata"]["clock"]["ts_origin_ns"], min(origins), "origin")
        pids = by_pid(doc)
        for s, origin in zip(srcs, origins):
            pid = s["metadata"]["pid"]
            shift_ns = origin - min(origins)
            want = [(e["ph"], e["name"], round(e["ts"] * 1000) + shift_ns) for e in s["traceEvents"] if "ts" in e]
            got = [(e["ph"], e["name"], round(e["ts"] * 1000)) for e in pids[pid] if "ts" in e]
            eq(got, want, f"pid {pid}: every event shifted by {shift_ns} ns")
            eq(len(pids[pid]), len(s["traceEvents"]) + 1, f"pid {pid}: all events copied, plus the sort index")
            name = [e["args"]["name"] for e in pids[pid] if e["name"] == "process_name"]
            eq(name, [f"pipeline @{s['metadata']['hostname']}"], "process name (viewers add the pid)")
        eq(doc["metadata"]["pid_remaps"], [], "distinct pids: none remapped")


def viewer_safe(raw, what):
    """What Perfetto's JSON importer needs of the bytes (../shared/tools/perfetto_rules.py): valid
    UTF-8, no raw control byte (iscntrl: below 0x20 or DEL) inside a string, which fails the
    whole import, and no \\uD800-\\uDFFF escape in traceEvents, which its parser rejects. Outside
    strings cutrace writes only '\\n' between events."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, f"{what}: not UTF-8: {e}")
        text = raw.decode("utf-8", "replace")
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or ord(c) == 0x7F})
    eq(bad, [], f"{what}: raw control characters")
    check(re.search(r'(?<!\\)(\\\\)*\\u[dD][89a-fA-F]', text) is None, f"{what}: a surrogate escape")


def bytes_in_names():
    """Input paths and strings holding DEL (0x7f), 0xff and a surrogate-pair escape: the merge
    writes them through the project's one JSON escaper, so Perfetto and `cutrace report` read it."""
    with tempfile.TemporaryDirectory() as tmp:
        tmpb = os.fsencode(tmp)
        p0 = os.path.join(tmpb, b"in\x7fput-rank0.trace.json")
        p1 = os.path.join(tmpb, b"in\xffput-rank1.trace.json")
        r0 = open(R0, "rb").read()
        # Raw DEL is valid JSON (only bytes below 0x20 must be escaped), and so is a surrogate pair.
        r0 = r0.replace(b'"exe":"train"', b'"exe":"tr\x7fain"').replace(b'"name":"epoch"', b'"name":"ep\x7foch \\ud83d\\ude00"')
        r0 = r0.replace(b' name"}}', b' \x7f \\ud83d\\ude00"}}')  # args (copied values)
        open(p0, "wb").write(r0)
        open(p1, "wb").write(open(R1, "rb").read())
        out = os.path.join(tmp, "merged.json")
        p = subprocess.run([CUTRACE, "merge", "-o", out, p0, p1], capture_output=True)
        eq(p.returncode, 0, f"merge exit ({p.stderr.decode('utf-8', 'replace').strip()})")
        if p.returncode != 0:
            return
        raw = open(out, "rb").read()
        viewer_safe(raw, "merged file")
        doc = json.loads(raw.decode("utf-8", "replace"))
        eq([i["file"] for i in doc["metadata"]["inputs"]],
           [os.path.join(tmp, "in\x7fput-rank0.trace.json"), os.path.join(tmp, "in\ufffdput-rank1.trace.json")],
           "input paths: DEL kept (escaped), the byte 0xff (not UTF-8) as U+FFFD")
        check(b"in\\u007fput-rank0" in raw, "DEL written as \\u007f")
        names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
        eq(names, {100: "tr\x7fain rank 0 @hostA", 101: "train rank 1 @hostB (real pid 100)"}, "process names")
        eq(sorted({e["name"] for e in doc["traceEvents"] if e["ph"] in "be"}), ["epoch", "ep\x7foch \U0001F600"],
           "event names: DEL and the surrogate pair's character kept")
        eq([e["args"]["note"] for e in doc["traceEvents"] if "note" in e.get("args", {})], ['a "quoted" \u00e9 \x7f \U0001F600'],
           "args strings: DEL and the surrogate pair's character kept")
        rc, rep, err = run("report", "--format", "json", "--by", "nvtx", out)
        eq(rc, 0, f"cutrace report reads the merge ({err.strip()})")


if CASE == "fixtures":
    fixtures()
elif CASE == "bytes":
    bytes_in_names()
elif CASE == "malformed":
    malformed()
elif CASE == "real":
    real(*sys.argv[4:7])
else:
    sys.exit(f"unknown case {CASE}")
finish()
