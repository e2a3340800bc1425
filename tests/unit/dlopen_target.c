// A library the symbolizer tests load with dlopen while another thread reads the module list.
__attribute__((noinline)) int cutraceDlopenTarget(int x) { return x * 3 + 1; }

// Calls back into the test from a frame of this library (unwinding through another object).
__attribute__((noinline)) void cutraceDlopenCall(void (*fn)(void*), void* arg) {
  fn(arg);
  __asm__ volatile("");
}
