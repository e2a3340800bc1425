// Many events for the memory bound of `cutrace export` with a window: STEPS "step N" ranges
// (argv[1]), each with CALLS cudaMalloc/cudaFree pairs (argv[2]) and a mark "mark N".
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const int calls = argc > 2 ? atoi(argv[2]) : 100;
  for (int i = 0; i < steps; ++i) {
    char name[32];
    snprintf(name, sizeof(name), "step %d", i);
    nvtxRangePushA(name);
    for (int c = 0; c < calls; ++c) {
      void* p = 0;
      if (cudaMalloc(&p, 64) != cudaSuccess || cudaFree(p) != cudaSuccess) return 1;
    }
    snprintf(name, sizeof(name), "mark %d", i);
    nvtxMarkA(name);
    nvtxRangePop();
  }
  return 0;
}
