#!/usr/bin/env bash
# Runs a smoke program on the stand-in CUDA libraries and compares what it printed with
# expected/NAME.txt; optionally also the driver entry points it reached and the shape of the
# libraries themselves.
#
# usage: run_smoke.sh NAME [--expected STEM] [--calls] [--coverage LIB] [--library LIB VERSION]...
#                     -- PROGRAM [ARGS...]
#   --expected STEM  compare with expected/STEM.txt (default NAME)
#   --calls          compare "entry-point count" lines of every driver call (STANDIN_DRIVER_LOG)
#                    with expected/NAME.calls
#   --coverage LIB   "@COVERAGE@" in ARGS becomes a file the program fills with the exports it
#                    reached through cuGetProcAddress; it must list every export of LIB
#   --library LIB V  LIB's SONAME is its file name, it does not link libcuda, and every export
#                    carries symbol version V ("none": the library defines no versions)
# environment: LD_LIBRARY_PATH (the stand-in directory), STANDIN_UPDATE=1 (rewrite the expected
#   files instead of comparing; review the diff before committing)
set -u
here=$(cd "$(dirname "$0")" && pwd)
name=$1
shift
expected=$name
calls=""
coverage_lib=""
libraries=()
while [ $# -gt 0 ]; do
  case $1 in
    --expected) expected=$2; shift 2 ;;
    --calls) calls=1; shift ;;
    --coverage) coverage_lib=$2; shift 2 ;;
    --library) libraries+=("$2" "$3"); shift 3 ;;
    --) shift; break ;;
    *) echo "run_smoke: unknown option $1" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d "${TMPDIR:-/tmp}/standin-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
fail() {
  echo "FAIL [$name]: $*" >&2
  status=1
}

# Compare a result with its expected file, or rewrite the file under STANDIN_UPDATE.
compare() {  # compare EXPECTED_FILE ACTUAL_FILE
  if [ -n "${STANDIN_UPDATE:-}" ]; then
    cp "$2" "$1"
    echo "updated ${1#"$here"/}"
  elif ! diff -u "$1" "$2" >&2; then
    fail "differs from ${1#"$here"/}"
  fi
}

args=()
for a in "$@"; do args+=("${a//@COVERAGE@/$work/coverage}"); done
STANDIN_DRIVER_LOG="$work/calls" "${args[@]}" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out"
if [ "$rc" -ne 0 ]; then
  sed 's/^/    err: /' "$work/err" >&2
  fail "exit status $rc"
fi
[ -s "$work/err" ] && { sed 's/^/    err: /' "$work/err" >&2; fail "wrote to stderr"; }
compare "$here/expected/$expected.txt" "$work/out"

if [ -n "$calls" ]; then
  sort "$work/calls" | uniq -c | awk '{print $2, $1}' >"$work/calls.summary"
  compare "$here/expected/$name.calls" "$work/calls.summary"
fi

if [ -n "$coverage_lib" ]; then
  nm -D --defined-only "$coverage_lib" | awk '{print $3}' | sort >"$work/exports"
  sort -u "$work/coverage" >"$work/reached"
  comm -23 "$work/exports" "$work/reached" >"$work/missed"
  [ -s "$work/missed" ] && { sed 's/^/    not reachable through cuGetProcAddress: /' "$work/missed" >&2; fail "lookup coverage"; }
  echo "exports reachable through cuGetProcAddress: $(wc -l <"$work/reached")/$(wc -l <"$work/exports")"
fi

set -- "${libraries[@]+"${libraries[@]}"}"
while [ $# -gt 0 ]; do
  lib=$1 version=$2
  shift 2
  base=$(basename "$lib")
  soname=$(readelf -dW "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "$base" ] || fail "$base: SONAME is '$soname'"
  readelf -dW "$lib" | grep -q 'NEEDED.*\[libcuda\.so' && fail "$base links libcuda"
  # Defined dynamic symbols with their version: name@@VERSION, or a bare name when unversioned.
  readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $7 != "ABS" && ($4 == "FUNC" || $4 == "OBJECT") {print $8}' >"$work/defined"
  if [ "$version" = none ]; then
    readelf -VW "$lib" | grep -q 'Version definition' && fail "$base defines symbol versions"
    grep '@' "$work/defined" | sed 's/^/    versioned: /' >&2
    grep -q '@' "$work/defined" && fail "$base has versioned exports"
  else
    grep -v "@@$version\$" "$work/defined" | sed 's/^/    not at '"$version"': /' >&2
    grep -qv "@@$version\$" "$work/defined" && fail "$base has exports outside $version"
  fi
  echo "$base: $(wc -l <"$work/defined") exports, versions: $version"
done
exit $status
