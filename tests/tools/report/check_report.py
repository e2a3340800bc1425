#!/usr/bin/env python3
"""Tests of `cutrace report` and `cutrace diff`.

usage: check_report.py CUTRACE FIXTURES MODE [ARGS...]
  MODE fixtures | malformed | diff | large | pipeline LIBTRACE PIPELINE STANDIN_DIR
Fixture values are hand-computed from the ts/dur in fixtures/*.json (see the comments below).
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

CUTRACE, FIXTURES, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
HOST = os.path.join(FIXTURES, "host_nested.json")
DEVICE = os.path.join(FIXTURES, "device.json")
failures = []


def run(*args, env=None):
    p = subprocess.run([CUTRACE, *args], capture_output=True, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def eq(got, want, what):
    check(got == want, f"{what}: got {got!r}, want {want!r}")


def report_json(*args):
    rc, out, err = run("report", "--format", "json", *args)
    eq(rc, 0, f"report {args} exit ({err.strip()})")
    return json.loads(out) if rc == 0 else {"sections": {}}


def rows(doc, section):
    return {r["name"]: r for r in doc["sections"].get(section, [])}


def fixtures():
    doc = report_json(HOST)
    eq(doc["tool"], "cutrace-report", "tool")
    eq(doc["version"], 1, "version")
    eq(doc["processes"], 1, "processes")
    eq(doc["wall_ns"], 400000, "wall: first event at 0 us, last (counter) at 400 us")
    eq(doc["kernel_source"], "launch", "kernel source without device events")
    eq(doc["note"], "CUPTI off: fixture without a GPU", "cupti note")
    api = rows(doc, "api")
    eq(sorted(api), ["cuLaunchKernel", "cuMemcpyHtoD_v2", "cudaLaunchKernel", "cudaMemcpy"], "api names")
    # 3 launches of 5, 4, 3 us holding driver calls of 2, 1, 1 us.
    eq(api["cudaLaunchKernel"], {"name": "cudaLaunchKernel", "layer": "runtime", "calls": 3, "total_ns": 12000,
                                 "self_ns": 8000, "avg_ns": 4000, "min_ns": 3000, "max_ns": 5000, "percent": 3.0},
       "cudaLaunchKernel row")
    eq((api["cuLaunchKernel"]["layer"], api["cuLaunchKernel"]["calls"], api["cuLaunchKernel"]["total_ns"],
        api["cuLaunchKernel"]["self_ns"], api["cuLaunchKernel"]["avg_ns"]), ("driver", 3, 4000, 4000, 1333), "cuLaunchKernel row")
    # 20.5 us holding an 18.25 us driver copy, and 10.001 us on another thread (inside NVTX only).
    c = api["cudaMemcpy"]
    eq((c["calls"], c["total_ns"], c["self_ns"], c["min_ns"], c["max_ns"], c["avg_ns"]),
       (2, 30501, 12251, 10001, 20500, 15251), "cudaMemcpy row")
    eq([r["name"] for r in doc["sections"]["api"]],
       ["cudaMemcpy", "cuMemcpyHtoD_v2", "cudaLaunchKernel", "cuLaunchKernel"], "api order by total")
    kernel = rows(doc, "kernel")
    eq(kernel["kA(int)"], {"name": "kA(int)", "launches": 2, "host_total_ns": 8000, "calls": None, "total_ns": None,
                           "avg_ns": None, "min_ns": None, "max_ns": None, "percent": None}, "kA launch row")
    eq((kernel["kB"]["launches"], kernel["kB"]["host_total_ns"]), (1, 4000), "kB launch row")
    nvtx = rows(doc, "nvtx")
    # step: 100 us holding fwd 30 + bwd 40, and 50 us with no range inside.
    eq(nvtx["step"], {"name": "step", "calls": 2, "total_ns": 150000, "self_ns": 80000, "avg_ns": 75000,
                      "min_ns": 50000, "max_ns": 100000}, "step row")
    eq((nvtx["load"]["total_ns"], nvtx["load"]["self_ns"]), (300000, 300000), "load: CUDA calls inside do not reduce NVTX self")
    eq((nvtx["fwd"]["calls"], nvtx["bwd"]["total_ns"]), (1, 40000), "fwd/bwd rows")

    # Device events: kA [100,110] on stream 7 and kB [105,115] on stream 8 of GPU 0 overlap
    # (union 15 us), kA [200,205] adds 5; kC [100,104] on GPU 1 adds 4: busy 24 us.
    doc = report_json("--by", "kernel", DEVICE)
    eq(list(doc["sections"]), ["kernel"], "--by kernel gives one section")
    eq(doc["gpu_busy_ns"], 24000, "GPU busy union over overlapping kernels")
    eq(doc["kernel_source"], "device", "kernel source with device events")
    eq(doc["note"], None, "no note when CUPTI is on")
    eq([(r["name"], r["calls"], r["total_ns"], r["min_ns"], r["max_ns"], r["avg_ns"], r["percent"], r["launches"])
        for r in doc["sections"]["kernel"]],
       [("kA", 2, 15000, 5000, 10000, 7500, 62.5, 2), ("kB", 1, 10000, 10000, 10000, 10000, 41.67, 1),
        ("kC", 1, 4000, 4000, 4000, 4000, 16.67, 1), ("kD", None, None, None, None, None, None, 1)],
       "device kernel rows")
    rc, out, _ = run("report", DEVICE)
    check("note:" not in out and "By kernel (GPU busy 24.000 us)" in out, "device table: busy title, no note")

    # Sorting, ties by name, limit.
    def order(*args):
        return [r["name"] for r in report_json("--by", "api", *args, HOST)["sections"]["api"]]
    eq(order("--sort", "calls"), ["cuLaunchKernel", "cudaLaunchKernel", "cudaMemcpy", "cuMemcpyHtoD_v2"], "sort calls, ties by name")
    eq(order("--sort", "name"), ["cuLaunchKernel", "cuMemcpyHtoD_v2", "cudaLaunchKernel", "cudaMemcpy"], "sort name")
    eq(order("--sort", "self"), ["cuMemcpyHtoD_v2", "cudaMemcpy", "cudaLaunchKernel", "cuLaunchKernel"], "sort self")
    eq(order("--sort", "min"), ["cuMemcpyHtoD_v2", "cudaMemcpy", "cudaLaunchKernel", "cuLaunchKernel"], "sort min")
    eq(order("--sort", "max", "--limit", "2"), ["cudaMemcpy", "cuMemcpyHtoD_v2"], "sort max, limit 2")
    eq(order("--sort=avg", "--limit=1"), ["cuMemcpyHtoD_v2"], "sort avg, --opt=value form")
    doc = report_json("--limit", "1", HOST)
    eq([len(doc["sections"][s]) for s in ("api", "kernel", "nvtx")], [1, 1, 1], "limit applies per section")

    # CSV: one table, integer ns, quoted names, empty GPU columns without device events.
    rc, out, _ = run("report", "--format", "csv", HOST, DEVICE)
    eq(rc, 0, "csv exit")
    table = list(csv.reader(io.StringIO(out)))
    eq(table[0], ["section", "name", "layer", "calls", "total_ns", "self_ns", "avg_ns", "min_ns", "max_ns", "percent",
                  "launches", "host_total_ns"], "csv header")
    by = {(r[0], r[1]): r for r in table[1:]}
    # Two processes: wall 400 + 340 us; cudaLaunchKernel 3 + 5 calls of the device fixture.
    eq(by[("api", "cudaLaunchKernel")][3:10], ["8", "21000", "17000", "2625", "1000", "5000", "2.84"], "csv merged api row")
    eq(by[("kernel", "kA(int)")], ["kernel", "kA(int)", "", "", "", "", "", "", "", "", "2", "8000"], "csv launch-only kernel row")
    eq(by[("kernel", "kA")][3:], ["2", "15000", "", "7500", "5000", "10000", "62.50", "2", "4000"], "csv device kernel row")
    eq(by[("nvtx", "step")][3:], ["2", "150000", "80000", "75000", "50000", "100000", "", "", ""], "csv nvtx row")

    # Table: human units, note line without device events.
    rc, out, _ = run("report", HOST)
    eq(rc, 0, "table exit")
    for text in ("By CUDA API (wall 400.000 us over 1 process)", "cudaMemcpy", "30.501 us", "12.251 us", "1.333 us",
                 "By NVTX range", "150.000 us", "note: no device kernel events (GPU times need CUPTI and a GPU)"):
        check(text in out, f"table contains {text!r}")
    with tempfile.TemporaryDirectory() as tmp:
        units = os.path.join(tmp, "units.json")
        with open(units, "w") as f:
            json.dump({"traceEvents": [
                {"ph": "X", "cat": "nvtx", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": d}
                for n, ts, d in (("a", 0, 0.5), ("b", 10, 2500), ("c", 3000, 1500000))]}, f)
        rc, out, _ = run("report", "--by", "nvtx", units)
        for text in ("0.500 us", "2.500 ms", "1.500 s"):
            check(text in out, f"unit formatting {text!r}")
        # Determinism: same bytes twice, for every format, and -o writes what stdout shows.
        for fmt in ("table", "csv", "json"):
            a = run("report", "--format", fmt, HOST, DEVICE)
            b = run("report", "--format", fmt, HOST, DEVICE)
            check(a == b and a[0] == 0, f"deterministic {fmt}")
            outfile = os.path.join(tmp, "out." + fmt)
            rc, out, _ = run("report", "--format", fmt, "-o", outfile, HOST, DEVICE)
            check(rc == 0 and out == "" and open(outfile).read() == a[1], f"-o {fmt}")
    # Usage and output errors.
    eq(run("report", "--help")[0], 0, "--help")
    check("--sort" in run("report", "--help")[1], "--help text")
    for bad in (["--bogus", HOST], ["--sort", "fast", HOST], ["--limit", "x", HOST], ["--by", "gpu", HOST],
                ["--format", "xml", HOST], [], ["--limit"]):
        rc, _, err = run("report", *bad)
        eq(rc, 2, f"usage error for {bad}")
        check("error" in err, f"usage message for {bad}")
    eq(run("report", "-o", "/nonexistent-dir/x.txt", HOST)[0], 4, "unwritable output")


def malformed():
    with open(HOST, "rb") as f:
        good = f.read()
    cases = {
        "truncated.json": good[: len(good) // 2],
        "truncated_end.json": good[:-3],
        "empty.json": b"",
        "garbage.json": bytes((i * 7919 + 13) % 256 for i in range(4096)),
        "events_not_array.json": b'{"traceEvents":5}',
        "no_events.json": b'{"metadata":{}}',
        "not_a_trace.json": b'"hello"',
        "event_not_object.json": b'{"traceEvents":[1,2]}',
        "ts_string.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"a","tid":1,"ts":"abc","dur":1}]}',
        "name_number.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":7,"tid":1,"ts":1,"dur":1}]}',
        "tid_float.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"a","tid":1.5,"ts":1,"dur":1}]}',
        "kernel_number.json": b'{"traceEvents":[{"ph":"X","cat":"cuda_runtime","name":"a","tid":1,"ts":1,"dur":1,"args":{"kernel":5}}]}',
        "missing_dur.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"a","tid":1,"ts":1}]}',
        "negative_dur.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"a","tid":1,"ts":1,"dur":-1}]}',
        "huge_ts.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"a","tid":1,"ts":1e300,"dur":1}]}',
        "bad_utf8.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"a\xff","tid":1,"ts":1,"dur":1}]}',
        "trailing.json": b'{"traceEvents":[]} {}',
        "deep.json": b"[" * 100000 + b"]" * 100000,
        "deep_args.json": b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"a","tid":1,"ts":1,"dur":1,"args":'
                          + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}]}",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, content in cases.items():
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(content)
            for cmd in (["report", path], ["diff", path, HOST], ["diff", HOST, path]):
                rc, out, err = run(*cmd)
                eq(rc, 3, f"{' '.join(cmd[:1])} {name} exit ({err.strip()})")
                check(name in err and err.count("\n") == 1, f"{cmd[0]} {name}: one message naming the file: {err!r}")
                check(out == "", f"{cmd[0]} {name}: nothing on stdout")
        rc, _, err = run("report", os.path.join(tmp, "missing.json"))
        check(rc == 3 and "missing.json" in err, "missing file")


def diff():
    with tempfile.TemporaryDirectory() as tmp:
        def variant(name, edit):
            text = open(HOST).read()
            for old, new in edit:
                assert old in text, old
                text = text.replace(old, new)
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            return path
        # cudaMemcpy 20.5 -> 30.5 us: total 30.501 -> 40.501 us, +32.8%, +10 us.
        slow = variant("slow.json", [('"cudaMemcpy","pid":100,"tid":1,"ts":55.000,"dur":20.500',
                                      '"cudaMemcpy","pid":100,"tid":1,"ts":55.000,"dur":30.500')])
        # One more driver call of 2 us, a row BASE lacks.
        extra = variant("extra.json", [('{"ph":"C"', '{"ph":"X","cat":"cuda_driver","name":"cuCtxSynchronize","pid":100,'
                                                     '"tid":1,"ts":300.000,"dur":2.000},\n{"ph":"C"')])
        base_report = os.path.join(tmp, "base_report.json")
        eq(run("report", "--format", "json", "-o", base_report, HOST)[0], 0, "write base report")

        rc, out, err = run("diff", HOST, HOST)
        eq(rc, 0, f"identical traces ({err.strip()})")
        check("0 changed, 0 regressed" in out, f"identical summary: {out!r}")
        eq(run("diff", base_report, HOST)[0], 0, "report json vs identical trace")
        api_report = os.path.join(tmp, "api_report.json")
        eq(run("report", "--format", "json", "--by", "api", "-o", api_report, HOST)[0], 0, "write api-only report")
        rc, out, _ = run("diff", api_report, extra)
        check(rc == 1 and "4 rows compared" not in out and "5 rows compared" in out,
              f"api-only report: only api rows compared, the new one regresses: {out!r}")
        device_report = os.path.join(tmp, "device_report.json")
        eq(run("report", "--format", "json", "-o", device_report, DEVICE)[0], 0, "write device report")
        rc, out, _ = run("diff", device_report, DEVICE)
        check(rc == 0 and "0 changed" in out, f"device report vs its trace: {out!r}")

        rc, out, _ = run("diff", HOST, slow)
        eq(rc, 1, "slowed cudaMemcpy regresses at the default 10%")
        line = [l for l in out.splitlines() if l.startswith("cudaMemcpy ")]
        check(len(line) == 1 and "REGRESSED" in line[0] and "+32.8%" in line[0] and "+10.000 us" in line[0],
              f"regressed row named: {line}")
        check("1 regressed" in out, "one regression")
        eq(run("diff", base_report, slow)[0], 1, "report json base vs slowed trace")
        eq(run("diff", HOST, slow, "--threshold", "30")[0], 1, "32.8% > 30%")
        eq(run("diff", HOST, slow, "--threshold", "40")[0], 0, "32.8% < 40%")
        eq(run("diff", HOST, slow, "--min-us", "10")[0], 1, "+10 us >= 10 us")
        eq(run("diff", HOST, slow, "--min-us", "10.5")[0], 0, "+10 us < 10.5 us")
        eq(run("diff", HOST, slow, "--by", "nvtx")[0], 0, "nvtx rows unchanged")
        eq(run("diff", slow, HOST)[0], 0, "faster is no regression")

        rc, out, _ = run("diff", HOST, slow, "--format", "json")
        doc = json.loads(out)
        eq((rc, doc["tool"], doc["regressions"]), (1, "cutrace-diff", 1), "json diff summary")
        eq([(r["section"], r["name"], r["status"], r["base_ns"], r["new_ns"], r["delta_ns"], r["delta_pct"], r["regressed"])
            for r in doc["rows"]],
           [("api", "cudaMemcpy", "changed", 30501, 40501, 10000, 32.79, True)], "json diff rows")

        rc, out, _ = run("diff", HOST, extra)
        eq(rc, 1, "a new row regresses when its total >= --min-us (default 0)")
        check(any(l.startswith("cuCtxSynchronize") and "new, REGRESSED" in l for l in out.splitlines()), "new row shown")
        eq(run("diff", HOST, extra, "--min-us", "2")[0], 1, "new row of 2 us >= 2 us")
        eq(run("diff", HOST, extra, "--min-us", "2.001")[0], 0, "new row of 2 us < 2.001 us")
        rc, out, _ = run("diff", extra, HOST)
        check(rc == 0 and any(l.startswith("cuCtxSynchronize") and "gone" in l for l in out.splitlines()), "gone row, no regression")

        for bad in ([HOST], [HOST, HOST, HOST], [HOST, HOST, "--threshold", "x"], [HOST, HOST, "--format", "csv"]):
            eq(run("diff", *bad)[0], 2, f"diff usage {bad}")
        eq(run("diff", "--help")[0], 0, "diff --help")


def large():
    # Over 100 MB: a progress line on stderr, same rows as a small file would give.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "large.json")
        n = 0
        with open(path, "w") as f:
            f.write('{"traceEvents":[\n')
            pad = "x" * 200
            chunk = []
            while n < 450000:
                chunk.append('{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpy","pid":1,"tid":1,"ts":%d.000,"dur":1.000,'
                             '"args":{"seq":%d,"pad":"%s"}},\n' % (n * 2, n, pad))
                n += 1
                if len(chunk) == 10000:
                    f.write("".join(chunk))
                    chunk = []
            f.write("".join(chunk))
            f.write('{"ph":"C","name":"end","pid":1,"tid":1,"ts":0}\n]}\n')
        check(os.path.getsize(path) > 100 << 20, "large file over 100 MB")
        rc, out, err = run("report", "--format", "json", "--by", "api", path)
        eq(rc, 0, "large file exit")
        check("reading" in err and "%" in err, f"progress on stderr: {err!r}")
        r = json.loads(out)["sections"]["api"][0]
        eq((r["name"], r["calls"], r["total_ns"]), ("cudaMemcpy", n, n * 1000), "large file rows")


def pipeline(libtrace, program, standin):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=libtrace, LD_LIBRARY_PATH=standin, CUTRACE_OUTPUT=tmp, CUTRACE_CUPTI="off")
        p = subprocess.run([program], env=env, capture_output=True)
        eq(p.returncode, 0, f"pipeline ran ({p.stderr.decode()})")
        traces = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".trace.json")]
        eq(len(traces), 1, "one trace")
        if len(traces) != 1:
            return
        doc = report_json(traces[0])
        api = rows(doc, "api")
        # examples/pipeline.cu: 4 steps of copy, 3 launches, memset, sync; 2 mallocs/frees;
        # the loader's 4 pinned allocations; one final copy.
        want = {"cudaLaunchKernel": 12, "cuLaunchKernel": 12, "cudaMemcpyAsync": 4, "cudaMemcpy": 1, "cudaMemsetAsync": 4,
                "cudaStreamSynchronize": 4, "cudaMalloc": 2, "cudaFree": 2, "cudaFreeHost": 4}
        eq({k: api[k]["calls"] if k in api else None for k in want}, want, "pipeline API call counts")
        eq(api["cudaLaunchKernel"]["layer"], "runtime", "runtime layer")
        eq(api["cudaLaunchKernel"]["self_ns"], api["cudaLaunchKernel"]["total_ns"] - api["cuLaunchKernel"]["total_ns"],
           "launch self time = total minus the nested driver launches")
        kernel = {r["name"]: (r["launches"], r["calls"]) for r in doc["sections"]["kernel"]}
        eq(kernel, {"void model::axpy<float>(float, float const*, float*, int)": (4, None),
                    "model::relu(float*, int)": (4, None), "normalize(float*, float, int)": (4, None)}, "pipeline kernels")
        nvtx = rows(doc, "nvtx")
        eq({k: v["calls"] for k, v in nvtx.items()},
           {"step": 4, "copy in": 4, "forward": 4, "backward": 4, "load batch": 4}, "pipeline NVTX ranges")
        eq(nvtx["step"]["self_ns"],
           nvtx["step"]["total_ns"] - sum(nvtx[k]["total_ns"] for k in ("copy in", "forward", "backward")),
           "step self time = total minus its nested ranges")
        eq((doc["processes"], doc["kernel_source"]), (1, "launch"), "one process, no device events")
        rc, out, _ = run("report", traces[0])
        check(rc == 0 and "note: no device kernel events" in out, "pipeline table note")
        eq(run("diff", traces[0], traces[0])[0], 0, "pipeline trace vs itself")


if MODE == "fixtures":
    fixtures()
elif MODE == "malformed":
    malformed()
elif MODE == "diff":
    diff()
elif MODE == "large":
    large()
elif MODE == "pipeline":
    pipeline(*sys.argv[4:7])
else:
    sys.exit(f"unknown mode {MODE}")
print(f"{len(failures)} failed" if failures else "ok")
sys.exit(1 if failures else 0)
