#!/usr/bin/env bash
# The pop of a recorded push is never lost to a full ring (pop credits, collector/collector.h):
# with a 16 KiB ring and no drain pass during the loop, most calls are dropped, yet both ranges
# end at their own pops (no end_lost, no unclosed) and nest.
#   usage: nvtx_full_ring.sh PROGRAM   (env: LIBTRACE, STANDIN_DIR, SANITIZER_RUNTIME)
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-full-ring.XXXXXX")
trap 'rm -rf "$work"' EXIT
env ${STANDIN_DIR:+LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"} \
  LD_PRELOAD="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$LIBTRACE" CUTRACE_OUTPUT="$work/out" \
  CUTRACE_RING_SIZE=16K CUTRACE_DRAIN_MS=10000 "$1" 5000 >"$work/out.txt" 2>"$work/err.txt" ||
  { cat "$work/err.txt" >&2; echo "FAIL: the program failed" >&2; exit 1; }
python3 - "$work"/out/*.trace.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = {e["name"]: e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "nvtx"}
dropped = sum(t.get("dropped", 0) for t in d["metadata"].get("threads", []))
errors = []
if dropped < 1000: errors.append(f"expected most calls dropped, got {dropped}")
for name in ("outer", "kept"):
    e = x.get(name)
    if e is None: errors.append(f"no range {name}"); continue
    flags = [f for f in ("end_lost", "unclosed") if e["args"].get(f)]
    if flags: errors.append(f"{name}: {flags} (its pop was lost)")
if not errors and not (x["outer"]["ts"] <= x["kept"]["ts"] and x["kept"]["ts"] + x["kept"]["dur"] <= x["outer"]["ts"] + x["outer"]["dur"]):
    errors.append("kept does not nest in outer")
for e in errors: print("FAIL:", e, file=sys.stderr)
print(f"ok: {dropped} dropped, both ranges closed by their pops" if not errors else "", end="")
sys.exit(1 if errors else 0)
PY
