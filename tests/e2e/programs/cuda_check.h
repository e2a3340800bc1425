/* The test programs' check of a CUDA call: a failure is printed with its error's name and
 * counted in `failures`, which the program's exit status reports; and their device set-up. */
#pragma once

#include <cuda.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static inline void check(CUresult rc, const char* what) {
  if (rc != CUDA_SUCCESS) {
    const char* name = "?";
    cuGetErrorName(rc, &name);
    fprintf(stderr, "%s failed: %s\n", what, name);
    ++failures;
  }
}

/* Every byte of `n` at `host` is `value` (memory read back from the device), else a failure. */
static inline void expectBytes(const unsigned char* host, size_t n, unsigned char value, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if (host[i] != value) {
      fprintf(stderr, "%s: byte %zu is %d, not %d\n", what, i, host[i], value);
      ++failures;
      return;
    }
}

/* The driver initialised, device 0's primary context current on this thread: device 0. */
static inline CUdevice useFirstDevice(void) {
  CUdevice dev = 0;
  CUcontext ctx;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return dev;
}

/* Physical memory of `dev` as the driver's virtual memory calls make it (cuMemCreate), and access
 * to read and write it from there (cuMemSetAccess). */
static inline CUmemAllocationProp pinnedOn(CUdevice dev) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop)); /* (= {0} is not C++ for a struct whose first member is an enum: nvcc) */
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  return prop;
}
static inline CUmemAccessDesc readWriteOn(CUdevice dev) {
  CUmemAccessDesc access;
  memset(&access, 0, sizeof(access));
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = dev;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

/* A graph's kernel node of one block of 32 threads of `f`, which takes no parameters. */
static inline CUDA_KERNEL_NODE_PARAMS oneBlockNode(CUfunction f) {
  CUDA_KERNEL_NODE_PARAMS k;
  memset(&k, 0, sizeof(k));
  k.func = f;
  k.gridDimX = k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = 32;
  k.blockDimY = k.blockDimZ = 1;
  return k;
}

#ifdef CUDART_VERSION
static inline void checkRuntime(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorName(rc));
    ++failures;
  }
}
#endif
