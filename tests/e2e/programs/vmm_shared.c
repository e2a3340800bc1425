/* Physical memory shared by OS handle, as NCCL's cuMem buffers are between the processes of a
 * job: an allocation made exportable, exported to a file descriptor and imported from it (here in
 * the same process, as a peer would), the imported memory and the allocation mapped, the handle of
 * what is mapped at an address retained and released (each), everything released. One import
 * refused: no descriptor. The memory counter follows the exporter's allocations only: an imported
 * handle released does not move it, nor does a retained reference, before the last one goes.
 *
 *   usage: vmm_shared */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "cuda_check.h"

int main(void) {
  const CUdevice dev = useFirstDevice();
  CUmemAllocationProp prop = pinnedOn(dev);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
  if (granularity == 0) return 1;

  CUmemGenericAllocationHandle made, imported, retained, refused;
  int fd = -1;
  check(cuMemCreate(&made, 2 * granularity, &prop, 0), "cuMemCreate");
  check(cuMemExportToShareableHandle(&fd, made, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
  check(cuMemImportFromShareableHandle(&imported, (void*)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        "cuMemImportFromShareableHandle");
  close(fd);
  if (cuMemImportFromShareableHandle(&refused, (void*)(intptr_t)-1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
      CUDA_SUCCESS)
    ++failures;

  CUdeviceptr va;
  const CUmemAccessDesc access = readWriteOn(dev);
  check(cuMemAddressReserve(&va, 4 * granularity, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(va, 2 * granularity, 0, imported, 0), "cuMemMap");
  check(cuMemMap(va + 2 * granularity, 2 * granularity, 0, made, 0), "cuMemMap");
  check(cuMemSetAccess(va, 4 * granularity, &access, 1), "cuMemSetAccess");
  check(cuMemRetainAllocationHandle(&retained, (void*)(uintptr_t)(va + granularity)), "cuMemRetainAllocationHandle");
  if (retained != imported) {
    fprintf(stderr, "the retained handle is not the one mapped\n");
    ++failures;
  }
  check(cuMemRelease(retained), "cuMemRelease retained");
  /* The allocation's own handle retained (NCCL's free path: retain, release, unmap, release): its
   * memory stays until the last reference goes, whatever is allocated in between. */
  CUmemGenericAllocationHandle own, between;
  check(cuMemRetainAllocationHandle(&own, (void*)(uintptr_t)(va + 3 * granularity)), "cuMemRetainAllocationHandle");
  check(cuMemRelease(own), "cuMemRelease retained");
  check(cuMemCreate(&between, granularity, &prop, 0), "cuMemCreate");
  check(cuMemUnmap(va, 4 * granularity), "cuMemUnmap");
  check(cuMemAddressFree(va, 4 * granularity), "cuMemAddressFree");
  check(cuMemRelease(imported), "cuMemRelease imported");
  check(cuMemRelease(made), "cuMemRelease");
  check(cuMemRelease(between), "cuMemRelease");
  printf("physical memory shared by handle\n");
  return failures == 0 ? 0 : 1;
}
