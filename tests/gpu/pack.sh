#!/usr/bin/env bash
# Packs what tests/gpu/device_run.sh needs on a GPU machine that cannot build the project: the
# preload, the tools, the test programs, the shared libraries they link that such a machine may
# lack, and the workloads (../shared/gpu).
#   pack.sh BUILD_DIR BUNDLE [WORKLOADS_DIR]
set -eu
build=$1
bundle=$2
workloads=${3:-$(dirname "$0")/../../../shared/gpu}
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/workloads"
cp "$build/preload/libtrace.so" "$build/tools/cutrace" "$build/tests/trace_check" "$build/tests/mt_kernels" \
   "$build/tests/driver_lookup" "$build/examples/pipeline" "$build/tests/graph_replay" \
   "$build/tests/prefetch" "$build/tests/batch_copy" "$build/tests/module_load" "$build/tests/contexts" \
   "$build/tests/arrays" "$build/tests/pitched" "$build/tests/stream_order" "$build/tests/legacy_launch" \
   "$build/tests/green_contexts" "$build/tests/ipc" "$build/tests/vmm_shared" "$build/tests/pools" \
   "$build/tests/multicast" "$build/tests/runtime_library" "$build/tests/peer_access" "$build/tests/external_interop" \
   "$build/tests/mipmaps" "$build/tests/pool_ipc" "$build/tests/settings" \
   "$bundle/bin/"
mkdir -p "$bundle/bin/static"  # the same name as the shared-runtime build: the same summary
cp "$build/tests/e2e/static_runtime/mt_kernels" "$bundle/bin/static/"
find "$bundle/bin" -type f -exec strip --strip-debug {} +
# The tools' libraries, and libunwind.so.8, which libtrace.so loads for the stacks the .eh_frame
# walk cannot follow.
for lib in $(ldd "$build/tools/cutrace" "$build/tests/trace_check" | awk '/=> \// {print $3}' | sort -u | grep -E 'fmt|spdlog|simdjson') \
           "$(ldconfig -p | awk '/libunwind.so.8 .*x86-64/ {print $NF; exit}')"; do
  cp -L "$lib" "$bundle/lib/"
done
cp "$workloads"/*.py "$bundle/workloads/"
du -sh "$bundle"
