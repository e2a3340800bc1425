/* A CUDA call made inside a stripped library (argv[1]) by one of its local functions, which only
 * its debug information names: a separate debug file beside it, or its MiniDebugInfo. The stack
 * must name that function, under the real preload (whose start-up loads liblzma for the latter). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

static __attribute__((noinline)) void initialize(void) {
  cuInit(0);
  __asm__ volatile("");
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  void (*run)(void (*)(void)) = (void (*)(void (*)(void)))dlsym(lib, "cutraceDebugTargetRun");
  if (run == NULL) return 1;
  run(initialize);
  return 0;  /* the library stays loaded: its frames are named at exit */
}
