#!/bin/sh
# run_frames.sh VERSION SCRIPT LIB: runs SCRIPT under that interpreter; 77 (skip) when absent.
version=$1; shift
if [ "$version" = system ]; then
  interp=/usr/bin/python3
else
  interp=
  # pyenv's, or one scripts/fetch_python.sh fetched.
  for candidate in /root/.pyenv/versions/"$version".*/bin/python3 \
      "$(dirname "$0")/../../.python/$version/usr/bin/python$version"; do
    [ -x "$candidate" ] && interp=$candidate
  done
fi
if [ -z "$interp" ] || [ ! -x "$interp" ]; then
  echo "no python $version interpreter: skipped"
  exit 77
fi
exec "$interp" "$@"
