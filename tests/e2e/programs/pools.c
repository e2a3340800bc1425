/* Memory pools, as PyTorch's cudaMallocAsync backend and stream-ordered allocators use them:
 * pools made through the runtime and the driver (one refused: no allocation type), set up (their
 * release threshold and high watermarks, their devices' access, the device's pool, also by CUDA
 * 13's location form), memory
 * allocated from each and from the device's default pool, freed in stream order, each pool
 * trimmed (to nothing, and to a size it may keep) and destroyed. Each pool shows as the handle of
 * its creation, settings and destruction, each trim with the bytes it may keep; the memory
 * counter follows what is allocated from the pools.
 *
 *   usage: pools */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

int main(void) {
  const CUdevice dev = useFirstDevice();
  cudaStream_t stream;
  checkRuntime(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");

  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cudaMemPool_t pool, refused, fallback;
  checkRuntime(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
  struct cudaMemPoolProps none = props;
  none.allocType = cudaMemAllocationTypeInvalid;
  if (cudaMemPoolCreate(&refused, &none) == cudaSuccess) ++failures;
  checkRuntime(cudaDeviceGetDefaultMemPool(&fallback, dev), "cudaDeviceGetDefaultMemPool");
  /* Set up as PyTorch's cudaMallocAsync backend sets its pool: keep what is freed, readable and
   * writable from its device (another device's access refused: there is one), its high
   * watermark reset (to anything but 0 refused); the device's pool while it is used. */
  cuuint64_t keepAll = ~(cuuint64_t)0, zero = 0;
  checkRuntime(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keepAll), "cudaMemPoolSetAttribute");
  checkRuntime(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero), "cudaMemPoolSetAttribute");
  if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &keepAll) == cudaSuccess) ++failures;
  struct cudaMemAccessDesc access;
  memset(&access, 0, sizeof(access));
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = dev;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  checkRuntime(cudaMemPoolSetAccess(pool, &access, 1), "cudaMemPoolSetAccess");
  int devices = 0;
  checkRuntime(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  access.location.id = devices;
  if (cudaMemPoolSetAccess(pool, &access, 1) == cudaSuccess) ++failures;
  checkRuntime(cudaDeviceSetMemPool(dev, pool), "cudaDeviceSetMemPool");

  void *fromPool = NULL, *fromDefault = NULL;
  checkRuntime(cudaMallocFromPoolAsync(&fromPool, 1 << 20, pool, stream), "cudaMallocFromPoolAsync");
  checkRuntime(cudaMallocFromPoolAsync(&fromDefault, 1 << 16, fallback, stream), "cudaMallocFromPoolAsync");
  checkRuntime(cudaFreeAsync(fromPool, stream), "cudaFreeAsync");
  checkRuntime(cudaFreeAsync(fromDefault, stream), "cudaFreeAsync");
  checkRuntime(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  checkRuntime(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
  checkRuntime(cudaMemPoolTrimTo(fallback, 1 << 16), "cudaMemPoolTrimTo");
  checkRuntime(cudaDeviceSetMemPool(dev, fallback), "cudaDeviceSetMemPool");
  /* CUDA 13's form: the location's pool for an allocation type (a device that is not there refused). */
  checkRuntime(cudaMemSetMemPool(&props.location, cudaMemAllocationTypePinned, pool), "cudaMemSetMemPool");
  struct cudaMemLocation nowhere = props.location;
  nowhere.id = devices;
  if (cudaMemSetMemPool(&nowhere, cudaMemAllocationTypePinned, pool) == cudaSuccess) ++failures;
  checkRuntime(cudaMemSetMemPool(&props.location, cudaMemAllocationTypePinned, fallback), "cudaMemSetMemPool");
  checkRuntime(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");

  CUmemPoolProps driverProps;
  memset(&driverProps, 0, sizeof(driverProps));
  driverProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  driverProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  driverProps.location.id = dev;
  CUmemoryPool driverPool;
  CUdeviceptr p;
  check(cuMemPoolCreate(&driverPool, &driverProps), "cuMemPoolCreate");
  check(cuMemPoolSetAttribute(driverPool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero), "cuMemPoolSetAttribute");
  CUmemAccessDesc driverAccess = readWriteOn(dev);
  check(cuMemPoolSetAccess(driverPool, &driverAccess, 1), "cuMemPoolSetAccess");
  check(cuDeviceSetMemPool(dev, driverPool), "cuDeviceSetMemPool");
  check(cuMemAllocFromPoolAsync(&p, 1 << 18, driverPool, (CUstream)stream), "cuMemAllocFromPoolAsync");
  check(cuMemFreeAsync(p, (CUstream)stream), "cuMemFreeAsync");
  check(cuStreamSynchronize((CUstream)stream), "cuStreamSynchronize");
  check(cuMemPoolTrimTo(driverPool, 4096), "cuMemPoolTrimTo");
  CUmemoryPool driverFallback;
  check(cuDeviceGetDefaultMemPool(&driverFallback, dev), "cuDeviceGetDefaultMemPool");
  check(cuDeviceSetMemPool(dev, driverFallback), "cuDeviceSetMemPool");
  check(cuMemSetMemPool(&driverProps.location, CU_MEM_ALLOCATION_TYPE_PINNED, driverPool), "cuMemSetMemPool");
  if (cuMemSetMemPool(NULL, CU_MEM_ALLOCATION_TYPE_PINNED, driverPool) == CUDA_SUCCESS) ++failures;
  check(cuMemSetMemPool(&driverProps.location, CU_MEM_ALLOCATION_TYPE_PINNED, driverFallback), "cuMemSetMemPool");
  check(cuMemPoolDestroy(driverPool), "cuMemPoolDestroy");
  checkRuntime(cudaStreamDestroy(stream), "cudaStreamDestroy");
  printf("pools made, used, trimmed and destroyed\n");
  return failures == 0 ? 0 : 1;
}
