/* Managed memory prefetched ahead of use, as unified-memory programs do: every entry point that
 * moves pages (the runtime's, the driver's first version with a device ordinal, its location
 * version, and both as cuGetProcAddress hands them to runtimes built for CUDA 12 and 13) is one
 * event with the bytes and the stream it was queued on; so is each of CUDA 13's batches (of
 * prefetches to two locations, of discards, of discards then prefetches), with the bytes of all its
 * ranges, through the driver and the runtime. Advice on where its pages belong (every version) is
 * recorded with its range, a range attached to a stream with its address and stream. Prefetches
 * of memory that is not managed, or with flags, and a batch with a range that
 * is not managed are refused and recorded with their result.
 *
 *   usage: prefetch */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "cuda_check.h"

/* The first versions' symbols: cuda.h names their location versions cuMemPrefetchAsync, cuMemAdvise. */
CUresult prefetchToDevice(CUdeviceptr p, size_t n, CUdevice device, CUstream s) __asm__("cuMemPrefetchAsync");
CUresult adviseDevice(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice device) __asm__("cuMemAdvise");

typedef CUresult (*PrefetchToDevice)(CUdeviceptr, size_t, CUdevice, CUstream);
typedef CUresult (*PrefetchTo)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);

int main(void) {
  const CUdevice dev = useFirstDevice();
  CUstream s;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr managed, plain;
  check(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  check(cuMemAlloc(&plain, 4096), "cuMemAlloc");

  CUmemLocation toDevice = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
  CUmemLocation toHost = {CU_MEM_LOCATION_TYPE_HOST, 0};
  check(cuMemPrefetchAsync(managed, 1 << 20, toDevice, 0, s), "cuMemPrefetchAsync_v2");
  check(cuMemPrefetchAsync(managed, 65536, toHost, 0, s), "cuMemPrefetchAsync_v2 to the host");
  check(prefetchToDevice(managed, 4096, dev, s), "cuMemPrefetchAsync");
  check(prefetchToDevice(managed + 4096, 4096, CU_DEVICE_CPU, s), "cuMemPrefetchAsync to the host");

  PrefetchToDevice first = NULL;
  check(cuGetProcAddress("cuMemPrefetchAsync", (void**)&first, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
        "cuGetProcAddress 12000");
  if (first != NULL) check(first(managed, 8192, dev, s), "cuMemPrefetchAsync (12000)");
  PrefetchTo second = NULL;
  check(cuGetProcAddress("cuMemPrefetchAsync", (void**)&second, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
        "cuGetProcAddress 13000");
  if (second != NULL) check(second(managed, 16384, toDevice, 0, s), "cuMemPrefetchAsync (13000)");

  struct cudaMemLocation runtimeToDevice = {cudaMemLocationTypeDevice, dev};
  checkRuntime(cudaMemPrefetchAsync((void*)managed, 32768, runtimeToDevice, 0, (cudaStream_t)s), "cudaMemPrefetchAsync");

  /* Three ranges (28 KiB), the first to the device, the others to the host. */
  CUdeviceptr ranges[] = {managed, managed + 65536, managed + 131072};
  size_t sizes[] = {4096, 8192, 16384};
  CUmemLocation locations[] = {toDevice, toHost};
  size_t locationIdxs[] = {0, 1};
  check(cuMemPrefetchBatchAsync(ranges, sizes, 3, locations, locationIdxs, 2, 0, s), "cuMemPrefetchBatchAsync");
  check(cuMemDiscardBatchAsync(ranges, sizes, 3, 0, s), "cuMemDiscardBatchAsync");
  check(cuMemDiscardAndPrefetchBatchAsync(ranges, sizes, 3, locations, locationIdxs, 2, 0, s),
        "cuMemDiscardAndPrefetchBatchAsync");
  /* The same through the runtime: two ranges (12 KiB), both to the device. */
  void* runtimeRanges[] = {(void*)managed, (void*)(managed + 65536)};
  struct cudaMemLocation runtimeLocations[] = {runtimeToDevice};
  size_t runtimeLocationIdxs[] = {0};
  checkRuntime(cudaMemPrefetchBatchAsync(runtimeRanges, sizes, 2, runtimeLocations, runtimeLocationIdxs, 1, 0,
                                         (cudaStream_t)s),
               "cudaMemPrefetchBatchAsync");
  checkRuntime(cudaMemDiscardBatchAsync(runtimeRanges, sizes, 2, 0, (cudaStream_t)s), "cudaMemDiscardBatchAsync");
  checkRuntime(cudaMemDiscardAndPrefetchBatchAsync(runtimeRanges, sizes, 2, runtimeLocations, runtimeLocationIdxs, 1,
                                                   0, (cudaStream_t)s),
               "cudaMemDiscardAndPrefetchBatchAsync");

  /* Advice and attachment: 64 KiB preferred on the device, read by it, the first 4 KiB read mostly. */
  check(cuMemAdvise(managed, 65536, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, toDevice), "cuMemAdvise");
  check(adviseDevice(managed, 65536, CU_MEM_ADVISE_SET_ACCESSED_BY, dev), "cuMemAdvise (first version)");
  checkRuntime(cudaMemAdvise((void*)managed, 4096, cudaMemAdviseSetReadMostly, runtimeToDevice), "cudaMemAdvise");
  check(cuStreamAttachMemAsync(s, managed, 0, CU_MEM_ATTACH_GLOBAL), "cuStreamAttachMemAsync");
  checkRuntime(cudaStreamAttachMemAsync((cudaStream_t)s, (void*)managed, 0, cudaMemAttachGlobal),
               "cudaStreamAttachMemAsync");
  if (cuMemAdvise(plain, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, toDevice) != CUDA_ERROR_INVALID_VALUE) ++failures;

  /* Refused: memory that is not managed; flags; a batch with a range that is not managed. */
  if (cuMemPrefetchAsync(plain, 4096, toDevice, 0, s) != CUDA_ERROR_INVALID_VALUE) ++failures;
  if (cuMemPrefetchAsync(managed, 4096, toDevice, 1, s) != CUDA_ERROR_INVALID_VALUE) ++failures;
  CUdeviceptr mixed[] = {managed, plain};
  if (cuMemPrefetchBatchAsync(mixed, sizes, 2, locations, locationIdxs, 1, 0, s) != CUDA_ERROR_INVALID_VALUE) ++failures;
  void* runtimeMixed[] = {(void*)managed, (void*)plain};
  if (cudaMemDiscardBatchAsync(runtimeMixed, sizes, 2, 0, (cudaStream_t)s) != cudaErrorInvalidValue) ++failures;
  cudaGetLastError();

  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuMemFree(plain), "cuMemFree");
  check(cuMemFree(managed), "cuMemFree");
  check(cuStreamDestroy(s), "cuStreamDestroy");
  printf("prefetched\n");
  return failures == 0 ? 0 : 1;
}
