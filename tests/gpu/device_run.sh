#!/usr/bin/env bash
# Every GPU check and the overhead figures in one go, for a GPU machine that has no build tools
# of the project: the binaries come prepared in a bundle (tests/gpu/pack.sh makes it from a
# build here). Writes OUT/report.txt (each check's output and verdict) and OUT/files.tar.xz
# (the traced files of the graph and emit_nvtx runs, for the viewer checks back home).
#   device_run.sh BUNDLE OUT [REPS [STEPS]]   (REPS of the overhead bench, 5 by default; 0 skips
#   it; STEPS: the names of the steps to run, space-separated, default all)
set -u
bundle=$(realpath "$1")
out=$(realpath "$2")
reps=${3:-5}
only=${4:-}
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LIBTRACE=$bin/libtrace.so TRACE_CHECK=$bin/trace_check E2E_CUTRACE=$bin/cutrace
export E2E_EXPECTED=$src/tests/e2e/expected PYTHONUNBUFFERED=1
report=$out/report.txt
keep=$out/files
mkdir -p "$keep"
: >"$report"
passed=0 failed=0 skipped=0

step() {  # step NAME TIMEOUT COMMAND...
  local name=$1 limit=$2 t0 rc
  shift 2
  [ -z "$only" ] || [[ " $only " == *" $name "* ]] || return 0
  t0=$(date +%s%N)
  echo "=== $name" >>"$report"
  timeout "$limit" "$@" >>"$report" 2>&1
  rc=$?
  case $rc in
    0) passed=$((passed + 1)); verdict=PASS ;;
    77) skipped=$((skipped + 1)); verdict=SKIP ;;
    *) failed=$((failed + 1)); verdict="FAIL (exit $rc)" ;;
  esac
  echo "=== $name: $verdict in $((($(date +%s%N) - t0) / 1000000)) ms" | tee -a "$report"
}

{
  nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, torch.version.cuda)'
  for f in "$bin"/*; do ldd "$f" 2>/dev/null | grep -q "not found" && { echo "missing libraries of $f:"; ldd "$f" | grep "not found"; }; done
  ls /usr/local/cuda/lib64/libcudart.so* /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>&1 | head
} >>"$report" 2>&1

gpu=$src/tests/gpu
checks=(python3 "$gpu/gpu_checks.py" --libtrace "$LIBTRACE" --trace-check "$TRACE_CHECK" --cutrace "$E2E_CUTRACE"
        --workloads "$bundle/workloads")
# The e2e programs on the real runtime (shared and static) and driver.
cuda_lib=/usr/local/cuda/lib64
step gpu_mt_kernels 120 env LD_LIBRARY_PATH=$cuda_lib:$LD_LIBRARY_PATH "$gpu/run_gpu.sh" mt_kernels --expected gpu_mt_kernels -- "$bin/mt_kernels" @TIDS@
step gpu_mt_kernels_static 120 "$gpu/run_gpu.sh" mt_kernels_static_runtime --expected gpu_mt_kernels -- "$bin/static/mt_kernels" @TIDS@
step gpu_driver_lookup 120 "$gpu/run_gpu.sh" driver_lookup -- "$bin/driver_lookup"
step gpu_example_pipeline 120 env LD_LIBRARY_PATH=$cuda_lib:$LD_LIBRARY_PATH "$gpu/run_gpu.sh" example_pipeline -- "$bin/pipeline"
# Entry points known only from the stand-in (its summaries do not hold on the real runtime):
# NVIDIA's driver and runtime must run each program the same under the preload (exit status and
# output) and the trace must be valid, every kernel linked. (graph_build and graph_extras are left
# out: a graph launch carries no kernel, which the launches view counts.)
for prog in prefetch batch_copy module_load contexts arrays pitched stream_order legacy_launch green_contexts ipc vmm_shared pools multicast runtime_library peer_access external_interop mipmaps pool_ipc settings; do
  step "gpu_$prog" 120 env LD_LIBRARY_PATH=$cuda_lib:$LD_LIBRARY_PATH "$gpu/run_gpu.sh" "$prog" --no-expected -- "$bin/$prog"
done
step gpu_graph_replay 120 env LD_LIBRARY_PATH=$cuda_lib:$LD_LIBRARY_PATH "${checks[@]}" graph --program "$bin/graph_replay" --keep "$keep/graph"
step gpu_torch_profiler_coexistence 300 python3 "$gpu/torch_profiler.py" "$LIBTRACE" "$TRACE_CHECK"
for work in micro transformer resnet; do
  step "gpu_coverage_$work" 300 "${checks[@]}" coverage $work
done
# A capture mode: CUPTI starts at the first recorded call, after the CUDA context exists.
step gpu_coverage_transformer_captured 300 "${checks[@]}" coverage transformer --env CUTRACE_CAPTURE=nvtx:cutrace-steps
for work in transformer resnet; do
  step "gpu_unwind_verify_$work" 300 "${checks[@]}" unwind $work
done
step gpu_emit_nvtx_transformer 300 "${checks[@]}" emit_nvtx transformer --keep "$keep/emit_nvtx"
echo "checks: $passed passed, $failed failed, $skipped skipped" | tee -a "$report"
tar -C "$keep" -cJf "$out/files.tar.xz" . 2>>"$report"
rm -rf "$keep"
if [ "$reps" -gt 0 ]; then
  floor=()
  [ -e "$bin/libtrace_floor.so" ] && floor=(--floor-lib "$bin/libtrace_floor.so")
  step gpu_overhead 600 python3 "$src/bench/gpu_overhead.py" "$LIBTRACE" "$bundle/workloads" --reps "$reps" "${floor[@]}" \
    ${OVERHEAD_ARGS:-}
fi
