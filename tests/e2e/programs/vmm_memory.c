/* Device memory made as PyTorch's expandable segments make it: physical allocations by handle
 * (cuMemCreate / cuMemRelease, the driver's virtual memory management), around and among plain
 * allocations. The memory counter must follow both: every value it takes, in order.
 *
 *   usage: vmm_memory */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

int main(void) {
  const CUdevice dev = useFirstDevice();

  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
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
  check(cuMemRelease(b), "cuMemRelease b");
  check(cuMemFree(plain), "cuMemFree");
  check(cuMemRelease(c), "cuMemRelease c");
  printf("granularity %zu\n", granularity);
  return failures == 0 ? 0 : 1;
}
