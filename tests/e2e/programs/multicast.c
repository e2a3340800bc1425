/* Multicast objects, as NCCL's NVLS collectives set them up on NVSwitch systems: an object made
 * for this device and the device added, physical memory bound to it by handle, mapped memory
 * bound by address, one bind refused (not on the granularity), both unbound, everything
 * released. The memory counter follows the physical allocations only. Where the device has no
 * multicast support, nothing is made.
 *
 *   usage: multicast */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

int main(void) {
  const CUdevice dev = useFirstDevice();
  int supported = 0;
  check(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev), "cuDeviceGetAttribute");
  if (!supported) {
    printf("no multicast on this device\n");
    return failures == 0 ? 0 : 1;
  }
  CUmemAllocationProp prop = pinnedOn(dev);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmulticastObjectProp mcProp;
  memset(&mcProp, 0, sizeof(mcProp));
  mcProp.numDevices = 1;
  mcProp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t memoryGranularity = 0, granularity = 0;
  check(cuMemGetAllocationGranularity(&memoryGranularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "granularity");
  mcProp.size = memoryGranularity;
  check(cuMulticastGetGranularity(&granularity, &mcProp, CU_MULTICAST_GRANULARITY_RECOMMENDED), "mc granularity");
  if (granularity < memoryGranularity) granularity = memoryGranularity;
  if (granularity == 0 || granularity % memoryGranularity != 0) return 1;
  mcProp.size = 2 * granularity;

  CUmemGenericAllocationHandle mc, bound, mapped;
  CUdeviceptr va;
  check(cuMulticastCreate(&mc, &mcProp), "cuMulticastCreate");
  check(cuMulticastAddDevice(mc, dev), "cuMulticastAddDevice");
  check(cuMemCreate(&bound, granularity, &prop, 0), "cuMemCreate");
  check(cuMulticastBindMem(mc, 0, bound, 0, granularity, 0), "cuMulticastBindMem");
  if (cuMulticastBindMem(mc, granularity, bound, 0, granularity + 1, 0) == CUDA_SUCCESS) ++failures;

  const CUmemAccessDesc access = readWriteOn(dev);
  check(cuMemCreate(&mapped, granularity, &prop, 0), "cuMemCreate");
  check(cuMemAddressReserve(&va, granularity, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(va, granularity, 0, mapped, 0), "cuMemMap");
  check(cuMemSetAccess(va, granularity, &access, 1), "cuMemSetAccess");
  check(cuMulticastBindAddr(mc, granularity, va, granularity, 0), "cuMulticastBindAddr");

  check(cuMulticastUnbind(mc, dev, granularity, granularity), "cuMulticastUnbind");
  check(cuMulticastUnbind(mc, dev, 0, granularity), "cuMulticastUnbind");
  check(cuMemUnmap(va, granularity), "cuMemUnmap");
  check(cuMemAddressFree(va, granularity), "cuMemAddressFree");
  check(cuMemRelease(mapped), "cuMemRelease");
  check(cuMemRelease(bound), "cuMemRelease");
  check(cuMemRelease(mc), "cuMemRelease");
  printf("multicast object made, bound and unbound\n");
  return failures == 0 ? 0 : 1;
}
