/* Modules and libraries loaded every way the driver offers, as JIT compilers (Triton under
 * torch.compile, numba, CuPy) and the runtime's lazy loading do: from memory, with JIT options,
 * as a fatbin, from a file; two refused (an image that is none, a file that does not exist).
 * Loading compiles for the GPU and can take milliseconds a kernel: each load is recorded with
 * the handle it made, each unload with the handle it ended, and a kernel of one launches.
 *
 *   usage: module_load */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda_check.h"
#include "noop_ptx.h"

int main(void) {
  useFirstDevice();
  char path[] = "/tmp/cutrace-module-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || write(fd, kPtx, sizeof(kPtx) - 1) != (ssize_t)(sizeof(kPtx) - 1)) return 1;
  close(fd);

  CUmodule fromData, withOptions, fatbin, fromFile, none;
  CUlibrary library, libraryFromFile, noLibrary;
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
  void* values[] = {(void*)(size_t)3};
  check(cuModuleLoadData(&fromData, kPtx), "cuModuleLoadData");
  check(cuModuleLoadDataEx(&withOptions, kPtx, 1, options, values), "cuModuleLoadDataEx");
  check(cuModuleLoadFatBinary(&fatbin, kPtx), "cuModuleLoadFatBinary");
  check(cuModuleLoad(&fromFile, path), "cuModuleLoad");
  check(cuLibraryLoadData(&library, kPtx, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  check(cuLibraryLoadFromFile(&libraryFromFile, path, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadFromFile");
  unlink(path);
  if (cuModuleLoadData(&none, "not an image") != CUDA_ERROR_INVALID_IMAGE) ++failures;
  if (cuLibraryLoadFromFile(&noLibrary, path, NULL, NULL, 0, NULL, NULL, 0) != CUDA_ERROR_FILE_NOT_FOUND) ++failures;

  CUfunction f;
  check(cuModuleGetFunction(&f, withOptions, "noop"), "cuModuleGetFunction");
  check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), "cuLaunchKernel");
  check(cuCtxSynchronize(), "cuCtxSynchronize");

  check(cuModuleUnload(fromData), "cuModuleUnload");
  check(cuModuleUnload(withOptions), "cuModuleUnload");
  check(cuModuleUnload(fatbin), "cuModuleUnload");
  check(cuModuleUnload(fromFile), "cuModuleUnload");
  check(cuLibraryUnload(library), "cuLibraryUnload");
  check(cuLibraryUnload(libraryFromFile), "cuLibraryUnload");
  printf("modules loaded and unloaded\n");
  return failures == 0 ? 0 : 1;
}
