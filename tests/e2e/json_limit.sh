#!/usr/bin/env bash
# CUTRACE_JSON_LIMIT: a Chrome trace larger than the limit is not written (decided before
# writing when even the smallest events would not fit, else once written, before it is named);
# the stream and the folded files are, the program's exit status and output are unchanged, the
# exit line says so, and `cutrace export` still makes the JSON from the .pftrace.
#   usage: json_limit.sh PROGRAM ARGS...   (env: LIBTRACE, STANDIN_DIR, SANITIZER_RUNTIME, E2E_CUTRACE)
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-json-limit.XXXXXX")
trap 'rm -rf "$work"' EXIT
preload="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$LIBTRACE"
fail() { echo "FAIL [$case]: $*" >&2; sed 's/^/    err: /' "$work/$case.err" >&2; ls -la "$work/$case" >&2; exit 1; }
run() {  # run NAME [VAR=VALUE...]
  case=$1
  shift
  env ${STANDIN_DIR:+LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"} \
    LD_PRELOAD="$preload" CUTRACE_OUTPUT="$work/$case" "$@" "${program[@]}" >"$work/$case.out" 2>"$work/$case.err"
  echo $? >"$work/$case.rc"
}
program=("$@")
env ${STANDIN_DIR:+LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"} "${program[@]}" >"$work/bare.out" 2>/dev/null
echo $? >"$work/bare.rc"

run whole
shopt -s nullglob
traces=("$work"/whole/*.trace.json)
[ "${#traces[@]}" = 1 ] || fail "the default limit wrote no trace"
json_bytes=$(stat -c %s "${traces[0]}")
events=$(sed -n 's/.*, \([0-9]*\) events, .*/\1/p' "$work/whole.err")
[ -n "$events" ] || fail "no event count in the exit line"

# Below the smallest events' size: skipped before writing. Between that and the real size:
# written, found too large, never named.
for case in early late; do
  if [ "$case" = early ]; then limit=$((events * 100 - 1)); else limit=$((events * 100 + 1)); fi
  [ "$limit" -lt "$json_bytes" ] || fail "the test needs a trace above $limit bytes, got $json_bytes"
  run "$case" CUTRACE_JSON_LIMIT="$limit"
  [ "$(cat "$work/$case.rc")" = "$(cat "$work/bare.rc")" ] || fail "exit status changed"
  cmp -s "$work/bare.out" "$work/$case.out" || fail "stdout changed"
  left=$(cd "$work/$case" && ls | sed 's/^[^.]*-[0-9]*\././' | sort | tr '\n' ' ')
  [ "$left" = ".calls.folded .folded .pftrace " ] || fail "expected the stream and the folded files only, got: $left"
  grep -q "^cutrace: wrote .*\.pftrace and .*\.folded, $events events, 0 dropped; no Chrome trace: it would pass CUTRACE_JSON_LIMIT ($limit bytes)" \
    "$work/$case.err" || fail "the exit line does not say the trace was skipped"
  [ "$(grep -c '^cutrace: ' "$work/$case.err")" = 1 ] || fail "more than one cutrace: line"
  if [ -n "${E2E_CUTRACE:-}" ]; then
    "$E2E_CUTRACE" export -o "$work/$case.exported" "$work/$case"/*.pftrace 2>"$work/$case.export.err" ||
      fail "cutrace export failed: $(cat "$work/$case.export.err")"
    exported=("$work/$case.exported"/*.trace.json)
    [ "${#exported[@]}" = 1 ] || fail "cutrace export wrote no trace"
  fi
done
echo "ok: trace of $json_bytes bytes skipped at limits $((events * 100 - 1)) (before writing) and $((events * 100 + 1)) (after)"
