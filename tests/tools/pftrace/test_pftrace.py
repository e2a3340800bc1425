#!/usr/bin/env python3
"""cutrace report, diff, merge and export on .pftrace inputs, from a real program run under the
preload (steps.c).

usage: test_pftrace.py CUTRACE LIBTRACE STANDIN_DIR STEPS
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, eq, finish  # noqa: E402

CUTRACE, LIBTRACE, STANDIN, STEPS = (os.path.abspath(a) for a in sys.argv[1:5])


def cutrace(*args):
    p = subprocess.run([CUTRACE, *args], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def traced_run(out):
    env = dict(os.environ, LD_PRELOAD=LIBTRACE, LD_LIBRARY_PATH=STANDIN, CUTRACE_OUTPUT=out)
    p = subprocess.run([STEPS], env=env, capture_output=True)
    eq(p.returncode, 0, "steps program exit status")
    files = os.listdir(out)
    stem = [f[:-len(".pftrace")] for f in files if f.endswith(".pftrace")]
    eq(len(stem), 1, f"one stream ({files})")
    return os.path.join(out, stem[0])


def without_inputs(text):
    return re.sub(r'"inputs":\[[^\]]*\]', "", text)


def events(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def names(evs, ph, cat=None):
    return collections.Counter(e["name"] for e in evs if e["ph"] == ph and (cat is None or e.get("cat") == cat))


def same_tables(stem):
    # Exactly the tables of the Chrome trace the same process wrote: every format, every section.
    for fmt in ("table", "csv", "json"):
        for extra in ([], ["--group-by-shapes"], ["--sort", "name", "--by", "all"]):
            rj, json_out, ej = cutrace("report", "--format", fmt, *extra, stem + ".trace.json")
            rp, pf_out, ep = cutrace("report", "--format", fmt, *extra, stem + ".pftrace")
            eq((rj, rp), (0, 0), f"report {fmt} {extra} exit ({ej} {ep})")
            eq(without_inputs(pf_out), without_inputs(json_out), f"report {fmt} {extra}: .pftrace == .trace.json")
    _, table, _ = cutrace("report", stem + ".pftrace")
    # "-" with standard input redirected from the file (a regular file, not a pipe), each format.
    for suffix in (".pftrace", ".trace.json"):
        with open(stem + suffix, "rb") as f:
            p = subprocess.run([CUTRACE, "report", "-"], stdin=f, capture_output=True)
        eq((p.returncode, p.stderr.decode()), (0, ""), f"report - < STEM{suffix}: exit 0, nothing on stderr")
        eq(without_inputs(p.stdout.decode("utf-8", "replace")), without_inputs(table), f"report - < STEM{suffix} = report of the file")
    # The tables are not empty: the rows the program made, from the stream.
    check(re.search(r"^cudaMalloc\s+runtime\s+6\s", table, re.M), f"6 cudaMalloc calls in the report:\n{table}")
    check(re.search(r"^step 3\s+1\s", table, re.M), f"nvtx row 'step 3' once:\n{table}")
    check(re.search(r"^aten::add\s+1\s", table, re.M), f"op row aten::add once:\n{table}")
    rc, out, err = cutrace("diff", stem + ".trace.json", stem + ".pftrace", "--threshold", "0")
    eq(rc, 0, f"diff of a process's trace and its stream: no regression ({out}{err})")
    check("REGRESSED" not in out and "new" not in out.split(), f"diff lists no changed rows:\n{out}")


def merge(stem, tmp):
    a, b = os.path.join(tmp, "m_json.trace.json"), os.path.join(tmp, "m_pf.trace.json")
    eq(cutrace("merge", "-o", a, stem + ".trace.json")[0], 0, "merge of the JSON")
    rc, _, err = cutrace("merge", "-o", b, stem + ".pftrace")
    eq(rc, 0, f"merge of the stream ({err})")
    eq(events(b), events(a), "merged stream == merged Chrome trace, event for event")
    # --max-json: a stream whose Chrome trace passes it is refused (one message, exit 3, no
    # output), decided by the trace's size, or first by its event count (100 bytes an event at
    # least) before the events take memory.
    size = os.path.getsize(stem + ".trace.json")
    for limit, why in ((size // 2, "size"), (300, "event count")):
        c = os.path.join(tmp, f"m_cap_{limit}.trace.json")
        rc, _, err = cutrace("merge", "--max-json", str(limit), "-o", c, stem + ".pftrace")
        eq(rc, 3, f"merge --max-json {limit} ({why}): exit 3 ({err})")
        eq(len([l for l in err.splitlines() if l.strip()]), 1, f"merge --max-json {limit}: one message ({err!r})")
        check(f"would pass {limit} bytes (--max-json" in err and "cutrace export --from" in err,
              f"merge --max-json {limit}: the message says why and what to do ({err!r})")
        check(not os.path.exists(c), f"merge --max-json {limit}: no output")
    rc, _, err = cutrace("merge", "--max-json", str(2 * size), "-o", c, stem + ".pftrace")
    eq(rc, 0, f"merge --max-json {2 * size} ({err})")
    eq(events(c), events(a), "merged under a limit it fits == merged Chrome trace")
    for bad in ("0", "1x", "-5"):
        eq(cutrace("merge", "--max-json", bad, "-o", c, stem + ".pftrace")[0], 2, f"merge --max-json {bad}: usage error")


def export_windows(stem, tmp):
    full = events(stem + ".trace.json")
    step = {e["name"]: e for e in full if e["ph"] == "X" and e["cat"] == "nvtx"}
    api_per_step = names([e for e in full if e["ph"] == "X" and e["cat"].startswith("cuda")
                          and step["step 4"]["ts"] <= e["ts"] < step["step 4"]["ts"] + step["step 4"]["dur"]], "X")
    eq(api_per_step, collections.Counter({"cudaMalloc": 1, "cuMemAlloc_v2": 1, "cudaFree": 1, "cuMemFree_v2": 1}),
       "the calls of one step")
    out = os.path.join(tmp, "x")
    os.mkdir(out)
    base = os.path.basename(stem)

    rc, _, err = cutrace("export", "-o", out, "--steps", "2-3", stem + ".pftrace")
    eq(rc, 0, f"export --steps 2-3 ({err})")
    evs = events(os.path.join(out, base + ".steps-2-3.trace.json"))
    eq(names(evs, "X", "nvtx"), collections.Counter({"epoch 0": 1, "step 2": 1, "step 3": 1}),
       "steps 2-3: the two steps and the epoch around them")
    eq(names(evs, "X", "cuda_runtime") + names(evs, "X", "cuda_driver"),
       collections.Counter({k: 2 * v for k, v in api_per_step.items()}), "steps 2-3: their calls, no others")
    eq(names(evs, "i"), collections.Counter({"mark 2": 1, "mark 3": 1}), "steps 2-3: their marks")
    check(os.path.exists(os.path.join(out, base + ".steps-2-3.folded")), "steps 2-3: folded stacks written")
    with open(os.path.join(out, base + ".steps-2-3.calls.folded")) as f:
        calls = dict(l.rsplit(" ", 1) for l in f.read().splitlines())
    # Frame names ending in a number get a '#' (README: flamegraph.pl reads them as a count).
    eq(calls.get("epoch #0;step #2"), "1", "folded: step 2 once under epoch 0")
    check(not any("step #4" in k or "step #1" in k for k in calls), "folded: nothing of steps 1 and 4")

    # --from/--to: microseconds of the Chrome trace (ts is from the same origin). Step 4's
    # window exactly, then windows that end at its start / begin at its end: an event touching
    # the boundary only is not in the window.
    s4 = step["step 4"]
    t0, t1 = s4["ts"], s4["ts"] + s4["dur"]
    rc, _, err = cutrace("export", "-o", out, "--from", f"{t0:.3f}us", "--to", f"{t1:.3f}us", stem + ".pftrace")
    eq(rc, 0, f"export --from/--to ({err})")
    evs = events(os.path.join(out, f"{base}.window-{t0:.3f}us-{t1:.3f}us.trace.json"))
    eq(names(evs, "X", "nvtx"), collections.Counter({"epoch 0": 1, "step 4": 1}), "window of step 4: ranges")
    eq(names(evs, "X", "cuda_runtime") + names(evs, "X", "cuda_driver"), api_per_step, "window of step 4: calls")
    eq(names(evs, "i"), collections.Counter({"mark 4": 1}), "window of step 4: its mark")
    start = min(e["ts"] for e in full if e["ph"] == "X")
    rc, _, err = cutrace("export", "-o", out, "--from", f"{start / 1e6:.9f}", "--to", f"{t0:.3f}us", stem + ".pftrace")
    eq(rc, 0, f"export up to step 4 ({err})")
    evs = events(os.path.join(out, f"{base}.window-{start / 1e6:.9f}-{t0:.3f}us.trace.json"))
    check("step 4" not in names(evs, "X") and "step 3" in names(evs, "X"), "a window ending at step 4's start leaves it out")

    # A window past the run's end holds no event: one message, exit 3, no files.
    late = os.path.join(tmp, "late")
    rc, _, err = cutrace("export", "-o", late, "--from", "100000", stem + ".pftrace")
    eq(rc, 3, f"export of an empty window: exit 3 ({err})")
    eq(len([l for l in err.splitlines() if l.strip()]), 1, f"empty window: one message ({err!r})")
    check("no CUDA call or range in the window" in err, f"empty window: why ({err!r})")
    check(not os.path.exists(late) or not os.listdir(late), "empty window: no files")

    # Bad values: usage; no such steps / a JSON input: one message, exit 3.
    eq(cutrace("export", "--steps", "3-2", stem + ".pftrace")[0], 2, "--steps 3-2: usage error")
    eq(cutrace("export", "--from", "2", "--to", "1", stem + ".pftrace")[0], 2, "--from after --to: usage error")
    eq(cutrace("export", "--from", "1x", stem + ".pftrace")[0], 2, "--from 1x: usage error")
    eq(cutrace("export", "--steps", "1", "--from", "1", stem + ".pftrace")[0], 2, "--steps with --from: usage error")
    eq(cutrace("export", "--max-json", "0", stem + ".pftrace")[0], 2, "--max-json 0: usage error")
    eq(cutrace("export", "--max-json", "1x", stem + ".pftrace")[0], 2, "--max-json 1x: usage error")
    # More events than a Chrome trace of --max-json holds (100 bytes an event): exit 3 before
    # they take memory, asking for a window; a window that fits is exported.
    rc, _, err = cutrace("export", "-o", out, "--max-json", "1K", stem + ".pftrace")
    eq(rc, 3, f"export --max-json 1K: exit 3 ({err})")
    check("more than 10 events in the stream" in err and "--from T1 --to T2" in err, f"export --max-json 1K: why ({err!r})")
    rc, _, err = cutrace("export", "-o", out, "--max-json", "300", "--steps", "2", stem + ".pftrace")
    check(rc == 3 and "more than 3 events in the window" in err, f"export --max-json 300 --steps 2: too many ({err!r})")
    rc, _, err = cutrace("export", "-o", out, "--max-json", "1K", "--steps", "2", stem + ".pftrace")
    eq(rc, 0, f"export --max-json 1K --steps 2: its 7 events fit ({err})")
    for args, what in ((["--steps", "7-9"], "no steps 7-9"), ([], "a JSON input")):
        path = stem + (".pftrace" if args else ".trace.json")
        rc, _, err = cutrace("export", "-o", out, *args, path)
        eq(rc, 3, f"{what}: exit 3")
        eq(len([l for l in err.splitlines() if l.strip()]), 1, f"{what}: one message ({err!r})")


def bad_inputs(tmp):
    # A stream cut inside its first packet and one with a malformed packet: one message, exit 3.
    for name, data in (("cut.pftrace", b"\x0a\x05\x40"), ("bad.pftrace", b"\x0a\x02\x40\xff" + b"\x0a" * 3)):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        for cmd in (["report", path], ["diff", path, path], ["merge", "-o", os.path.join(tmp, "m.json"), path]):
            rc, _, err = cutrace(*cmd)
            eq(rc, 3, f"{cmd[0]} {name}: exit 3 ({err.strip()})")
            eq(len([l for l in err.splitlines() if l.strip()]), 1, f"{cmd[0]} {name}: one message ({err!r})")


with tempfile.TemporaryDirectory() as tmp:
    stem = traced_run(tmp)
    same_tables(stem)
    merge(stem, tmp)
    export_windows(stem, tmp)
    bad_inputs(tmp)
finish()
