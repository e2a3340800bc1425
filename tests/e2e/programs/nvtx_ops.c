/* NVTX ranges named as PyTorch's emit_nvtx names its ops: a text per range (seq and op_id
 * differ every time), thousands of them, then ranges of a repeated label around more op ranges
 * with a driver call inside (a call stack each). The texts are one-offs: the trace must name
 * every range, fold them by op name, and read back whole at exit and through `cutrace export`
 * (with the first of them filling the string pool, a frame interned after thousands of names
 * once made the read-back fail).
 *   usage: nvtx_ops ISSUED_FILE [paced]  (writes how many events it issued that carry a sequence
 *   number; paced: a 2 ms pause after every 256 ranges, so that a drain every millisecond keeps
 *   up with small rings and nothing is dropped) */
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <time.h>

enum { kAlone = 6000, kSteps = 3000 };

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int paced = argc > 2;
  const struct timespec breath = {0, 2 * 1000000L};
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    printf("no CUDA device\n");
    return 1;
  }
  long issued = 2;  // cuInit and the context (cutrace records no device lookup)
  char text[160];
  for (int i = 0; i < kAlone; ++i) {
    snprintf(text, sizeof(text), "aten::add, seq = %d, op_id = %d, sizes = [[%d], [%d]], input_op_ids = [%d, 0]", i,
             3 * i + 1, i % 64 + 1, i % 64 + 1, 3 * i);
    nvtxRangePushA(text);
    nvtxRangePop();
    if (paced && i % 256 == 255) nanosleep(&breath, NULL);
  }
  issued += kAlone;
  /* The drain passes (every 100 ms by default) see the first texts before the calls below. */
  struct timespec pause = {0, 250 * 1000000L};
  nanosleep(&pause, NULL);
  for (int i = 0; i < kSteps; ++i) {
    nvtxRangePushA("step");
    snprintf(text, sizeof(text), "aten::mul, seq = %d, op_id = %d, sizes = [[4, 4], []], input_op_ids = [%d, 0]",
             kAlone + i, 3 * (kAlone + i) + 1, 3 * (kAlone + i));
    nvtxRangePushA(text);
    cuCtxSynchronize();
    nvtxRangePop();
    nvtxRangePop();
    if (paced && i % 128 == 127) nanosleep(&breath, NULL);
  }
  issued += 3L * kSteps;
  FILE* f = fopen(argv[1], "w");
  if (f == NULL) return 1;
  fprintf(f, "%ld\n", issued);
  fclose(f);
  printf("done\n");
  return 0;
}
