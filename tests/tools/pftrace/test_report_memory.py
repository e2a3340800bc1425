#!/usr/bin/env python3
"""cutrace report and diff of a .pftrace: the tables of its Chrome trace, self times by nesting
in time (an epoch and steps that stayed open across drain passes come in the stream after what
they nest), GPU times of kernels by the op range around their launch, in memory that follows the
nesting, not the stream: the peak RSS of reading 600 k events, 250 k PyTorch op ranges with
no GPU, or a GPU run of 300 k kernels, stays near that of reading a stream of a few.

usage: test_report_memory.py CUTRACE LIBTRACE STANDIN_DIR NESTED_STEPS PEAK_RSS rss|no-rss DEVICE_OPS
(no-rss: a sanitizer build, whose allocator keeps freed memory; the RSS is printed, not bounded;
DEVICE_OPS: pftrace_device_ops, which writes a GPU run's stream and Chrome trace with no GPU)
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
STEPS, CALLS = 100, 1000
OP_STEPS = 250  # of CALLS op ranges each: 65 bytes a range were kept for kernels none had
GPU_STEPS = 100000
# More kernels, each apart from the next, than the GPU busy time keeps pieces of (BusyTime).
IDLE_STEPS = 22000
# Every span the old report kept (about 32 bytes each, in vectors that double) came to 30-60 MB
# here. Reading the big stream may pass the small one's by this much (names, buffers, noise).
SLACK_KIB = 8 * 1024


def traced_run(out, steps, calls, kind, env_extra):
    os.mkdir(out)
    # A ring that holds the whole run: no event dropped however slow the drain (an op range's
    # text takes records too: 250 k of them, with their calls, about 2.5 M records).
    env = dict(os.environ, LD_PRELOAD=LIBTRACE, LD_LIBRARY_PATH=STANDIN, CUTRACE_OUTPUT=out,
               CUTRACE_RING_SIZE="128M" if kind == "ops" else "64M", **env_extra)
    p = subprocess.run([PROG, str(steps), str(calls), kind], env=env, capture_output=True)
    err = p.stderr.decode("utf-8", "replace")
    eq(p.returncode, 0, f"nested_steps {steps} {calls} {kind}: exit status ({err})")
    m = re.search(r", (\d+) events, 0 dropped", err)
    check(m is not None and int(m.group(1)) >= steps * calls * 6 + steps + 1, f"nested_steps {steps} {calls}: every event ({err})")
    stem = [f for f in os.listdir(out) if f.endswith(".pftrace")]
    eq(len(stem), 1, f"one stream in {out}")
    return os.path.join(out, stem[0][:-len(".pftrace")])


def cutrace(*args):
    p = subprocess.run([CUTRACE, *args], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def report(*args):
    rc, out, err = cutrace("report", "--format", "json", *args)
    eq(rc, 0, f"report {args} ({err})")
    data = json.loads(out) if rc == 0 else {"sections": {}}
    data.pop("inputs", None)
    return data


def rows(data, section):
    return {(r["name"], r.get("shapes")): r for r in data["sections"].get(section, [])}


with tempfile.TemporaryDirectory() as tmp:
    # The tables of the stream are those of the Chrome trace written at exit, op rows too, with
    # a pass every millisecond: the epoch and the steps are written after what they hold.
    stem = traced_run(os.path.join(tmp, "ops"), 6, 400, "ops", {"CUTRACE_DRAIN_MS": "1"})
    for extra in ([], ["--group-by-shapes"]):
        eq(report(*extra, stem + ".pftrace"), report(*extra, stem + ".trace.json"),
           f"report {extra}: the .pftrace's tables are the .trace.json's")
    rc, out, err = cutrace("diff", "--threshold", "0", stem + ".trace.json", stem + ".pftrace")
    eq(rc, 0, f"diff of the Chrome trace and the stream: no row regressed ({out}{err})")
    ops = rows(report("--group-by-shapes", stem + ".pftrace"), "op")
    eq(sorted((k, r["calls"]) for k, r in ops.items()),
       [(("aten::mm", "[[1],[2]]"), 1200), (("aten::mm", "[[2],[2]]"), 1200)], "op rows by shapes")

    # A GPU run's stream: its kernels in the report (once none were: their category was read
    # after the reader that held it had gone), each counted in the op range around its launch
    # as the Chrome trace counts it: gemm in aten::mm, relu in aten::linear alone, 40 of each
    # (300 and 310 ns), copy in none.
    device = device_run(DEVICE_OPS, os.path.join(tmp, "device"))
    for extra in ([], ["--group-by-shapes"]):
        streamed = report(*extra, device + ".pftrace")
        eq(streamed, report(*extra, device + ".trace.json"),
           f"report {extra} of a GPU run: the .pftrace's tables are the .trace.json's")
        eq(sorted((r["name"], r["calls"]) for r in streamed["sections"]["kernel"]),
           [("copy()", 40), ("gemm()", 40), ("relu()", 40)], f"report {extra}: the stream's kernels")
        gpu = {}
        for r in streamed["sections"]["op"]:
            gpu[r["name"]] = [a + b for a, b in zip(gpu.get(r["name"], [0, 0]), [r["gpu_total_ns"] or 0, r["kernels"] or 0])]
        eq(gpu, {"aten::linear": [12400, 40], "aten::mm": [12000, 40], "aten::empty": [0, 0]},
           f"report {extra}: kernels by the op around their launch")

    # The GPU busy time of kernels apart from each other, on two streams: the stream's union,
    # which lets its oldest pieces go, is the Chrome trace's, which keeps them all.
    idle = device_run(DEVICE_OPS, os.path.join(tmp, "idle"), IDLE_STEPS, idle=True)
    streamed = report(idle + ".pftrace")
    eq(streamed, report(idle + ".trace.json"), f"report of {IDLE_STEPS} GPU steps, idle between kernels: the .trace.json's")
    eq(streamed.get("gpu_busy_ns"), IDLE_STEPS * 930, "GPU busy: every kernel's time, none overlapping")

    # A kernel names its op as it comes (the writer put it on the kernel) and adds to the busy
    # time's pieces, of which a bounded number is kept: reading a GPU run keeps no kernel. Kept
    # until the end of the read, a kernel took 301 bytes, and 639 before that.
    gpu_kib = []
    for steps in (1, GPU_STEPS):
        stem = device_run(DEVICE_OPS, os.path.join(tmp, f"device{steps}"), steps, idle=True)
        rc, err, kib = peak_rss(PEAK_RSS, [CUTRACE, "report", stem + ".pftrace"], tmp)
        eq(rc, 0, f"report of {steps} GPU steps ({err})")
        gpu_kib.append(kib)
    print(f"peak RSS (KiB) of report of a GPU run of 3 / {3 * GPU_STEPS} kernels: {gpu_kib[0]} / {gpu_kib[1]}")
    check(not BOUND_RSS or gpu_kib[1] <= gpu_kib[0] + SLACK_KIB,
          f"report of a GPU run: peak RSS {gpu_kib[1]} KiB, over the 1-step run's {gpu_kib[0]} KiB + {SLACK_KIB} KiB")

    small = traced_run(os.path.join(tmp, "small"), 2, 1, "mm", {"CUTRACE_JSON_LIMIT": "1"})
    big = traced_run(os.path.join(tmp, "big"), STEPS, CALLS, "mm", {"CUTRACE_JSON_LIMIT": "1"})
    ops = traced_run(os.path.join(tmp, "bigops"), OP_STEPS, CALLS, "ops", {"CUTRACE_JSON_LIMIT": "1"})

    # Self times by nesting in time, exact to the ns: each range less the ranges directly in it.
    data = report(big + ".pftrace")
    nvtx = {k[0]: r for k, r in rows(data, "nvtx").items()}
    api = {k[0]: r for k, r in rows(data, "api").items()}
    eq(sorted((n, r["calls"]) for n, r in nvtx.items() if not n.startswith("step ")),
       [("epoch", 1), ("inner", STEPS * CALLS), ("mm", STEPS * CALLS)], "nvtx rows")
    eq(sorted(n for n in nvtx if n.startswith("step ")), sorted(f"step {i}" for i in range(STEPS)), "a row per step")
    steps_ns = sum(r["total_ns"] for n, r in nvtx.items() if n.startswith("step "))
    eq(nvtx["epoch"]["self_ns"], nvtx["epoch"]["total_ns"] - steps_ns, "epoch: self = total - its steps")
    for i in range(STEPS):
        check(nvtx[f"step {i}"]["self_ns"] < nvtx[f"step {i}"]["total_ns"], f"step {i}: its ranges are not its self time")
    eq(nvtx["mm"]["self_ns"], nvtx["mm"]["total_ns"] - nvtx["inner"]["total_ns"], "mm: self = total - inner")
    eq(nvtx["inner"]["self_ns"], nvtx["inner"]["total_ns"], "inner: no range inside")
    # The runtime's first call initialises the driver inside it (cuInit).
    eq(api["cudaMalloc"]["self_ns"] + api["cudaFree"]["self_ns"],
       sum(api[n]["total_ns"] * (1 if n.startswith("cuda") else -1) for n in api), "runtime calls: self = total - driver calls")
    eq(sorted(n for n in api if n.startswith("cu") and api[n]["self_ns"] != api[n]["total_ns"]), ["cudaFree", "cudaMalloc"],
       "driver calls: nothing inside")

    figures = {}
    for what, args in (("report", ["report"]), ("diff", ["diff"])):
        rc, err, base_kib = peak_rss(PEAK_RSS, [CUTRACE, *args] + [small + ".pftrace"] * (2 if what == "diff" else 1), tmp)
        eq(rc, 0, f"{what} of the small stream ({err})")
        figures[what] = [base_kib]
        for name, stem in (("big", big), ("op ranges", ops)):
            rc, err, big_kib = peak_rss(PEAK_RSS, [CUTRACE, *args] + [stem + ".pftrace"] * (2 if what == "diff" else 1), tmp)
            eq(rc, 0, f"{what} of the {name} stream ({err})")
            figures[what].append(big_kib)
            check(not BOUND_RSS or big_kib <= base_kib + SLACK_KIB,
                  f"{what} of the {name} stream: peak RSS {big_kib} KiB, over the small stream's {base_kib} KiB + {SLACK_KIB} KiB")
    print(f"peak RSS (KiB), small stream / big ({os.path.getsize(big + '.pftrace')} bytes) / op ranges "
          f"({os.path.getsize(ops + '.pftrace')} bytes): " + ", ".join(f"{w} {' / '.join(map(str, f))}" for w, f in figures.items()))
finish()
