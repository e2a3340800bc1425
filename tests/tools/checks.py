"""Assertions shared by the tools' test scripts: every failed check is printed and counted, so
one run reports all that is wrong, and finish() turns the count into the exit status."""
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def eq(got, want, what):
    check(got == want, f"{what}: got {got!r}, want {want!r}")


def finish():
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("OK")
    sys.exit(0)
