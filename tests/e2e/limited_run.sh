#!/usr/bin/env bash
# A program run where cutrace cannot have what it needs: under a file-size limit (RLIMIT_FSIZE),
# an address-space limit (RLIMIT_AS), or with allocation failures injected (a library preloaded
# ahead of libtrace.so, e.g. programs/fail_alloc.c). The program must end exactly as it does
# without cutrace under the same conditions (exit status, stdout, stderr beyond cutrace's
# lines), stderr must hold exactly one "cutrace: " line, containing EXPECT, and no file may be
# left under a trace's name (the stream, .pftrace, holds whole passes only: under a file-size
# limit it stays within the limit). --folded: the run's folded stacks are written all the same
# (.folded and .calls.folded, each with the program's CUDA call), only the Chrome trace is not.
#   usage: limited_run.sh [--fsize KIB] [--as BYTES] [--preload LIB] [--env K=V]... [--folded]
#                         --expect TEXT -- PROGRAM ARGS...
#   --env applies to both runs; --preload and the CUTRACE_* settings to the traced run only.
#   env: LIBTRACE, STANDIN_DIR, SANITIZER_RUNTIME
set -u
fsize=unlimited
as=unlimited
inject=""
expect=""
folded=""
both_env=()
traced_env=()
while [ $# -gt 0 ]; do
  case $1 in
    --fsize) fsize=$2; shift 2 ;;
    --as) as=$2; shift 2 ;;
    --preload) inject="$2 "; shift 2 ;;
    --env) if [[ $2 == CUTRACE_* ]]; then traced_env+=("$2"); else both_env+=("$2"); fi; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --folded) folded=1; shift ;;
    --) shift; break ;;
    *) echo "limited_run: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$expect" ] || { echo "limited_run: --expect is required" >&2; exit 2; }
# A sanitizer runtime reserves terabytes of shadow address space and owns malloc: an
# address-space limit or an injected malloc would test the sanitizer, not cutrace.
if [ -n "${SANITIZER_RUNTIME:-}" ] && { [ "$as" != unlimited ] || [ -n "$inject" ]; }; then
  echo "skip: --as and --preload are not meaningful under a sanitizer runtime"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-limited.XXXXXX")
trap 'rm -rf "$work"' EXIT
preload="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$inject$LIBTRACE"
lib_path=${STANDIN_DIR:+$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}
args=("$@")
run() {  # run PREFIX [env...]
  local prefix=$1
  shift
  (
    [ "$fsize" = unlimited ] || ulimit -f "$fsize" || exit 125
    [ "$as" = unlimited ] || ulimit -v $((as / 1024)) || exit 125
    exec env ${lib_path:+LD_LIBRARY_PATH="$lib_path"} "${both_env[@]}" "$@" "${args[@]}"
  ) >"$work/$prefix.out" 2>"$work/$prefix.err"
  echo $? >"$work/$prefix.rc"
}
run bare
run traced LD_PRELOAD="$preload" CUTRACE_OUTPUT="$work/out" "${traced_env[@]}"

fail() {
  echo "FAIL: $*" >&2
  for f in bare traced; do
    echo "--- $f: exit $(cat "$work/$f.rc")" >&2
    sed 's/^/    out: /' "$work/$f.out" | head -10 >&2
    sed 's/^/    err: /' "$work/$f.err" | head -20 >&2
  done
  ls -la "$work/out" >&2 2>/dev/null
  exit 1
}

[ "$(cat "$work/bare.rc")" = 0 ] || fail "the program fails without cutrace under these limits"
[ "$(cat "$work/traced.rc")" = "$(cat "$work/bare.rc")" ] || fail "exit status changed under the preload"
cmp -s "$work/bare.out" "$work/traced.out" || fail "stdout changed under the preload"
grep -v '^cutrace: ' "$work/traced.err" | cmp -s "$work/bare.err" - || fail "stderr changed beyond cutrace: lines"
lines=$(grep -c '^cutrace: ' "$work/traced.err")
[ "$lines" = 1 ] || fail "expected one cutrace: line, got $lines"
grep -q -F -- "$expect" "$work/traced.err" || fail "the cutrace: line does not say \"$expect\""
shopt -s nullglob
named=("$work"/out/*.trace.json)
[ -n "$folded" ] || named+=("$work"/out/*.folded)
[ "${#named[@]}" -eq 0 ] || fail "a file was left under a trace's name: ${named[*]}"
if [ -n "$folded" ]; then
  for suffix in .folded .calls.folded; do
    f=("$work"/out/*[0-9]$suffix)
    [ "${#f[@]}" -eq 1 ] || fail "expected one *$suffix file"
    grep -q 'cuCtxSynchronize [0-9]' "${f[0]}" || fail "${f[0]} has no cuCtxSynchronize line"
  done
fi
for f in "$work"/out/*; do
  case $f in
    *.folded) [ -n "$folded" ] || fail "unexpected file $f" ;;
    *.pftrace)
      [ "$fsize" = unlimited ] || [ "$(stat -c %s "$f")" -le $((fsize * 1024)) ] || fail "$f is larger than the limit" ;;
    *) fail "unexpected file $f" ;;
  esac
done
echo "ok: exit $(cat "$work/traced.rc"), one line: $(grep '^cutrace: ' "$work/traced.err")"
