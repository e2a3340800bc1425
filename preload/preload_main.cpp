// Start-up of libtrace.so. Initialisation is lazy and idempotent: the constructor runs it, but
// so does the first hook, because constructors of libraries initialised before ours (and
// dlsym calls from them) can reach CUDA first.

#include <stdlib.h>

#include "exporters/output_files.h"
#include "preload/hook_support.h"

namespace cutrace {

void initializePreload() { Collector::initialize(kHookDescriptors, kHookCount, writeOutputsAndReport); }

namespace {

__attribute__((constructor)) void preloadConstructor() {
  initializePreload();
  const Config& config = Collector::config();
  // NVTX v3 reaches a tool only through this variable; point it at ourselves unless the user
  // (or another tool) chose an injection library already. Done here, while the process is
  // still single-threaded, because setenv races with getenv on other threads.
  if (config.enabled && config.nvtx && getenv("NVTX_INJECTION64_PATH") == nullptr && Collector::libraryPath()[0] != '\0')
    setenv("NVTX_INJECTION64_PATH", Collector::libraryPath(), 0);
}

}  // namespace
}  // namespace cutrace
