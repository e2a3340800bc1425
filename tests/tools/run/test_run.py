#!/usr/bin/env python3
"""Tests of `cutrace run`.

usage: test_run.py CUTRACE LIBTRACE CASE [PIPELINE STANDIN_DIR]
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, eq, finish  # noqa: E402

CUTRACE, LIBTRACE, CASE = os.path.abspath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]


def run(args, env=None, **kw):
    p = subprocess.run([CUTRACE, "run", "--libtrace", LIBTRACE, *args], capture_output=True, env=env, **kw)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def listed_files(stderr):
    """The paths under the 'cutrace: N new files in DIR:' header."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"cutrace: (\d+) new files? in (.*):$", line)
        if m:
            paths = [l[2:] for l in lines[i + 1:i + 1 + int(m.group(1))]]
            check(all(l.startswith("  /") for l in lines[i + 1:i + 1 + int(m.group(1))]), "file lines indented paths")
            return m.group(2), paths
    return None, []


def pipeline(program, standin, merge):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_LIBRARY_PATH=standin, CUTRACE_CUPTI="off")
        env.pop("LD_PRELOAD", None)
        bare = subprocess.run([program], env=env, capture_output=True)
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        open(os.path.join(out, "old.trace.json"), "w").write("{}")  # there before: not listed
        rc, stdout, stderr = run(["-o", out] + (["--merge"] if merge else []) + ["--", program], env=env)
        eq(rc, bare.returncode, f"exit status as bare ({stderr})")
        eq(stdout, bare.stdout.decode(), "stdout identical to the bare run")
        check("cutrace" not in stdout, "nothing of cutrace on stdout")
        created = sorted(set(os.listdir(out)) - {"old.trace.json"})
        listed_dir, listed = listed_files(stderr)
        eq(listed_dir, out, "summary names the output directory")
        eq(sorted(listed), [os.path.join(out, f) for f in created], "summary lists exactly the files created")
        pids = {m.group(1) for f in created if (m := re.match(r"pipeline-(\d+)\.", f))}
        eq(len(pids), 1, f"one traced process: {created}")
        pid = pids.pop() if pids else "?"
        want = {f"pipeline-{pid}.pftrace", f"pipeline-{pid}.trace.json", f"pipeline-{pid}.folded"} | ({f"merged-{pid}.trace.json"} if merge else set())
        check(want <= set(created), f"created {created} holds {sorted(want)}")
        check(all(re.fullmatch(rf"(pipeline-{pid}(\.pftrace|\.trace\.json|\.folded|\.calls\.folded|\.gpu\.folded)|merged-{pid}\.trace\.json)", f)
                  for f in created), f"no other files: {created}")
        meta = json.load(open(os.path.join(out, f"pipeline-{pid}.trace.json")))["metadata"]
        row = re.search(rf"^pipeline\s+{pid}\s+-\s+(\d+)\s+(\d+)\s+pipeline-{pid}\.trace\.json$", stderr, re.M)
        check(row is not None, f"process line for pid {pid} in {stderr!r}")
        if row:
            eq((int(row.group(1)), int(row.group(2))), (meta["events"], meta["dropped_events"]), "events and dropped from metadata")
        # The tables are the top 5 of `cutrace report` over the same trace, in its order.
        rep = json.loads(subprocess.run([CUTRACE, "report", "--format", "json", os.path.join(out, f"pipeline-{pid}.trace.json")],
                                        capture_output=True).stdout)
        top_api = [r["name"] for r in rep["sections"]["api"]][:5]
        got_api = re.findall(r"^(cu[A-Za-z_0-9]+)\s+\d+\s+[\d.]+ [um]?s", stderr, re.M)
        eq(got_api, top_api, "top 5 API rows by total")
        launches = {r["name"]: r["launches"] for r in rep["sections"]["kernel"]}
        eq(len(launches), 3, "three kernels")
        for name, n in launches.items():
            check(re.search(rf"^{re.escape(name)}\s+{n}\s", stderr, re.M) is not None, f"kernel row {name} with {n} launches")
        if merge:
            doc = json.load(open(os.path.join(out, f"merged-{pid}.trace.json")))
            eq(doc["metadata"]["tool"], "cutrace-merge", "merged tool")
            eq(len(doc["metadata"]["inputs"]), 1, "merged from this run's one trace (not old.trace.json)")
            names = [e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
            eq(names, [f"pipeline @{meta['hostname']}"], "merged process name (viewers add the pid)")
            src = json.load(open(os.path.join(out, f"pipeline-{pid}.trace.json")))
            eq(len(doc["traceEvents"]), len(src["traceEvents"]) + 1, "merged holds every event (+ sort index)")
            check(all(isinstance(e["ts"], (int, float)) and e["ts"] >= 0 for e in doc["traceEvents"] if "ts" in e), "merged ts >= 0")
        rc, _, stderr = run(["-o", out, "--quiet", "--", program], env=env)
        eq(rc, 0, "quiet run")
        check("top CUDA API" not in stderr and "new files in" in stderr, "--quiet: files listed, no tables")


def basics():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o")
        env = dict(os.environ, LD_PRELOAD="libm.so.6 libdl.so.2", CUTRACE_LOG="warn", CUTRACE_STACKS="off")
        rc, stdout, stderr = run(["-o", out, "--stacks", "launches", "--", "sh", "-c",
                                  'echo "$LD_PRELOAD|$CUTRACE_LOG|$CUTRACE_STACKS|$CUTRACE_OUTPUT"'], env=env)
        eq((rc, stdout), (0, f"{LIBTRACE}:libm.so.6 libdl.so.2|warn|launches|{out}\n"),
           "libtrace first, existing entries kept; env kept unless overridden; output absolute")
        check("no files were written" in stderr, f"no files: said so ({stderr!r})")
        env = dict(os.environ, LD_PRELOAD=f"libm.so.6:{LIBTRACE}")
        rc, stdout, _ = run(["-o", out, "--", "sh", "-c", 'echo "$LD_PRELOAD"'], env=env)
        eq(stdout, f"{LIBTRACE}:libm.so.6\n", "libtrace not preloaded twice")
        rc, stdout, _ = run(["-o", "rel/dir", "--", "sh", "-c", 'echo "$CUTRACE_OUTPUT"'], cwd=tmp)
        eq(stdout, os.path.join(os.path.realpath(tmp), "rel/dir") + "\n", "relative -o made absolute")
        eq(run(["-o", out, "--", "sh", "-c", "exit 7"])[0], 7, "exit status propagated")
        rc, _, stderr = run(["-o", out, "--", "sh", "-c", "kill -TERM $$"])
        eq(rc, 143, "killed by SIGTERM -> 143")
        check("killed by signal 15" in stderr, "signal death reported")
        rc, _, stderr = run(["-o", out, "--", "no-such-command-cutrace"])
        eq(rc, 127, "command not found -> 127")
        check("command not found" in stderr, "not found message")
        script = os.path.join(tmp, "noexec.sh")
        open(script, "w").write("#!/bin/sh\necho hi\n")
        eq(run(["-o", out, "--", script])[0], 126, "not executable -> 126")
        rc, stdout, _ = run(["-o", out, "sh", "-c", "echo $0 $1", "x", "y"])
        eq((rc, stdout), (0, "x y\n"), "the command starts at the first non-option word; its options are its own")


def signals():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o")
        # SIGTERM to cutrace reaches the command, which dies of it.
        p = subprocess.Popen([CUTRACE, "run", "--libtrace", LIBTRACE, "-o", out, "--", "sh", "-c", "echo $$; exec sleep 30"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        child = int(p.stdout.readline())
        start = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
        eq(rc, 143, "SIGTERM forwarded: the command died of it, status 143")
        check(time.monotonic() - start < 10, "forwarded at once")
        try:
            os.kill(child, 0)
            check(False, f"command {child} still alive")
        except ProcessLookupError:
            pass
        # A signal the command handles: forwarded, and the command's own exit status comes back.
        p = subprocess.Popen([CUTRACE, "run", "--libtrace", LIBTRACE, "-o", out, "--", "sh", "-c",
                              'trap "echo got-usr1; exit 3" USR1; echo ready; while :; do sleep 0.05; done'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        eq(p.stdout.readline(), b"ready\n", "handler installed")
        p.send_signal(signal.SIGUSR1)
        rest, _ = p.communicate(timeout=20)
        eq((p.returncode, rest), (3, b"got-usr1\n"), "SIGUSR1 forwarded to the command's handler")


def bad_options():
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "ran")
        cmd = ["--", "sh", "-c", f"touch {marker}"]
        cases = [["--stacks", "sometimes"], ["--stack-depth", "0"], ["--stack-depth", "129"], ["--unwind", "magic"],
                 ["--python", "on"], ["--cupti", "maybe"], ["--nvtx", "2"], ["--ring-size", "1000"], ["--ring-size", "2G"],
                 ["--drain-ms", "0"], ["--drain-ms", "10001"], ["--log", "loud"], ["--folded-nvtx", "x"],
                 ["--capture", "whenever"], ["--capture", "schedule:1,2"], ["--clock", "sundial"], ["--max-memory", "512K"],
                 ["--journal", "off"], ["--enable", "0"], ["--bogus"], ["--stacks"], ["--quiet=1"],
                 ["--libtrace", "/nonexistent/libtrace.so"]]
        for c in cases:
            rc, stdout, stderr = run(["-o", tmp] + c + cmd)
            eq(rc, 2, f"{c}: exit 2 ({stderr.strip()})")
            check(not os.path.exists(marker), f"{c}: the command did not run")
            check(stderr.strip() != "", f"{c}: a message")
        rc, _, stderr = run(["-o", tmp] + cmd, env=dict(os.environ, CUTRACE_TYPO="1"))
        eq(rc, 2, "unknown CUTRACE_* variable in the environment: exit 2")
        check("CUTRACE_TYPO" in stderr, f"named: {stderr!r}")
        rc, _, stderr = run(["-o", tmp] + cmd, env=dict(os.environ, CUTRACE_DRAIN_MS="0"))
        eq(rc, 2, "bad inherited value: exit 2")
        check(not os.path.exists(marker), "command not run")
        eq(run([])[0], 2, "no command: exit 2")
        rc, stdout, _ = run(["--help"])
        check(rc == 0 and "usage: cutrace run" in stdout, "--help")
        # The options come from the preload's own table of settings, which the README documents:
        # each documented CUTRACE_X but ENABLE and OUTPUT (that one is -o) is an option --x.
        readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../README.md")).read()
        documented = set(re.findall(r"^\| `CUTRACE_([A-Z_]+)`", readme, re.M)) - {"ENABLE", "OUTPUT"}
        offered = set(re.findall(r"^  --([a-z-]+) V ", stdout, re.M))
        eq(offered, {d.lower().replace("_", "-") for d in documented}, "options of --help = settings in the README")
        # A number the table gives as a default (the unit suite checks it against Config) is the
        # README's default too.
        for option, default in re.findall(r"^  --([a-z-]+) V .*?\(default (\d+[KMG]?)\b", stdout, re.M):
            row = re.search(r"^\| `CUTRACE_" + option.upper().replace("-", "_") + r"` \|.*$", readme, re.M)
            check(row is not None and re.search(r"default:? `?" + default + r"\b", row.group(0)) is not None,
                  f"--{option}: the README's default is {default}")
        # Good values pass: every option at once, spelled both ways.
        rc, stdout, stderr = run(["-o", tmp, "--stacks=launches", "--stack-depth", "8", "--unwind", "fp", "--python", "off",
                                  "--cupti", "off", "--nvtx", "on", "--capture", "all", "--ring-size", "64K", "--drain-ms", "5",
                                  "--log", "warn", "--folded-nvtx", "off", "--clock", "monotonic", "--max-memory", "64M",
                                  "--", "sh", "-c", "env | grep ^CUTRACE_ | sort"])
        eq(rc, 0, f"valid options run ({stderr.strip()})")
        eq(stdout.split(), sorted(["CUTRACE_CAPTURE=all", "CUTRACE_CLOCK=monotonic", "CUTRACE_CUPTI=off", "CUTRACE_DRAIN_MS=5",
                                   "CUTRACE_FOLDED_NVTX=off", "CUTRACE_MAX_MEMORY=64M",
                                   "CUTRACE_LOG=warn", "CUTRACE_NVTX=on", f"CUTRACE_OUTPUT={tmp}", "CUTRACE_PYTHON=off",
                                   "CUTRACE_RING_SIZE=64K", "CUTRACE_STACKS=launches", "CUTRACE_STACK_DEPTH=8", "CUTRACE_UNWIND=fp"]),
           "each option sets exactly its variable")


if CASE == "basics":
    basics()
elif CASE == "signals":
    signals()
elif CASE == "bad_options":
    bad_options()
elif CASE in ("pipeline", "pipeline_merge"):
    pipeline(sys.argv[4], sys.argv[5], CASE == "pipeline_merge")
else:
    sys.exit(f"unknown case {CASE}")
finish()
