// A stand-in for a profile-guided, stripped CPython (tests/meson.build builds it at -O2 and strips
// it): an eval loop whose unlikely path GCC moves into a part split off it (its ".cold" part),
// which no symbol names once stripped.

// What the test wants from the split part: the return address of a call made there.
__attribute__((noinline, cold)) void cutraceSplitCold(void** where) {
  *where = __builtin_return_address(0);
  __asm__ volatile("");
}

__attribute__((noinline)) int cutraceSplitOpaque(int x) {
  __asm__ volatile("" : "+r"(x));
  return x;
}

// `x` lives across a call, so the function saves a register: its split part is entered with
// that frame, not as a function is. The cold call is not its last act, so it is not a jump.
__attribute__((noinline)) int _PyEval_EvalFrameDefault(int x, void** where) {
  const int y = cutraceSplitOpaque(x);
  if (__builtin_expect(y == 12345, 0)) {
    cutraceSplitCold(where);
    return x + y + cutraceSplitOpaque(1);
  }
  return x + y;
}
