// Nested ranges for the report's tests on .pftrace inputs: an "epoch" range around STEPS "step N"
// ranges (argv[1]), each with CALLS ranges (argv[2]) named as PyTorch's emit_nvtx names an op
// (with op fields: argv[3] "ops"; else "mm"), each around an "inner" range with one
// cudaMalloc/cudaFree pair. The epoch and the steps stay open across drain passes: the stream
// holds them after the ranges and calls they nest.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 4;
  const int calls = argc > 2 ? atoi(argv[2]) : 100;
  const int ops = argc > 3 && strcmp(argv[3], "ops") == 0;
  nvtxRangePushA("epoch");
  for (int i = 0; i < steps; ++i) {
    char name[96];
    snprintf(name, sizeof(name), "step %d", i);
    nvtxRangePushA(name);
    for (int c = 0; c < calls; ++c) {
      if (ops) {
        snprintf(name, sizeof(name), "aten::mm, seq = %d, op_id = %d, sizes = [[%d], [2]]", c, i * calls + c, 1 + c % 2);
        nvtxRangePushA(name);
      } else {
        nvtxRangePushA("mm");
      }
      nvtxRangePushA("inner");
      void* p = 0;
      if (cudaMalloc(&p, 64) != cudaSuccess || cudaFree(p) != cudaSuccess) return 1;
      nvtxRangePop();
      nvtxRangePop();
    }
    nvtxRangePop();
  }
  nvtxRangePop();
  return 0;
}
