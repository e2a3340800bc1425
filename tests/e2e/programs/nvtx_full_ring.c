/* A range around more CUDA calls than the thread's ring holds between two drain passes: the calls
 * in the middle are dropped, the push and its pop never are (the push keeps a ring slot free for
 * its pop), so the range is closed by its own pop, not guessed.
 *   usage: nvtx_full_ring CALLS */
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const int calls = argc > 1 ? atoi(argv[1]) : 2000;
  cuInit(0);
  nvtxRangePushA("outer");
  nvtxRangePushA("kept");
  for (int i = 0; i < calls; ++i) cuCtxSynchronize();
  nvtxRangePop();
  nvtxRangePop();
  printf("%d calls\n", calls);
  return 0;
}
