#!/usr/bin/env bash
# End-to-end test runner: runs a real program twice, bare and under LD_PRELOAD=libtrace.so,
# checks that the preload changed nothing the program can show (exit status, stdout, stderr
# apart from cutrace's own "cutrace: " lines), then validates every trace it wrote with
# trace_check and compares the canonical summary with tests/e2e/expected/NAME.txt. Every
# process's stream (<stem>.pftrace) must rebuild, through `cutrace export` (E2E_CUTRACE), into
# the same Chrome trace and folded files as the process wrote itself (trace_check --compare).
#
# usage: run_e2e.sh NAME [--expected NAME] [--traces N] [--check-args "ARGS"] [--env K=V]... [--export]
#                   [--max-rss-mb M] [--no-expected] [--relative-output] [--expect-exit N] -- PROGRAM [ARGS...]
#   --export: the program is killed before writing its trace; only its stream is left: run
#   `cutrace export` on it, then check the exported traces.
#   "@TIDS@" in ARGS becomes a file the program fills with "thread-name tid" lines, checked
#   against the trace with --thread-ids.
#   "@RSS@" in ARGS becomes a file the program writes a peak RSS in KiB to; --max-rss-mb M fails
#   the test when the traced run's is above M MiB.
#   "@FILES@" in ARGS becomes an empty directory of each run's own (bare, traced): what the
#   program wrote there must be the same byte for byte under the preload.
#   "@ISSUED@" in ARGS becomes a file where the program writes how many events it issued,
#   checked against the trace with --issued (recorded + dropped == issued).
#   --no-expected: the summaries depend on timing; only trace_check's checks and the trace
#   count apply (no expected file).
#   --relative-output: CUTRACE_OUTPUT is "out", relative to the directory the program starts in
#   (the same out/ directory).
#   --expect-exit N: the exit status the program ends with bare (default 0: its own checks passed).
#   --needs PATH: skipped (77) where PATH does not exist (a file fetched for the test).
#   --perf-maps: the program writes /tmp/perf-PID.map files (CPython's -X perf): those the runs
#   made are removed.
# environment: LIBTRACE, TRACE_CHECK, E2E_EXPECTED (directory), STANDIN_DIR (stand-in CUDA
#   libraries, optional), SANITIZER_RUNTIME (preloaded before libtrace.so in sanitizer builds),
#   E2E_UPDATE=1 (write the expected file instead of comparing; review the diff before committing),
#   FLAMEGRAPH_PL (Brendan Gregg's flamegraph.pl; else one on PATH; with perl, every folded file
#   is also rendered by it: trace_check --flamegraph)
set -u
name=$1
shift
traces=1
expected=$name
check_args=""
extra_env=()
export_only=""
max_rss_mb=""
no_expected=""
relative_output=""
expect_exit=0
perf_maps=""
while [ $# -gt 0 ]; do
  case $1 in
    --traces) traces=$2; shift 2 ;;
    --expected) expected=$2; shift 2 ;;
    --check-args) check_args=$2; shift 2 ;;
    --env) extra_env+=("$2"); shift 2 ;;
    --export) export_only=1; shift ;;
    --max-rss-mb) max_rss_mb=$2; shift 2 ;;
    --no-expected) no_expected=1; shift ;;
    --relative-output) relative_output=1; shift ;;
    --expect-exit) expect_exit=$2; shift 2 ;;
    --needs) [ -e "$2" ] || { echo "skip [$name]: $2 not found"; exit 77; }; shift 2 ;;
    --perf-maps) perf_maps=1; shift ;;
    --) shift; break ;;
    *) echo "run_e2e: unknown option $1" >&2; exit 2 ;;
  esac
done

# A program that is not on this machine (an optional interpreter) skips the test.
[ -e "$1" ] || command -v "$1" >/dev/null || { echo "skip [$name]: $1 not found"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "$perf_maps" ]; then
  ls /tmp/perf-*.map 2>/dev/null | sort >"$work/perf-maps-before"
  trap 'ls /tmp/perf-*.map 2>/dev/null | sort | comm -13 "$work/perf-maps-before" - | xargs -r rm -f; rm -rf "$work"' EXIT
fi

# Paths meson passes are relative to the build directory; the programs run in $work.
args=()
for a in "$@"; do
  a=${a//@TIDS@/$work/tids}
  a=${a//@RSS@/$work/rss}
  a=${a//@ISSUED@/$work/issued}
  if [[ $a == */* && -e $a && $a != /* ]]; then a=$(realpath "$a"); fi
  args+=("$a")
done
cd "$work" || exit 2

lib_path=${STANDIN_DIR:+$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}
run() {  # run OUTPUT_PREFIX [env...]
  local prefix=$1
  shift
  mkdir -p "$work/$prefix.files"
  env ${lib_path:+LD_LIBRARY_PATH="$lib_path"} "${extra_env[@]}" "$@" "${args[@]//@FILES@/$work/$prefix.files}" \
    >"$work/$prefix.out" 2>"$work/$prefix.err"
  echo $? >"$work/$prefix.rc"
}

run bare
rm -f "$work/issued"  # what the traced run writes is checked
preload="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$LIBTRACE"
output_dir="$work/out"
[ -n "$relative_output" ] && output_dir=out
run traced LD_PRELOAD="$preload" CUTRACE_OUTPUT="$output_dir"

fail() {
  echo "FAIL [$name]: $*" >&2
  for f in bare traced; do
    echo "--- $f: exit $(cat "$work/$f.rc")" >&2
    sed 's/^/    out: /' "$work/$f.out" >&2
    sed 's/^/    err: /' "$work/$f.err" | head -40 >&2
  done
  exit 1
}

[ "$(cat "$work/bare.rc")" = "$(cat "$work/traced.rc")" ] || fail "exit status changed under the preload"
# The program's own checks (data read back, refusals): a program that fails them fails the test
# even where the preload changes nothing.
[ "$(cat "$work/bare.rc")" = "$expect_exit" ] || fail "the program exited $(cat "$work/bare.rc"), not $expect_exit"
if [ -n "$max_rss_mb" ]; then
  rss_kb=$(cat "$work/rss" 2>/dev/null)
  [ -n "$rss_kb" ] || fail "the program wrote no peak RSS"
  [ "$rss_kb" -le $((max_rss_mb * 1024)) ] || fail "peak RSS under the preload $((rss_kb / 1024)) MiB, above $max_rss_mb MiB"
fi
cmp -s "$work/bare.out" "$work/traced.out" || fail "stdout changed under the preload"
grep -v '^cutrace: ' "$work/traced.err" >"$work/traced.err.filtered"
cmp -s "$work/bare.err" "$work/traced.err.filtered" || fail "stderr changed under the preload (beyond cutrace: lines)"
diff -r "$work/bare.files" "$work/traced.files" >"$work/files.diff" ||
  { cat "$work/files.diff" >&2; fail "the files the program wrote differ under the preload"; }

flamegraph_args=()
flamegraph_pl=${FLAMEGRAPH_PL:-$(command -v flamegraph.pl)}
if [ -n "$flamegraph_pl" ] && [ -f "$flamegraph_pl" ] && command -v perl >/dev/null; then
  flamegraph_args=(--flamegraph "$flamegraph_pl")
fi

shopt -s nullglob
streams=("$work"/out/*.pftrace)
[ "${#streams[@]}" -eq "$traces" ] || fail "expected $traces stream(s) (.pftrace), found ${#streams[@]}"
if [ -n "$export_only" ]; then
  # The process could not write its trace: its stream is all there is, and cutrace export
  # turns it into the files checked below.
  written=("$work"/out/*.trace.json)
  [ "${#written[@]}" -eq 0 ] || fail "a killed process wrote a Chrome trace"
  "$E2E_CUTRACE" export "${streams[@]}" 2>"$work/export.err" || { cat "$work/export.err" >&2; fail "cutrace export failed"; }
elif [ -n "${E2E_CUTRACE:-}" ]; then
  # Each stream rebuilds into what its process wrote at its end.
  mkdir -p "$work/exported"
  for s in "${streams[@]}"; do
    stem=$(basename "$s" .pftrace)
    "$E2E_CUTRACE" export -o "$work/exported" "$s" 2>"$work/export.err" ||
      { cat "$work/export.err" >&2; fail "cutrace export $stem.pftrace failed"; }
    "$TRACE_CHECK" --compare "$work/out/$stem.trace.json" "$work/exported/$stem.trace.json" >"$work/compare" 2>"$work/compare.err" ||
      { cat "$work/compare.err" >&2; fail "the stream of $stem does not rebuild into its trace"; }
  done
fi
files=("$work"/out/*.trace.json)
[ "${#files[@]}" -eq "$traces" ] || fail "expected $traces trace file(s), found ${#files[@]}"
: >"$work/summary"
mkdir -p "$work/summaries"
for f in "${files[@]}"; do
  tid_args=()
  [ -s "$work/tids" ] && tid_args=(--thread-ids "$work/tids")
  [ -s "$work/issued" ] && tid_args+=(--issued "$work/issued")
  # shellcheck disable=SC2086
  "$TRACE_CHECK" "$f" --folded "${f%.trace.json}.folded" "${tid_args[@]}" "${flamegraph_args[@]}" $check_args >"$work/one" 2>"$work/check.err" ||
    { cat "$work/check.err" >&2; fail "trace_check rejected $(basename "$f")"; }
  cp "$work/one" "$work/summaries/$(basename "$f").txt"
done
# Several processes: their summaries in an order that does not depend on pids.
for s in "$work"/summaries/*.txt; do tr '\n' '\001' <"$s"; echo; done | sort | tr '\001' '\n' | sed '/^$/d' >"$work/summary"

if [ -n "$no_expected" ]; then
  :
elif [ -n "${E2E_UPDATE:-}" ]; then
  cp "$work/summary" "$E2E_EXPECTED/$expected.txt"
  echo "updated expected/$expected.txt"
elif [ "$traces" -gt 0 ]; then
  diff -u "$E2E_EXPECTED/$expected.txt" "$work/summary" >"$work/diff" || { cat "$work/diff" >&2; fail "summary differs from expected/$expected.txt"; }
fi
echo "ok [$name]"
