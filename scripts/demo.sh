#!/usr/bin/env bash
# The newcomer's first command: builds cutrace, traces the bundled example (examples/pipeline.cu:
# three threads, nested NVTX ranges, kernels, copies and allocations) and shows what it recorded.
# On a machine with an NVIDIA GPU the example runs on the real CUDA runtime; elsewhere on the
# stand-in CUDA libraries the tests build (host-side tracing is the same; kernels do not run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${BUILD_DIR:-build}
root=$PWD

example="$root/$build/examples/pipeline"
[ -x "$example" ] || { echo "demo: $example was not built (is nvcc at /usr/local/cuda/bin?)" >&2; exit 1; }

runtime="the real CUDA runtime and GPU"
libpath=""
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  runtime="the stand-in CUDA runtime (no GPU here: host calls are traced, kernels do not run)"
  libpath="$root/$build/tests/standin"
fi
out="$root/cutrace-out"
echo
echo "== tracing examples/pipeline on $runtime"
env ${libpath:+LD_LIBRARY_PATH=$libpath} LD_PRELOAD="$root/$build/preload/libtrace.so" CUTRACE_OUTPUT="$out" "$example"

trace=$(ls -t "$out"/pipeline-*.trace.json | head -1)
stem=${trace%.trace.json}
folded=$stem.folded
svg=$stem.svg
cutrace="$root/$build/tools/cutrace"
[ -x "$cutrace" ] && "$cutrace" flame --title "examples/pipeline: host time" --count-name ns -o "$svg" "$folded"
echo
echo "== outputs"
echo "   Chrome trace (open in https://ui.perfetto.dev): $trace"
echo "   folded stacks, host time (flamegraph.pl, inferno, speedscope): $folded"
echo "   folded stacks, call counts: $stem.calls.folded"
[ -f "$svg" ] && echo "   flamegraph (open in a browser): $svg"
if [ -x "$cutrace" ]; then
  echo
  echo "== cutrace report --limit 5"
  "$cutrace" report --limit 5 "$trace"
fi
echo
echo "== heaviest stacks (host nanoseconds, self time)"
awk '{w=$NF; sub(/ [0-9]+$/, ""); printf "%10d  %s\n", w, $0}' "$folded" | sort -rn | head -5
