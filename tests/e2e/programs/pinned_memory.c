/* Page-locked host memory as data loaders and offloading make it: allocated pinned
 * (cudaHostAlloc), and the program's own buffers pinned in place and let go (cudaHostRegister /
 * cudaHostUnregister, and the driver's cuMemHostRegister / cuMemHostUnregister), with a copy
 * from each. Pinning the same memory twice and letting go of memory never pinned are refused.
 *
 *   usage: pinned_memory */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"

int main(void) {
  const size_t bytes = 1 << 20;
  void* device = NULL;
  void* allocated = NULL;
  checkRuntime(cudaMalloc(&device, bytes), "cudaMalloc");
  checkRuntime(cudaHostAlloc(&allocated, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  void* own = aligned_alloc(4096, 2 * bytes);
  void* driverOwn = aligned_alloc(4096, bytes);
  if (own == NULL || driverOwn == NULL) return 1;

  checkRuntime(cudaHostRegister(own, 2 * bytes, cudaHostRegisterDefault), "cudaHostRegister");
  /* Refused: pinned already. */
  if (cudaHostRegister(own, bytes, cudaHostRegisterDefault) == cudaSuccess) ++failures;
  checkRuntime(cudaMemcpyAsync(device, own, bytes, cudaMemcpyHostToDevice, 0), "cudaMemcpyAsync");
  checkRuntime(cudaMemcpyAsync(device, allocated, bytes, cudaMemcpyHostToDevice, 0), "cudaMemcpyAsync");
  check(cuMemHostRegister(driverOwn, bytes, 0), "cuMemHostRegister");
  check(cuMemHostUnregister(driverOwn), "cuMemHostUnregister");
  checkRuntime(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  checkRuntime(cudaHostUnregister(own), "cudaHostUnregister");
  /* Refused: not pinned any more. */
  if (cudaHostUnregister(own) == cudaSuccess) ++failures;
  checkRuntime(cudaFreeHost(allocated), "cudaFreeHost");
  checkRuntime(cudaFree(device), "cudaFree");
  free(own);
  free(driverOwn);
  printf("pinned\n");
  return failures == 0 ? 0 : 1;
}
