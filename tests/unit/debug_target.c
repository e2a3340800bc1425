// A library for the separate-debug-file lookup (tests/meson.build builds it three ways and
// splits each into a stripped object and its debug file): the test names a function only the
// debug file's symbol table has, as a distribution's stripped binaries have most of theirs.

#include <stdint.h>

// Local: in no dynamic symbol table, so only a debug file names it. Another build of it
// (CUTRACE_OTHER_BUILD) has other code, hence another build id.
__attribute__((noinline)) static int cutraceDebugTargetHidden(int x) {
  __asm__ volatile("" : "+r"(x));
#ifdef CUTRACE_OTHER_BUILD
  return x * 3 + 1;
#else
  return x * 7 + 5;
#endif
}

// Where the test looks: the local function's entry.
uintptr_t cutraceDebugTargetHiddenAddress(void) { return (uintptr_t)&cutraceDebugTargetHidden; }

int cutraceDebugTargetCall(int x) { return cutraceDebugTargetHidden(x); }
