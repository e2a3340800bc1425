"""GPU checks of the device side: each runs a real program under LD_PRELOAD=libtrace.so on a
GPU and checks the files it wrote. Skips (77) without an NVIDIA GPU (and, for the workloads,
without PyTorch or the workloads folder).

usage: gpu_checks.py CHECK [WORK] --libtrace L --trace-check T --cutrace C
                     [--workloads DIR] [--program P] [--keep DIR]
  graph PROGRAM      a CUDA graph captured and replayed (tests/gpu/programs/graph_replay.cu):
                     every kernel of every replay on the device track, linked to its
                     cudaGraphLaunch by a flow of its own
  coverage WORK      a workload of DIR/workloads.py (micro, transformer, resnet) under full
                     cutrace: launches == device kernels, every kernel linked, and the kernels
                     launched in the timed steps == the kernels torch.profiler's CUPTI saw in
                     the same steps of another run (with --env CUTRACE_CAPTURE=...: the
                     kernels of the steps only)
  unwind WORK        the same under CUTRACE_UNWIND=verify: the .eh_frame walk and libunwind agree
                     on every stack; the fallbacks are counted and shown
  emit_nvtx WORK     under torch.autograd.profiler.emit_nvtx: every backward function with its
                     arrow from its forward op (counted against the autograd graph), the op
                     table's GPU time == the kernels' inside ops, the .gpu.folded total == the
                     device kernels' time
Every run's .pftrace must rebuild through `cutrace export` into the Chrome trace the process
wrote (trace_check --compare: kernels, flows and counters alike). Prints "RESULT CHECK {json}"
with the figures and "FAIL: ..." per failed check; --keep DIR keeps the traced run's files.
"""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile, time

RUNNER = r'''
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import workloads
mode, work = sys.argv[2], sys.argv[3]
step, n = workloads.build(work)
for _ in range(5):
    step()
torch.cuda.synchronize()
res = {"steps": n}
if mode == "truth":
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    res["kernels"] = sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA
                         and not e.name.startswith(("Memcpy", "Memset")))
else:
    roots = []
    if mode == "emit_nvtx":
        # The autograd graph of one step, read from the tensor backward() is called on.
        backward = torch.Tensor.backward
        def spy(self, *a, **k):
            if not roots:
                roots.append(self.grad_fn)
            return backward(self, *a, **k)
        torch.Tensor.backward = spy
    import contextlib
    ctx = torch.autograd.profiler.emit_nvtx(record_shapes=True) if mode == "emit_nvtx" else contextlib.nullcontext()
    with ctx:
        torch.cuda.nvtx.range_push("cutrace-steps")
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    if roots:
        seen, todo = set(), [roots[0]]
        while todo:
            f = todo.pop()
            if f is None or f in seen:
                continue
            seen.add(f)
            todo.extend(g for g, _ in f.next_functions)
        res["graph_nodes"] = sum(1 for f in seen if type(f).__name__ != "AccumulateGrad")
        res["accumulate_grad_nodes"] = len(seen) - res["graph_nodes"]
print("RESULT " + json.dumps(res), flush=True)
'''


class Check:
    def __init__(self, a):
        self.a = a
        self.failures = []
        self.figures = {}

    def fail(self, what):
        self.failures.append(what)

    def traced(self, cmd, extra_env=None):
        """Runs cmd under the preload; returns (completed process, output dir, Chrome trace)."""
        out = tempfile.mkdtemp(prefix="cutrace-gpu-")
        env = dict(os.environ, LD_PRELOAD=self.a.libtrace, CUTRACE_OUTPUT=out, PYTHONUNBUFFERED="1")
        env.update(extra_env or {})
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        self.figures["traced_run_s"] = round(time.monotonic() - t0, 2)
        traces = sorted(glob.glob(os.path.join(out, "*.trace.json")))
        self.figures["file_bytes"] = {os.path.basename(f).split(".", 1)[1]: os.path.getsize(f)
                                      for f in glob.glob(os.path.join(out, "*")) if os.path.isfile(f)}
        if r.returncode != 0:
            self.fail(f"{cmd[-1]}: exit {r.returncode}: {r.stderr[-3000:]}")
        if len(traces) != 1:
            self.fail(f"expected one trace in {out}, found {traces}; stderr: {r.stderr[-2000:]}")
            return r, out, None
        self.figures["cutrace_stderr"] = [l for l in r.stderr.splitlines() if l.startswith("cutrace")][-4:]
        return r, out, traces[0]

    def check_files(self, out, trace, check_args):
        """trace_check on the trace, and its stream rebuilt by cutrace export compared with it."""
        c = subprocess.run([self.a.trace_check, trace] + check_args, capture_output=True, text=True)
        if c.returncode != 0:
            self.fail(f"trace_check {' '.join(check_args)}: {c.stderr[-3000:]}")
        stem = os.path.basename(trace)[:-len(".trace.json")]
        exported = os.path.join(out, "exported")
        e = subprocess.run([self.a.cutrace, "export", "-o", exported, os.path.join(out, stem + ".pftrace")],
                           capture_output=True, text=True)
        if e.returncode != 0:
            self.fail(f"cutrace export: {e.stderr[-2000:]}")
            return c.stdout
        cmp = subprocess.run([self.a.trace_check, "--compare", trace, os.path.join(exported, stem + ".trace.json")],
                             capture_output=True, text=True)
        if cmp.returncode != 0:
            self.fail(f"the .pftrace does not rebuild into the Chrome trace: {cmp.stderr[-2000:]}")
        return c.stdout

    def keep(self, out):
        if self.a.keep:
            os.makedirs(self.a.keep, exist_ok=True)
            for f in glob.glob(os.path.join(out, "*")):
                if os.path.isfile(f):
                    shutil.copy(f, self.a.keep)
        shutil.rmtree(out, ignore_errors=True)

    def runner(self, mode, work, extra_env=None, traced=True):
        cmd = [sys.executable, "-c", RUNNER, self.a.workloads, mode, work]
        if not traced:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"FAIL: {mode} {work}: {r.stderr[-3000:]}")
            return result_of(r.stdout), None, None
        r, out, trace = self.traced(cmd, extra_env)
        return result_of(r.stdout), out, trace


def result_of(stdout):
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {}


class Trace:
    """What the checks need of a Chrome trace: X events per track, flows, metadata."""
    def __init__(self, path):
        with open(path) as f:
            doc = json.load(f)
        self.meta = doc["metadata"]
        self.x = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        self.starts = [e for e in doc["traceEvents"] if e.get("ph") == "s"]
        self.ends = [e for e in doc["traceEvents"] if e.get("ph") == "f"]
        self.kernels = [e for e in self.x if e.get("cat") == "kernel"]
        self.launches = [e for e in self.x if e.get("cat") in ("cuda_runtime", "cuda_driver") and "kernel" in e.get("args", {})]

    def kernels_with_flow_start(self):
        """Each kernel with the "s" of its launch flow (its "f" binds on the kernel's track at its
        start, its "s" inside the host call), or None."""
        ends = {(e["tid"], e["ts"]): e for e in self.ends if e["cat"] == "flow"}
        starts = {e["id"]: e for e in self.starts if e["cat"] == "flow"}
        for k in self.kernels:
            f = ends.get((k["tid"], k["ts"]))
            yield k, starts.get(f["id"]) if f else None

    def enclosing(self, tid, ts, pred):
        """The outermost X on tid that pred accepts and that holds ts."""
        best = None
        for e in self.x:
            if e["tid"] == tid and pred(e) and e["ts"] <= ts <= e["ts"] + e["dur"]:
                if best is None or e["dur"] > best["dur"]:
                    best = e
        return best


def unique_flows(c, t):
    for phase, events in (("s", t.starts), ("f", t.ends)):
        keys = [(e["id"], e["cat"], e["name"]) for e in events]
        if len(set(keys)) != len(keys):
            c.fail(f"{len(keys) - len(set(keys))} flow '{phase}' events share (id, cat, name) with another: "
                   "Perfetto draws only the first of each")


def check_graph(c):
    r, out, trace = c.traced([c.a.program])
    if trace is None:
        return
    replays, per_replay, eager = (int(v) for v in r.stdout.split()[1:4])
    t = Trace(trace)
    c.check_files(out, trace, [])
    unique_flows(c, t)
    graph_calls = [e for e in t.x if e["name"] in ("cudaGraphLaunch", "cuGraphLaunch")]
    outer_graph = [e for e in graph_calls if e["name"] == "cudaGraphLaunch"] or graph_calls
    c.figures.update(kernels=len(t.kernels), graph_launch_calls=len(outer_graph), eager_launches=len(t.launches),
                     cupti=t.meta["cupti"])
    want = replays * per_replay + eager
    if len(t.kernels) != want:
        c.fail(f"{len(t.kernels)} device kernels, expected {want} ({replays} replays of {per_replay} and {eager} eager)")
    if len(outer_graph) != replays:
        c.fail(f"{len(outer_graph)} graph launch calls, expected {replays}")
    # The launches made during the capture, and only they, are flagged: their kernels run in the replays.
    captured = sorted(e["args"]["kernel"].split("(")[0] for e in t.launches if e["args"].get("captured"))
    eager_seen = [e for e in t.launches if not e["args"].get("captured")]
    c.figures.update(captured_launches=len(captured))
    if captured != ["graph_add", "graph_fill", "graph_scale"] or len(eager_seen) != eager:
        c.fail(f"captured launches {captured}, {len(eager_seen)} others; expected graph_add/fill/scale and {eager}")
    by_call = {}
    unlinked = 0
    for k, s in t.kernels_with_flow_start():
        call = t.enclosing(s["tid"], s["ts"], lambda e: e.get("cat") in ("cuda_runtime", "cuda_driver")) if s else None
        if call is None:
            unlinked += 1
            continue
        by_call.setdefault((call["tid"], call["ts"], call["name"]), []).append(k["name"].split("(")[0])
    if unlinked:
        c.fail(f"{unlinked} kernels without a flow from a CUDA call")
    graph_linked = {key: names for key, names in by_call.items() if "GraphLaunch" in key[2]}
    c.figures["kernels_per_graph_launch"] = sorted({len(v) for v in graph_linked.values()})
    if len(graph_linked) != replays or any(sorted(v) != ["graph_add", "graph_fill", "graph_scale"]
                                           for v in graph_linked.values()):
        c.fail(f"graph launches with their kernels: {len(graph_linked)} calls, kernels per call "
               f"{c.figures['kernels_per_graph_launch']}; expected {replays} calls of graph_add/fill/scale")
    c.keep(out)


def in_range(t, name):
    """(tid, start, end) of each NVTX range of that name."""
    return [(e["tid"], e["ts"], e["ts"] + e["dur"]) for e in t.x if e.get("cat") == "nvtx" and e["name"] == name]


def check_coverage(c, work):
    truth, _, _ = c.runner("truth", work, traced=False)
    # Under a capture mode only the steps are recorded: their kernels must all be there and
    # linked; the rest of the run is not compared.
    captured = "CUTRACE_CAPTURE" in c.a.env
    res, out, trace = c.runner("traced", work, c.a.env)
    if trace is None:
        return
    c.check_files(out, trace, ["--view", "shape"] + ([] if captured else ["--expect-linked"]))
    t = Trace(trace)
    unique_flows(c, t)
    steps = in_range(t, "cutrace-steps")
    # A kernel's launch lies in the timed steps when its flow starts inside the range, on any
    # thread (the backward pass launches from autograd's own thread).
    timed = sum(1 for _, s in t.kernels_with_flow_start() if s and any(a <= s["ts"] <= b for _, a, b in steps))
    cupti = t.meta["cupti"]
    # Module and library loads (a figure, not a check: whether NVIDIA's runtime loads its fatbins
    # through the driver's public entry points, as the stand-in does, is what this tells).
    loads = [e for e in t.x if e.get("cat") == "cuda_driver" and e["name"].startswith(("cuModuleLoad", "cuLibraryLoad"))]
    c.figures.update(module_loads=len(loads), module_load_ms=round(sum(e["dur"] for e in loads) / 1000, 3))
    c.figures.update(launches=len(t.launches), device_kernels=len(t.kernels), kernels_in_steps=timed,
                     torch_profiler_kernels_in_steps=truth["kernels"], steps=truth["steps"], cupti=cupti,
                     dropped_events=t.meta["dropped_events"])
    if len(steps) != 1:
        c.fail(f"{len(steps)} 'cutrace-steps' ranges, expected 1")
    if len(t.launches) != len(t.kernels) and not captured:
        c.fail(f"launches {len(t.launches)} != device kernels {len(t.kernels)}")
    if timed != truth["kernels"]:
        c.fail(f"{timed} kernels launched in the timed steps, torch.profiler's CUPTI saw {truth['kernels']}")
    if (cupti.get("linked_to_host") != cupti.get("device_events") and not captured) or cupti.get("dropped_records"):
        c.fail(f"device records not all linked or some dropped: {cupti}")
    c.keep(out)


def check_unwind(c, work):
    _, out, trace = c.runner("traced", work, {"CUTRACE_UNWIND": "verify"})
    if trace is None:
        return
    c.check_files(out, trace, ["--view", "shape"])
    stacks = Trace(trace).meta["stacks"]
    c.figures["stacks"] = stacks
    if stacks.get("unwind_mismatches", 1) != 0:
        c.fail(f"{stacks.get('unwind_mismatches')} stacks differ between the .eh_frame walk and libunwind")
    c.keep(out)


def check_emit_nvtx(c, work):
    res, out, trace = c.runner("emit_nvtx", work)
    if trace is None:
        return
    c.check_files(out, trace, ["--view", "shape"])
    t = Trace(trace)
    unique_flows(c, t)
    # The backward functions themselves: the ranges with a sequence number, not the engine's
    # "evaluate_function:" wrappers around them, nor AccumulateGrad and GraphRoot (no forward op).
    backward = [e for e in t.x if e.get("args", {}).get("backward")]
    functions = [e for e in backward if ("op_seq" in e["args"] or "stashed_seq" in e["args"])
                 and not any(n in e["name"] for n in ("AccumulateGrad", "GraphRoot", "evaluate_function"))]
    arrows_in = {}
    for f in t.ends:
        if f["cat"] == "autograd":
            arrows_in[(f["tid"], f["ts"])] = arrows_in.get((f["tid"], f["ts"]), 0) + 1
    fwd_bwd = sum(1 for s in t.starts if s["cat"] == "autograd")
    without = [e["name"] for e in functions if arrows_in.get((e["tid"], e["ts"]), 0) != 1]
    nodes = res.get("graph_nodes", -1) * res.get("steps", 0)
    # The op table's GPU time: the kernels launched inside an op range, each once.
    rep = subprocess.run([c.a.cutrace, "report", "--by", "op", "--format", "json", trace], capture_output=True, text=True)
    op_gpu = sum(row["gpu_total_ns"] for row in json.loads(rep.stdout)["sections"]["op"]) if rep.returncode == 0 else -1
    ns = lambda e: round(e["dur"] * 1000)
    kernels_in_ops = sum(ns(k) for k in t.kernels if "op" in k.get("args", {}))
    kernels_all = sum(ns(k) for k in t.kernels)
    device_all = sum(ns(e) for e in t.x if e.get("cat") in ("kernel", "memcpy", "memset"))
    stem = trace[:-len(".trace.json")]
    folded = 0
    with open(stem + ".gpu.folded") as f:
        for line in f:
            folded += int(line.rsplit(" ", 1)[1])
    c.figures.update(backward_ranges=len(backward), backward_functions=len(functions), forward_to_backward=fwd_bwd,
                     autograd_nodes_per_step=res.get("graph_nodes"), steps=res.get("steps"),
                     backward_without_one_arrow=len(without), without_examples=sorted(set(without))[:10],
                     op_table_gpu_ns=op_gpu, kernels_in_ops_ns=kernels_in_ops, kernels_ns=kernels_all,
                     kernels_outside_ops=sum(1 for k in t.kernels if "op" not in k.get("args", {})),
                     device_work_ns=device_all, gpu_folded_ns=folded, device_kernels=len(t.kernels))
    if rep.returncode != 0:
        c.fail(f"cutrace report --by op: {rep.stderr[-2000:]}")
    if without:
        c.fail(f"{len(without)} backward functions without exactly one arrow from a forward op")
    if len(functions) != nodes or fwd_bwd != nodes:
        c.fail(f"{len(functions)} backward functions and {fwd_bwd} forward->backward arrows; the autograd graph "
               f"has {nodes} nodes over the steps (AccumulateGrad apart)")
    if op_gpu != kernels_in_ops:
        c.fail(f"op table GPU total {op_gpu} ns != the kernels inside ops {kernels_in_ops} ns")
    if folded not in (kernels_all, device_all):
        c.fail(f".gpu.folded total {folded} ns != device kernels {kernels_all} ns (all device work {device_all} ns)")
    c.keep(out)


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.startswith("GPU")
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["graph", "coverage", "unwind", "emit_nvtx"])
    ap.add_argument("work", nargs="?")
    ap.add_argument("--libtrace", required=True)
    ap.add_argument("--trace-check", required=True)
    ap.add_argument("--cutrace", required=True)
    ap.add_argument("--workloads")
    ap.add_argument("--program")
    ap.add_argument("--keep")
    ap.add_argument("--env", action="append", default=[], help="K=V for the traced run")
    a = ap.parse_args()
    a.env = dict(kv.split("=", 1) for kv in a.env)
    a.libtrace, a.trace_check, a.cutrace = (os.path.abspath(p) for p in (a.libtrace, a.trace_check, a.cutrace))
    if not has_gpu():
        print("no NVIDIA GPU: skipped")
        return 77
    if a.check != "graph":
        if not a.workloads or not os.path.exists(os.path.join(a.workloads, "workloads.py")):
            print(f"no workloads.py in {a.workloads}: skipped")
            return 77
        a.workloads = os.path.abspath(a.workloads)
        try:
            import torch  # noqa: F401
        except ImportError:
            print("no PyTorch: skipped")
            return 77
    c = Check(a)
    {"graph": lambda: check_graph(c), "coverage": lambda: check_coverage(c, a.work),
     "unwind": lambda: check_unwind(c, a.work), "emit_nvtx": lambda: check_emit_nvtx(c, a.work)}[a.check]()
    name = " ".join([a.check] + ([a.work] if a.work else []) + [f"{k}={v}" for k, v in a.env.items()])
    print("RESULT " + name + " " + json.dumps(c.figures))
    for f in c.failures:
        print("FAIL: " + name + ": " + f)
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
