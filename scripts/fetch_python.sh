#!/usr/bin/env bash
# fetch_python.sh MINOR...: a CPython of each minor version (3.14, ...) that neither this Debian
# nor pyenv has here, for the Python-frame tests: Debian unstable's own build, with the C library
# it was built against, unpacked into .python/MINOR (git-ignored) and made to run from there
# (its ELF interpreter and library path point into that folder). Nothing is installed on the
# system. Prints one line per version; the tests of a version that could not be fetched skip.
set -uo pipefail
cd "$(dirname "$0")/.."

[ "$(uname -m)" = x86_64 ] || { echo "fetch_python: x86_64 only, skipped"; exit 0; }
root=$PWD/.python
# Unpacked with the interpreter: what `import ctypes` and the tests need beyond the interpreter.
libs=(libc6 libgcc-s1 libffi8 zlib1g libexpat1 libzstd1)

works() { "$1" -c 'import ctypes, threading' >/dev/null 2>&1; }

need=()
for minor in "$@"; do
  interp=$root/$minor/usr/bin/python$minor
  if works "$interp"; then echo "fetch_python: $interp"; else need+=("$minor"); fi
done
[ "${#need[@]}" -gt 0 ] || exit 0

if ! command -v patchelf >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends patchelf >/dev/null 2>&1 ||
    { echo "fetch_python: patchelf not installable, python ${need[*]} tests skip"; exit 0; }
fi

# A private apt state: the system's sources and lists stay as they are.
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/archives/partial"
echo "deb http://deb.debian.org/debian sid main" >"$state/sources.list"
apt_opts=(-qq -o Dir::Etc::sourcelist="$state/sources.list" -o Dir::Etc::sourceparts=-
          -o Dir::State::Lists="$state/lists" -o Dir::Cache::archives="$state/archives"
          -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
if ! apt-get "${apt_opts[@]}" update >/dev/null 2>&1; then
  echo "fetch_python: Debian unstable's package lists not reachable, python ${need[*]} tests skip"
  exit 0
fi

for minor in "${need[@]}"; do
  dest=$root/$minor
  rm -rf "$dest" && mkdir -p "$dest/debs"
  if ! (cd "$dest/debs" && apt-get "${apt_opts[@]}" download "python$minor-minimal" "libpython$minor-minimal" \
          "libpython$minor-stdlib" "${libs[@]}" >/dev/null 2>&1); then
    echo "fetch_python: python$minor not downloadable from Debian unstable, its tests skip"
    rm -rf "$dest"
    continue
  fi
  for deb in "$dest"/debs/*.deb; do dpkg-deb -x "$deb" "$dest"; done
  rm -rf "$dest/debs"
  lib=$dest/usr/lib/x86_64-linux-gnu
  interp=$dest/usr/bin/python$minor
  # DT_RPATH, not RUNPATH: it also serves what the interpreter loads later (_ctypes' libffi).
  patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$interp"
  ln -sf "python$minor" "$dest/usr/bin/python3"  # as python3-minimal would: the process is named python3
  # The interpreter's separate debug file (python3.X-dbg ships it under /usr/lib/debug/.build-id)
  # for the test of frames named from one; the rest of that package (the debug build) is not kept.
  id=$(readelf -n "$interp" 2>/dev/null | awk '/Build ID:/ {print $3; exit}')
  debug=usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  if [ -n "$id" ] && (cd "$dest" && mkdir -p debs && cd debs && apt-get "${apt_opts[@]}" download "python$minor-dbg" >/dev/null 2>&1) &&
     dpkg-deb --fsys-tarfile "$dest"/debs/*.deb | tar -x -C "$dest" "./$debug" 2>/dev/null; then
    debug_note=", debug file"
  else
    debug_note=", no debug file (its test skips)"
  fi
  rm -rf "$dest/debs"
  if works "$interp"; then
    echo "fetch_python: $interp ($("$interp" -c 'import sys; print(sys.version.split()[0])')$debug_note)"
  else
    echo "fetch_python: python$minor unpacked but does not run here, its tests skip"
    rm -rf "$dest"
  fi
done
exit 0
