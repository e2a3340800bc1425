"""cutrace::python against the running interpreter.

Usage: frames_test.py LIBPROBE [--expect-unsupported]

Every probe call is a ctypes call, and ctypes releases the GIL around it, so the frames are read
with the GIL released. The probe's frames must equal the interpreter's own view (sys._getframe()
chain with f_lineno, co_qualname on 3.11+) in order, the number of frames it flags as the outermost
of their C-level eval call must equal the number of _PyEval_EvalFrameDefault frames on the native
stack, and the hand-written sites below must show the exact names, lines and entry flags.
"""
import ctypes
import os
import re
import subprocess
import sys
import sysconfig
import threading
import traceback

LIB = ctypes.CDLL(sys.argv[1])
LIB.probe.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.probe.restype = ctypes.c_int
LIB.probe_status.restype = ctypes.c_char_p
LIB.probe_bench.argtypes = [ctypes.c_int, ctypes.c_int]
LIB.probe_bench.restype = ctypes.c_double
LIB.probe_depth.restype = ctypes.c_int
LIB.probe_split_part.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
SIZE = 1 << 16
BUF = ctypes.create_string_buffer(SIZE)
THIS = __file__
V = sys.version_info
QUALNAME = V >= (3, 11)
INLINED = 0 if V >= (3, 11) else 1  # entry flag of a Python-to-Python call
FAILURES = []

with open(THIS, encoding="utf-8") as source:
    SOURCE_LINES = source.read().splitlines()


def at(marker):
    """Line number of the line ending with '# @marker'."""
    hits = [i + 1 for i, text in enumerate(SOURCE_LINES) if text.rstrip().endswith("# @" + marker)]
    assert len(hits) == 1, marker
    return hits[0]


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def expected_from(frame):
    out = []
    while frame is not None:
        code = frame.f_code
        out.append((code.co_qualname if QUALNAME else code.co_name, code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return out


GIL_HELD = object()


def parse(n, buf=BUF):
    lines = BUF.value.decode("utf-8").splitlines()
    frames = []
    gil = int(lines[-1].split("\t")[1])
    lines = lines[:-1]
    check(gil == (1 if buf is GIL_HELD else 0), f"probe ran {'with' if gil else 'without'} the GIL")
    for text in lines[:-1]:
        function, file, line, entry = text.split("\t")
        frames.append((function, file, int(line), int(entry)))
    native = int(lines[-1].split("\t")[1])
    return n, frames, native


# ---------------------------------------------------------------- call sites
def leaf():
    return expected_from(sys._getframe()), LIB.probe(BUF, SIZE)  # @leaf


def c():
    return expected_from(sys._getframe()), traceback.extract_stack(), LIB.probe(BUF, SIZE)  # @c


def b():
    return c()  # @b


def a():
    return b()  # @a


def via_lambda():
    f = lambda: leaf()  # @lambda
    return f()  # @call-lambda


class Outer:
    class Inner:
        def method(self):
            return list(map(lambda _: via_lambda(), [1]))[0]  # @map


def sorted_site():
    result = []
    sorted([1], key=lambda _: result.append(leaf()))  # @sorted
    return result[0]


def gen():
    yield leaf()  # @gen


def next_site():
    return next(gen())  # @next


def for_site():
    for r in gen():  # @for
        return r


class Made:
    def __init__(self):
        self.result = leaf()  # @init


def make():
    return Made().result  # @make


def fünf():
    return leaf()  # @latin1


def 函数():
    return fünf()  # @ucs2


def 𠀋():
    return 函数()  # @ucs4


def multi_line_call(fn):
    return [fn(BUF,  # @ml
               SIZE),
            0][0]


# ---------------------------------------------------------------- checks
def compare(name, want, result):
    n, got, native = result
    check(n > 0 and n == len(got), f"{name}: probe returned {n} frames, described {len(got)}")
    check([g[:3] for g in got] == want, f"{name}: frames equal the interpreter's view")
    if [g[:3] for g in got] != want:
        for i in range(max(len(want), len(got))):
            print("   want", want[i] if i < len(want) else None, "\n   got ", got[i] if i < len(got) else None)
    entries = sum(g[3] for g in got)
    check(entries == native, f"{name}: {entries} entry frames == {native} native _PyEval_EvalFrameDefault frames")
    return got


def expect_top(name, got, top):
    """top: [(function, marker, entry)] innermost first."""
    want = [(fn, THIS, at(marker), entry) for fn, marker, entry in top]
    check(got[: len(want)] == want, f"{name}: top frames {[(w[0], w[2], w[3]) for w in want]}")
    if got[: len(want)] != want:
        print("   got", got[: len(want)])


def q(qualname, name):
    return qualname if QUALNAME else name


def run_nested(label):
    want, tb, n = a()  # @run-a
    got = compare(label, want, parse(n))
    print("   traceback.extract_stack():")
    for f in tb:
        print(f"   {f.name} {f.filename}:{f.lineno}")
    view = [(f.name, f.filename, f.lineno) for f in reversed(tb)]
    check([(g[0].rsplit(".", 1)[-1], g[1], g[2]) for g in got] == view,
          f"{label}: frames equal traceback.extract_stack() (names, files, lines)")
    expect_top(label, got, [("c", "c", INLINED), ("b", "b", INLINED), ("a", "a", INLINED)])
    return got


def readelf(*args):
    try:
        return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def eval_split_part():
    """The part of the eval loop a profile-guided build split off, as binutils sees its file:
    the code of the FDE that follows, in .eh_frame, the one covering _PyEval_EvalFrameDefault
    (GCC writes the FDE of a function's ".cold" part right after the function's own), when that
    code starts inside a frame, entered by a jump (its first CFA rule comes before any advance),
    not by a call. (0, 0): none."""
    files = [sys.executable, os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("LDLIBRARY") or "")]
    for path in files:
        symbols = readelf("--dyn-syms", path)
        hit = re.search(r"^\s*\d+: ([0-9a-f]+) +\d+ FUNC +\w+ +\w+ +\d+ _PyEval_EvalFrameDefault$", symbols, re.M)
        if hit is None:
            continue
        address = int(hit.group(1), 16)
        # Each record: its kind, its code range and its first CFA instruction.
        records = re.findall(r"^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ (FDE|CIE)(?: cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+))?\n"
                             r"(?:  (\S+))?", readelf("--debug-dump=frames", path), re.M)
        for (kind, b, e, _), (next_kind, nb, ne, first) in zip(records, records[1:]):
            if kind == "FDE" and int(b, 16) <= address < int(e, 16):
                if next_kind == "FDE" and first not in ("", "DW_CFA_advance_loc:", "DW_CFA_nop"):
                    print(f"   the eval loop's split part in {path} (readelf): {nb}..{ne}")
                    return int(nb, 16), int(ne, 16)
                return 0, 0
    return 0, 0


def main():
    LIB.probe_split_part(*eval_split_part())
    status = LIB.probe_status().decode()
    version = f"{V.major}.{V.minor}.{V.micro}"
    print("status:", status)
    if "--expect-unsupported" in sys.argv:
        check(status == f"CPython {version}: unsupported (3.10 to 3.15)", f"status for {version}")
        check(LIB.probe(BUF, SIZE) == 0, "no frames on an unsupported interpreter")
        return
    check(status == f"CPython {version}: frames on", "status says frames on")

    print("-- nested a -> b -> c -> probe (main thread)")
    got = run_nested("nested")
    print("   probe (function file:line entry):")
    for fn, file, line, entry in got:
        print(f"   {fn} {file}:{line} {entry}")
    check(got[-1][0] == "<module>" and got[-1][3] == 1, "outermost <module> frame is an entry frame")

    print("-- the same call with the GIL held (ctypes.PyDLL)")
    held = ctypes.PyDLL(sys.argv[1])
    held.probe.argtypes = [ctypes.c_char_p, ctypes.c_int]
    want, n = expected_from(sys._getframe()), held.probe(BUF, SIZE)  # @held
    got = compare("GIL held", want, parse(n, GIL_HELD))
    expect_top("GIL held", got, [("main", "held", INLINED)])

    print("-- thread")
    box = []
    t = threading.Thread(target=lambda: box.append(run_nested("thread")))
    t.start()
    t.join()
    check(len(box) == 1 and box[0][-1][0] == q("Thread._bootstrap", "_bootstrap"),
          "thread: outermost frame is Thread._bootstrap")
    check(len(box) == 1 and box[0][-1][3] == 1, "thread: Thread._bootstrap is an entry frame")

    print("-- method, map builtin, lambda")
    want, n = Outer.Inner().method()  # @method
    got = compare("method", want, parse(n))
    expect_top("method", got, [
        ("leaf", "leaf", INLINED),
        (q("via_lambda.<locals>.<lambda>", "<lambda>"), "lambda", INLINED),
        ("via_lambda", "call-lambda", INLINED),
        (q("Outer.Inner.method.<locals>.<lambda>", "<lambda>"), "map", 1),  # called by C map()
        (q("Outer.Inner.method", "method"), "map", INLINED),
        ("main", "method", INLINED),
    ])

    print("-- sorted(key=...)")
    want, n = sorted_site()
    got = compare("sorted", want, parse(n))
    expect_top("sorted", got, [("leaf", "leaf", INLINED), (q("sorted_site.<locals>.<lambda>", "<lambda>"), "sorted", 1),
                               ("sorted_site", "sorted", INLINED)])

    print("-- generators")
    want, n = next_site()
    got = compare("next(gen)", want, parse(n))
    expect_top("next(gen)", got, [("leaf", "leaf", INLINED), ("gen", "gen", 1), ("next_site", "next", INLINED)])
    for i in range(4):  # 3.12+ specialise FOR_ITER for generators after a few runs (inlined frame)
        want, n = for_site()
        got = compare(f"for over gen #{i}", want, parse(n))
        check([g[:3] for g in got[:3]] == [("leaf", THIS, at("leaf")), ("gen", THIS, at("gen")), ("for_site", THIS, at("for"))],
              f"for over gen #{i}: top frames")

    print("-- __init__ (3.13 specialises it through a shim frame)")
    for i in range(4):
        want, n = make()
        got = compare(f"__init__ #{i}", want, parse(n))
        check([g[:3] for g in got[:3]] == [("leaf", THIS, at("leaf")), (q("Made.__init__", "__init__"), THIS, at("init")),
                                           ("make", THIS, at("make"))], f"__init__ #{i}: top frames")

    print("-- non-ASCII names (1-, 2- and 4-byte str kinds)")
    want, n = 𠀋()
    got = compare("unicode", want, parse(n))
    expect_top("unicode", got, [("leaf", "leaf", INLINED), ("fünf", "latin1", INLINED), ("函数", "ucs2", INLINED),
                                ("𠀋", "ucs4", INLINED)])

    print("-- a call spanning lines (exact instruction -> line mapping)")
    python_line = multi_line_call(lambda *args: sys._getframe(1).f_lineno)
    want, n = expected_from(sys._getframe()), multi_line_call(LIB.probe)  # @ml-site
    _, got, _ = parse(n)
    check(python_line == at("ml") and got[:1] == [("multi_line_call", THIS, python_line, INLINED)] and got[1][:3] == (q("main", "main"), THIS, at("ml-site")),
          f"multi-line call: line {got[0][2]} == interpreter's f_lineno {python_line} for the same instruction")
    check([g[:3] for g in got[1:]] == want, "multi-line call: caller frames equal the interpreter's view")

    print("-- 8 threads probing at once (concurrent interning, no GIL held)")
    results = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def worker(k):
        buf = ctypes.create_string_buffer(SIZE)
        barrier.wait()
        for _ in range(200):
            want, n = expected_from(sys._getframe()), LIB.probe(buf, SIZE)  # @worker
            results[k].append((want, n, buf.value))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = 0
    for per_thread in results:
        for want, n, raw in per_thread:
            lines = raw.decode("utf-8").splitlines()[:-2]
            got = [tuple(text.split("\t")[:3]) for text in lines]
            if n != len(want) or got != [(f, file, str(line)) for f, file, line in want]:
                bad += 1
    check(sum(map(len, results)) == 1600 and bad == 0, f"concurrent probes: {bad} of 1600 differ from the interpreter's view")

    print("-- the last probe is described again at exit, after Python finalised")
    leaf()

    print("-- captureRaw cost")
    def deep(k):
        if k > 0:
            return deep(k - 1)
        return LIB.probe_depth(), LIB.probe_bench(100000, 64)
    depth, ns = deep(20 - len(expected_from(sys._getframe())))
    check(depth >= 20, f"benchmark stack has {depth} frames")
    print(f"captureRaw: {ns:.1f} ns per call for {depth} frames ({ns / depth:.2f} ns/frame)")


main()
if FAILURES:
    print(f"{len(FAILURES)} check(s) failed")
    sys.exit(1)
print("all checks passed")
