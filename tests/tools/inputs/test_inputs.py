#!/usr/bin/env python3
"""How every `cutrace` command that reads traces or folded stacks takes its inputs.

usage: test_inputs.py CUTRACE FIXTURES_ROOT CASE
  streams  report, diff, merge and flame read '-' (standard input), pipes (<(cmd), i.e.
           /dev/fd/N) and FIFOs, with the same output as from the file
  bounded  /dev/zero, an endless single line and a file past the cap are malformed input:
           exit 3 with one message, in bounded memory, for every command that reads input
  outputs  -o naming a FIFO (as /dev/null is a device): written through, never replaced by a
           regular file; a regular file is replaced whole, a failed run leaves it as it was
FIXTURES_ROOT is tests/tools (its report/, merge/ and flame/ fixtures are used).
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

CUTRACE, ROOT, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
TRACE = os.path.join(ROOT, "report", "fixtures", "host_nested.json")
OPS = os.path.join(ROOT, "report", "fixtures", "torch_ops.json")
R0 = os.path.join(ROOT, "merge", "fixtures", "train-100-rank0.trace.json")
R1 = os.path.join(ROOT, "merge", "fixtures", "train-100-rank1.trace.json")
FOLDED = os.path.join(ROOT, "flame", "fixtures", "cuda.folded")

FOLDED_LINE_CAP = 16 << 20  # tools/flame.cpp kMaxLineBytes
AS_LIMIT = 1 << 30          # the address-space limit the bounded runs get
WHOLE_CAP = AS_LIMIT // 8   # tools/input_file.cpp wholeInputCap() under that limit
MAX_RSS_KB = 400 << 10      # what a bounded run may reach (the cap plus the program)


class Feeder(threading.Thread):
    """Writes `data`, then `fill` `repeat` times (None: until the reader closes the pipe), into
    a pipe whose read end the child gets as path(). Large inputs are made as they are written:
    a child's peak RSS counts what the parent held when it forked."""

    def __init__(self, data=b"", fill=None, repeat=None):
        super().__init__(daemon=True)
        self.data, self.fill, self.repeat = data, fill, repeat
        self.r, self.w = os.pipe()
        self.written = 0

    def run(self):
        try:
            view = memoryview(self.data)
            while view:
                n = os.write(self.w, view)
                self.written += n
                view = view[n:]
            n = 0
            while self.fill is not None and (self.repeat is None or n < self.repeat):
                view = memoryview(self.fill)
                while view:
                    k = os.write(self.w, view)
                    self.written += k
                    view = view[k:]
                n += 1
        except (BrokenPipeError, OSError):
            pass
        finally:
            os.close(self.w)

    def path(self):
        return f"/dev/fd/{self.r}"


def run(args, feeders=(), stdin=None, limit_as=False, timeout=120):
    """Runs cutrace ARGS with the feeders' pipes open in the child; returns (rc, stdout,
    stderr, peak RSS in KiB of that child alone)."""
    fds = [f.r for f in feeders]

    def limit():
        if limit_as:
            resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    for f in feeders:
        f.start()
    p = subprocess.Popen([CUTRACE, *args], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=fds, preexec_fn=limit)
    for fd in fds:
        os.close(fd)
    outs = {}

    def read(name, stream):
        outs[name] = stream.read()

    def feed():
        try:
            p.stdin.write(stdin)
            p.stdin.close()
        except OSError:
            pass

    threads = [threading.Thread(target=read, args=(n, s), daemon=True) for n, s in (("out", p.stdout), ("err", p.stderr))]
    if stdin is not None:
        threads.append(threading.Thread(target=feed, daemon=True))
    for t in threads:
        t.start()
    killer = threading.Timer(timeout, p.kill)
    killer.start()
    _, status, usage = os.wait4(p.pid, 0)  # wait4: this child's own peak RSS
    killer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    for t in threads:
        t.join(10)
    return p.returncode, outs.get("out", b""), outs.get("err", b"").decode("utf-8", "replace"), usage.ru_maxrss


def streams():
    with tempfile.TemporaryDirectory() as tmp:
        trace = open(TRACE, "rb").read()
        # report: a pipe, standard input and a FIFO give the table the file gives.
        rc, want, err, _ = run(["report", TRACE])
        eq(rc, 0, f"report FILE ({err.strip()})")
        f = Feeder(trace)
        rc, got, err, _ = run(["report", f.path()], [f])
        eq((rc, err), (0, ""), "report <(cat FILE): exit 0, nothing on stderr")
        eq(got, want, "report of a pipe = report of the file")
        rc, got, err, _ = run(["report", "-"], stdin=trace)
        eq((rc, got), (0, want), f"report - (stdin) = report of the file ({err.strip()})")
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda: open(fifo, "wb").write(trace), daemon=True)
        writer.start()
        rc, got, err, _ = run(["report", fifo])
        writer.join(10)
        eq((rc, got), (0, want), f"report FIFO = report of the file ({err.strip()})")
        # Several inputs, mixed: a pipe and a file are two processes as two files are.
        rc, want2, _, _ = run(["report", "--format", "csv", TRACE, OPS])
        f = Feeder(trace)
        rc, got, err, _ = run(["report", "--format", "csv", f.path(), OPS], [f])
        eq((rc, got), (0, want2), f"report PIPE FILE = report FILE FILE ({err.strip()})")

        # diff: each side may be a pipe or standard input.
        rc, want, err, _ = run(["diff", "--format", "json", TRACE, OPS])
        check(rc in (0, 1), f"diff FILE FILE ran ({rc}, {err.strip()})")
        f = Feeder(open(OPS, "rb").read())
        rc2, got, err, _ = run(["diff", "--format", "json", "-", f.path()], [f], stdin=trace)
        eq((rc2, got), (rc, want), f"diff - PIPE = diff FILE FILE ({err.strip()})")

        # merge: two pipes (pass 1 reads each once; pass 2 uses what was kept). The files are
        # copied under names without "-rank<R>", which a pipe's /dev/fd/N cannot have either.
        out_file = os.path.join(tmp, "from_files.json")
        out_pipe = os.path.join(tmp, "from_pipes.json")
        copies = []
        for i, src in enumerate((R0, R1)):
            copies.append(os.path.join(tmp, f"input{i}.json"))
            open(copies[-1], "wb").write(open(src, "rb").read())
        rc, _, err, _ = run(["merge", "-o", out_file, *copies])
        eq(rc, 0, f"merge FILES ({err.strip()})")
        f0, f1 = Feeder(open(R0, "rb").read()), Feeder(open(R1, "rb").read())
        rc, _, err, _ = run(["merge", "-o", out_pipe, f0.path(), f1.path()], [f0, f1])
        eq(rc, 0, f"merge PIPE PIPE ({err.strip()})")
        if rc == 0:
            a, b = json.load(open(out_file)), json.load(open(out_pipe))
            eq(b["traceEvents"], a["traceEvents"], "merge of pipes: the same events as of the files")
            eq([(i["pid"], i["merged_pid"], i["exe"], i["host"], i["offset_us"], i["events"]) for i in b["metadata"]["inputs"]],
               [(i["pid"], i["merged_pid"], i["exe"], i["host"], i["offset_us"], i["events"]) for i in a["metadata"]["inputs"]],
               "merge of pipes: the same inputs metadata")
            eq([i["file"] for i in b["metadata"]["inputs"]], [f0.path(), f1.path()], "inputs named as given")
        f1 = Feeder(open(R1, "rb").read())
        rc, _, err, _ = run(["merge", "-o", out_pipe, "-", f1.path()], [f1], stdin=open(R0, "rb").read())
        eq(rc, 0, f"merge - PIPE ({err.strip()})")
        if rc == 0:
            eq(json.load(open(out_pipe))["traceEvents"], json.load(open(out_file))["traceEvents"], "merge - PIPE: same events")

        # flame: a pipe gives the SVG the file gives.
        rc, want, err, _ = run(["flame", FOLDED])
        eq(rc, 0, f"flame FILE ({err.strip()})")
        f = Feeder(open(FOLDED, "rb").read())
        rc, got, err, _ = run(["flame", f.path()], [f])
        eq((rc, got), (0, want), f"flame PIPE = flame FILE ({err.strip()})")

        # Errors name standard input as <stdin>.
        rc, _, err, _ = run(["report", "-"], stdin=b'{"traceEvents":5}')
        check(rc == 3 and err.startswith("cutrace: error: <stdin>:") and err.count("\n") == 1,
              f"report - with bad input: one message naming <stdin>: {rc} {err!r}")


def as_limit_works():
    """Sanitizer builds reserve terabytes of address space and cannot start under the limit."""
    rc, _, _, _ = run(["--version"], limit_as=True)
    return rc == 0


LIMITED = False  # runs get the RLIMIT_AS limit (set by bounded() where cutrace starts under it)


def expect_bad_input(args, what, feeders=(), limit_as=None, message=None, max_rss_kb=MAX_RSS_KB):
    """A regression must not eat the machine: runs are under the address-space limit where
    the build allows it, and peak RSS is checked either way."""
    limit_as = LIMITED if limit_as is None else limit_as
    rc, out, err, rss = run(args, feeders, limit_as=limit_as, timeout=120)
    eq(rc, 3, f"{what}: exit 3 ({err.strip()[:300]})")
    check(err.count("\n") == 1 and err.startswith("cutrace: error: "), f"{what}: one message: {err[:300]!r}")
    if message is not None:
        check(message in err, f"{what}: message says {message!r}: {err[:300]!r}")
    eq(out, b"", f"{what}: nothing on stdout")
    check(rss < max_rss_kb, f"{what}: peak RSS {rss >> 10} MiB, bounded by {max_rss_kb >> 10} MiB")


def bounded():
    global LIMITED
    limited = LIMITED = as_limit_works()
    if not limited:
        print("note: cutrace does not start under RLIMIT_AS (a sanitizer build): endless-line runs skipped")
    with tempfile.TemporaryDirectory() as tmp:
        merged = os.path.join(tmp, "merged.json")
        # /dev/zero: NUL bytes are not text; every reader stops at the first one.
        zero = "/dev/zero: a NUL byte at offset 0: not a text file"
        expect_bad_input(["report", "/dev/zero"], "report /dev/zero", message=zero)
        expect_bad_input(["report", TRACE, "/dev/zero"], "report FILE /dev/zero", message=zero)
        expect_bad_input(["diff", "/dev/zero", TRACE], "diff /dev/zero FILE", message=zero)
        expect_bad_input(["diff", TRACE, "/dev/zero"], "diff FILE /dev/zero", message=zero)
        expect_bad_input(["merge", "-o", merged, R0, "/dev/zero"], "merge FILE /dev/zero", message=zero)
        expect_bad_input(["flame", "/dev/zero"], "flame /dev/zero", message=zero)
        # The same through a pipe, and NUL bytes after a good start.
        f = Feeder(fill=b"\0" * 65536)
        expect_bad_input(["report", f.path()], "report <(cat /dev/zero)", [f], message="a NUL byte at offset 0")
        f = Feeder(b"a;b 1\nc 2\n", fill=b"\0" * 65536)
        expect_bad_input(["flame", f.path()], "flame: folded lines then NULs", [f], message="a NUL byte at offset 10")
        check(not os.path.exists(merged), "merge wrote nothing")

        # One endless line: the whole-document readers stop at their cap, the folded reader at
        # its line cap; each names the cap.
        if limited:
            json_head = b'{"traceEvents":[{"ph":"X","name":"'
            cap = f"larger than {WHOLE_CAP} bytes ({WHOLE_CAP / (1 << 20):.1f} MiB), the most cutrace reads of one input"
            for args, what in ((["report", "{}"], "report"), (["diff", TRACE, "{}"], "diff FILE"),
                               (["diff", "{}", TRACE], "diff _ FILE"), (["merge", "-o", merged, R0, "{}"], "merge")):
                f = Feeder(json_head, fill=b"a" * 65536)
                args = [f.path() if a == "{}" else a for a in args]
                expect_bad_input(args, f"{what} <endless JSON line>", [f], limit_as=True, message=cap)
                check(f.written > WHOLE_CAP, f"{what}: read the whole cap before refusing ({f.written} bytes)")
            f = Feeder(b"a;b 1\n", fill=b"x" * 65536)
            expect_bad_input(["flame", f.path()], "flame <endless line>", [f], limit_as=True,
                             message=f":2: a line longer than {FOLDED_LINE_CAP} bytes (16.0 MiB)")
            # Endless short lines are fine input, read line by line: memory stays small while
            # 200 MB go through.
            lines = b"main;step;cudaLaunchKernel;kernel 1\n" * 1800
            f = Feeder(fill=lines, repeat=3000)
            rc, out, err, rss = run(["flame", f.path(), "-o", os.path.join(tmp, "big.svg")], [f], limit_as=True)
            eq(rc, 0, f"flame of {f.written >> 20} MiB of lines ({err.strip()[:200]})")
            check(rss < 64 << 10, f"flame streams lines: peak RSS {rss >> 10} MiB for {f.written >> 20} MiB of input")
        check(not os.path.exists(merged), "merge wrote nothing")

        # A regular file past the cap is refused by its size, before any of it is read: the
        # 4 GiB cap (simdjson's limit on one document), or under RLIMIT_AS an eighth of it.
        big = os.path.join(tmp, "big.trace.json")
        with open(big, "wb") as f:
            f.truncate((4 << 30) + 1)  # sparse: no disk used
        cap4 = "larger than 4294967295 bytes (4.0 GiB), the most cutrace reads of one input"
        capped = f"larger than {WHOLE_CAP} bytes" if limited else cap4
        expect_bad_input(["report", big], "report <4 GiB file>", message=cap4, limit_as=False, max_rss_kb=64 << 10)
        expect_bad_input(["report", big], "report <4 GiB file> under RLIMIT_AS", message=capped, max_rss_kb=64 << 10)
        expect_bad_input(["merge", "-o", merged, big], "merge <4 GiB file>", message=capped, max_rss_kb=64 << 10)


def outputs():
    """Each command that writes -o: a FIFO at the path gets the output and stays a FIFO (the
    same rule keeps /dev/null a device; renaming a temporary over it made it a regular file)."""
    import stat
    commands = {
        "report": ["report", "--format", "json", "-o", "{}", TRACE],
        "diff": ["diff", "-o", "{}", TRACE, TRACE],
        "merge": ["merge", "-o", "{}", R0, R1],
        "flame": ["flame", "-o", "{}", FOLDED],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in commands.items():
            regular = os.path.join(tmp, name + ".out")
            rc, _, err, _ = run([regular if a == "{}" else a for a in args])
            eq(rc, 0, f"{name} -o FILE ({err.strip()[:200]})")
            want = open(regular, "rb").read()
            check(len(want) > 0, f"{name}: output written")
            fifo = os.path.join(tmp, name + ".fifo")
            os.mkfifo(fifo)
            got = []
            reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
            reader.start()
            rc, _, err, _ = run([fifo if a == "{}" else a for a in args])
            reader.join(30)
            eq(rc, 0, f"{name} -o FIFO ({err.strip()[:200]})")
            check(stat.S_ISFIFO(os.lstat(fifo).st_mode), f"{name}: the FIFO is still a FIFO")
            eq(got[0] if got else None, want, f"{name}: the FIFO's reader got the whole output")
            eq(sorted(f for f in os.listdir(tmp) if ".tmp." in f), [], f"{name}: no temporary left")
        # A failed run leaves an existing output untouched.
        old = os.path.join(tmp, "old.svg")
        open(old, "w").write("old")
        rc, _, _, _ = run(["flame", "-o", old, os.path.join(tmp, "missing.folded")])
        eq(rc, 3, "flame of a missing input: exit 3")
        eq(open(old).read(), "old", "the old output is untouched")


if CASE == "streams":
    streams()
elif CASE == "outputs":
    outputs()
elif CASE == "bounded":
    bounded()
else:
    sys.exit(f"unknown case {CASE}")
finish()
