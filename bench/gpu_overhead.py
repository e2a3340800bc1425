"""Overhead on a GPU: ms per training step, bare against cutrace and torch.profiler.

usage: python3 gpu_overhead.py LIBTRACE WORKLOADS_DIR [--reps 5] [--works micro,transformer,resnet]
                              [--configs full,host,nostacks,floor,torchprof] [--floor-lib L]

WORKLOADS_DIR holds workloads.py (../shared/gpu). Each repetition runs every configuration
once, in turn, so drift hits all alike; each run is one process that times every workload
(5 warm-up steps, then its steps, the mean ms/step as workloads.py measures it):
  bare       no preload
  full       cutrace's defaults: API + NVTX + stacks + device timeline (CUPTI)
  host       CUTRACE_CUPTI=off: host calls only
  nostacks   CUTRACE_STACKS=off: full but for the call stacks (what the stacks cost)
  floor      CUTRACE_CAPTURE=cuda-profiler-api, which the program never starts: the hooks
             record nothing, cutrace's CUPTI activity runs as in `full` from the first CUDA
             call (what CUPTI costs; --floor-lib runs it with another build)
  torchprof  torch.profiler (CPU + CUDA activities) around the timed steps, no preload
Prints, after each repetition, per workload the median ms/step of bare, each configuration's median ratio to bare
with its spread (max-min of the ratios of the repetitions), and cutrace's CUPTI state of the
floor run; one JSON line per workload for the record.
"""
import argparse, glob, json, os, shutil, statistics, subprocess, sys, tempfile

RUNNER = r'''
import json, sys, time, torch
sys.path.insert(0, sys.argv[1])
import workloads
prof = sys.argv[2] == "torchprof"
res = {}
for work in sys.argv[3].split(","):
    step, n = workloads.build(work)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    def timed():
        t = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n * 1e3
    if prof:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            res[work] = timed()
    else:
        res[work] = timed()
print("RESULT " + json.dumps(res), flush=True)
'''

CONFIGS = {
    "bare": None,
    "full": {},
    "host": {"CUTRACE_CUPTI": "off"},
    "nostacks": {"CUTRACE_STACKS": "off"},
    "floor": {"CUTRACE_CAPTURE": "cuda-profiler-api"},
    "torchprof": None,
}


def run(lib, wdir, config, works):
    env = dict(os.environ)
    out = None
    if CONFIGS[config] is not None:
        out = tempfile.mkdtemp(prefix="cutrace-ovh-")
        env.update(LD_PRELOAD=lib[config], CUTRACE_OUTPUT=out, **CONFIGS[config])
    r = subprocess.run([sys.executable, "-c", RUNNER, wdir, config, works], capture_output=True, text=True, env=env)
    meta = None
    if out:
        traces = glob.glob(os.path.join(out, "*.trace.json"))
        if traces:
            with open(traces[0]) as f:
                meta = json.load(f)["metadata"]
        shutil.rmtree(out, ignore_errors=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:]), meta
    raise SystemExit(f"{config} failed:\n{r.stdout}\n{r.stderr[-3000:]}")


def table(ms, works, reps):
    """Medians and spreads over the repetitions so far (printed after each, so a run cut short
    still leaves its figures)."""
    print(f"{'work':<12} {'bare ms':>8}  " + "  ".join(f"{c:>16}" for c in CONFIGS if c != "bare"), flush=True)
    for w in works:
        bare = ms["bare"][w]
        base = statistics.median(bare)
        row = {"work": w, "reps": reps, "bare_ms": round(base, 3),
               "bare_spread": round((max(bare) - min(bare)) / base, 3), "bare_ms_all": [round(x, 3) for x in bare]}
        cells = []
        for c in CONFIGS:
            if c == "bare":
                continue
            ratios = [x / b for x, b in zip(ms[c][w], bare)]
            row[c + "_x"] = round(statistics.median(ms[c][w]) / base, 3)
            row[c + "_spread"] = round(max(ratios) - min(ratios), 3)
            row[c + "_ms"] = [round(x, 3) for x in ms[c][w]]
            cells.append(f"{row[c + '_x']:.3f}x (±{row[c + '_spread'] / 2:.3f})")
        print(f"{w:<12} {base:>8.3f}  " + "  ".join(f"{cell:>16}" for cell in cells))
        print("JSON " + json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("libtrace")
    ap.add_argument("workloads")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--works", default="micro,transformer,resnet")
    ap.add_argument("--floor-lib", help="a libtrace.so for the floor run (default LIBTRACE)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="which configurations (bare is always run)")
    a = ap.parse_args()
    for c in [c for c in CONFIGS if c != "bare" and c not in a.configs.split(",")]:
        del CONFIGS[c]
    wdir = os.path.abspath(a.workloads)
    # The preload of each configuration.
    lib = {c: os.path.abspath(a.floor_lib if c == "floor" and a.floor_lib else a.libtrace) for c in CONFIGS}
    works = a.works.split(",")
    ms = {c: {w: [] for w in works} for c in CONFIGS}
    floor_cupti = None
    for rep in range(a.reps):
        for config in CONFIGS:
            res, meta = run(lib, wdir, config, a.works)
            for w in works:
                ms[config][w].append(res[w])
            if config == "floor" and meta:
                floor_cupti = {k: meta["cupti"].get(k) for k in ("state", "device_events")}
                floor_cupti["host_events"] = meta.get("events")
        print(f"after {rep + 1} of {a.reps} repetitions:", flush=True)
        table(ms, works, rep + 1)
    print("floor run's cutrace metadata:", json.dumps(floor_cupti))


if __name__ == "__main__":
    main()
