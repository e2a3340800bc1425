#!/usr/bin/env bash
# A process killed while cutrace writes its trace at exit must leave no trace file that would
# not open: the files are named only once complete. The kill is SIGXFSZ from a file-size limit
# that the trace (megabytes) exceeds and the program's own output does not. Its stream
# (.pftrace), cut by the same limit (most often inside a packet), is all that is left, and
# `cutrace export` (E2E_CUTRACE, when built) still reads it.
#   usage: interrupted_write.sh PROGRAM ARGS...   (env: LIBTRACE, STANDIN_DIR, SANITIZER_RUNTIME, E2E_CUTRACE)
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-interrupted.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"
# Where the file system has no O_TMPFILE, cutrace writes in place (documented): nothing to test.
python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o644))' "$work/out" 2>/dev/null ||
  { echo "skip: no O_TMPFILE in ${TMPDIR:-/tmp}"; exit 77; }
preload="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$LIBTRACE"
(
  ulimit -f 256  # KiB
  exec env ${STANDIN_DIR:+LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"} \
    LD_PRELOAD="$preload" CUTRACE_OUTPUT="$work/out" "$@"
) >"$work/stdout" 2>"$work/stderr"
rc=$?
if [ "$rc" -ne $((128 + 25)) ]; then
  echo "FAIL: expected the process to be killed by SIGXFSZ while writing, got exit $rc" >&2
  head -20 "$work/stderr" >&2
  exit 1
fi
left=$(ls -A "$work/out" 2>/dev/null | grep -v '\.pftrace$')
if [ -n "$left" ]; then
  echo "FAIL: an interrupted write left files behind:" >&2
  ls -la "$work/out" >&2
  exit 1
fi
if [ -n "${E2E_CUTRACE:-}" ]; then
  "$E2E_CUTRACE" export -o "$work/exported" "$work"/out/*.pftrace 2>"$work/export.err" ||
    { echo "FAIL: cutrace export could not read the stream cut by the limit:" >&2; cat "$work/export.err" >&2; exit 1; }
fi
echo "ok: killed while writing, no partial files"
