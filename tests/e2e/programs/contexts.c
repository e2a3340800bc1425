/* Contexts made every way a driver-API program makes one: the primary context retained and
 * released, cuCtxCreate's three versions (cuda.h's name is the creation-parameters one; the
 * affinity one and the plain one are what programs built before it call), and the plain one as
 * cuGetProcAddress hands it out, each destroyed. Each creation is one event with the context made
 * as its handle, the one cuCtxDestroy_v2 then carries; a creation with flags the driver does not
 * know is refused and recorded with its result. The first versions of the primary context's release
 * and reset and of cuCtxDestroy, which programs built before CUDA 11 (4.0) call, are recorded too.
 *
 *   usage: contexts */
#include <cuda.h>
#include <stdio.h>

#include "cuda_check.h"

/* The earlier versions' symbols: cuda.h gives cuCtxCreate to the fourth. */
CUresult createV2(CUcontext* ctx, unsigned flags, CUdevice dev) __asm__("cuCtxCreate_v2");
CUresult createV3(CUcontext* ctx, CUexecAffinityParam* affinities, int count, unsigned flags, CUdevice dev)
    __asm__("cuCtxCreate_v3");

CUresult releaseV1(CUdevice dev) __asm__("cuDevicePrimaryCtxRelease");
CUresult resetV1(CUdevice dev) __asm__("cuDevicePrimaryCtxReset");
CUresult destroyV1(CUcontext ctx) __asm__("cuCtxDestroy");

typedef CUresult (*CreateV2)(CUcontext*, unsigned, CUdevice);

int main(void) {
  CUdevice dev;
  CUcontext primary, made;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
  check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");

  check(cuCtxCreate(&made, NULL, 0, dev), "cuCtxCreate_v4");
  check(cuCtxDestroy(made), "cuCtxDestroy");
  check(createV3(&made, NULL, 0, 0, dev), "cuCtxCreate_v3");
  check(cuCtxDestroy(made), "cuCtxDestroy");
  check(createV2(&made, CU_CTX_SCHED_AUTO, dev), "cuCtxCreate_v2");
  check(cuCtxDestroy(made), "cuCtxDestroy");
  CreateV2 looked = NULL;
  check(cuGetProcAddress("cuCtxCreate", (void**)&looked, 4000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
        "cuGetProcAddress cuCtxCreate 4000");
  if (looked != NULL) check(looked(&made, 0, dev), "cuCtxCreate (4000)");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuCtxDestroy(made), "cuCtxDestroy");

  check(cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
  check(releaseV1(dev), "cuDevicePrimaryCtxRelease (first version)");
  check(resetV1(dev), "cuDevicePrimaryCtxReset (first version)");
  check(createV2(&made, 0, dev), "cuCtxCreate_v2");
  check(destroyV1(made), "cuCtxDestroy (first version)");

  /* Refused: flags the driver does not know. */
  if (cuCtxCreate(&made, NULL, 0x10000, dev) != CUDA_ERROR_INVALID_VALUE) ++failures;
  printf("made\n");
  return failures == 0 ? 0 : 1;
}
