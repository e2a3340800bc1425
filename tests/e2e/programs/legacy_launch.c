/* Kernels launched through the driver's first launch API, deprecated since CUDA 3.2 and still
 * exported (old programs, bindings written against it): the block shape and shared bytes set on
 * the function, then cuLaunch, cuLaunchGrid or cuLaunchGridAsync with a grid of width x height;
 * and a cooperative launch on a list of devices (deprecated since CUDA 11.3). Each launch must
 * show its kernel, grid, block, shared bytes and stream as the function was set up for it: two
 * functions set up differently, one set up again, a function of a module loaded after another
 * was unloaded (the driver may hand out the unloaded function's handle again, whose shared
 * bytes must not carry over), two launches refused.
 *
 *   usage: legacy_launch */
#include <cuda.h>
#include <stdio.h>

#include "cuda_check.h"
#include "noop_ptx.h"

static CUfunction noopOf(CUmodule* module) {
  CUfunction f;
  check(cuModuleLoadData(module, kPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&f, *module, "noop"), "cuModuleGetFunction");
  check(cuParamSetSize(f, 0), "cuParamSetSize");
  return f;
}

int main(void) {
  const CUdevice dev = useFirstDevice();
  CUmodule first, second, third;
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const CUfunction f = noopOf(&first);
  const CUfunction g = noopOf(&second);

  check(cuFuncSetBlockShape(f, 32, 2, 1), "cuFuncSetBlockShape");
  check(cuFuncSetSharedSize(f, 256), "cuFuncSetSharedSize");
  check(cuFuncSetBlockShape(g, 128, 1, 1), "cuFuncSetBlockShape");
  check(cuFuncSetSharedSize(g, 512), "cuFuncSetSharedSize");
  check(cuLaunch(f), "cuLaunch");
  check(cuLaunchGrid(g, 4, 3), "cuLaunchGrid");
  check(cuLaunchGridAsync(f, 5, 1, stream), "cuLaunchGridAsync");
  if (cuLaunchGrid(f, 0, 1) == CUDA_SUCCESS) ++failures;
  check(cuFuncSetBlockShape(f, 64, 1, 1), "cuFuncSetBlockShape");
  check(cuFuncSetSharedSize(f, 0), "cuFuncSetSharedSize");
  check(cuLaunchGridAsync(f, 2, 2, stream), "cuLaunchGridAsync");

  /* Another module unloaded: `f` keeps what it was set up with; a function of a module loaded
   * since, on the unloaded function's handle or not, starts with nothing set. */
  check(cuModuleUnload(second), "cuModuleUnload");
  check(cuLaunchGrid(f, 3, 1), "cuLaunchGrid");
  const CUfunction h = noopOf(&third);
  check(cuFuncSetBlockShape(h, 16, 1, 1), "cuFuncSetBlockShape");
  check(cuLaunchGrid(h, 1, 1), "cuLaunchGrid");
  /* The same function looked up again keeps its set-up. */
  CUfunction again;
  check(cuModuleGetFunction(&again, first, "noop"), "cuModuleGetFunction");
  check(cuLaunchGrid(again, 2, 1), "cuLaunchGrid");

  int multiDevice = 0;
  check(cuDeviceGetAttribute(&multiDevice, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, dev),
        "cuDeviceGetAttribute");
  if (multiDevice) {
    CUDA_LAUNCH_PARAMS launch = {f, 2, 1, 1, 32, 1, 1, 0, stream, NULL};
    check(cuLaunchCooperativeKernelMultiDevice(&launch, 1, 0), "cuLaunchCooperativeKernelMultiDevice");
    if (cuLaunchCooperativeKernelMultiDevice(&launch, 0, 0) == CUDA_SUCCESS) ++failures;
  } else {
    printf("no cooperative launch on several devices here\n");
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuModuleUnload(first), "cuModuleUnload");
  check(cuModuleUnload(third), "cuModuleUnload");
  check(cuStreamDestroy(stream), "cuStreamDestroy");
  printf("legacy launches made\n");
  return failures == 0 ? 0 : 1;
}
