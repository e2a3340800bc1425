#!/usr/bin/env bash
# A process killed while cutrace writes its trace at exit must leave no trace file that would
# not open: the files are named only once complete. The kill comes from a fault-injection
# library preloaded ahead of libtrace.so (programs/kill_on_write.c): SIGKILL at the Nth write
# into the output directory, for several N (the first write of the trace, one in its middle,
# one in a later file of the set). The stream (.pftrace), which the drain thread
# appends to while the program runs, is not counted and may remain: it is valid at every write.
#   usage: interrupted_write.sh KILL_ON_WRITE_LIB PROGRAM ARGS...
#   env: LIBTRACE, STANDIN_DIR, SANITIZER_RUNTIME
set -u
killer=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-interrupted.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"
# Where the file system has no O_TMPFILE, cutrace writes in place (documented): nothing to test.
python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o644))' "$work/out" 2>/dev/null ||
  { echo "skip: no O_TMPFILE in ${TMPDIR:-/tmp}"; exit 77; }
preload="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$killer $LIBTRACE"
# How many writes a complete set takes, so that the kills below land inside it.
env ${STANDIN_DIR:+LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"} \
  LD_PRELOAD="$preload" CUTRACE_OUTPUT="$work/whole" "$@" >/dev/null 2>"$work/stderr" ||
  { cat "$work/stderr" >&2; echo "FAIL: the program failed without the kill" >&2; exit 1; }
shopt -s nullglob
whole=("$work"/whole/*)
[ "${#whole[@]}" -ge 3 ] || { echo "FAIL: expected a trace and folded files, got ${whole[*]}" >&2; exit 1; }
trace_bytes=$(stat -c %s "$work"/whole/*.trace.json)
[ "$trace_bytes" -gt $((2 << 20)) ] || { echo "FAIL: the trace ($trace_bytes bytes) takes fewer than 3 writes" >&2; exit 1; }
for at in 1 2 $(((trace_bytes >> 20) + 2)); do
  out="$work/out$at"
  mkdir -p "$out"
  env ${STANDIN_DIR:+LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"} \
    LD_PRELOAD="$preload" CUTRACE_OUTPUT="$out" KILL_ON_WRITE_DIR="$out" KILL_ON_WRITE_AT="$at" \
    "$@" >"$work/stdout" 2>"$work/stderr"
  rc=$?
  if [ "$rc" -ne $((128 + 9)) ]; then
    echo "FAIL: expected the process to be killed at write $at into its output directory, got exit $rc" >&2
    head -20 "$work/stderr" >&2
    exit 1
  fi
  left=$(ls -A "$out" | grep -v '\.pftrace$')
  if [ -n "$left" ]; then
    echo "FAIL: killed at write $at, the interrupted write left files behind:" >&2
    ls -la "$out" >&2
    exit 1
  fi
done
echo "ok: killed while writing (at writes 1, 2 and $(((trace_bytes >> 20) + 2))), no partial files"
