// Settings made on the launch path, as attention and GEMM libraries make them: a kernel that takes
// 64 KiB of dynamic shared memory is refused until it is allowed that much
// (cudaFuncSetAttribute, as FlashAttention and CUTLASS call it before their launches), then
// launched; more than the device's opt-in maximum is refused; its cache preference set; the
// device's stack size and persisting-L2 limits and cache preference set (an unknown limit
// refused); a stream's access
// policy window set (a hit ratio above 1 refused), from another thread's per-thread default
// stream too; the persisting L2 lines reset. Then the same through the driver: a module's
// function and a library's kernel. Each setting shows with its function, kernel or stream as the
// handle, each refusal with its result; the kernel is launched once through each API.
//   usage: settings
#include <cstdio>
#include <thread>

#include "cuda_check.h"
#include "noop_ptx.h"

__global__ void wide_fill(float* p, int n) {
  extern __shared__ float staged[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  staged[threadIdx.x] = 1.0f;
  if (i < n) p[i] = staged[threadIdx.x];
}

constexpr int kWideShared = 64 << 10;

int main() {
  const int n = 1 << 10;
  float* p = nullptr;
  checkRuntime(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc");
  cudaStream_t s;
  checkRuntime(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");

  // Runtime: refused above 48 KiB until allowed; the device's maximum is the ceiling.
  wide_fill<<<n / 256, 256, kWideShared, s>>>(p, n);
  if (cudaGetLastError() != cudaErrorInvalidValue) ++failures;
  checkRuntime(cudaFuncSetAttribute(wide_fill, cudaFuncAttributeMaxDynamicSharedMemorySize, kWideShared),
               "cudaFuncSetAttribute");
  wide_fill<<<n / 256, 256, kWideShared, s>>>(p, n);
  checkRuntime(cudaGetLastError(), "wide_fill launch");
  if (cudaFuncSetAttribute(wide_fill, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 20) == cudaSuccess) ++failures;
  checkRuntime(cudaFuncSetCacheConfig(wide_fill, cudaFuncCachePreferShared), "cudaFuncSetCacheConfig");
  checkRuntime(cudaDeviceSetLimit(cudaLimitStackSize, 4096), "cudaDeviceSetLimit");
  checkRuntime(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 4 << 20), "cudaDeviceSetLimit");
  checkRuntime(cudaDeviceSetCacheConfig(cudaFuncCachePreferL1), "cudaDeviceSetCacheConfig");
  if (cudaDeviceSetLimit(static_cast<cudaLimit>(0x7f), 1) == cudaSuccess) ++failures;
  cudaStreamAttrValue window = {};
  window.accessPolicyWindow.base_ptr = p;
  window.accessPolicyWindow.num_bytes = n * sizeof(float);
  window.accessPolicyWindow.hitRatio = 0.6f;
  window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  checkRuntime(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &window), "cudaStreamSetAttribute");
  std::thread other([&] {
    checkRuntime(cudaStreamSetAttribute(cudaStreamPerThread, cudaStreamAttributeAccessPolicyWindow, &window),
                 "cudaStreamSetAttribute (per-thread stream)");
  });
  other.join();
  cudaStreamAttrValue tooHigh = window;
  tooHigh.accessPolicyWindow.hitRatio = 2.0f;
  if (cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &tooHigh) == cudaSuccess) ++failures;
  checkRuntime(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  checkRuntime(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache");

  // Driver: a module's function and a library's kernel.
  CUmodule module;
  CUfunction f;
  check(cuModuleLoadData(&module, kPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&f, module, "noop"), "cuModuleGetFunction");
  if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, kWideShared, nullptr, nullptr, nullptr) != CUDA_ERROR_INVALID_VALUE)
    ++failures;
  check(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kWideShared), "cuFuncSetAttribute");
  check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, kWideShared, nullptr, nullptr, nullptr), "cuLaunchKernel");
  if (cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 64) == CUDA_SUCCESS) ++failures;  // read-only
  check(cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_L1), "cuFuncSetCacheConfig");
  CUlibrary library;
  CUkernel kernel;
  check(cuLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData");
  check(cuLibraryGetKernel(&kernel, library, "noop"), "cuLibraryGetKernel");
  check(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50, kernel, 0), "cuKernelSetAttribute");
  check(cuKernelSetCacheConfig(kernel, CU_FUNC_CACHE_PREFER_SHARED, 0), "cuKernelSetCacheConfig");
  check(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 << 20), "cuCtxSetLimit");
  check(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_NONE), "cuCtxSetCacheConfig");
  CUstreamAttrValue policy = {};
  policy.syncPolicy = CU_SYNC_POLICY_YIELD;
  check(cuStreamSetAttribute(reinterpret_cast<CUstream>(s), CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &policy),
        "cuStreamSetAttribute");
  check(cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuLibraryUnload(library), "cuLibraryUnload");
  check(cuModuleUnload(module), "cuModuleUnload");
  checkRuntime(cudaStreamDestroy(s), "cudaStreamDestroy");
  checkRuntime(cudaFree(p), "cudaFree");
  std::printf("settings made\n");
  return failures == 0 ? 0 : 1;
}
