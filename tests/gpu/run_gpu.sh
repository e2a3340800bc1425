#!/usr/bin/env bash
# GPU suite: the same programs as the e2e suite, on the real CUDA runtime and driver, with the
# device timeline from CUPTI. Skips (77) where there is no NVIDIA GPU. The comparison uses the
# launches view, identical whether a launch went through the shared runtime, the static one or
# the driver, and requires every kernel CUPTI saw to be linked to its launch.
#   run_gpu.sh NAME [run_e2e.sh options] -- PROGRAM [ARGS...]
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
  echo "no NVIDIA GPU: skipped"
  exit 77
fi
unset STANDIN_DIR
name=$1
shift
exec "$(dirname "$0")/../e2e/run_e2e.sh" "gpu_$name" --check-args "--view launches --expect-linked" "$@"
