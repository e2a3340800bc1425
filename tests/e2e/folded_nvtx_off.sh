#!/usr/bin/env bash
# CUTRACE_FOLDED_NVTX=0: NVTX ranges are no frames of the folded stacks. The calls fold under
# their own stacks only, counted exactly, and the files built as the run went equal what
# `cutrace export --no-nvtx-frames` makes from the stream.
#   usage: folded_nvtx_off.sh NVTX_OPS   (env: LIBTRACE, STANDIN_DIR, SANITIZER_RUNTIME, E2E_CUTRACE)
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/cutrace-e2e-folded-nvtx.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL [folded_nvtx_off]: $*" >&2; sed 's/^/    err: /' "$work/err" >&2; exit 1; }
env ${STANDIN_DIR:+LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"} \
  LD_PRELOAD="${SANITIZER_RUNTIME:+$SANITIZER_RUNTIME }$LIBTRACE" CUTRACE_OUTPUT="$work/out" CUTRACE_FOLDED_NVTX=0 \
  "$1" "$work/issued" >"$work/stdout" 2>"$work/err" || fail "the program failed"
shopt -s nullglob
streams=("$work"/out/*.pftrace)
[ "${#streams[@]}" = 1 ] || fail "expected one stream, found ${#streams[@]}"
stem=${streams[0]%.pftrace}
# nvtx_ops: cuInit and cuDevicePrimaryCtxRetain once, then 3,000 cuCtxSynchronize inside two ranges
# each (and 6,000 ranges alone): three stacks, the ranges nowhere.
calls=$(sed 's/.*;//' "$stem.calls.folded" | sort | tr '\n' ' ')
[ "$calls" = "cuCtxSynchronize 3000 cuDevicePrimaryCtxRetain 1 cuInit 1 " ] ||
  fail "calls.folded: expected cuCtxSynchronize 3000, cuDevicePrimaryCtxRetain 1 and cuInit 1, got: ${calls:0:300}"
[ "$(cut -d' ' -f1 "$stem.folded" | sed 's/.*;//' | sort | tr '\n' ' ')" = "cuCtxSynchronize cuDevicePrimaryCtxRetain cuInit " ] ||
  fail "folded: expected the three calls' stacks only, got: $(cut -c1-200 "$stem.folded")"
! grep -q -e 'aten::' -e 'step' "$stem.folded" "$stem.calls.folded" || fail "an NVTX range is a frame"
"$E2E_CUTRACE" export --no-nvtx-frames -o "$work/exported" "${streams[0]}" 2>>"$work/err" || fail "cutrace export failed"
name=$(basename "$stem")
for kind in folded calls.folded; do
  cmp -s "$stem.$kind" "$work/exported/$name.$kind" || fail "the run's .$kind differs from export --no-nvtx-frames"
done
echo "ok [folded_nvtx_off]"
