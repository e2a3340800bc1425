#!/bin/sh
# mini_debuginfo.sh OBJECT STRIPPED: what Fedora's find-debuginfo does to every binary it ships
# (MiniDebugInfo): the object stripped, with an xz-compressed ELF in its .gnu_debugdata section
# that keeps the symbols of the functions .dynsym does not name.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nm -D --defined-only --format=posix "$1" | awk '{print $1}' | sort -u >"$work/dynamic"
nm --defined-only --format=posix "$1" | awk '$2 == "t" || $2 == "T" {print $1}' | sort -u >"$work/functions"
comm -13 "$work/dynamic" "$work/functions" >"$work/keep"
objcopy --only-keep-debug "$1" "$work/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$work/keep" "$work/debug" "$work/mini"
xz -f "$work/mini"
objcopy --strip-all --add-section .gnu_debugdata="$work/mini.xz" "$1" "$2"
