/* Device memory made as PyTorch's expandable segments make it: physical allocations by handle
 * (cuMemCreate / cuMemRelease, the driver's virtual memory management), around and among plain
 * allocations, mapped into a reserved address range, made accessible, unmapped. The memory
 * counter must follow the allocations, every value it takes in order, and not the mappings.
 *
 *   usage: vmm_memory */
#include <cuda.h>
#include <stdio.h>

#include "cuda_check.h"

int main(void) {
  const CUdevice dev = useFirstDevice();

  CUmemAllocationProp prop = pinnedOn(dev);
  size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
  if (granularity == 0) return 1;

  CUdeviceptr plain;
  CUmemGenericAllocationHandle a, b, c;
  check(cuMemAlloc(&plain, 1 << 20), "cuMemAlloc");
  check(cuMemCreate(&a, 2 * granularity, &prop, 0), "cuMemCreate a");
  check(cuMemCreate(&b, 3 * granularity, &prop, 0), "cuMemCreate b");
  check(cuMemRelease(a), "cuMemRelease a");
  check(cuMemCreate(&c, granularity, &prop, 0), "cuMemCreate c");
  /* Refused: not a multiple of the granularity. The counter does not move. */
  CUmemGenericAllocationHandle refused;
  if (cuMemCreate(&refused, granularity + 1, &prop, 0) == CUDA_SUCCESS) ++failures;
  CUdeviceptr va;
  check(cuMemAddressReserve(&va, 8 * granularity, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(va, 3 * granularity, 0, b, 0), "cuMemMap b");
  check(cuMemMap(va + 3 * granularity, granularity, 0, c, 0), "cuMemMap c");
  const CUmemAccessDesc access = readWriteOn(dev);
  check(cuMemSetAccess(va, 4 * granularity, &access, 1), "cuMemSetAccess");
  /* Refused: that part of the range is mapped already. */
  if (cuMemMap(va, granularity, 0, c, 0) == CUDA_SUCCESS) ++failures;
  check(cuMemUnmap(va, 4 * granularity), "cuMemUnmap");
  check(cuMemAddressFree(va, 8 * granularity), "cuMemAddressFree");
  check(cuMemRelease(b), "cuMemRelease b");
  check(cuMemFree(plain), "cuMemFree");
  check(cuMemRelease(c), "cuMemRelease c");
  printf("granularity %zu\n", granularity);
  return failures == 0 ? 0 : 1;
}
