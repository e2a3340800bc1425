// A library for the names a stripped object's debug information gives (tests/meson.build builds
// it three ways, splits each into a stripped object and its debug file, and makes one with
// MiniDebugInfo): the unit test names a function only the debug symbols have, as a
// distribution's stripped binaries have most of theirs; e2e/programs/debug_names.c makes a CUDA
// call under two such functions.

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

// Calls `f` from a local function, as a stripped library's internals call a CUDA API.
__attribute__((noinline)) static void cutraceDebugTargetHiddenRun(void (*f)(void)) {
  f();
  __asm__ volatile("");  // no tail call: the frame stays on the stack
}

void cutraceDebugTargetRun(void (*f)(void)) {
  cutraceDebugTargetHiddenRun(f);
  __asm__ volatile("");
}
