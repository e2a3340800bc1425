/* Libraries loaded through the runtime (CUDA 12.5's cudaLibrary*), as JIT front ends built on the
 * runtime load them: from memory and from a file, a kernel looked up in each and launched through
 * cudaLaunchKernel, both unloaded; one load refused (no such file). Each load shows the library it
 * made, each unload the same one, with the driver call the runtime made inside; each launch its
 * kernel's name, which the runtime may not know (cutrace then asks the driver). Naming the kernel
 * must leave the runtime's last error as the program left it: the refusal's still pending at the
 * first launch, none at the second (PyTorch checks cudaGetLastError after every launch).
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
  cudaKernel_t other;
  const dim3 grid = {2, 1, 1}, block = {32, 1, 1};
  checkRuntime(cudaLibraryGetKernel(&other, fromFile, "noop"), "cudaLibraryGetKernel");
  checkRuntime(cudaLaunchKernel((const void*)other, grid, block, NULL, 0, 0), "cudaLaunchKernel");
  printf("pending after the refused load and a launch: %s\n", cudaGetErrorName(cudaGetLastError()));
  checkRuntime(cudaLibraryGetKernel(&kernel, fromData, "noop"), "cudaLibraryGetKernel");
  checkRuntime(cudaLaunchKernel((const void*)kernel, grid, block, NULL, 0, 0), "cudaLaunchKernel");
  printf("pending after a launch: %s\n", cudaGetErrorName(cudaGetLastError()));
  checkRuntime(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  checkRuntime(cudaLibraryUnload(fromData), "cudaLibraryUnload");
  checkRuntime(cudaLibraryUnload(fromFile), "cudaLibraryUnload");
  printf("libraries loaded and unloaded through the runtime\n");
  return failures == 0 ? 0 : 1;
}
