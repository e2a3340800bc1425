/* A driver-API program that reaches cuLaunchKernel every way a program or a runtime can:
 * through its own link (PLT), dlsym, and cuGetProcAddress obtained as the CUDA runtime does it
 * (dlsym "cuGetProcAddress_v2", then ask it for "cuGetProcAddress" itself at 11030 and 12000),
 * with and without the per-thread default stream flag. Each path launches once inside an NVTX
 * range named after it, so the trace must show one launch with the kernel name in each. */
#include <cuda.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

static const char kPtx[] =
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry vecAdd(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "  ret;\n"
    "}\n";

typedef CUresult (*GetProcV1)(const char*, void**, int, cuuint64_t);
typedef CUresult (*GetProcV2)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
typedef CUresult (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
typedef CUresult (*LaunchExFn)(const CUlaunchConfig*, CUfunction, void**, void**);

static void launchVia(const char* path, LaunchFn launch, CUfunction f, void** params) {
  nvtxRangePushA(path);
  if (launch == NULL) {
    fprintf(stderr, "%s: no function pointer\n", path);
    ++failures;
  } else {
    check(launch(f, 2, 1, 1, 64, 1, 1, 0, NULL, params, NULL), path);
  }
  nvtxRangePop();
}

int main(void) {
  CUmodule mod;
  CUfunction f;
  CUdeviceptr out;
  unsigned n = 128;
  useFirstDevice();
  check(cuModuleLoadData(&mod, kPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&f, mod, "vecAdd"), "cuModuleGetFunction");
  check(cuMemAlloc(&out, n * sizeof(float)), "cuMemAlloc");
  void* params[] = {&out, &n};

  launchVia("plt", cuLaunchKernel, f, params);

  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  launchVia("dlsym", (LaunchFn)dlsym(lib, "cuLaunchKernel"), f, params);

  GetProcV2 bootstrap = (GetProcV2)dlsym(lib, "cuGetProcAddress_v2");
  GetProcV1 getProc1 = NULL;
  GetProcV2 getProc2 = NULL;
  CUdriverProcAddressQueryResult status;
  if (bootstrap == NULL) {
    fprintf(stderr, "no cuGetProcAddress_v2\n");
    return 1;
  }
  check(bootstrap("cuGetProcAddress", (void**)&getProc1, 11030, CU_GET_PROC_ADDRESS_DEFAULT, &status), "getproc 11030");
  check(bootstrap("cuGetProcAddress", (void**)&getProc2, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status), "getproc 12000");
  if (getProc1 == NULL || getProc2 == NULL) {
    fprintf(stderr, "cuGetProcAddress did not return itself\n");
    return 1;
  }

  void* fn = NULL;
  check(getProc2("cuLaunchKernel", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status), "getproc cuLaunchKernel");
  launchVia("getproc_v2", (LaunchFn)fn, f, params);
  fn = NULL;
  check(getProc2("cuLaunchKernel", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
        "getproc cuLaunchKernel ptsz");
  launchVia("getproc_v2_ptsz", (LaunchFn)fn, f, params);
  fn = NULL;
  check(getProc1("cuLaunchKernel", &fn, 11030, CU_GET_PROC_ADDRESS_DEFAULT), "getproc v1 cuLaunchKernel");
  launchVia("getproc_v1", (LaunchFn)fn, f, params);

  fn = NULL;
  check(getProc2("cuLaunchKernelEx", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status), "getproc cuLaunchKernelEx");
  nvtxRangePushA("launch_ex");
  if (fn != NULL) {
    CUlaunchConfig config;
    memset(&config, 0, sizeof(config));
    config.gridDimX = 3;
    config.gridDimY = 1;
    config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = 2;
    config.blockDimZ = 1;
    check(((LaunchExFn)fn)(&config, f, params, NULL), "cuLaunchKernelEx");
  }
  nvtxRangePop();

  /* Names that are not hooked pass through untouched and unknown names stay unknown. */
  fn = NULL;
  if (getProc2("cuDeviceGetCount", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || fn == NULL) {
    fprintf(stderr, "cuGetProcAddress(cuDeviceGetCount) failed\n");
    ++failures;
  }
  fn = (void*)1;
  status = CU_GET_PROC_ADDRESS_SUCCESS;
  getProc2("cuNoSuchFunction", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (fn != NULL || status != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) {
    fprintf(stderr, "cuGetProcAddress(cuNoSuchFunction) found something\n");
    ++failures;
  }
  if (dlsym(lib, "cuNoSuchFunction") != NULL || dlerror() == NULL) {
    fprintf(stderr, "dlsym(cuNoSuchFunction) did not fail with an error\n");
    ++failures;
  }

  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuMemFree(out), "cuMemFree");
  printf("driver_lookup: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
