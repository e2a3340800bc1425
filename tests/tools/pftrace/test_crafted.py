#!/usr/bin/env python3
"""cutrace on crafted .pftrace streams (written here, packet by packet): what no writer of
cutrace's makes, refused with one message and exit 3 in bounded memory, never a crash.

usage: test_crafted.py CUTRACE CASE
  limits   many sequences, open slices or tracks: past the reader's limits (perfetto_reader.cpp);
           memory exhausted below them: "out of memory", exit 3
  times    a slice ending before it begins, timestamps past the JSON readers' bound
  steps    export --steps N of a step range of no duration (a process killed after its push)
  memory   export --from/--to: GPU memory counter samples as the whole trace's in the window
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, eq, finish  # noqa: E402

CUTRACE, CASE = sys.argv[1], sys.argv[2]

# The reader's limits (exporters/perfetto_reader.cpp, class Decoder).
MAX_SEQUENCES = 1 << 16
MAX_OPEN_SLICES_TOTAL = 1 << 16
MAX_TRACKS = 1 << 20
MONOTONIC = 3  # BuiltinClock
MAX_TRACE_NS = 10 ** 18  # exporters/json_writer.h kMaxTraceNs: 1e15 us, the JSON readers' bound on 'ts'


# ------------------------------------------------------------------ protobuf, by hand

def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)


def vi(field, value):  # a varint field
    return varint(field << 3) + varint(value)


def ld(field, data):  # a length-delimited field
    data = data.encode() if isinstance(data, str) else data
    return varint(field << 3 | 2) + varint(len(data)) + data


def packet(*fields):
    return ld(1, b"".join(fields))  # Trace.packet


def event(seq, ts, type_, track=None, extra=b""):
    """A TrackEvent packet on MONOTONIC: type 1 BEGIN, 2 END, 3 INSTANT."""
    te = vi(9, type_) + (vi(11, track) if track is not None else b"") + extra
    return packet(vi(8, ts), vi(58, MONOTONIC), vi(10, seq), ld(11, te))


def cleared(seq):
    return packet(vi(10, seq), vi(13, 1))  # sequence_flags: incremental state cleared


THREAD_TRACK = 0x100


def thread_header(seq=2, names=("step 1",), category="nvtx", annotations=()):
    """A thread's sequence as the writer starts it: its track (pid 1, tid 1), the default clock
    and track, category 1 and the event NAMES and ANNOTATIONS names interned from 1 up."""
    interned = ld(1, vi(1, 1) + ld(2, category))
    interned += b"".join(ld(2, vi(1, i + 1) + ld(2, n)) for i, n in enumerate(names))
    interned += b"".join(ld(3, vi(1, i + 1) + ld(2, n)) for i, n in enumerate(annotations))
    return packet(vi(10, seq), vi(13, 1),
                  ld(60, vi(1, THREAD_TRACK) + ld(4, vi(1, 1) + vi(2, 1))),
                  ld(59, vi(58, MONOTONIC) + ld(11, vi(11, THREAD_TRACK))),
                  ld(12, interned))


def nvtx(seq, ts, type_, name=0):
    """An NVTX event on the sequence's thread: BEGIN (1) or INSTANT (3) named by iid NAME, END (2)."""
    return packet(vi(8, ts), vi(10, seq), vi(13, 2), ld(11, vi(9, type_) + (vi(3, 1) + vi(10, name) if name else b"")))


# ------------------------------------------------------------------ running

def run(args, limit_as=None):
    """(exit status, stderr, peak RSS in KiB of that child alone); LIMIT_AS: its address space."""
    def limit():
        if limit_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    p = subprocess.Popen([CUTRACE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit)
    err = []
    t = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
    t.start()
    _, status, usage = os.wait4(p.pid, 0)
    t.join(10)
    return os.waitstatus_to_exitcode(status), b"".join(err).decode("utf-8", "replace"), usage.ru_maxrss


def refused(path, what, needle, max_rss_kb):
    """report and export of PATH: exit 3, one stderr line naming NEEDLE, peak RSS under the bound."""
    with tempfile.TemporaryDirectory() as out:
        for cmd in (["report", path], ["export", "-o", out, path]):
            rc, err, rss = run(cmd)
            lines = [l for l in err.splitlines() if l.strip()]
            eq(rc, 3, f"{cmd[0]} {what}: exit 3 ({err.strip()[:300]})")
            eq(len(lines), 1, f"{cmd[0]} {what}: one message")
            check(needle in err, f"{cmd[0]} {what}: message names '{needle}' ({err.strip()[:300]})")
            check(rss < max_rss_kb, f"{cmd[0]} {what}: peak RSS {rss} KiB < {max_rss_kb} KiB")


def limits(tmp):
    # Each packet on a new sequence with its state cleared and a timestamp: a sequence each, held
    # until its thread ends, which never comes.
    path = os.path.join(tmp, "many_sequences.pftrace")
    with open(path, "wb") as f:
        f.write(b"".join(packet(vi(8, 1), vi(58, MONOTONIC), vi(10, 2 + i), vi(13, 1))
                         for i in range(MAX_SEQUENCES + 100)))
    refused(path, "many sequences", "sequences at once", 48 << 10)

    # A BEGIN on a new track each, never ended: each under the per-track limit, all of them past
    # the total one.
    path = os.path.join(tmp, "many_open.pftrace")
    with open(path, "wb") as f:
        f.write(cleared(2) + b"".join(event(2, i + 1, 1, track=i + 1) for i in range(MAX_OPEN_SLICES_TOTAL + 100)))
    refused(path, "many open slices", "slices open at once", 96 << 10)
    # The same in less memory than the limits allow: memory exhausted is one message, not an abort.
    rc, err, _ = run(["report", path], limit_as=40 << 20)
    eq((rc, err.strip()), (3, "cutrace: error: out of memory"), "report in 40 MB of address space")

    # An instant on a new track each: nothing open, every track known.
    path = os.path.join(tmp, "many_tracks.pftrace")
    with open(path, "wb") as f:
        f.write(cleared(2))
        step = 1 << 16
        for base in range(0, MAX_TRACKS + 100, step):
            f.write(b"".join(event(2, 1, 3, track=i + 1) for i in range(base, min(base + step, MAX_TRACKS + 100))))
    refused(path, "many tracks", "tracks", 256 << 10)


def times(tmp):
    # An END before its BEGIN, and times past what the Chrome trace's readers take: refused by
    # report and by export, which would write a trace report refuses.
    for what, begin, end, needle in (("an END before its BEGIN", 5000, 4000, "before it begins"),
                                     ("an END near 2^63 ns", 1000, (1 << 63) - 10, "out of range"),
                                     ("a BEGIN at 1e15 us", MAX_TRACE_NS, MAX_TRACE_NS + 1, "out of range")):
        path = os.path.join(tmp, "times.pftrace")
        with open(path, "wb") as f:
            f.write(thread_header() + nvtx(2, begin, 1, name=1) + nvtx(2, end, 2))
        refused(path, what, needle, 64 << 10)
    # Just below the bound: exported, and the Chrome trace written is one report reads.
    path = os.path.join(tmp, "edge.pftrace")
    with open(path, "wb") as f:
        f.write(thread_header() + nvtx(2, 1000, 1, name=1) + nvtx(2, MAX_TRACE_NS - 1, 2))
    rc, err, _ = run(["export", "-o", tmp, path])
    eq(rc, 0, f"export of a slice ending at 1e18 - 1 ns ({err.strip()})")
    rc, err, _ = run(["report", os.path.join(tmp, "edge.trace.json")])
    eq(rc, 0, f"report of its Chrome trace ({err.strip()})")


def steps(tmp):
    # A range "epoch" never ended, "work" around "step 1" (of no duration), "step 2", then the
    # process killed right after pushing "step 3": the reader ends it (and "epoch") at its start.
    names = ("epoch", "work", "step 1", "step 2", "step 3")
    path = os.path.join(tmp, "zerostep.pftrace")
    with open(path, "wb") as f:
        f.write(thread_header(names=names) + nvtx(2, 100, 1, 1) + nvtx(2, 500, 1, 2) + nvtx(2, 1000, 1, 3) +
                nvtx(2, 1000, 2) + nvtx(2, 2000, 2) + nvtx(2, 3000, 1, 4) + nvtx(2, 4000, 2) + nvtx(2, 5000, 1, 5))
    # A step of no duration at T keeps what spans T: itself, the ranges around it.
    for step, want in ((1, ["epoch", "step 1", "work"]), (3, ["epoch", "step 3"])):
        out = os.path.join(tmp, f"steps{step}")
        os.mkdir(out)
        rc, err, _ = run(["export", "-o", out, "--steps", str(step), path])
        eq(rc, 0, f"export --steps {step} ({err.strip()})")
        with open(os.path.join(out, f"zerostep.steps-{step}-{step}.trace.json")) as f:
            got = sorted(e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X")
        eq(got, want, f"export --steps {step}: the events around the step of no duration")


def counters(path, args, out):
    """The GPU memory counter samples of `export ARGS PATH`: {ts: allocated}."""
    os.mkdir(out)
    rc, err, _ = run(["export", "-o", out, *args, path])
    eq(rc, 0, f"export {args} ({err.strip()})")
    traces = [f for f in os.listdir(out) if f.endswith(".trace.json")]
    with open(os.path.join(out, traces[0])) as f:
        return {e["ts"]: e["args"]["allocated"] for e in json.load(f)["traceEvents"] if e["ph"] == "C"}


def memory(tmp):
    # Driver allocations and frees (ptr, bytes), one allocation live across the window's start
    # and one freed in it: the window's counter samples are the whole trace's at those times.
    hooks = [{"name": "cuMemAlloc_v2", "layer": 1, "kind": 4}, {"name": "cuMemFree_v2", "layer": 1, "kind": 5}]
    process = json.dumps({"pid": 1, "ts_origin_ns": 0, "hooks": hooks})
    metadata = packet(vi(10, 1), ld(5, ld(2, ld(1, "cutrace.process") + ld(5, process))))

    def call(hook, start, ptr, size=0):  # a CUDA driver call: a BEGIN with its arguments, its END
        args = ld(4, vi(1, 1) + vi(3, ptr)) + (ld(4, vi(1, 2) + vi(3, size)) if size else b"")
        return (packet(vi(8, start), vi(10, 2), vi(13, 2), ld(11, vi(9, 1) + vi(3, 1) + vi(10, hook) + args)) +
                nvtx(2, start + 100, 2))

    path = os.path.join(tmp, "memory.pftrace")
    with open(path, "wb") as f:
        f.write(metadata + thread_header(names=("cuMemAlloc_v2", "cuMemFree_v2"), category="cuda_driver",
                                         annotations=("ptr", "bytes")))
        f.write(call(1, 1000, 0x1000, 100) + call(1, 2000, 0x2000, 50) + call(2, 5000, 0x2000) +
                call(1, 6000, 0x3000, 30) + call(2, 8000, 0x1000) + call(2, 10000, 0x3000))
    full = counters(path, [], os.path.join(tmp, "full"))
    eq(len(full), 6, f"the whole trace's samples ({full})")
    window = counters(path, ["--from", "4us", "--to", "9us"], os.path.join(tmp, "window"))
    eq(window, {ts: v for ts, v in full.items() if 4 <= ts < 9}, "the window's samples: the whole trace's")


with tempfile.TemporaryDirectory() as tmp:
    {"limits": limits, "times": times, "steps": steps, "memory": memory}[CASE](tmp)
finish()
