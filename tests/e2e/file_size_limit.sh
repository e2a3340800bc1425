#!/usr/bin/env bash
# Under a file-size limit (RLIMIT_FSIZE) that cutrace's files exceed and the program's output
# does not, the program must end as it does without cutrace (a write past the limit would kill
# it with SIGXFSZ), stderr must hold exactly one "cutrace: " line more, naming the limit, and no
# file may be left under a trace's name (the journal, if one was started, holds whole passes
# only and stays under the limit).
#   usage: file_size_limit.sh KIB [--env K=V]... -- PROGRAM ARGS...
#   env: LIBTRACE, STANDIN_DIR, SANITIZER_RUNTIME
set -u
kib=$1
shift
extra_env=()
while [ $# -gt 0 ]; do
  case $1 in
    --env) extra_env+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "file_size_limit: unknown option $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-fsize.XXXXXX")
trap 'rm -rf "$work"' EXIT
preload="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$LIBTRACE"
lib_path=${STANDIN_DIR:+$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}
run() {  # run PREFIX [env...]
  local prefix=$1
  shift
  (
    ulimit -f "$kib"
    exec env ${lib_path:+LD_LIBRARY_PATH="$lib_path"} "$@" "${args[@]}"
  ) >"$work/$prefix.out" 2>"$work/$prefix.err"
  echo $? >"$work/$prefix.rc"
}
args=("$@")
run bare
run traced LD_PRELOAD="$preload" CUTRACE_OUTPUT="$work/out" "${extra_env[@]}"

fail() {
  echo "FAIL: $*" >&2
  for f in bare traced; do
    echo "--- $f: exit $(cat "$work/$f.rc")" >&2
    head -20 "$work/$f.err" | sed 's/^/    err: /' >&2
  done
  ls -la "$work/out" >&2 2>/dev/null
  exit 1
}

[ "$(cat "$work/bare.rc")" = 0 ] || fail "the program fails without cutrace under the limit; raise it"
[ "$(cat "$work/traced.rc")" = "$(cat "$work/bare.rc")" ] || fail "exit status changed under the preload"
cmp -s "$work/bare.out" "$work/traced.out" || fail "stdout changed under the preload"
grep -v '^cutrace: ' "$work/traced.err" | cmp -s "$work/bare.err" - || fail "stderr changed beyond cutrace: lines"
lines=$(grep -c '^cutrace: ' "$work/traced.err")
[ "$lines" = 1 ] || fail "expected one cutrace: line, got $lines"
grep -q "file-size limit" "$work/traced.err" || fail "the cutrace: line does not name the file-size limit"
shopt -s nullglob
named=("$work"/out/*.trace.json "$work"/out/*.folded)
[ "${#named[@]}" -eq 0 ] || fail "a file was left under a trace's name: ${named[*]}"
limit=$((kib * 1024))
for f in "$work"/out/*; do
  case $f in
    *.journal) [ "$(stat -c %s "$f")" -le "$limit" ] || fail "$f is larger than the limit" ;;
    *) fail "unexpected file $f" ;;
  esac
done
echo "ok: exit $(cat "$work/traced.rc") under a ${kib} KiB file-size limit, one line: $(grep '^cutrace: ' "$work/traced.err")"
