// Stand-in libcuda.so.1 for machines without a GPU: the driver API a CUDA runtime and driver-API
// programs use, with the real symbol names and ABI. Device memory is host memory; kernels do
// not run. cuGetProcAddress answers like the real driver (newest version not above the one asked
// for, per-thread-stream variants on request) and returns the library's own exported addresses,
// which is what a tracer mapping pointers by identity relies on (linked with -Bsymbolic).
//
// Functions are defined under C++ names with the exported name as an asm label, so cuda.h's
// renaming macros (cuMemAlloc -> cuMemAlloc_v2, ...) never interfere.

#include <cuda.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#define EXPORT(name) __asm__(#name) __attribute__((visibility("default")))

namespace {

enum Magic : uint32_t { kFunction = 0xF00C7105, kKernel = 0x6E6E6E6E, kModule = 0x30D01E00, kStream = 0x57AE4400,
                        kEvent = 0xE7E47000, kContext = 0xC0C0C0C0, kLibrary = 0x11B2A2E0 };

struct Function {
  uint32_t magic = kFunction;
  std::string name;
};
struct Kernel {
  uint32_t magic = kKernel;
  Function function;
};
struct Module {
  uint32_t magic = kModule;
  std::mutex mutex;
  std::unordered_map<std::string, Function*> functions;
};
struct Library {
  uint32_t magic = kLibrary;
  std::mutex mutex;
  std::unordered_map<std::string, Kernel*> kernels;
};
struct Stream {
  uint32_t magic = kStream;
};
struct Event {
  uint32_t magic = kEvent;
  uint64_t ns = 0;
};
struct Context {
  uint32_t magic = kContext;
};

Context primaryContext;
std::atomic<bool> initialized{false};
thread_local CUcontext current = nullptr;

template <typename T>
bool is(const void* p, uint32_t magic) {
  return p != nullptr && static_cast<const T*>(p)->magic == magic;
}

bool validStream(CUstream s) { return s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || is<Stream>(s, kStream); }

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const Function* functionOf(CUfunction f) {
  // The CUDA 13 runtime launches CUkernels cast to CUfunction: accept both.
  if (is<Function>(f, kFunction)) return reinterpret_cast<const Function*>(f);
  if (is<Kernel>(f, kKernel)) return &reinterpret_cast<const Kernel*>(f)->function;
  return nullptr;
}

CUresult launchCheck(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, CUstream s) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (functionOf(f) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult copy(void* dst, const void* src, size_t n, CUstream s = nullptr) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (n != 0 && (dst == nullptr || src == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (n != 0) memmove(dst, src, n);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult fill(CUdeviceptr dst, T value, size_t count, CUstream s = nullptr) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (count != 0 && dst == 0) return CUDA_ERROR_INVALID_VALUE;
  T* p = reinterpret_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) p[i] = value;
  return CUDA_SUCCESS;
}

template <typename T>
CUresult fill2D(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height, CUstream s = nullptr) {
  for (size_t row = 0; row < height; ++row)
    if (CUresult r = fill<T>(dst + row * pitch, value, width, s)) return r;
  return CUDA_SUCCESS;
}

CUresult alloc(void** p, size_t n) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (p == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  *p = aligned_alloc(256, (n + 255) & ~size_t{255});
  if (*p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(*p, 0, n);
  return CUDA_SUCCESS;
}

CUresult allocDevice(CUdeviceptr* p, size_t n) {
  void* h = nullptr;
  const CUresult r = alloc(&h, n);
  if (r == CUDA_SUCCESS) *p = reinterpret_cast<CUdeviceptr>(h);
  return r;
}

const void* source2D(const CUDA_MEMCPY2D* c) {
  const char* base = c->srcMemoryType == CU_MEMORYTYPE_HOST ? static_cast<const char*>(c->srcHost)
                                                             : reinterpret_cast<const char*>(c->srcDevice);
  return base + c->srcY * c->srcPitch + c->srcXInBytes;
}

void* destination2D(const CUDA_MEMCPY2D* c) {
  char* base = c->dstMemoryType == CU_MEMORYTYPE_HOST ? static_cast<char*>(c->dstHost) : reinterpret_cast<char*>(c->dstDevice);
  return base + c->dstY * c->dstPitch + c->dstXInBytes;
}

CUresult copy2D(const CUDA_MEMCPY2D* c, CUstream s = nullptr) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* src = static_cast<const char*>(source2D(c));
  char* dst = static_cast<char*>(destination2D(c));
  for (size_t row = 0; row < c->Height; ++row)
    if (CUresult r = copy(dst + row * c->dstPitch, src + row * c->srcPitch, c->WidthInBytes, s)) return r;
  return CUDA_SUCCESS;
}

CUresult copy3D(const CUDA_MEMCPY3D* c, CUstream s = nullptr) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? static_cast<const char*>(c->srcHost)
                                                          : reinterpret_cast<const char*>(c->srcDevice);
  char* dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? static_cast<char*>(c->dstHost) : reinterpret_cast<char*>(c->dstDevice);
  for (size_t z = 0; z < c->Depth; ++z)
    for (size_t y = 0; y < c->Height; ++y) {
      const char* from = src + (z + c->srcZ) * c->srcPitch * c->srcHeight + (y + c->srcY) * c->srcPitch + c->srcXInBytes;
      char* to = dst + (z + c->dstZ) * c->dstPitch * c->dstHeight + (y + c->dstY) * c->dstPitch + c->dstXInBytes;
      if (CUresult r = copy(to, from, c->WidthInBytes, s)) return r;
    }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ initialisation, devices, contexts
CUresult fd_cuInit(unsigned flags) EXPORT(cuInit);
CUresult fd_cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  initialized = true;
  return CUDA_SUCCESS;
}
CUresult fd_cuDriverGetVersion(int* v) EXPORT(cuDriverGetVersion);
CUresult fd_cuDriverGetVersion(int* v) {
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult fd_cuDeviceGetCount(int* n) EXPORT(cuDeviceGetCount);
CUresult fd_cuDeviceGetCount(int* n) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult fd_cuDeviceGet(CUdevice* d, int ordinal) EXPORT(cuDeviceGet);
CUresult fd_cuDeviceGet(CUdevice* d, int ordinal) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fd_cuDeviceGetName(char* name, int len, CUdevice d) EXPORT(cuDeviceGetName);
CUresult fd_cuDeviceGetName(char* name, int len, CUdevice d) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, static_cast<size_t>(len), "%s", "cutrace stand-in GPU");
  return CUDA_SUCCESS;
}
CUresult fd_cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) EXPORT(cuDeviceGetAttribute);
CUresult fd_cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 2; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    default: *v = 0;
  }
  return CUDA_SUCCESS;
}
CUresult fd_cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) EXPORT(cuDevicePrimaryCtxRetain);
CUresult fd_cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  *c = reinterpret_cast<CUcontext>(&primaryContext);
  return CUDA_SUCCESS;
}
CUresult fd_cuDevicePrimaryCtxRelease_v2(CUdevice d) EXPORT(cuDevicePrimaryCtxRelease_v2);
CUresult fd_cuDevicePrimaryCtxRelease_v2(CUdevice d) { return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult fd_cuDevicePrimaryCtxReset_v2(CUdevice d) EXPORT(cuDevicePrimaryCtxReset_v2);
CUresult fd_cuDevicePrimaryCtxReset_v2(CUdevice d) { return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult fd_cuCtxGetCurrent(CUcontext* c) EXPORT(cuCtxGetCurrent);
CUresult fd_cuCtxGetCurrent(CUcontext* c) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *c = current;
  return CUDA_SUCCESS;
}
CUresult fd_cuCtxSetCurrent(CUcontext c) EXPORT(cuCtxSetCurrent);
CUresult fd_cuCtxSetCurrent(CUcontext c) {
  if (c != nullptr && !is<Context>(c, kContext)) return CUDA_ERROR_INVALID_CONTEXT;
  current = c;
  return CUDA_SUCCESS;
}
CUresult fd_cuCtxGetDevice(CUdevice* d) EXPORT(cuCtxGetDevice);
CUresult fd_cuCtxGetDevice(CUdevice* d) {
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fd_cuCtxDestroy_v2(CUcontext c) EXPORT(cuCtxDestroy_v2);
CUresult fd_cuCtxDestroy_v2(CUcontext c) { return is<Context>(c, kContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUresult fd_cuCtxSynchronize() EXPORT(cuCtxSynchronize);
CUresult fd_cuCtxSynchronize() { return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }
CUresult fd_cuCtxSynchronize_v2(CUcontext c) EXPORT(cuCtxSynchronize_v2);
CUresult fd_cuCtxSynchronize_v2(CUcontext c) {
  if (c != nullptr && !is<Context>(c, kContext)) return CUDA_ERROR_INVALID_CONTEXT;
  return fd_cuCtxSynchronize();
}

CUresult fd_cuGetErrorName(CUresult e, const char** s) EXPORT(cuGetErrorName);
CUresult fd_cuGetErrorName(CUresult e, const char** s) {
  if (s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
    case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *s = "CUDA_ERROR_UNKNOWN";
  }
  return CUDA_SUCCESS;
}
CUresult fd_cuGetErrorString(CUresult e, const char** s) EXPORT(cuGetErrorString);
CUresult fd_cuGetErrorString(CUresult e, const char** s) { return fd_cuGetErrorName(e, s); }
CUresult fd_cuGetExportTable(const void** table, const CUuuid* id) EXPORT(cuGetExportTable);
CUresult fd_cuGetExportTable(const void** table, const CUuuid*) {
  if (table != nullptr) *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;  // private runtime<->driver tables have no stand-in
}

// ------------------------------------------------------------------ modules, libraries, functions
CUresult fd_cuModuleLoadData(CUmodule* m, const void* image) EXPORT(cuModuleLoadData);
CUresult fd_cuModuleLoadData(CUmodule* m, const void* image) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (m == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *m = reinterpret_cast<CUmodule>(new Module());  // images are opaque here: any name resolves
  return CUDA_SUCCESS;
}
CUresult fd_cuModuleLoad(CUmodule* m, const char* path) EXPORT(cuModuleLoad);
CUresult fd_cuModuleLoad(CUmodule* m, const char* path) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return CUDA_ERROR_FILE_NOT_FOUND;
  fclose(f);
  return fd_cuModuleLoadData(m, path);
}
CUresult fd_cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) EXPORT(cuModuleGetFunction);
CUresult fd_cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  if (f == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!is<Module>(m, kModule)) return CUDA_ERROR_INVALID_HANDLE;
  auto* mod = reinterpret_cast<Module*>(m);
  std::lock_guard<std::mutex> lock(mod->mutex);
  Function*& fn = mod->functions[name];
  if (fn == nullptr) {
    fn = new Function();
    fn->name = name;
  }
  *f = reinterpret_cast<CUfunction>(fn);
  return CUDA_SUCCESS;
}
CUresult fd_cuModuleUnload(CUmodule m) EXPORT(cuModuleUnload);
CUresult fd_cuModuleUnload(CUmodule m) {
  // Function handles stay valid on purpose: a stand-in must never turn a late use into a crash.
  return is<Module>(m, kModule) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult fd_cuLibraryLoadData(CUlibrary* l, const void* code, CUjit_option*, void**, unsigned, CUlibraryOption*, void**,
                              unsigned) EXPORT(cuLibraryLoadData);
CUresult fd_cuLibraryLoadData(CUlibrary* l, const void* code, CUjit_option*, void**, unsigned, CUlibraryOption*, void**,
                              unsigned) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (l == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *l = reinterpret_cast<CUlibrary>(new Library());
  return CUDA_SUCCESS;
}
CUresult fd_cuLibraryGetKernel(CUkernel* k, CUlibrary l, const char* name) EXPORT(cuLibraryGetKernel);
CUresult fd_cuLibraryGetKernel(CUkernel* k, CUlibrary l, const char* name) {
  if (k == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!is<Library>(l, kLibrary)) return CUDA_ERROR_INVALID_HANDLE;
  auto* lib = reinterpret_cast<Library*>(l);
  std::lock_guard<std::mutex> lock(lib->mutex);
  Kernel*& kernel = lib->kernels[name];
  if (kernel == nullptr) {
    kernel = new Kernel();
    kernel->function.name = name;
  }
  *k = reinterpret_cast<CUkernel>(kernel);
  return CUDA_SUCCESS;
}
CUresult fd_cuLibraryUnload(CUlibrary l) EXPORT(cuLibraryUnload);
CUresult fd_cuLibraryUnload(CUlibrary l) { return is<Library>(l, kLibrary) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult fd_cuKernelGetFunction(CUfunction* f, CUkernel k) EXPORT(cuKernelGetFunction);
CUresult fd_cuKernelGetFunction(CUfunction* f, CUkernel k) {
  if (f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!is<Kernel>(k, kKernel)) return CUDA_ERROR_INVALID_HANDLE;
  *f = reinterpret_cast<CUfunction>(&reinterpret_cast<Kernel*>(k)->function);
  return CUDA_SUCCESS;
}
CUresult fd_cuFuncGetName(const char** name, CUfunction f) EXPORT(cuFuncGetName);
CUresult fd_cuFuncGetName(const char** name, CUfunction f) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Function* fn = functionOf(f);
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = fn->name.c_str();
  return CUDA_SUCCESS;
}
CUresult fd_cuKernelGetName(const char** name, CUkernel k) EXPORT(cuKernelGetName);
CUresult fd_cuKernelGetName(const char** name, CUkernel k) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!is<Kernel>(k, kKernel)) return CUDA_ERROR_INVALID_HANDLE;
  *name = reinterpret_cast<Kernel*>(k)->function.name.c_str();
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------ launches
#define FD_LAUNCH(name)                                                                                                 \
  CUresult fd_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,        \
                     unsigned shared, CUstream s, void** params, void** extra) EXPORT(name);                            \
  CUresult fd_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,        \
                     unsigned, CUstream s, void**, void**) {                                                           \
    return launchCheck(f, gx, gy, gz, bx, by, bz, s);                                                                 \
  }
FD_LAUNCH(cuLaunchKernel)
FD_LAUNCH(cuLaunchKernel_ptsz)
#undef FD_LAUNCH
#define FD_LAUNCH_COOP(name)                                                                                            \
  CUresult fd_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,        \
                     unsigned shared, CUstream s, void** params) EXPORT(name);                                          \
  CUresult fd_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,        \
                     unsigned, CUstream s, void**) {                                                                   \
    return launchCheck(f, gx, gy, gz, bx, by, bz, s);                                                                 \
  }
FD_LAUNCH_COOP(cuLaunchCooperativeKernel)
FD_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)
#undef FD_LAUNCH_COOP
#define FD_LAUNCH_EX(name)                                                                            \
  CUresult fd_##name(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) EXPORT(name); \
  CUresult fd_##name(const CUlaunchConfig* c, CUfunction f, void**, void**) {                         \
    if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;                                                \
    return launchCheck(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,          \
                       c->blockDimZ, c->hStream);                                                     \
  }
FD_LAUNCH_EX(cuLaunchKernelEx)
FD_LAUNCH_EX(cuLaunchKernelEx_ptsz)
#undef FD_LAUNCH_EX
#define FD_GRAPH(name)                                                  \
  CUresult fd_##name(CUgraphExec g, CUstream s) EXPORT(name);           \
  CUresult fd_##name(CUgraphExec g, CUstream s) {                      \
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;               \
    return g != nullptr && validStream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; \
  }
FD_GRAPH(cuGraphLaunch)
FD_GRAPH(cuGraphLaunch_ptsz)
#undef FD_GRAPH

// ------------------------------------------------------------------ memory
CUresult fd_cuMemAlloc_v2(CUdeviceptr* p, size_t n) EXPORT(cuMemAlloc_v2);
CUresult fd_cuMemAlloc_v2(CUdeviceptr* p, size_t n) { return allocDevice(p, n); }
CUresult fd_cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned) EXPORT(cuMemAllocManaged);
CUresult fd_cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned) { return allocDevice(p, n); }
CUresult fd_cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned) EXPORT(cuMemAllocPitch_v2);
CUresult fd_cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned) {
  if (pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pitch = (w + 511) & ~size_t{511};
  return allocDevice(p, *pitch * h);
}
CUresult fd_cuMemAllocHost_v2(void** p, size_t n) EXPORT(cuMemAllocHost_v2);
CUresult fd_cuMemAllocHost_v2(void** p, size_t n) { return alloc(p, n); }
CUresult fd_cuMemHostAlloc(void** p, size_t n, unsigned) EXPORT(cuMemHostAlloc);
CUresult fd_cuMemHostAlloc(void** p, size_t n, unsigned) { return alloc(p, n); }
CUresult fd_cuMemFree_v2(CUdeviceptr p) EXPORT(cuMemFree_v2);
CUresult fd_cuMemFree_v2(CUdeviceptr p) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult fd_cuMemFreeHost(void* p) EXPORT(cuMemFreeHost);
CUresult fd_cuMemFreeHost(void* p) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  free(p);
  return CUDA_SUCCESS;
}
#define FD_ALLOC_ASYNC(name)                                                        \
  CUresult fd_##name(CUdeviceptr* p, size_t n, CUstream s) EXPORT(name);            \
  CUresult fd_##name(CUdeviceptr* p, size_t n, CUstream s) {                       \
    return validStream(s) ? allocDevice(p, n) : CUDA_ERROR_INVALID_HANDLE;          \
  }
FD_ALLOC_ASYNC(cuMemAllocAsync)
FD_ALLOC_ASYNC(cuMemAllocAsync_ptsz)
#undef FD_ALLOC_ASYNC
#define FD_ALLOC_POOL(name)                                                               \
  CUresult fd_##name(CUdeviceptr* p, size_t n, CUmemoryPool, CUstream s) EXPORT(name);    \
  CUresult fd_##name(CUdeviceptr* p, size_t n, CUmemoryPool, CUstream s) {               \
    return validStream(s) ? allocDevice(p, n) : CUDA_ERROR_INVALID_HANDLE;                \
  }
FD_ALLOC_POOL(cuMemAllocFromPoolAsync)
FD_ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz)
#undef FD_ALLOC_POOL
#define FD_FREE_ASYNC(name)                                          \
  CUresult fd_##name(CUdeviceptr p, CUstream s) EXPORT(name);        \
  CUresult fd_##name(CUdeviceptr p, CUstream s) {                   \
    if (!validStream(s)) return CUDA_ERROR_INVALID_HANDLE;           \
    return fd_cuMemFree_v2(p);                                       \
  }
FD_FREE_ASYNC(cuMemFreeAsync)
FD_FREE_ASYNC(cuMemFreeAsync_ptsz)
#undef FD_FREE_ASYNC

// ------------------------------------------------------------------ copies
#define FD_COPY_PAIR(name, dstT, srcT, dstExpr, srcExpr)                                   \
  CUresult fd_##name(dstT dst, srcT src, size_t n) EXPORT(name);                             \
  CUresult fd_##name(dstT dst, srcT src, size_t n) { return copy(dstExpr, srcExpr, n); }      \
  CUresult fd_##name##_ptds(dstT dst, srcT src, size_t n) EXPORT(name##_ptds);                \
  CUresult fd_##name##_ptds(dstT dst, srcT src, size_t n) { return copy(dstExpr, srcExpr, n); }
#define FD_COPY_ASYNC_PAIR(name, dstT, srcT, dstExpr, srcExpr)                                            \
  CUresult fd_##name(dstT dst, srcT src, size_t n, CUstream s) EXPORT(name);                                \
  CUresult fd_##name(dstT dst, srcT src, size_t n, CUstream s) { return copy(dstExpr, srcExpr, n, s); }      \
  CUresult fd_##name##_ptsz(dstT dst, srcT src, size_t n, CUstream s) EXPORT(name##_ptsz);                   \
  CUresult fd_##name##_ptsz(dstT dst, srcT src, size_t n, CUstream s) { return copy(dstExpr, srcExpr, n, s); }
#define DEV(x) reinterpret_cast<void*>(x)
#define CDEV(x) reinterpret_cast<const void*>(x)
FD_COPY_PAIR(cuMemcpy, CUdeviceptr, CUdeviceptr, DEV(dst), CDEV(src))
FD_COPY_PAIR(cuMemcpyHtoD_v2, CUdeviceptr, const void*, DEV(dst), src)
FD_COPY_PAIR(cuMemcpyDtoH_v2, void*, CUdeviceptr, dst, CDEV(src))
FD_COPY_PAIR(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, DEV(dst), CDEV(src))
FD_COPY_ASYNC_PAIR(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, DEV(dst), CDEV(src))
FD_COPY_ASYNC_PAIR(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void*, DEV(dst), src)
FD_COPY_ASYNC_PAIR(cuMemcpyDtoHAsync_v2, void*, CUdeviceptr, dst, CDEV(src))
FD_COPY_ASYNC_PAIR(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, DEV(dst), CDEV(src))
#undef FD_COPY_PAIR
#undef FD_COPY_ASYNC_PAIR

#define FD_COPY_STRUCT(name, T, impl)                                             \
  CUresult fd_##name(const T* c) EXPORT(name);                                    \
  CUresult fd_##name(const T* c) { return impl(c); }                               \
  CUresult fd_##name##_ptds(const T* c) EXPORT(name##_ptds);                      \
  CUresult fd_##name##_ptds(const T* c) { return impl(c); }
#define FD_COPY_STRUCT_ASYNC(name, T, impl)                                       \
  CUresult fd_##name(const T* c, CUstream s) EXPORT(name);                        \
  CUresult fd_##name(const T* c, CUstream s) { return impl(c, s); }                \
  CUresult fd_##name##_ptsz(const T* c, CUstream s) EXPORT(name##_ptsz);          \
  CUresult fd_##name##_ptsz(const T* c, CUstream s) { return impl(c, s); }
CUresult copy2DDefault(const CUDA_MEMCPY2D* c) { return copy2D(c); }
CUresult copy3DDefault(const CUDA_MEMCPY3D* c) { return copy3D(c); }
FD_COPY_STRUCT(cuMemcpy2D_v2, CUDA_MEMCPY2D, copy2DDefault)
FD_COPY_STRUCT(cuMemcpy2DUnaligned_v2, CUDA_MEMCPY2D, copy2DDefault)
FD_COPY_STRUCT(cuMemcpy3D_v2, CUDA_MEMCPY3D, copy3DDefault)
FD_COPY_STRUCT_ASYNC(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D, copy2D)
FD_COPY_STRUCT_ASYNC(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D, copy3D)
#undef FD_COPY_STRUCT
#undef FD_COPY_STRUCT_ASYNC

CUresult fd_cuMemcpyPeer(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n) EXPORT(cuMemcpyPeer);
CUresult fd_cuMemcpyPeer(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n) { return copy(DEV(d), CDEV(s), n); }
CUresult fd_cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n) EXPORT(cuMemcpyPeer_ptds);
CUresult fd_cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n) { return copy(DEV(d), CDEV(s), n); }
CUresult fd_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n, CUstream st) EXPORT(cuMemcpyPeerAsync);
CUresult fd_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n, CUstream st) {
  return copy(DEV(d), CDEV(s), n, st);
}
CUresult fd_cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n, CUstream st)
    EXPORT(cuMemcpyPeerAsync_ptsz);
CUresult fd_cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n, CUstream st) {
  return copy(DEV(d), CDEV(s), n, st);
}
#undef DEV
#undef CDEV

// ------------------------------------------------------------------ sets
#define FD_MEMSET(name, T)                                                                     \
  CUresult fd_##name(CUdeviceptr d, T v, size_t n) EXPORT(name);                            \
  CUresult fd_##name(CUdeviceptr d, T v, size_t n) { return fill<T>(d, v, n); }              \
  CUresult fd_##name##_ptds(CUdeviceptr d, T v, size_t n) EXPORT(name##_ptds);              \
  CUresult fd_##name##_ptds(CUdeviceptr d, T v, size_t n) { return fill<T>(d, v, n); }
#define FD_SET_ASYNC(name, T)                                                                         \
  CUresult fd_##name(CUdeviceptr d, T v, size_t n, CUstream s) EXPORT(name);                          \
  CUresult fd_##name(CUdeviceptr d, T v, size_t n, CUstream s) { return fill<T>(d, v, n, s); }         \
  CUresult fd_##name##_ptsz(CUdeviceptr d, T v, size_t n, CUstream s) EXPORT(name##_ptsz);            \
  CUresult fd_##name##_ptsz(CUdeviceptr d, T v, size_t n, CUstream s) { return fill<T>(d, v, n, s); }
#define FD_SET2D(name, T)                                                                                           \
  CUresult fd_##name(CUdeviceptr d, size_t p, T v, size_t w, size_t h) EXPORT(name);                                \
  CUresult fd_##name(CUdeviceptr d, size_t p, T v, size_t w, size_t h) { return fill2D<T>(d, p, v, w, h); }          \
  CUresult fd_##name##_ptds(CUdeviceptr d, size_t p, T v, size_t w, size_t h) EXPORT(name##_ptds);                  \
  CUresult fd_##name##_ptds(CUdeviceptr d, size_t p, T v, size_t w, size_t h) { return fill2D<T>(d, p, v, w, h); }
#define FD_SET2D_ASYNC(name, T)                                                                                              \
  CUresult fd_##name(CUdeviceptr d, size_t p, T v, size_t w, size_t h, CUstream s) EXPORT(name);                             \
  CUresult fd_##name(CUdeviceptr d, size_t p, T v, size_t w, size_t h, CUstream s) { return fill2D<T>(d, p, v, w, h, s); }    \
  CUresult fd_##name##_ptsz(CUdeviceptr d, size_t p, T v, size_t w, size_t h, CUstream s) EXPORT(name##_ptsz);               \
  CUresult fd_##name##_ptsz(CUdeviceptr d, size_t p, T v, size_t w, size_t h, CUstream s) { return fill2D<T>(d, p, v, w, h, s); }
FD_MEMSET(cuMemsetD8_v2, unsigned char)
FD_MEMSET(cuMemsetD16_v2, unsigned short)
FD_MEMSET(cuMemsetD32_v2, unsigned int)
FD_SET_ASYNC(cuMemsetD8Async, unsigned char)
FD_SET_ASYNC(cuMemsetD16Async, unsigned short)
FD_SET_ASYNC(cuMemsetD32Async, unsigned int)
FD_SET2D(cuMemsetD2D8_v2, unsigned char)
FD_SET2D(cuMemsetD2D16_v2, unsigned short)
FD_SET2D(cuMemsetD2D32_v2, unsigned int)
FD_SET2D_ASYNC(cuMemsetD2D8Async, unsigned char)
FD_SET2D_ASYNC(cuMemsetD2D16Async, unsigned short)
FD_SET2D_ASYNC(cuMemsetD2D32Async, unsigned int)
#undef FD_MEMSET
#undef FD_SET_ASYNC
#undef FD_SET2D
#undef FD_SET2D_ASYNC

// ------------------------------------------------------------------ streams, events, profiler
CUresult fd_cuStreamCreate(CUstream* s, unsigned) EXPORT(cuStreamCreate);
CUresult fd_cuStreamCreate(CUstream* s, unsigned) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *s = reinterpret_cast<CUstream>(new Stream());
  return CUDA_SUCCESS;
}
CUresult fd_cuStreamCreateWithPriority(CUstream* s, unsigned flags, int) EXPORT(cuStreamCreateWithPriority);
CUresult fd_cuStreamCreateWithPriority(CUstream* s, unsigned flags, int) { return fd_cuStreamCreate(s, flags); }
CUresult fd_cuStreamDestroy_v2(CUstream s) EXPORT(cuStreamDestroy_v2);
CUresult fd_cuStreamDestroy_v2(CUstream s) {
  if (!is<Stream>(s, kStream)) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<Stream*>(s)->magic = 0;
  delete reinterpret_cast<Stream*>(s);
  return CUDA_SUCCESS;
}
#define FD_STREAM_OP(name)                                                             \
  CUresult fd_##name(CUstream s) EXPORT(name);                                         \
  CUresult fd_##name(CUstream s) {                                                     \
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;                                \
    return validStream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;                   \
  }
FD_STREAM_OP(cuStreamSynchronize)
FD_STREAM_OP(cuStreamSynchronize_ptsz)
FD_STREAM_OP(cuStreamQuery)
FD_STREAM_OP(cuStreamQuery_ptsz)
#undef FD_STREAM_OP
CUresult fd_cuEventCreate(CUevent* e, unsigned) EXPORT(cuEventCreate);
CUresult fd_cuEventCreate(CUevent* e, unsigned) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (e == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *e = reinterpret_cast<CUevent>(new Event());
  return CUDA_SUCCESS;
}
#define FD_EVENT_RECORD(name)                                                          \
  CUresult fd_##name(CUevent e, CUstream s) EXPORT(name);                              \
  CUresult fd_##name(CUevent e, CUstream s) {                                         \
    if (!is<Event>(e, kEvent) || !validStream(s)) return CUDA_ERROR_INVALID_HANDLE;     \
    reinterpret_cast<Event*>(e)->ns = nowNs();                                          \
    return CUDA_SUCCESS;                                                                \
  }
FD_EVENT_RECORD(cuEventRecord)
FD_EVENT_RECORD(cuEventRecord_ptsz)
#undef FD_EVENT_RECORD
CUresult fd_cuEventSynchronize(CUevent e) EXPORT(cuEventSynchronize);
CUresult fd_cuEventSynchronize(CUevent e) { return is<Event>(e, kEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult fd_cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) EXPORT(cuEventElapsedTime_v2);
CUresult fd_cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!is<Event>(a, kEvent) || !is<Event>(b, kEvent)) return CUDA_ERROR_INVALID_HANDLE;
  *ms = static_cast<float>(static_cast<double>(reinterpret_cast<Event*>(b)->ns - reinterpret_cast<Event*>(a)->ns) / 1e6);
  return CUDA_SUCCESS;
}
CUresult fd_cuEventDestroy_v2(CUevent e) EXPORT(cuEventDestroy_v2);
CUresult fd_cuEventDestroy_v2(CUevent e) {
  if (!is<Event>(e, kEvent)) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<Event*>(e)->magic = 0;
  delete reinterpret_cast<Event*>(e);
  return CUDA_SUCCESS;
}
CUresult fd_cuProfilerStart() EXPORT(cuProfilerStart);
CUresult fd_cuProfilerStart() { return CUDA_SUCCESS; }
CUresult fd_cuProfilerStop() EXPORT(cuProfilerStop);
CUresult fd_cuProfilerStop() { return CUDA_SUCCESS; }

// ------------------------------------------------------------------ cuGetProcAddress
CUresult fd_cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult* status) EXPORT(cuGetProcAddress_v2);
CUresult fd_cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) EXPORT(cuGetProcAddress);

}  // extern "C"

namespace {

// {name as asked, first driver version that has this entry, default entry, per-thread entry}
struct ProcEntry {
  const char* name;
  int version;
  void* function;
  void* perThread;
};

#define F(x) reinterpret_cast<void*>(&fd_##x)
const ProcEntry kProcTable[] = {
    {"cuInit", 2000, F(cuInit), nullptr},
    {"cuDriverGetVersion", 2020, F(cuDriverGetVersion), nullptr},
    {"cuDeviceGetCount", 2000, F(cuDeviceGetCount), nullptr},
    {"cuDeviceGet", 2000, F(cuDeviceGet), nullptr},
    {"cuDeviceGetName", 2000, F(cuDeviceGetName), nullptr},
    {"cuDeviceGetAttribute", 2000, F(cuDeviceGetAttribute), nullptr},
    {"cuDevicePrimaryCtxRetain", 7000, F(cuDevicePrimaryCtxRetain), nullptr},
    {"cuDevicePrimaryCtxRelease", 11000, F(cuDevicePrimaryCtxRelease_v2), nullptr},
    {"cuDevicePrimaryCtxReset", 11000, F(cuDevicePrimaryCtxReset_v2), nullptr},
    {"cuCtxGetCurrent", 4000, F(cuCtxGetCurrent), nullptr},
    {"cuCtxSetCurrent", 4000, F(cuCtxSetCurrent), nullptr},
    {"cuCtxGetDevice", 2000, F(cuCtxGetDevice), nullptr},
    {"cuCtxDestroy", 4000, F(cuCtxDestroy_v2), nullptr},
    {"cuCtxSynchronize", 2000, F(cuCtxSynchronize), nullptr},
    {"cuCtxSynchronize", 12080, F(cuCtxSynchronize_v2), nullptr},
    {"cuGetErrorName", 6000, F(cuGetErrorName), nullptr},
    {"cuGetErrorString", 6000, F(cuGetErrorString), nullptr},
    {"cuGetExportTable", 3000, F(cuGetExportTable), nullptr},
    {"cuModuleLoadData", 2000, F(cuModuleLoadData), nullptr},
    {"cuModuleLoad", 2000, F(cuModuleLoad), nullptr},
    {"cuModuleGetFunction", 2000, F(cuModuleGetFunction), nullptr},
    {"cuModuleUnload", 2000, F(cuModuleUnload), nullptr},
    {"cuLibraryLoadData", 12000, F(cuLibraryLoadData), nullptr},
    {"cuLibraryGetKernel", 12000, F(cuLibraryGetKernel), nullptr},
    {"cuLibraryUnload", 12000, F(cuLibraryUnload), nullptr},
    {"cuKernelGetFunction", 12000, F(cuKernelGetFunction), nullptr},
    {"cuFuncGetName", 12030, F(cuFuncGetName), nullptr},
    {"cuKernelGetName", 12030, F(cuKernelGetName), nullptr},
    {"cuLaunchKernel", 4000, F(cuLaunchKernel), F(cuLaunchKernel_ptsz)},
    {"cuLaunchKernelEx", 11060, F(cuLaunchKernelEx), F(cuLaunchKernelEx_ptsz)},
    {"cuLaunchCooperativeKernel", 9000, F(cuLaunchCooperativeKernel), F(cuLaunchCooperativeKernel_ptsz)},
    {"cuGraphLaunch", 10000, F(cuGraphLaunch), F(cuGraphLaunch_ptsz)},
    {"cuMemAlloc", 3020, F(cuMemAlloc_v2), nullptr},
    {"cuMemAllocManaged", 6000, F(cuMemAllocManaged), nullptr},
    {"cuMemAllocPitch", 3020, F(cuMemAllocPitch_v2), nullptr},
    {"cuMemAllocHost", 3020, F(cuMemAllocHost_v2), nullptr},
    {"cuMemHostAlloc", 2020, F(cuMemHostAlloc), nullptr},
    {"cuMemFree", 3020, F(cuMemFree_v2), nullptr},
    {"cuMemFreeHost", 2000, F(cuMemFreeHost), nullptr},
    {"cuMemAllocAsync", 11020, F(cuMemAllocAsync), F(cuMemAllocAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, F(cuMemAllocFromPoolAsync), F(cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemFreeAsync", 11020, F(cuMemFreeAsync), F(cuMemFreeAsync_ptsz)},
    {"cuMemcpy", 4000, F(cuMemcpy), F(cuMemcpy_ptds)},
    {"cuMemcpyAsync", 4000, F(cuMemcpyAsync), F(cuMemcpyAsync_ptsz)},
    {"cuMemcpyHtoD", 3020, F(cuMemcpyHtoD_v2), F(cuMemcpyHtoD_v2_ptds)},
    {"cuMemcpyDtoH", 3020, F(cuMemcpyDtoH_v2), F(cuMemcpyDtoH_v2_ptds)},
    {"cuMemcpyDtoD", 3020, F(cuMemcpyDtoD_v2), F(cuMemcpyDtoD_v2_ptds)},
    {"cuMemcpyHtoDAsync", 3020, F(cuMemcpyHtoDAsync_v2), F(cuMemcpyHtoDAsync_v2_ptsz)},
    {"cuMemcpyDtoHAsync", 3020, F(cuMemcpyDtoHAsync_v2), F(cuMemcpyDtoHAsync_v2_ptsz)},
    {"cuMemcpyDtoDAsync", 3020, F(cuMemcpyDtoDAsync_v2), F(cuMemcpyDtoDAsync_v2_ptsz)},
    {"cuMemcpy2D", 3020, F(cuMemcpy2D_v2), F(cuMemcpy2D_v2_ptds)},
    {"cuMemcpy2DUnaligned", 3020, F(cuMemcpy2DUnaligned_v2), F(cuMemcpy2DUnaligned_v2_ptds)},
    {"cuMemcpy2DAsync", 3020, F(cuMemcpy2DAsync_v2), F(cuMemcpy2DAsync_v2_ptsz)},
    {"cuMemcpy3D", 3020, F(cuMemcpy3D_v2), F(cuMemcpy3D_v2_ptds)},
    {"cuMemcpy3DAsync", 3020, F(cuMemcpy3DAsync_v2), F(cuMemcpy3DAsync_v2_ptsz)},
    {"cuMemcpyPeer", 4000, F(cuMemcpyPeer), F(cuMemcpyPeer_ptds)},
    {"cuMemcpyPeerAsync", 4000, F(cuMemcpyPeerAsync), F(cuMemcpyPeerAsync_ptsz)},
    {"cuMemsetD8", 3020, F(cuMemsetD8_v2), F(cuMemsetD8_v2_ptds)},
    {"cuMemsetD16", 3020, F(cuMemsetD16_v2), F(cuMemsetD16_v2_ptds)},
    {"cuMemsetD32", 3020, F(cuMemsetD32_v2), F(cuMemsetD32_v2_ptds)},
    {"cuMemsetD8Async", 3020, F(cuMemsetD8Async), F(cuMemsetD8Async_ptsz)},
    {"cuMemsetD16Async", 3020, F(cuMemsetD16Async), F(cuMemsetD16Async_ptsz)},
    {"cuMemsetD32Async", 3020, F(cuMemsetD32Async), F(cuMemsetD32Async_ptsz)},
    {"cuMemsetD2D8", 3020, F(cuMemsetD2D8_v2), F(cuMemsetD2D8_v2_ptds)},
    {"cuMemsetD2D16", 3020, F(cuMemsetD2D16_v2), F(cuMemsetD2D16_v2_ptds)},
    {"cuMemsetD2D32", 3020, F(cuMemsetD2D32_v2), F(cuMemsetD2D32_v2_ptds)},
    {"cuMemsetD2D8Async", 3020, F(cuMemsetD2D8Async), F(cuMemsetD2D8Async_ptsz)},
    {"cuMemsetD2D16Async", 3020, F(cuMemsetD2D16Async), F(cuMemsetD2D16Async_ptsz)},
    {"cuMemsetD2D32Async", 3020, F(cuMemsetD2D32Async), F(cuMemsetD2D32Async_ptsz)},
    {"cuStreamCreate", 2000, F(cuStreamCreate), nullptr},
    {"cuStreamCreateWithPriority", 5050, F(cuStreamCreateWithPriority), nullptr},
    {"cuStreamDestroy", 4000, F(cuStreamDestroy_v2), nullptr},
    {"cuStreamSynchronize", 2000, F(cuStreamSynchronize), F(cuStreamSynchronize_ptsz)},
    {"cuStreamQuery", 2000, F(cuStreamQuery), F(cuStreamQuery_ptsz)},
    {"cuEventCreate", 2000, F(cuEventCreate), nullptr},
    {"cuEventRecord", 2000, F(cuEventRecord), F(cuEventRecord_ptsz)},
    {"cuEventSynchronize", 2000, F(cuEventSynchronize), nullptr},
    {"cuEventElapsedTime", 12080, F(cuEventElapsedTime_v2), nullptr},
    {"cuEventDestroy", 4000, F(cuEventDestroy_v2), nullptr},
    {"cuProfilerStart", 4000, F(cuProfilerStart), nullptr},
    {"cuProfilerStop", 4000, F(cuProfilerStop), nullptr},
    {"cuGetProcAddress", 11030, F(cuGetProcAddress), nullptr},
    {"cuGetProcAddress", 12000, F(cuGetProcAddress_v2), nullptr},
};
#undef F

}  // namespace

extern "C" {

CUresult fd_cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const ProcEntry* best = nullptr;
  bool known = false;
  for (const ProcEntry& e : kProcTable) {
    if (strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version <= version && (best == nullptr || e.version > best->version)) best = &e;
  }
  if (best == nullptr) {
    if (status != nullptr) *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  const bool perThread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  *pfn = perThread && best->perThread != nullptr ? best->perThread : best->function;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult fd_cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return fd_cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

}  // extern "C"
