"""GPU test: cutrace and the program's own torch.profiler in one process.

Runs a small PyTorch program under LD_PRELOAD=libtrace.so twice: once with torch.profiler
started before any CUDA call, once with two profiler sessions in the middle of the run. In both,
torch.profiler must see every kernel of its sessions, and cutrace must record every launch.
Started first, the program's profiler keeps CUPTI: cutrace is host-only and says so in the
metadata and on stderr. Started later, it gets CUPTI handed over: cutrace's device timeline has
every kernel before the first session, each linked to its launch, and the metadata says so.
With CUTRACE_CUPTI=off, cutrace's CUPTI entry points alone must leave torch.profiler whole.
Skips with 77 without PyTorch or a GPU.
usage: torch_profiler.py LIBTRACE TRACE_CHECK"""
import glob, json, os, subprocess, sys, tempfile

PROGRAM = r'''
import sys, torch
from torch.profiler import profile, ProfilerActivity
def kernels(p):
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA
               and not e.name.startswith(("Memcpy", "Memset")))
acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
if sys.argv[1] == "first":
    with profile(activities=acts) as p:
        x = torch.zeros(1024, device="cuda")
        for _ in range(20): x.add_(1)
        torch.cuda.synchronize()
    print("SESSIONS", kernels(p))
else:
    x = torch.zeros(1024, device="cuda")
    for _ in range(10): x.add_(1)
    torch.cuda.synchronize()
    counts = []
    for n in (20, 5):
        with profile(activities=acts) as p:
            for _ in range(n): x.add_(1)
            torch.cuda.synchronize()
        counts.append(kernels(p))
        for _ in range(30): x.add_(1)
        torch.cuda.synchronize()
    print("SESSIONS", *counts)
'''

def main():
    lib, check = sys.argv[1], sys.argv[2]
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError
    except Exception:
        print("no PyTorch with a GPU: skipped")
        return 77
    failures = []
    # (mode, cutrace's CUPTI setting, kernels torch.profiler must see per session, launches,
    # kernels outside the sessions)
    for mode, cupti, expect_sessions, expected_launches, before in (
            ("first", "auto", [20], 21, 0),
            ("later", "auto", [20, 5], 1 + 10 + 20 + 30 + 5 + 30, 1 + 10),
            ("later", "off", [20, 5], 1 + 10 + 20 + 30 + 5 + 30, 0)):
        out = tempfile.mkdtemp(prefix="cutrace-torchprof-")
        r = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True,
                           env=dict(os.environ, LD_PRELOAD=lib, CUTRACE_OUTPUT=out, CUTRACE_CUPTI=cupti))
        label = f"{mode} (CUTRACE_CUPTI={cupti})"
        line = [l for l in r.stdout.splitlines() if l.startswith("SESSIONS")]
        if r.returncode != 0 or not line:
            failures.append(f"{label}: program failed: {r.stderr[-2000:]}")
            continue
        sessions = [int(v) for v in line[0].split()[1:]]
        # torch.profiler counts the kernels of its session; the fill of torch.zeros may fall in.
        if any(s < e for s, e in zip(sessions, expect_sessions)):
            failures.append(f"{label}: torch.profiler lost kernels: saw {sessions}, expected at least {expect_sessions}; "
                            f"stderr: {r.stderr[-1500:]}")
        traces = glob.glob(os.path.join(out, "*.trace.json"))
        if len(traces) != 1:
            failures.append(f"{label}: expected one trace, found {traces}")
            continue
        meta = json.load(open(traces[0]))["metadata"]["cupti"]
        print(label, "torch.profiler kernels", sessions, "cutrace cupti", meta)
        if cupti == "off":
            if meta["state"] != "off":
                failures.append(f"{label}: cutrace's CUPTI state is {meta['state']}")
            args = [check, traces[0], "--view", "launches"]
        elif meta["state"] == "host-only":
            if mode == "later":
                failures.append(f"{label}: cutrace lost CUPTI to a profiler started after it")
            if "in use" not in meta["reason"] or "host calls only" not in r.stderr:
                failures.append(f"{label}: host-only without saying why (metadata and stderr)")
            args = [check, traces[0], "--view", "launches"]
        elif meta["state"] == "on":
            if mode == "later" and ("handed CUPTI over" not in meta["reason"] or "hands CUPTI over" not in r.stderr):
                failures.append(f"{label}: the hand-over is not said (metadata and stderr): {meta['reason']}")
            if meta["linked_to_host"] != meta["device_events"]:
                failures.append(f"{label}: {meta['device_events'] - meta['linked_to_host']} device events not linked to a launch")
            if meta["device_events"] < before:
                failures.append(f"{label}: {meta['device_events']} device events, expected at least {before} before the first session")
            args = [check, traces[0], "--view", "launches"]
        else:
            failures.append(f"{label}: unexpected cupti state {meta}")
            continue
        c = subprocess.run(args, capture_output=True, text=True)
        if c.returncode != 0:
            failures.append(f"{label}: trace_check: {c.stderr}")
            continue
        launches = int(c.stdout.split("launches ")[1].split()[0])
        if launches < expected_launches:
            failures.append(f"{label}: only {launches} launches, expected at least {expected_launches}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
