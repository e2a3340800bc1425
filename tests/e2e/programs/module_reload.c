/* Modules and libraries unloaded and loaded again, as JIT compilers and autotuners do: the real
 * driver hands the memory of an unloaded module's functions (and a library's kernels) out again,
 * so a new kernel can have the handle of one gone. Each launch must carry the name of the kernel
 * it launched, never the name cached for the handle's previous owner.
 *
 * --expect-reuse (the stand-in driver, which reuses them as the real one may): fail unless every
 * new function and kernel had the handle of the one unloaded before it, so that the test cannot
 * pass without trying what it is for.
 *
 *   usage: module_reload [--expect-reuse] */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

/* A module of one kernel named `name` (a real driver finds only the kernels an image has). */
static const char* ptxOf(const char* name) {
  static char ptx[512];
  snprintf(ptx, sizeof(ptx),
           ".version 8.0\n"
           ".target sm_75\n"
           ".address_size 64\n"
           ".visible .entry %s(.param .u64 out, .param .u32 n)\n"
           "{\n"
           "  ret;\n"
           "}\n",
           name);
  return ptx;
}

int main(int argc, char** argv) {
  const int expectReuse = argc > 1 && strcmp(argv[1], "--expect-reuse") == 0;
  CUdeviceptr out;
  unsigned n = 64;
  useFirstDevice();
  check(cuMemAlloc(&out, n * sizeof(float)), "cuMemAlloc");
  void* params[] = {&out, &n};

  static const char* const kModuleKernels[] = {"first_module_kernel", "second_module_kernel", "third_module_kernel"};
  CUfunction previous = NULL;
  int reused = 0;
  for (int i = 0; i < 3; ++i) {
    CUmodule mod;
    CUfunction f;
    check(cuModuleLoadData(&mod, ptxOf(kModuleKernels[i])), "cuModuleLoadData");
    check(cuModuleGetFunction(&f, mod, kModuleKernels[i]), "cuModuleGetFunction");
    reused += f == previous;
    previous = f;
    /* Twice: the second launch finds the name cached for this kernel. */
    for (int twice = 0; twice < 2; ++twice)
      check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
    check(cuModuleUnload(mod), "cuModuleUnload");
  }

  static const char* const kLibraryKernels[] = {"first_library_kernel", "second_library_kernel"};
  CUkernel previousKernel = NULL;
  for (int i = 0; i < 2; ++i) {
    CUlibrary lib;
    CUkernel k;
    check(cuLibraryLoadData(&lib, ptxOf(kLibraryKernels[i]), NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
    check(cuLibraryGetKernel(&k, lib, kLibraryKernels[i]), "cuLibraryGetKernel");
    reused += k == previousKernel;
    previousKernel = k;
    /* As the CUDA 13 runtime launches: the CUkernel cast to a CUfunction. */
    for (int twice = 0; twice < 2; ++twice)
      check(cuLaunchKernel((CUfunction)k, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel(CUkernel)");
    check(cuLibraryUnload(lib), "cuLibraryUnload");
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuMemFree(out), "cuMemFree");
  /* Three functions, two kernels: each after the first had its predecessor's handle. */
  if (expectReuse && reused != 3) {
    fprintf(stderr, "handles reused %d times, expected 3\n", reused);
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}
