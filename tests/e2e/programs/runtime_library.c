/* Libraries loaded through the runtime (CUDA 12.5's cudaLibrary*), as JIT front ends built on the
 * runtime load them: from memory and from a file, a kernel looked up in each, both unloaded; one
 * load refused (no such file). Each load shows the library it made, each unload the same one,
 * with the driver call the runtime made inside.
 *
 *   usage: runtime_library */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda_check.h"
#include "noop_ptx.h"

int main(void) {
  char path[] = "/tmp/cutrace-library-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || write(fd, kPtx, sizeof(kPtx) - 1) != (ssize_t)(sizeof(kPtx) - 1)) return 1;
  close(fd);
  checkRuntime(cudaSetDevice(0), "cudaSetDevice");

  cudaLibrary_t fromData, fromFile, missing;
  cudaKernel_t kernel;
  checkRuntime(cudaLibraryLoadData(&fromData, kPtx, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData");
  checkRuntime(cudaLibraryLoadFromFile(&fromFile, path, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadFromFile");
  unlink(path);
  if (cudaLibraryLoadFromFile(&missing, path, NULL, NULL, 0, NULL, NULL, 0) == cudaSuccess) ++failures;
  checkRuntime(cudaLibraryGetKernel(&kernel, fromData, "noop"), "cudaLibraryGetKernel");
  checkRuntime(cudaLibraryGetKernel(&kernel, fromFile, "noop"), "cudaLibraryGetKernel");
  checkRuntime(cudaLibraryUnload(fromData), "cudaLibraryUnload");
  checkRuntime(cudaLibraryUnload(fromFile), "cudaLibraryUnload");
  printf("libraries loaded and unloaded through the runtime\n");
  return failures == 0 ? 0 : 1;
}
