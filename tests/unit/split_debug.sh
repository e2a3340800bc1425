#!/bin/sh
# split_debug.sh OBJECT STRIPPED DEBUG: what distributions do to a binary they ship: its symbols
# and debug sections go into DEBUG, STRIPPED keeps neither and names DEBUG in its .gnu_debuglink
# (the file name and the CRC-32 of DEBUG's bytes).
set -eu
objcopy --only-keep-debug "$1" "$3"
objcopy --strip-all --add-gnu-debuglink="$3" "$1" "$2"
