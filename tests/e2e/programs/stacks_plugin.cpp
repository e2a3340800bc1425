// Loaded by stacks.cpp with dlopen: its frames must be named although it was not loaded at
// start-up.
#include <cuda_runtime_api.h>

namespace plugin {
__attribute__((noinline)) int synchronize(int n) {
  int rc = 0;
  for (int i = 0; i < n; ++i) rc += cudaDeviceSynchronize();
  asm volatile("");
  return rc + 1;
}
}  // namespace plugin

extern "C" __attribute__((visibility("default"))) int plugin_run(int n) {
  const int r = plugin::synchronize(n);
  asm volatile("");
  return r;
}
