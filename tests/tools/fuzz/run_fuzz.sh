#!/bin/sh
# Builds tools/fuzz_readers.cpp with clang++ and libFuzzer (ASan + UBSan) and runs it for a
# bounded time over a seed corpus. Exit 77 (skipped) without clang++ or libFuzzer; 1 on any
# crash, sanitizer report, leak or timeout.
# usage: run_fuzz.sh SOURCE_ROOT WORK_DIR SECONDS SEED_DIR...
set -u
src=$1 work=$2 secs=$3
shift 3

cxx=${FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  for c in clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then cxx=$c; break; fi
  done
fi
[ -n "$cxx" ] || { echo "SKIP: no clang++"; exit 77; }
rm -rf "$work" && mkdir -p "$work/corpus" || exit 1
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$work/probe.cpp"
"$cxx" -fsanitize=fuzzer "$work/probe.cpp" -o "$work/probe" 2>/dev/null || { echo "SKIP: $cxx has no libFuzzer"; exit 77; }
deps=$(pkg-config --cflags --libs simdjson spdlog fmt) || { echo "SKIP: pkg-config cannot find simdjson/spdlog/fmt"; exit 77; }

# The sources are compiled here, not by meson: the project compiler is g++, which has no libFuzzer.
# shellcheck disable=SC2086
"$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I"$src" "$src/tools/fuzz_readers.cpp" "$src/tools/report_model.cpp" "$src/tools/merge_traces.cpp" \
  "$src/tools/flame.cpp" "$src/tools/input_file.cpp" "$src/tools/output_file.cpp" "$src/tools/trace_input.cpp" \
  "$src/exporters/perfetto_reader.cpp" "$src/exporters/perfetto_metadata.cpp" "$src/exporters/chrome_trace.cpp" \
  "$src/exporters/folded.cpp" \
  "$src/exporters/trace_view.cpp" "$src/exporters/torch_ops.cpp" "$src/exporters/frame_names.cpp" \
  "$src/exporters/json_writer.cpp" "$src/collector/store.cpp" "$src/collector/torch_text.cpp" "$src/collector/clock.cpp" \
  "$src/collector/name_table.cpp" "$src/collector/stack_table.cpp" "$src/collector/symbolizer.cpp" "$src/collector/dwarf_unwind.cpp" \
  "$src/collector/python_frames.cpp" "$src/collector/own_writes.cpp" "$src/collector/private_files.cpp" $deps -ldl -o "$work/fuzz_readers" || { echo "FAIL: the fuzz target did not build"; exit 1; }

for d in "$@"; do
  for f in "$d"/*; do [ -f "$f" ] && cp "$f" "$work/corpus/"; done
done
echo "seeds: $(ls "$work/corpus" | wc -l)"

# libFuzzer's own failure status is 77 by default, which meson reads as "skipped".
FUZZ_TMPDIR=$work ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$work/fuzz_readers" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -error_exitcode=1 -timeout_exitcode=1 -dict="$src/tests/tools/fuzz/trace.dict" \
  -artifact_prefix="$work/" "$work/corpus" >"$work/fuzz.log" 2>&1
status=$?
tail -n 30 "$work/fuzz.log"
if [ "$status" -ne 0 ] || grep -q "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer\|deadly signal" "$work/fuzz.log"; then
  echo "FAIL: fuzzing found a problem (status $status); reproducer: $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null)"
  exit 1
fi
echo "OK: no crash in $secs s"
