/* Modules and libraries loaded every way the driver offers, as JIT compilers (Triton under
 * torch.compile, numba, CuPy) and the runtime's lazy loading do: from memory, with JIT options,
 * as a fatbin, from a file, linked from PTX (cuLink*, through 6.5's and 5.5's versions); some
 * refused (an image that is none, a file that does not exist, a link of nothing).
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

/* CUDA 5.5's first versions' symbols: cuda.h gives their names to 6.5's. */
CUresult linkCreateV1(unsigned numOptions, CUjit_option* options, void** optionValues, CUlinkState* state)
    __asm__("cuLinkCreate");
CUresult linkAddDataV1(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                       unsigned numOptions, CUjit_option* options, void** optionValues) __asm__("cuLinkAddData");
CUresult linkAddFileV1(CUlinkState state, CUjitInputType type, const char* path, unsigned numOptions,
                       CUjit_option* options, void** optionValues) __asm__("cuLinkAddFile");

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

  /* A JIT link of two inputs (numba, CuPy), its image loaded; one link with nothing to link. */
  CUlinkState link, empty;
  void* image;
  size_t imageBytes;
  CUmodule linked;
  check(cuLinkCreate(1, options, values, &link), "cuLinkCreate");
  check(cuLinkAddData(link, CU_JIT_INPUT_PTX, (void*)kPtx, sizeof(kPtx), "noop.ptx", 0, NULL, NULL), "cuLinkAddData");
  if (cuLinkAddFile(link, CU_JIT_INPUT_PTX, path, 0, NULL, NULL) != CUDA_ERROR_FILE_NOT_FOUND) ++failures;
  check(cuLinkAddData(link, CU_JIT_INPUT_PTX, (void*)kPtx, sizeof(kPtx), "again.ptx", 0, NULL, NULL), "cuLinkAddData");
  check(cuLinkComplete(link, &image, &imageBytes), "cuLinkComplete");
  check(cuModuleLoadData(&linked, image), "cuModuleLoadData");
  check(cuLinkDestroy(link), "cuLinkDestroy");
  check(cuLinkCreate(0, NULL, NULL, &empty), "cuLinkCreate");
  if (cuLinkComplete(empty, &image, &imageBytes) != CUDA_ERROR_INVALID_VALUE) ++failures;
  check(cuLinkDestroy(empty), "cuLinkDestroy");
  /* The same through the first versions, as a binary built before CUDA 6.5 links. */
  CUlinkState old;
  CUmodule linkedOld;
  check(linkCreateV1(0, NULL, NULL, &old), "cuLinkCreate (5.5)");
  check(linkAddDataV1(old, CU_JIT_INPUT_PTX, (void*)kPtx, sizeof(kPtx), "noop.ptx", 0, NULL, NULL), "cuLinkAddData (5.5)");
  if (linkAddFileV1(old, CU_JIT_INPUT_PTX, path, 0, NULL, NULL) != CUDA_ERROR_FILE_NOT_FOUND) ++failures;
  check(cuLinkComplete(old, &image, &imageBytes), "cuLinkComplete");
  check(cuModuleLoadData(&linkedOld, image), "cuModuleLoadData");
  check(cuLinkDestroy(old), "cuLinkDestroy");

  CUfunction f;
  check(cuModuleGetFunction(&f, withOptions, "noop"), "cuModuleGetFunction");
  check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), "cuLaunchKernel");
  check(cuCtxSynchronize(), "cuCtxSynchronize");

  check(cuModuleUnload(fromData), "cuModuleUnload");
  check(cuModuleUnload(withOptions), "cuModuleUnload");
  check(cuModuleUnload(fatbin), "cuModuleUnload");
  check(cuModuleUnload(fromFile), "cuModuleUnload");
  check(cuModuleUnload(linked), "cuModuleUnload");
  check(cuModuleUnload(linkedOld), "cuModuleUnload");
  check(cuLibraryUnload(library), "cuLibraryUnload");
  check(cuLibraryUnload(libraryFromFile), "cuLibraryUnload");
  printf("modules loaded and unloaded\n");
  return failures == 0 ? 0 : 1;
}
