/* Copies in batches, as KV-cache offloading and PyTorch's grouped pinned-memory copies make them
 * with CUDA 13's cuMemcpyBatchAsync: one call, one event, the bytes of all its copies; a batch
 * the driver refuses (on the legacy stream) is recorded with its result and no bytes.
 *
 *   usage: batch_copy */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

int main(void) {
  useFirstDevice();
  CUstream s;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  unsigned* host;
  CUdeviceptr a, b;
  check(cuMemAllocHost((void**)&host, 4096), "cuMemAllocHost");
  check(cuMemAlloc(&a, 4096), "cuMemAlloc");
  check(cuMemAlloc(&b, 4096), "cuMemAlloc");
  for (unsigned i = 0; i < 1024; ++i) host[i] = i;
  /* host -> a (4 KiB), a -> b (1 KiB), b -> the host's second half (1 KiB): 6 KiB in one call. */
  CUdeviceptr dsts[] = {a, b, (CUdeviceptr)(host + 512)};
  CUdeviceptr srcs[] = {(CUdeviceptr)host, a, b};
  size_t sizes[] = {4096, 1024, 1024};
  CUmemcpyAttributes attrs;
  memset(&attrs, 0, sizeof(attrs));
  attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t attrsIdxs[] = {0};
  check(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attrs, attrsIdxs, 1, s), "cuMemcpyBatchAsync");
  if (cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attrs, attrsIdxs, 1, CU_STREAM_LEGACY) != CUDA_ERROR_INVALID_VALUE)
    ++failures;
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  for (unsigned i = 0; i < 256; ++i)
    if (host[512 + i] != i) ++failures;
  check(cuMemFree(a), "cuMemFree");
  check(cuMemFree(b), "cuMemFree");
  check(cuMemFreeHost(host), "cuMemFreeHost");
  check(cuStreamDestroy(s), "cuStreamDestroy");
  printf("batched\n");
  return failures == 0 ? 0 : 1;
}
