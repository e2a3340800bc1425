// Steps for the .pftrace tool tests: an "epoch 0" range around six "step N" ranges, each with
// one cudaMalloc/cudaFree pair and a mark "mark N"; step 1 holds a PyTorch-style op range.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

int main(void) {
  nvtxRangePushA("epoch 0");
  for (int i = 0; i < 6; ++i) {
    char name[32];
    snprintf(name, sizeof(name), "step %d", i);
    nvtxRangePushA(name);
    if (i == 1) nvtxRangePushA("aten::add, seq = 5, op_id = 9, sizes = [[2], [2]]");
    void* p = 0;
    cudaMalloc(&p, 64);
    cudaFree(p);
    if (i == 1) nvtxRangePop();
    snprintf(name, sizeof(name), "mark %d", i);
    nvtxMarkA(name);
    nvtxRangePop();
  }
  nvtxRangePop();
  return 0;
}
