#!/usr/bin/env python3
"""Tests of `cutrace report` and `cutrace diff`.

usage: check_report.py CUTRACE FIXTURES MODE [ARGS...]
  MODE fixtures | ops | malformed | diff | large | markdown | pipeline LIBTRACE PIPELINE STANDIN_DIR
       | torch LIBTRACE PYTHON TORCH_NAMES_PY LD_LIBRARY_PATH
Fixture values are hand-computed from the ts/dur in fixtures/*.json (see the comments below).
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, eq, finish  # noqa: E402

CUTRACE, FIXTURES, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
HOST = os.path.join(FIXTURES, "host_nested.json")
DEVICE = os.path.join(FIXTURES, "device.json")
OPS = os.path.join(FIXTURES, "torch_ops.json")


def run(*args, env=None):
    p = subprocess.run([CUTRACE, *args], capture_output=True, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


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
    eq(kernel["kA(int)"], {"name": "kA(int)", "launches": 2, "host_total_ns": 8000, "captured": 0, "calls": None, "total_ns": None,
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
                  "launches", "host_total_ns", "shapes", "gpu_total_ns", "gpu_avg_ns", "kernels", "captured"], "csv header")
    by = {(r[0], r[1]): r for r in table[1:]}
    # Two processes: wall 400 + 340 us; cudaLaunchKernel 3 + 5 calls of the device fixture.
    eq(by[("api", "cudaLaunchKernel")][3:10], ["8", "21000", "17000", "2625", "1000", "5000", "2.84"], "csv merged api row")
    eq(by[("kernel", "kA(int)")], ["kernel", "kA(int)", "", "", "", "", "", "", "", "", "2", "8000", "", "", "", "", "0"],
       "csv launch-only kernel row")
    eq(by[("kernel", "kA")][3:], ["2", "15000", "", "7500", "5000", "10000", "62.50", "2", "4000", "", "", "", "", "0"],
       "csv device kernel row")
    eq(by[("nvtx", "step")][3:], ["2", "150000", "80000", "75000", "50000", "100000", "", "", "", "", "", "", "", ""], "csv nvtx row")
    check(not any(r[0] == "op" for r in table[1:]), "no op rows without op ranges")

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
        for fmt in ("table", "csv", "json", "markdown"):
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


OP_FIELDS = ("name", "shapes", "calls", "total_ns", "self_ns", "avg_ns", "gpu_total_ns", "gpu_avg_ns", "kernels", "percent")


def op_rows(doc):
    return [tuple(r[k] for k in OP_FIELDS) for r in doc["sections"]["op"]]


def ops():
    # fixtures/torch_ops.json, thread 1: step [0,100] holds aten::linear [10,50] holding
    # aten::addmm [12,42] (a CUDA call and the 4 us NVTX range "inner" inside), aten::relu
    # [55,63], aten::addmm [70,80] on other sizes and aten::addmm [85,91] on the first sizes
    # written with spaces. Thread 2: AddmmBackward0 [120,140] holding aten::mm [125,135];
    # evaluate_function: ReluBackward0 [145,154] holding ReluBackward0 [146,153]; aten::cat
    # [160,162] with sizes as a string. GPU 0 stream 7, back to back (busy 40 us): gemm_a 12
    # and gemm_b 8 (addmm op_id 2), relu_k 3 (op_id 3), gemm_small 4 (op_id 4), mm_k 6
    # (op_id 6), fill 5 (no op), relu_named 2 (args.op without op_id); a memcpy naming op_id 2
    # (not a kernel: not counted).
    A256, A128 = "[[256],[16,256],[256,256],[],[]]", "[[128],[8,128],[128,128],[],[]]"
    EVAL = "autograd::engine::evaluate_function: ReluBackward0"
    doc = report_json("--by", "op", OPS)
    eq(list(doc["sections"]), ["op"], "--by op gives one section")
    eq((doc["group_by_shapes"], doc["gpu_busy_ns"], doc["kernel_source"]), (False, 40000, "device"), "op report header")
    by_name = [
        ("aten::addmm", None, 3, 46000, 42000, 15333, 24000, 8000, 3, 60.0),
        ("aten::linear", None, 1, 40000, 10000, 40000, 0, 0, 0, 0.0),
        ("AddmmBackward0", None, 1, 20000, 10000, 20000, 0, 0, 0, 0.0),
        ("aten::mm", None, 1, 10000, 10000, 10000, 6000, 6000, 1, 15.0),
        (EVAL, None, 1, 9000, 2000, 9000, 0, 0, 0, 0.0),
        # relu_k by op_id, relu_named by name.
        ("aten::relu", None, 1, 8000, 8000, 8000, 5000, 5000, 2, 12.5),
        ("ReluBackward0", None, 1, 7000, 7000, 7000, 0, 0, 0, 0.0),
        ("aten::cat", None, 1, 2000, 2000, 2000, 0, 0, 0, 0.0),
    ]
    eq(op_rows(doc), by_name, "op rows by name (step and inner are not ops)")
    eq(sum(r["gpu_total_ns"] for r in doc["sections"]["op"]), (12 + 8 + 3 + 4 + 6 + 2) * 1000,
       "op GPU totals add up to every kernel naming an op")
    eq(sum(r["kernels"] for r in doc["sections"]["op"]), 6, "op kernel counts add up")
    nvtx = rows(report_json("--by", "nvtx", OPS), "nvtx")
    eq((nvtx["aten::addmm"]["self_ns"], nvtx["step"]["self_ns"]), (42000, 36000), "op self time = NVTX self time")

    doc = report_json("--by", "op", "--group-by-shapes", OPS)
    eq(doc["group_by_shapes"], True, "group_by_shapes in json")
    by_shapes = [
        ("aten::linear", "[[16,256],[256,256],[256]]", 1, 40000, 10000, 40000, 0, 0, 0, 0.0),
        # Two calls: spaces in the written sizes do not split the group.
        ("aten::addmm", A256, 2, 36000, 32000, 18000, 20000, 10000, 2, 50.0),
        ("AddmmBackward0", None, 1, 20000, 10000, 20000, 0, 0, 0, 0.0),
        ("aten::addmm", A128, 1, 10000, 10000, 10000, 4000, 4000, 1, 10.0),
        ("aten::mm", "[[16,256],[256,256]]", 1, 10000, 10000, 10000, 6000, 6000, 1, 15.0),
        (EVAL, None, 1, 9000, 2000, 9000, 0, 0, 0, 0.0),
        ("aten::relu", "[[16,256]]", 1, 8000, 8000, 8000, 3000, 3000, 1, 7.5),
        ("ReluBackward0", "[[16,256]]", 1, 7000, 7000, 7000, 0, 0, 0, 0.0),
        ("aten::cat", "[[2, 3], TensorList]", 1, 2000, 2000, 2000, 0, 0, 0, 0.0),
    ]
    eq(op_rows(doc), by_shapes, "op rows by name and shapes")
    eq(sum(r["gpu_total_ns"] for r in doc["sections"]["op"]), 33000,
       "grouped GPU totals: the kernels matched by op_id (relu_named has no shapes to go to)")
    rc, out, _ = run("report", "--by", "op", "--group-by-shapes", OPS)
    check(rc == 0 and "By PyTorch op and input shapes (GPU busy 40.000 us)" in out and "Input shapes" in out
          and "[[128],[8,128],[128,128],[],[]]" in out
          and "note: 1 kernel launched in ops matched no op range by op_id (shapes unknown)" in out,
          f"grouped op table: {out!r}")
    rc, out, _ = run("report", "--by", "op", OPS)
    check(rc == 0 and "By PyTorch op (GPU busy 40.000 us)" in out and "Input shapes" not in out and "note:" not in out,
          f"op table: {out!r}")

    rc, out, _ = run("report", "--by", "op", "--group-by-shapes", "--format", "csv", OPS)
    table = list(csv.reader(io.StringIO(out)))
    eq(table[2], ["op", "aten::addmm", "", "2", "36000", "32000", "18000", "6000", "30000", "50.00", "", "", A256, "20000",
                  "10000", "2", ""], "csv grouped op row")
    eq(table[3][12], "", "csv op row without sizes: empty shapes")
    rc, out, _ = run("report", "--by", "op", "--format", "csv", OPS)
    eq(list(csv.reader(io.StringIO(out)))[1],
       ["op", "aten::addmm", "", "3", "46000", "42000", "15333", "6000", "30000", "60.00", "", "", "", "24000", "8000", "3", ""],
       "csv op row")

    # --by all: op only with op ranges; sorting, limit; two files are two processes whose op_ids
    # do not meet.
    eq(list(report_json(OPS)["sections"]), ["api", "kernel", "nvtx", "op"], "--by all with op ranges")
    eq(list(report_json(HOST, DEVICE)["sections"]), ["api", "kernel", "nvtx"], "--by all without op ranges")
    eq(report_json("--by", "op", HOST)["sections"], {"op": []}, "--by op without op ranges: empty")
    eq([r["name"] for r in report_json("--by", "op", "--sort", "gpu", OPS)["sections"]["op"]],
       ["aten::addmm", "aten::mm", "aten::relu", "AddmmBackward0", "ReluBackward0", "aten::cat", "aten::linear", EVAL],
       "--sort gpu, ties by name")
    eq([r["name"] for r in report_json("--by", "kernel", "--sort", "gpu", "--limit", "3", OPS)["sections"]["kernel"]],
       ["gemm_a", "gemm_b", "mm_k"], "--sort gpu on kernels")
    eq([r["name"] for r in report_json("--by", "api", "--sort", "gpu", HOST)["sections"]["api"]],
       [r["name"] for r in report_json("--by", "api", HOST)["sections"]["api"]], "--sort gpu without GPU time: as total")
    eq([(r["name"], r["shapes"]) for r in report_json("--by", "op", "--group-by-shapes", "--sort", "name", "--limit", "3",
                                                      OPS)["sections"]["op"]],
       [("AddmmBackward0", None), ("ReluBackward0", "[[16,256]]"), ("aten::addmm", A128)], "sort name, ties by shapes")
    doc = report_json("--by", "op", OPS, OPS)
    eq(op_rows(doc)[0], ("aten::addmm", None, 6, 92000, 84000, 15333, 48000, 8000, 6, 60.0), "two files: op rows doubled")

    # Without device events: GPU columns empty, a note.
    with tempfile.TemporaryDirectory() as tmp:
        host_only = os.path.join(tmp, "host_only.json")
        with open(OPS) as f:
            trace = json.load(f)
        trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") not in ("kernel", "memcpy")]
        trace["metadata"]["cupti"] = {"state": "off", "reason": "no GPU"}
        with open(host_only, "w") as f:
            json.dump(trace, f)
        doc = report_json("--by", "op", host_only)
        eq(op_rows(doc)[0], ("aten::addmm", None, 3, 46000, 42000, 15333, None, None, None, None), "op row without device")
        rc, out, _ = run("report", "--by", "op", host_only)
        check(rc == 0 and "note: no device kernel events (GPU times need CUPTI and a GPU); host times only (CUPTI off: no GPU)"
              in out and " - " in out, f"op table without device events: {out!r}")
        rc, out, _ = run("report", "--by", "op", "--format", "csv", host_only)
        eq(list(csv.reader(io.StringIO(out)))[1][13:16], ["", "", ""], "csv op row without device: empty GPU columns")
        # Determinism, every format and grouping.
        for fmt in ("table", "csv", "json", "markdown"):
            for extra in ([], ["--group-by-shapes"]):
                a = run("report", "--by", "all", "--format", fmt, *extra, OPS, HOST)
                check(a == run("report", "--by", "all", "--format", fmt, *extra, OPS, HOST) and a[0] == 0,
                      f"deterministic op {fmt} {extra}")
    check("--group-by-shapes" in run("report", "--help")[1] and "--group-by-shapes" in run("diff", "--help")[1],
          "--help names --group-by-shapes")


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
    # PyTorch op args the report reads follow the rule of every field it reads: the wrong type
    # is malformed input (a string for sizes is what the tracer writes for non-integer lists).
    op_event = b'{"traceEvents":[{"ph":"X","cat":"%s","name":"aten::add","tid":1,"ts":1,"dur":1,"args":{%s}}]}'
    for name, cat, args in (("sizes_number", b"nvtx", b'"sizes":5'), ("sizes_object", b"nvtx", b'"sizes":{"a":1}'),
                            ("sizes_float", b"nvtx", b'"sizes":[[1.5]]'), ("sizes_bool", b"nvtx", b'"sizes":[true]'),
                            ("op_id_string", b"nvtx", b'"op_id":"7"'), ("op_id_negative", b"nvtx", b'"op_id":-1'),
                            ("op_seq_float", b"nvtx", b'"op_seq":1.5'), ("stashed_seq_null", b"nvtx", b'"stashed_seq":null'),
                            ("kernel_op_number", b"kernel", b'"op":5'), ("kernel_op_id_string", b"kernel", b'"op_id":"2"')):
        cases[name + ".json"] = op_event % (cat, args)
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
        rc, _, err = run("report", os.path.join(tmp, "op_id_string.json"))
        check("'args.op_id' is not a non-negative integer" in err, f"op_id message: {err!r}")
        rc, _, err = run("report", os.path.join(tmp, "sizes_number.json"))
        check("'args.sizes' is not a list of integers or a string" in err, f"sizes message: {err!r}")
    # Args the report does not read may be anything.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "odd_args.json")
        with open(path, "wb") as f:
            f.write(b'{"traceEvents":[{"ph":"X","cat":"nvtx","name":"aten::add","tid":1,"ts":1,"dur":1,'
                    b'"args":{"op_id":3,"input_op_ids":{"x":1},"backward":"yes","sizes":[]}}]}')
        doc = report_json("--by", "op", "--group-by-shapes", path)
        eq(op_rows(doc), [("aten::add", "[]", 1, 1000, 1000, 1000, None, None, None, None)], "unread op args ignored")


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

        # Op rows: host time, keyed by name (and shapes when grouped). aten::addmm on sizes 128
        # 10 -> 14 us (still ending before the next addmm): by name 46 -> 50 us (+8.7%), by
        # shapes 10 -> 14 us (+40%).
        with open(OPS) as f:
            text = f.read()
        old = '"ts":70.000,"dur":10.000'
        assert old in text
        slow_op = os.path.join(tmp, "slow_op.json")
        with open(slow_op, "w") as f:
            f.write(text.replace(old, '"ts":70.000,"dur":14.000'))
        rc, out, _ = run("diff", OPS, slow_op, "--by", "op", "--format", "json", "--threshold", "5")
        doc = json.loads(out)
        eq((rc, [(r["section"], r["name"], r["shapes"], r["base_ns"], r["new_ns"], r["regressed"]) for r in doc["rows"]]),
           (1, [("op", "aten::addmm", None, 46000, 50000, True)]), "op diff by name")
        eq(run("diff", OPS, slow_op, "--by", "op")[0], 0, "by name +8.7% is under the default 10%")
        rc, out, _ = run("diff", OPS, slow_op, "--by", "op", "--group-by-shapes", "--format", "json")
        doc = json.loads(out)
        eq((rc, doc["compared"], [(r["name"], r["shapes"], r["base_ns"], r["new_ns"], r["delta_pct"]) for r in doc["rows"]]),
           (1, 9, [("aten::addmm", "[[128],[8,128],[128,128],[],[]]", 10000, 14000, 40.0)]), "op diff by shapes")
        rc, out, _ = run("diff", OPS, slow_op, "--by", "op", "--group-by-shapes")
        check(rc == 1 and any(l.startswith("aten::addmm [[128],[8,128],[128,128],[],[]]") and "REGRESSED" in l
                              for l in out.splitlines()), f"op diff table names the shapes: {out!r}")
        rc, out, _ = run("diff", OPS, slow_op, "--by", "nvtx", "--format", "json")
        eq([(r["section"], r["name"]) for r in json.loads(out)["rows"]], [("nvtx", "aten::addmm")],
           "the op's NVTX row changes too (diff compares totals: step's is the same)")
        grouped_report = os.path.join(tmp, "grouped.json")
        eq(run("report", "--format", "json", "--group-by-shapes", "-o", grouped_report, OPS)[0], 0, "write grouped report")
        eq(run("diff", grouped_report, OPS, "--group-by-shapes")[0], 0, "grouped report vs trace grouped alike")
        rc, _, err = run("diff", grouped_report, OPS)
        check(rc == 2 and "grouped by input shapes" in err, f"grouped report vs trace by name: usage error: {err!r}")
        eq(run("diff", grouped_report, OPS, "--by", "kernel")[0], 0, "grouping does not matter without op rows compared")
        eq(run("diff", grouped_report, slow_op, "--group-by-shapes")[0], 1, "grouped report vs slowed trace")
        plain_report = os.path.join(tmp, "plain.json")
        eq(run("report", "--format", "json", "-o", plain_report, HOST)[0], 0, "write report without op ranges")
        eq(run("diff", plain_report, OPS, "--by", "op")[0], 0, "report without op section: op rows not compared")

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
        eq(list(doc["sections"]), ["api", "kernel", "nvtx"], "no op table without PyTorch ranges")


def graph(libtrace, program, standin):
    # tests/e2e/programs/graph_capture.cu: captured_fill launched once while captured, twice
    # not (once on another thread, into another stream); captured_scale three times while
    # captured (once from another thread), never outside a capture.
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=libtrace, LD_LIBRARY_PATH=standin, CUTRACE_OUTPUT=tmp, CUTRACE_CUPTI="off")
        p = subprocess.run([program], env=env, capture_output=True)
        eq(p.returncode, 0, f"graph_capture ran ({p.stderr.decode()})")
        traces = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith((".trace.json", ".pftrace")))
        eq(len(traces), 2, "a Chrome trace and a stream")
        for trace in traces:
            kernel = rows(report_json("--by", "kernel", trace), "kernel")
            eq({k: (r["launches"], r["captured"]) for k, r in kernel.items()},
               {"captured_fill(float*, float, int)": (2, 1), "captured_scale(float*, float, int)": (0, 3)},
               f"{trace}: launches and captured launches")
            eq(kernel["captured_scale(float*, float, int)"]["host_total_ns"], 0, "no launch time for captured launches")
            api = rows(report_json("--by", "api", trace), "api")
            eq(api["cudaLaunchKernel"]["calls"], 6, "the API table still counts every call")
            rc, out, _ = run("report", "--by", "kernel", trace)
            header = out.splitlines()[1].split()
            eq(header[:5], ["Name", "Launches", "Host", "total", "Captured"], "table: Captured column after the launch time")
            rc, out, _ = run("report", "--by", "kernel", "--format", "csv", trace)
            table = list(csv.reader(io.StringIO(out)))
            eq((table[0][-1], sorted((r[1], r[10], r[-1]) for r in table[1:])),
               ("captured", [("captured_fill(float*, float, int)", "2", "1"), ("captured_scale(float*, float, int)", "0", "3")]),
               "csv captured column")
        rc, out, _ = run("report", "--by", "kernel", HOST)
        check(rc == 0 and "Captured" not in out, "no Captured column without captured launches")


def torch(libtrace, python, script, libpath):
    # tests/e2e/programs/torch_names.py: emit_nvtx range names of one training step, no GPU.
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=libtrace, LD_LIBRARY_PATH=libpath, CUTRACE_OUTPUT=tmp, CUTRACE_STACKS="off")
        p = subprocess.run([python, script], env=env, capture_output=True)
        eq(p.returncode, 0, f"torch_names.py ran ({p.stderr.decode()})")
        traces = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".trace.json")]
        eq(len(traces), 1, "one trace")
        if len(traces) != 1:
            return
        doc = report_json(traces[0])
        eq(list(doc["sections"]), ["api", "kernel", "nvtx", "op"], "op table in --by all")
        ops = rows(report_json("--by", "op", traces[0]), "op")
        # Every range but "step" names an op; aten::mul runs on two threads. Evaluate_function
        # ranges carry only op_id, AddmmBackward0 only a stashed seq: still ops.
        want = {"aten::linear": 2, "aten::addmm": 1, "aten::relu": 1, "aten::sum": 1, "aten::mul": 2,
                "autograd::engine::evaluate_function: SumBackward0": 1, "SumBackward0": 1,
                "autograd::engine::evaluate_function: ReluBackward0": 1, "ReluBackward0": 1,
                "aten::threshold_backward": 1, "AddmmBackward0": 1, "aten::mm": 2, "ThresholdBackwardBackward0": 1,
                "MulBackward0": 1, "aten::transpose": 1, "aten::t": 1, "aten::matmul": 1, "aten::reshape": 1,
                "aten::clone": 1, "aten::_unsafe_view": 1, "autograd::engine::evaluate_function: MmBackward0": 1,
                "MmBackward0": 1, "autograd::engine::evaluate_function: TBackward0": 1, "TBackward0": 1}
        eq({k: v["calls"] for k, v in ops.items()}, want, "torch op rows")
        nvtx = rows(report_json("--by", "nvtx", traces[0]), "nvtx")
        for name in want:
            eq((ops[name]["total_ns"], ops[name]["self_ns"]), (nvtx[name]["total_ns"], nvtx[name]["self_ns"]),
               f"{name}: host figures of its NVTX ranges")
        eq(ops["aten::linear"]["self_ns"],
           ops["aten::linear"]["total_ns"] - sum(ops[n]["total_ns"] for n in ("aten::addmm", "aten::t", "aten::matmul")),
           "linear self = total minus the nested addmm, t and matmul")
        check(all(r["gpu_total_ns"] is None and r["kernels"] is None and r["shapes"] is None for r in ops.values()),
              "no device events: GPU fields null")
        grouped = report_json("--by", "op", "--group-by-shapes", traces[0])["sections"]["op"]
        shapes = {(r["name"], r["shapes"]): r["calls"] for r in grouped}
        eq(shapes[("aten::addmm", "[[256],[16,256],[256,256],[],[]]")], 1, "addmm shapes, compact")
        eq(shapes[("aten::threshold_backward", "[[16,256],[16,256],[]]")], 1, "threshold_backward shapes")
        eq(shapes[("SumBackward0", "[[]]")], 1, "SumBackward0 shapes")
        eq(shapes[("aten::mul", None)], 2, "aten::mul: no sizes on either thread")
        eq(sum(shapes.values()), sum(want.values()), "grouping keeps every call")
        eq(run("diff", traces[0], traces[0], "--group-by-shapes")[0], 0, "torch trace vs itself")


ASCII_PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def markdown_cells(line):
    """A GitHub-flavoured Markdown table row as the cells' text a reader sees: split at every '|'
    that no backslash escapes, each backslash-escaped ASCII punctuation character read as itself
    (the GFM spec's rules for tables and backslash escapes). None where the row would render
    anything else: markup left unescaped in a cell (emphasis, code, a link, HTML, strikethrough,
    math, an entity, an emoji code)."""
    if not (line.startswith("| ") and line.endswith(" |")):
        return None
    cells, cell, i = [], "", 1
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] in ASCII_PUNCTUATION:
            cell += "\0" + line[i + 1]  # escaped: a literal character, marked so that markup checks skip it
            i += 2
            continue
        if c == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += c
        i += 1
    out = []
    for cell in cells:
        text = cell.strip(" ")
        bare = "".join(ch for k, ch in enumerate(text) if ch != "\0" and (k == 0 or text[k - 1] != "\0"))
        if any(ch in bare for ch in "*_`[]<>~$&\\"):
            return None
        for k, ch in enumerate(text):
            # An emoji code opens with a ':' that no backslash escapes, before a name's character.
            if ch == ":" and (k == 0 or text[k - 1] != "\0") and k + 1 < len(text) and (text[k + 1].isalnum() or text[k + 1] in "_+-"):
                return None
        out.append(text.replace("\0", ""))
    return out


def markdown_tables(text):
    """{heading: [header, rows...]} of a report in Markdown; notes as a list."""
    tables, notes, heading = {}, [], None
    for line in text.split("\n"):
        if line.startswith("### "):
            heading = line[4:]
            tables[heading] = []
        elif line.startswith("|"):
            if set(line) <= set("|:- "):
                continue  # the alignment row
            tables[heading].append(markdown_cells(line))
        elif line:
            notes.append(line)
    return tables, notes


def markdown():
    """--format markdown: the same tables as csv, whatever markup the names hold."""
    with tempfile.TemporaryDirectory() as tmp:
        hostile = os.path.join(tmp, "hostile.json")
        names = ["void axpy<float>(float const*, float*)", "a|b", "__init__", "**bold**", "`code`", "[link](x)",
                 "~~gone~~", "$x$", "&amp;", "std::thread::_M_run", "<b>html</b>", "back\\slash", ":+1:"]
        with open(hostile, "w") as f:
            json.dump({"traceEvents": [
                {"ph": "X", "cat": "nvtx", "name": n, "pid": 1, "tid": 1, "ts": 10 * i, "dur": 1 + i}
                for i, n in enumerate(names)]}, f)
        for trace, by, sections in ((hostile, "nvtx", ["nvtx"]), (HOST, "all", ["api", "kernel", "nvtx"]),
                                    (DEVICE, "all", ["api", "kernel", "nvtx"]), (OPS, "all", ["api", "kernel", "nvtx", "op"])):
            rc, text, err = run("report", "--format", "markdown", "--by", by, trace)
            eq(rc, 0, f"markdown {os.path.basename(trace)} exit ({err.strip()})")
            rc, out, _ = run("report", "--format", "csv", "--by", by, trace)
            table = list(csv.reader(io.StringIO(out)))[1:]
            tables, notes = markdown_tables(text)
            eq(len(tables), len(sections), f"{os.path.basename(trace)}: one heading per table")
            for (heading, rows_), section in zip(tables.items(), sections):
                check(all(r is not None for r in rows_), f"{heading}: every row a table row whose cells show as text")
                if any(r is None for r in rows_):
                    continue
                if not rows_:
                    check(not any(r[0] == section for r in table), f"{heading}: no table where the csv has no rows")
                    continue
                eq(len({len(r) for r in rows_}), 1, f"{heading}: every row as many cells as the header")
                # The calls (launches of kernel rows) in the csv's column and the Markdown's.
                csv_count, md_count = {"api": (3, 2), "kernel": (10, 1)}.get(section, (3, 1))
                eq([(r[0], r[md_count]) for r in rows_[1:]], [(r[1], r[csv_count]) for r in table if r[0] == section],
                   f"{heading}: names and counts as the csv's, in its order")
            for line in notes:
                check(markdown_cells("| " + line + " |") is not None, f"note shows as text: {line!r}")
        # The diff's table too: a row per change, names whole.
        slower = os.path.join(tmp, "slower.json")
        with open(slower, "w") as f:
            json.dump({"traceEvents": [
                {"ph": "X", "cat": "nvtx", "name": n, "pid": 1, "tid": 1, "ts": 10 * i, "dur": 2 + 2 * i}
                for i, n in enumerate(names)]}, f)
        rc, text, _ = run("diff", hostile, slower, "--format", "markdown")
        eq(rc, 1, "markdown diff: regressions exit 1 as the table's")
        lines = [l for l in text.split("\n") if l.startswith("|") and not set(l) <= set("|:- ")]
        parsed = [markdown_cells(l) for l in lines]
        check(all(p is not None for p in parsed), "diff rows show as text")
        if all(p is not None for p in parsed):
            eq(sorted(p[0] for p in parsed[1:]), sorted(names), "diff rows: every name, whole")
        check(text.rstrip("\n").split("\n")[-1].startswith(f"{len(names)} rows compared"), "diff summary last")



if MODE == "fixtures":
    fixtures()
elif MODE == "ops":
    ops()
elif MODE == "malformed":
    malformed()
elif MODE == "diff":
    diff()
elif MODE == "large":
    large()
elif MODE == "markdown":
    markdown()
elif MODE == "pipeline":
    pipeline(*sys.argv[4:7])
elif MODE == "graph":
    graph(*sys.argv[4:7])
elif MODE == "torch":
    torch(*sys.argv[4:8])
else:
    sys.exit(f"unknown mode {MODE}")
finish()
