#!/usr/bin/env bash
# CUTRACE_JSON_LIMIT: a Chrome trace larger than the limit is not written (decided before
# writing when even the smallest events would not fit or the run's estimate of its size passes
# the limit, else once written, before it is named); the exit line gives the size that decided;
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

# early: below the smallest events' size; estimated: above that, below the run's estimate of the
# trace's size (which leaves out its names and metadata: a little below the real size); written:
# between the estimate and the real size, so written, found too large, never named.
size_in_line() { sed -n 's/.*CUTRACE_JSON_LIMIT ([0-9]* bytes) at \(about \)\{0,1\}\([0-9]*\) bytes.*/\1\2/p' "$work/$case.err"; }
estimate=""
for case in early estimated written; do
  case $case in
    early) limit=$((events * 100 - 1)) ;;
    estimated) limit=$((events * 100 + 1)) ;;
    written) limit=$(((estimate + json_bytes) / 2)) ;;  # halfway: times change a few digits run to run
  esac
  [ "$limit" -lt "$json_bytes" ] || fail "the test needs a trace above $limit bytes, got $json_bytes"
  run "$case" CUTRACE_JSON_LIMIT="$limit"
  [ "$(cat "$work/$case.rc")" = "$(cat "$work/bare.rc")" ] || fail "exit status changed"
  cmp -s "$work/bare.out" "$work/$case.out" || fail "stdout changed"
  left=$(cd "$work/$case" && ls | sed 's/^[^.]*-[0-9]*\././' | sort | tr '\n' ' ')
  [ "$left" = ".calls.folded .folded .pftrace " ] || fail "expected the stream and the folded files only, got: $left"
  grep -q "^cutrace: wrote .*\.pftrace and .*\.folded, $events events, 0 dropped; no Chrome trace: it would pass CUTRACE_JSON_LIMIT ($limit bytes) at " \
    "$work/$case.err" || fail "the exit line does not say the trace was skipped"
  [ "$(grep -c '^cutrace: ' "$work/$case.err")" = 1 ] || fail "more than one cutrace: line"
  size=$(size_in_line)
  [ -n "$size" ] || fail "no size in the exit line"
  bytes=${size#about }
  if [ "$case" = written ]; then
    # Measured: this run's own trace, whose times differ from the whole run's in a few digits
    # (a run slowed down by a loaded machine has longer times: 2.2 % more bytes was seen).
    [ "$size" = "$bytes" ] || fail "a trace written and discarded gives its size, not an estimate: $size"
    [ $((bytes * 100)) -ge $((json_bytes * 95)) ] && [ $((bytes * 100)) -le $((json_bytes * 105)) ] ||
      fail "measured $bytes bytes, the whole run's trace is $json_bytes"
  else
    [ "$size" != "$bytes" ] || fail "a trace skipped before writing gives an estimate ('about'): $size"
    # The estimate leaves out names and metadata: at most the real size, and not far below it.
    [ "$bytes" -le "$json_bytes" ] && [ $((bytes * 100)) -ge $((json_bytes * 80)) ] ||
      fail "estimated $bytes bytes, the trace is $json_bytes"
    [ "$bytes" -gt "$limit" ] || fail "estimated $bytes bytes, within the limit $limit, yet skipped"
    estimate=$bytes
  fi
  if [ -n "${E2E_CUTRACE:-}" ]; then
    "$E2E_CUTRACE" export -o "$work/$case.exported" "$work/$case"/*.pftrace 2>"$work/$case.export.err" ||
      fail "cutrace export failed: $(cat "$work/$case.export.err")"
    exported=("$work/$case.exported"/*.trace.json)
    [ "${#exported[@]}" = 1 ] || fail "cutrace export wrote no trace"
  fi
done
echo "ok: trace of $json_bytes bytes skipped at limits $((events * 100 - 1)) (before writing), $((events * 100 + 1)) (estimated $estimate) and $limit (written, then discarded)"
