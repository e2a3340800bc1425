#!/usr/bin/env python3
"""Tests of `cutrace flame`. Usage: test_flame.py CUTRACE CASE (CASE 'all' runs every case)."""

import os
import random
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
NS = "{http://www.w3.org/2000/svg}"
CUTRACE = ""


def fixture(name):
    return os.path.join(HERE, "fixtures", name)


def flame(*args, stdin=None):
    """Runs `cutrace flame ARGS`; returns (exit status, stdout bytes, stderr text)."""
    p = subprocess.run([CUTRACE, "flame", *args], input=stdin, capture_output=True, timeout=60)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def render(*args, stdin=None):
    rc, out, err = flame(*args, stdin=stdin)
    assert rc == 0, f"flame {args} exited {rc}: {err}"
    return out


def frames(svg):
    """The frames, in document order, as dicts: title, x, y, width, height, fill, label."""
    root = ET.fromstring(svg)
    result = []
    for g in root.iter(NS + "g"):
        title = g.find(NS + "title")
        if title is None:
            continue
        rect = g.find(NS + "rect")
        text = g.find(NS + "text")
        result.append({
            "title": title.text,
            "x": float(rect.get("x")),
            "y": float(rect.get("y")),
            "width": float(rect.get("width")),
            "height": float(rect.get("height")),
            "fill": tuple(int(v) for v in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", rect.get("fill")).groups()),
            "label": text.text or "",
        })
    return result


def by_name(fs):
    return {f["title"].rsplit(" (", 1)[0]: f for f in fs}


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def close(a, b, tol=0.011):
    return abs(a - b) <= tol


# ---------------------------------------------------------------------------------------- cases

def case_simple_tree():
    fs = frames(render(fixture("simple.folded")))
    check(len(fs) == 4, f"expected 4 frames, got {len(fs)}")
    titles = [f["title"] for f in fs]
    check(titles == ["all (40 samples, 100%)", "a (40 samples, 100%)", "b (30 samples, 75%)",
                     "c (10 samples, 25%)"], f"titles {titles}")
    f = by_name(fs)
    check(close(f["all"]["width"], 1180) and close(f["a"]["width"], 1180), "root and a span 1200-2*10")
    check(close(f["b"]["width"] / f["c"]["width"], 3.0, 0.001), "b is three times as wide as c")
    check(close(f["b"]["width"] + f["c"]["width"], f["a"]["width"]), "children fill their parent")
    check(close(f["b"]["x"], f["a"]["x"]) and close(f["c"]["x"], f["b"]["x"] + f["b"]["width"]),
          "children laid out left to right")
    check(f["all"]["y"] > f["a"]["y"] > f["b"]["y"] and f["b"]["y"] == f["c"]["y"], "root at the bottom")
    check(f["all"]["y"] - f["a"]["y"] == 16 and all(x["height"] == 15 for x in fs), "16 px rows")
    check([x["label"] for x in fs] == ["all", "a", "b", "c"], "labels")


def case_merge_and_order():
    # Unsorted lines, a repeated stack (main;io twice), a kernel under a launch frame.
    fs = frames(render(fixture("cuda.folded")))
    titles = [f["title"] for f in fs]
    check(titles == [
        "all (100 samples, 100%)",
        "main (97 samples, 97%)",
        "compute (67 samples, 67%)",
        "cpu_work (17 samples, 17%)",
        "cudaLaunchKernel (50 samples, 50%)",
        "cuLaunchKernel (5 samples, 5%)",
        "my_kernel(float*, int) (45 samples, 45%)",
        "io (30 samples, 30%)",
        "z[gpu] (3 samples, 3%)",
        "[gpu]memcpy HtoD (3 samples, 3%)",
    ], f"titles {titles}")
    f = by_name(fs)
    for gpu in ("my_kernel(float*, int)", "[gpu]memcpy HtoD"):
        r, g, b = f[gpu]["fill"]
        check(b > r and g > r, f"{gpu} drawn in the GPU palette, got {f[gpu]['fill']}")
    for cpu in ("all", "main", "compute", "cpu_work", "cudaLaunchKernel", "cuLaunchKernel", "io", "z[gpu]"):
        r, g, b = f[cpu]["fill"]
        check(r >= 205 and b <= 55, f"{cpu} drawn in the warm palette, got {f[cpu]['fill']}")
    check(f["cuLaunchKernel"]["y"] == f["my_kernel(float*, int)"]["y"], "siblings share a row")
    check(f["my_kernel(float*, int)"]["x"] > f["cuLaunchKernel"]["x"], "siblings ordered by name (bytewise)")


def case_options():
    svg = render("--title", "Kernels <&> \"q\"", "--count-name", "us", "--width", "600", fixture("simple.folded"))
    root = ET.fromstring(svg)
    check(root.get("width") == "600", "--width sets the image width")
    title = [t for t in root.iter(NS + "text") if t.get("id") == "title"][0]
    check(title.text == "Kernels <&> \"q\"", f"title {title.text!r}")
    fs = frames(svg)
    check([x["title"] for x in fs][2] == "b (30 us, 75%)", "count name in titles")
    check(close(fs[0]["width"], 580), "root spans 600-2*10")
    # --title=... form too
    root = ET.fromstring(render("--title=T2", fixture("simple.folded")))
    check([t for t in root.iter(NS + "text") if t.get("id") == "title"][0].text == "T2", "--title=TEXT")


def case_inverted():
    f = by_name(frames(render("--inverted", fixture("simple.folded"))))
    check(f["all"]["y"] < f["a"]["y"] < f["b"]["y"], "icicle: root at the top")
    check(f["all"]["y"] == 36, "root row right under the title area")


def case_min_width():
    path = fixture("tiny.folded")  # b is 1/100001 of the width, about 0.012 px
    check(len(frames(render(path))) == 2, "frame under the default 0.1 px minimum omitted")
    check(len(frames(render("--min-width", "0", path))) == 3, "--min-width 0 keeps it")
    check(len(frames(render("--min-width", "2000", path))) == 0, "everything narrower than 2000 px omitted")


def case_labels():
    long_name = "x" * 300
    svg = render("--min-width", "0", stdin=f"{long_name} 1\nshort 1000\nab;cd 40\n".encode())
    f = by_name(frames(svg))
    lab = f[long_name]["label"]
    check(lab == "", f"a frame narrower than 3 characters has no label, got {lab!r}")
    lab = f["ab"]["label"]  # 40/1041 of 1180 px = 45.3 px: 6 characters
    check(lab == "ab", f"short names fit: {lab!r}")
    svg = render(stdin=f"{long_name} 1\n".encode())
    lab = frames(svg)[1]["label"]
    fit = int(1180 / (12 * 0.59))
    check(lab == "x" * (fit - 2) + "..", f"long label cut to {fit} characters with '..': {len(lab)}")
    for n, want in ((fit, "é" * fit), (fit + 1, "é" * (fit - 2) + "..")):  # the edge, in code points
        lab = frames(render(stdin=("é" * n + " 1\n").encode()))[1]["label"]
        check(lab == want, f"a {n}-character name in a {fit}-character box: {len(lab)} characters")


def case_determinism():
    rng = random.Random(7)
    names = ["main", "a b", "cudaMalloc", "kernel<int>", "zeta", "Alpha", "é", "io"]
    stacks = {}
    for _ in range(400):
        stack = ";".join(rng.choice(names) for _ in range(rng.randint(1, 7)))
        stacks[stack] = stacks.get(stack, 0) + rng.randint(0, 1000)
    lines = [f"{s} {w}" for s, w in stacks.items()]
    base = render(stdin=("\n".join(lines) + "\n").encode())
    for seed in range(3):
        shuffled = lines[:]
        random.Random(seed).shuffle(shuffled)
        check(render(stdin=("\n".join(shuffled)).encode()) == base, f"shuffle {seed} changed the SVG")
    # The same stacks with their weights split over repeated lines, plus blank and CRLF lines.
    split = []
    for s, w in stacks.items():
        split += [f"{s} {w // 2}\r", "", f"{s} {w - w // 2}"]
    random.Random(99).shuffle(split)
    check(render(stdin="\n".join(split).encode()) == base, "repeated stacks are not summed the same way")
    check(render(stdin=("\n".join(lines) + "\n").encode()) == base, "two runs differ")


def case_escaping():
    data = open(fixture("nasty.folded"), "rb").read()
    svg = render(fixture("nasty.folded"))
    svg.decode("utf-8")  # strict: no invalid bytes survive
    fs = frames(svg)
    titles = [x["title"] for x in fs]
    check(len(fs) == 6, f"expected 6 frames, got {len(fs)}: {titles}")
    check(any(t.startswith("<script>&\"quote\" 'apos' (") for t in titles), f"specials kept as text: {titles}")
    check(any(t.startswith("bad \ufffd\ufffd end (") for t in titles), f"invalid bytes become U+FFFD: {titles}")
    check(any(t.startswith("cut \ufffd\ufffd (") for t in titles), f"truncated sequence becomes U+FFFD: {titles}")
    check(any(t.startswith("ctl\ufffdx (") for t in titles), f"control character becomes U+FFFD: {titles}")
    check(any(t.startswith("日本語 (") for t in titles), f"valid UTF-8 kept: {titles}")
    check(b"\xff" in data, "fixture really holds invalid UTF-8")
    # The same names in the title and count name are escaped too.
    ET.fromstring(render("--title", "a<b&\"'", "--count-name", "<us>", fixture("nasty.folded")))


def case_malformed():
    cases = [
        (b"a;b 1\na;b\n", 2),              # no weight
        (b"a;b 1\n\na;b -5\n", 3),         # negative
        (b"a 99999999999999999999999\n", 1),  # overflows 64 bits
        (b"a;;b 3\n", 1),                  # empty frame
        (b";a 3\n", 1),
        (b"a; 3\n", 1),
        (b"a;b 3x\n", 1),
        (b"a;b 1.5\n", 1),
        (b" 5\n", 1),                      # empty stack
        (b"a 18446744073709551615\nb 1\n", 2),  # total overflows
    ]
    with tempfile.TemporaryDirectory() as d:
        for data, line in cases:
            src = os.path.join(d, "in.folded")
            open(src, "wb").write(data)
            out = os.path.join(d, "out.svg")
            rc, stdout, err = flame("-o", out, src)
            check(rc == 3, f"{data!r}: exit {rc}, wanted 3")
            check(f"{src}:{line}:" in err, f"{data!r}: stderr lacks '{src}:{line}:': {err!r}")
            check(not os.path.exists(out), f"{data!r}: output file written")
            check(sorted(os.listdir(d)) == ["in.folded"], f"{data!r}: left files {os.listdir(d)}")
            check(stdout == b"", f"{data!r}: wrote to stdout")
        rc, _, err = flame(stdin=b"ok 1\nbad\n")
        check(rc == 3 and "<stdin>:2:" in err, f"stdin errors name <stdin> and the line: {rc} {err!r}")
        rc, _, err = flame(os.path.join(d, "missing.folded"))
        check(rc == 3 and "missing.folded" in err, f"missing file: exit {rc} {err!r}")
        rc, _, err = flame(d)
        check(rc == 3, f"a directory as input: exit {rc} {err!r}")


def case_usage():
    rc, out, _ = flame("--help")
    check(rc == 0 and b"usage: cutrace flame" in out, f"--help: exit {rc}")
    for args in (["--bogus"], ["--width"], ["--width", "abc"], ["--width", "10"], ["--min-width", "-1"],
                 ["a.folded", "b.folded"], ["-x"], ["--inverted=1"]):
        rc, out, err = flame(*args)
        check(rc == 2, f"{args}: exit {rc}, wanted 2")
        check("usage: cutrace flame" in err and out == b"", f"{args}: usage on stderr only")


def case_stdin_and_output():
    path = fixture("cuda.folded")
    data = open(path, "rb").read()
    base = render(path)
    check(render(stdin=data) == base, "no FILE reads stdin")
    check(render("-", stdin=data) == base, "'-' reads stdin")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "g.svg")
        rc, stdout, err = flame("-o", out, path)
        check(rc == 0 and stdout == b"", f"-o: exit {rc} {err}")
        check(open(out, "rb").read() == base, "-o writes what stdout gets")
        check(sorted(os.listdir(d)) == ["g.svg"], f"temporary files left: {os.listdir(d)}")
        mask = os.umask(0)
        os.umask(mask)
        check(os.stat(out).st_mode & 0o777 == 0o666 & ~mask, "output mode follows the umask, not mkstemp's 0600")
        rc, _, err = flame("-o", os.path.join(d, "no", "such", "dir.svg"), path)
        check(rc == 4, f"unwritable output: exit {rc}, wanted 4")
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            p = subprocess.run([CUTRACE, "flame", path], stdout=full, stderr=subprocess.PIPE, timeout=60)
        check(p.returncode == 4, f"stdout write failure: exit {p.returncode}, wanted 4")


def case_empty():
    for data in (b"", b"\n\n", b"a;b 0\nc 0\n"):
        svg = render(stdin=data)
        root = ET.fromstring(svg)
        check(len(frames(svg)) == 0, f"{data!r}: frames drawn with no samples")
        texts = [t.text for t in root.iter(NS + "text")]
        check("no samples" in texts, f"{data!r}: no 'no samples' message: {texts}")


def case_deep():
    depth = 20000  # an iterative layout; recursion this deep would be fragile
    svg = render("--min-width", "0", stdin=(";".join(["f"] * depth) + " 1\n").encode())
    check(svg.count(b"<g><title>") == depth + 1, "every level drawn")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global CUTRACE
    if len(sys.argv) != 3 or (sys.argv[2] != "all" and sys.argv[2] not in CASES):
        print(f"usage: {sys.argv[0]} CUTRACE {{all|{'|'.join(CASES)}}}", file=sys.stderr)
        return 2
    CUTRACE = sys.argv[1]
    names = list(CASES) if sys.argv[2] == "all" else [sys.argv[2]]
    failed = 0
    for name in names:
        try:
            CASES[name]()
            print(f"ok {name}")
        except Exception as e:  # a crash (say, XML that does not parse) fails the case too
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
