#!/usr/bin/env bash
# The test command: sets up and builds, runs every suite in the normal build, then the unit
# and end-to-end suites again under ASan+UBSan and under TSan. Ends with "N passed, N failed".
# GPU tests (suite gpu) skip with exit 77 where no GPU is present.
#   SANITIZERS="address,undefined thread" (default) selects the sanitizer builds; "" skips them.
set -uo pipefail
cd "$(dirname "$0")/.."

export MESON_TESTTHREADS=${MESON_TESTTHREADS:-$(nproc)}
logs=()
status=0

run_suite() {  # run_suite BUILD_DIR [meson test args...]
  local dir=$1
  shift
  meson test -C "$dir" --print-errorlogs --num-processes "$MESON_TESTTHREADS" "$@" || status=1
  logs+=("$dir/meson-logs/testlog.json")
}

scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
# Interpreters pyenv does not have here, for the Python-frame tests (they skip without them).
scripts/fetch_python.sh 3.14 3.15
run_suite build

for san in ${SANITIZERS-address,undefined thread}; do
  dir="build-${san//,/-}"
  BUILD_DIR=$dir scripts/setup.sh -Db_sanitize="$san" -Db_lundef=false -Dbench=false -Dbuildtype=debug ||
    { echo "0 passed, 1 failed"; exit 1; }
  run_suite "$dir" --suite unit --suite e2e
done

python3 - "${logs[@]}" <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            r = json.loads(line)["result"]
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
            else:
                failed += 1
print(f"({skipped} skipped: GPU tests without a GPU)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
