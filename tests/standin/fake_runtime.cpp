// Stand-in libcudart.so.13 for machines without a GPU. It reaches the driver exactly as the real
// CUDA runtime does: dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), ask that function for
// "cuGetProcAddress" itself (at 11030 and 12000), then fetch the whole driver table through the
// pointer that lookup returned: once with default streams, once with per-thread streams for
// the _ptsz/_ptds entry points. Every runtime call that has a driver counterpart makes it, so a
// trace shows the runtime call with the driver call inside, as on a GPU.
//
// Kernels registered by nvcc-generated code are loaded as CUkernels (cuLibraryLoadData +
// cuLibraryGetKernel) and launched cast to CUfunction, like the CUDA 13 runtime does.

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#define EXPORT __attribute__((visibility("default")))

namespace {

using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// Driver entry points, fetched by name; one table per stream semantics.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxReset)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuLibraryLoadData)(CUlibrary*, const void*, CUjit_option*, void**, unsigned, CUlibraryOption*, void**, unsigned);
  CUresult (*cuLibraryGetKernel)(CUkernel*, CUlibrary, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  CUresult (*cuLaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemAllocPitch)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
  CUresult (*cuMemAllocManaged)(CUdeviceptr*, size_t, unsigned);
  CUresult (*cuMemAllocHost)(void**, size_t);
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemAllocAsync)(CUdeviceptr*, size_t, CUstream);
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpy2D)(const CUDA_MEMCPY2D*);
  CUresult (*cuMemcpy2DAsync)(const CUDA_MEMCPY2D*, CUstream);
  CUresult (*cuMemcpy3D)(const CUDA_MEMCPY3D*);
  CUresult (*cuMemcpy3DAsync)(const CUDA_MEMCPY3D*, CUstream);
  CUresult (*cuMemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemsetD2D8)(CUdeviceptr, size_t, unsigned char, size_t, size_t);
  CUresult (*cuMemsetD2D8Async)(CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuProfilerStart)();
  CUresult (*cuProfilerStop)();
};

struct Registered {
  std::string name;   // mangled device name
  void** module;      // fat binary handle it came with
  CUkernel kernel = nullptr;
};

struct Runtime {
  std::once_flag once;
  cudaError_t initError = cudaSuccess;
  Driver d{};   // default stream semantics
  Driver p{};   // per-thread default stream (_ptsz/_ptds entry points)
  int driverVersion = 0;
  std::mutex mutex;
  std::unordered_map<const void*, Registered> functions;  // host stub -> kernel
  std::unordered_map<void**, CUlibrary> libraries;
  std::unordered_map<const void*, CUdeviceptr> symbols;   // host shadow -> device copy
};

Runtime& rt() {
  static Runtime* r = new Runtime();  // never destroyed: programs call us from their destructors
  return *r;
}

thread_local cudaError_t lastError = cudaSuccess;
struct CallConfiguration {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};
thread_local std::vector<CallConfiguration> callStack;

cudaError_t fromDriver(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    default: return cudaErrorUnknown;
  }
}

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) lastError = e;
  return e;
}

// Entries are asked for at the version whose signature the table declares: cuCtxSynchronize
// gained a context argument in 12.8 (cuCtxSynchronize_v2).
template <typename Fn>
bool fetch(GetProcV2 getProc, const char* name, Fn& out, cuuint64_t flags) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status;
  const int version = strcmp(name, "cuCtxSynchronize") == 0 ? 12000 : 13000;
  if (getProc(name, &p, version, flags, &status) != CUDA_SUCCESS || p == nullptr) return false;
  out = reinterpret_cast<Fn>(p);
  return true;
}

bool fetchTable(GetProcV2 g, Driver& t, cuuint64_t flags) {
  bool ok = true;
#define FETCH(field) ok = fetch(g, #field, t.field, flags) && ok;
  FETCH(cuInit) FETCH(cuDeviceGetCount) FETCH(cuDeviceGet) FETCH(cuDevicePrimaryCtxRetain) FETCH(cuDevicePrimaryCtxReset)
  FETCH(cuCtxSetCurrent) FETCH(cuCtxSynchronize) FETCH(cuLibraryLoadData) FETCH(cuLibraryGetKernel) FETCH(cuLaunchKernel)
  FETCH(cuLaunchKernelEx) FETCH(cuLaunchCooperativeKernel) FETCH(cuGraphLaunch) FETCH(cuMemAlloc) FETCH(cuMemAllocPitch)
  FETCH(cuMemAllocManaged) FETCH(cuMemAllocHost) FETCH(cuMemHostAlloc) FETCH(cuMemFree) FETCH(cuMemFreeHost)
  FETCH(cuMemAllocAsync) FETCH(cuMemAllocFromPoolAsync) FETCH(cuMemFreeAsync) FETCH(cuMemcpy) FETCH(cuMemcpyAsync)
  FETCH(cuMemcpyHtoD) FETCH(cuMemcpyDtoH) FETCH(cuMemcpyDtoD) FETCH(cuMemcpyHtoDAsync) FETCH(cuMemcpyDtoHAsync)
  FETCH(cuMemcpyDtoDAsync) FETCH(cuMemcpy2D) FETCH(cuMemcpy2DAsync) FETCH(cuMemcpy3D) FETCH(cuMemcpy3DAsync)
  FETCH(cuMemcpyPeer) FETCH(cuMemcpyPeerAsync) FETCH(cuMemsetD8) FETCH(cuMemsetD8Async) FETCH(cuMemsetD2D8)
  FETCH(cuMemsetD2D8Async) FETCH(cuStreamCreate) FETCH(cuStreamDestroy) FETCH(cuStreamSynchronize) FETCH(cuEventCreate)
  FETCH(cuEventRecord) FETCH(cuEventSynchronize) FETCH(cuEventElapsedTime) FETCH(cuEventDestroy) FETCH(cuProfilerStart)
  FETCH(cuProfilerStop)
#undef FETCH
  return ok;
}

void initialise(Runtime& r) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    r.initError = cudaErrorInsufficientDriver;
    return;
  }
  auto bootstrap = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
  GetProcV1 getProc1 = nullptr;
  GetProcV2 getProc2 = nullptr;
  CUdriverProcAddressQueryResult status;
  if (bootstrap == nullptr ||
      bootstrap("cuGetProcAddress", reinterpret_cast<void**>(&getProc1), 11030, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      bootstrap("cuGetProcAddress", reinterpret_cast<void**>(&getProc2), 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      getProc1 == nullptr || getProc2 == nullptr) {
    r.initError = cudaErrorInsufficientDriver;
    return;
  }
  void* driverGetVersion = nullptr;
  if (getProc1("cuDriverGetVersion", &driverGetVersion, 2020, CU_GET_PROC_ADDRESS_DEFAULT) != CUDA_SUCCESS ||
      reinterpret_cast<CUresult (*)(int*)>(driverGetVersion)(&r.driverVersion) != CUDA_SUCCESS) {
    r.initError = cudaErrorInsufficientDriver;
    return;
  }
  if (!fetchTable(getProc2, r.d, CU_GET_PROC_ADDRESS_DEFAULT) ||
      !fetchTable(getProc2, r.p, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) {
    r.initError = cudaErrorInsufficientDriver;
    return;
  }
  CUdevice dev;
  CUcontext ctx;
  if (r.d.cuInit(0) != CUDA_SUCCESS || r.d.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      r.d.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || r.d.cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    r.initError = cudaErrorNoDevice;
}

// The driver table for the calling entry point, once the runtime is up; nullptr on failure
// (the error is recorded).
const Driver* driver(bool perThread = false) {
  Runtime& r = rt();
  std::call_once(r.once, [&] { initialise(r); });
  if (r.initError != cudaSuccess) {
    record(r.initError);
    return nullptr;
  }
  return perThread ? &r.p : &r.d;
}

#define DRIVER(perThread)                                         \
  const Driver* D = driver(perThread);                            \
  if (D == nullptr) return rt().initError

cudaError_t call(CUresult r) { return record(fromDriver(r)); }

// The kernel for a host stub or a cudaKernel_t (which is a CUkernel).
CUfunction kernelFor(const void* func, cudaError_t& error) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.functions.find(func);
  if (it == r.functions.end()) {
    for (auto& [stub, reg] : r.functions)
      if (reg.kernel != nullptr && reinterpret_cast<const void*>(reg.kernel) == func) return reinterpret_cast<CUfunction>(reg.kernel);
    error = cudaErrorInvalidDeviceFunction;
    return nullptr;
  }
  Registered& reg = it->second;
  if (reg.kernel == nullptr) {
    CUlibrary& lib = r.libraries[reg.module];
    if (lib == nullptr && r.d.cuLibraryLoadData(&lib, reg.module, nullptr, nullptr, 0, nullptr, nullptr, 0) != CUDA_SUCCESS) {
      error = cudaErrorInvalidKernelImage;
      return nullptr;
    }
    if (r.d.cuLibraryGetKernel(&reg.kernel, lib, reg.name.c_str()) != CUDA_SUCCESS) {
      error = cudaErrorInvalidDeviceFunction;
      return nullptr;
    }
  }
  return reinterpret_cast<CUfunction>(reg.kernel);
}

cudaError_t launch(bool perThread, const void* func, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s, bool cooperative) {
  DRIVER(perThread);
  cudaError_t error = cudaSuccess;
  CUfunction f = kernelFor(func, error);
  if (f == nullptr) return record(error);
  const auto sh = static_cast<unsigned>(shared);
  if (cooperative) return call(D->cuLaunchCooperativeKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, sh, s, args));
  return call(D->cuLaunchKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, sh, s, args, nullptr));
}

cudaError_t launchEx(bool perThread, const cudaLaunchConfig_t* c, const void* func, void** args) {
  DRIVER(perThread);
  if (c == nullptr) return record(cudaErrorInvalidValue);
  cudaError_t error = cudaSuccess;
  CUfunction f = kernelFor(func, error);
  if (f == nullptr) return record(error);
  CUlaunchConfig config{};
  config.gridDimX = c->gridDim.x, config.gridDimY = c->gridDim.y, config.gridDimZ = c->gridDim.z;
  config.blockDimX = c->blockDim.x, config.blockDimY = c->blockDim.y, config.blockDimZ = c->blockDim.z;
  config.sharedMemBytes = static_cast<unsigned>(c->dynamicSmemBytes);
  config.hStream = c->stream;
  return call(D->cuLaunchKernelEx(&config, f, args, nullptr));
}

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

cudaError_t memcpyImpl(bool perThread, void* dst, const void* src, size_t n, cudaMemcpyKind kind, bool async, cudaStream_t s) {
  DRIVER(perThread);
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return call(async ? D->cuMemcpyHtoDAsync(dptr(dst), src, n, s) : D->cuMemcpyHtoD(dptr(dst), src, n));
    case cudaMemcpyDeviceToHost:
      return call(async ? D->cuMemcpyDtoHAsync(dst, dptr(src), n, s) : D->cuMemcpyDtoH(dst, dptr(src), n));
    case cudaMemcpyDeviceToDevice:
      return call(async ? D->cuMemcpyDtoDAsync(dptr(dst), dptr(src), n, s) : D->cuMemcpyDtoD(dptr(dst), dptr(src), n));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
      return call(async ? D->cuMemcpyAsync(dptr(dst), dptr(src), n, s) : D->cuMemcpy(dptr(dst), dptr(src), n));
  }
  return record(cudaErrorInvalidMemcpyDirection);
}

CUmemorytype memoryType(cudaMemcpyKind kind, bool source) {
  const bool host = source ? (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost)
                           : (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost);
  return kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

CUDA_MEMCPY2D copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, cudaMemcpyKind kind) {
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = memoryType(kind, true) == CU_MEMORYTYPE_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.srcHost = src, c.srcDevice = dptr(src), c.srcPitch = spitch;
  c.dstMemoryType = memoryType(kind, false) == CU_MEMORYTYPE_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.dstHost = dst, c.dstDevice = dptr(dst), c.dstPitch = dpitch;
  c.WidthInBytes = w, c.Height = h;
  return c;
}

CUDA_MEMCPY3D copy3D(const cudaMemcpy3DParms* p) {
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = memoryType(p->kind, true) == CU_MEMORYTYPE_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.srcHost = p->srcPtr.ptr, c.srcDevice = dptr(p->srcPtr.ptr), c.srcPitch = p->srcPtr.pitch, c.srcHeight = p->srcPtr.ysize;
  c.srcXInBytes = p->srcPos.x, c.srcY = p->srcPos.y, c.srcZ = p->srcPos.z;
  c.dstMemoryType = memoryType(p->kind, false) == CU_MEMORYTYPE_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.dstHost = p->dstPtr.ptr, c.dstDevice = dptr(p->dstPtr.ptr), c.dstPitch = p->dstPtr.pitch, c.dstHeight = p->dstPtr.ysize;
  c.dstXInBytes = p->dstPos.x, c.dstY = p->dstPos.y, c.dstZ = p->dstPos.z;
  c.WidthInBytes = p->extent.width, c.Height = p->extent.height, c.Depth = p->extent.depth;
  return c;
}

cudaError_t symbolAddress(const void* symbol, size_t offset, size_t n, CUdeviceptr& out) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.symbols.find(symbol);
  if (it == r.symbols.end()) return cudaErrorInvalidSymbol;
  (void)n;
  out = it->second + offset;
  return cudaSuccess;
}

cudaError_t toSymbol(bool perThread, const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind,
                     bool async, cudaStream_t s) {
  CUdeviceptr d = 0;
  if (cudaError_t e = symbolAddress(symbol, offset, n, d)) return record(e);
  return memcpyImpl(perThread, reinterpret_cast<void*>(d), src, n,
                    kind == cudaMemcpyDeviceToDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice, async, s);
}

cudaError_t fromSymbol(bool perThread, void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind,
                       bool async, cudaStream_t s) {
  CUdeviceptr d = 0;
  if (cudaError_t e = symbolAddress(symbol, offset, n, d)) return record(e);
  return memcpyImpl(perThread, dst, reinterpret_cast<const void*>(d), n,
                    kind == cudaMemcpyDeviceToDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost, async, s);
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ registration (nvcc-generated code)
EXPORT void** __cudaRegisterFatBinary(void* fatCubin) {
  auto** handle = new void*[1];
  handle[0] = fatCubin;
  return handle;
}
EXPORT void __cudaRegisterFatBinaryEnd(void**) {}
EXPORT void __cudaUnregisterFatBinary(void**) {}
EXPORT char __cudaInitModule(void**) { return 1; }
EXPORT void __cudaRegisterFunction(void** module, const char* hostFun, char*, const char* deviceName, int, uint3*, uint3*,
                                   dim3*, dim3*, int*) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.functions[hostFun] = Registered{deviceName, module, nullptr};
}
EXPORT void __cudaRegisterVar(void**, char* hostVar, char*, const char*, int, size_t size, int, int) {
  // The device copy starts as the host shadow's initial bytes, like a loaded module's globals.
  void* device = calloc(1, size ? size : 1);
  memcpy(device, hostVar, size);
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.symbols[hostVar] = dptr(device);
}
EXPORT void __cudaRegisterManagedVar(void**, void** hostVarPtrAddress, char*, const char*, int, size_t, int, int) {
  (void)hostVarPtrAddress;
}
EXPORT void __cudaRegisterHostVar(void**, const char*, char*, size_t) {}
EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, struct CUstream_st* stream) {
  callStack.push_back(CallConfiguration{grid, block, shared, stream});
  return 0;
}
EXPORT cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  if (callStack.empty()) return cudaErrorMissingConfiguration;
  const CallConfiguration c = callStack.back();
  callStack.pop_back();
  *grid = c.grid, *block = c.block, *shared = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}
EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  if (kernel == nullptr) return record(cudaErrorInvalidValue);
  if (driver() == nullptr) return rt().initError;
  cudaError_t error = cudaSuccess;
  CUfunction f = kernelFor(hostFun, error);
  if (f == nullptr) return record(error);
  *kernel = reinterpret_cast<cudaKernel_t>(f);
  return cudaSuccess;
}
EXPORT cudaError_t cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) { return __cudaGetKernel(kernel, hostFun); }
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return launch(false, k, g, b, args, shared, s, false);
}
EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return launch(true, k, g, b, args, shared, s, false);
}
EXPORT cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (name == nullptr) return record(cudaErrorInvalidValue);
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.functions.find(func);
  if (it == r.functions.end()) return record(cudaErrorInvalidDeviceFunction);
  *name = it->second.name.c_str();
  return cudaSuccess;
}

// ------------------------------------------------------------------ launches
EXPORT cudaError_t cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s) {
  return launch(false, f, g, b, a, sh, s, false);
}
EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s) {
  return launch(true, f, g, b, a, sh, s, false);
}
EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s) {
  return launch(false, f, g, b, a, sh, s, true);
}
EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s) {
  return launch(true, f, g, b, a, sh, s, true);
}
EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* f, void** a) { return launchEx(false, c, f, a); }
EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* c, const void* f, void** a) { return launchEx(true, c, f, a); }
EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t g, cudaStream_t s) {
  DRIVER(false);
  return call(D->cuGraphLaunch(reinterpret_cast<CUgraphExec>(g), s));
}
EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t g, cudaStream_t s) {
  DRIVER(true);
  return call(D->cuGraphLaunch(reinterpret_cast<CUgraphExec>(g), s));
}

// ------------------------------------------------------------------ device management and errors
EXPORT cudaError_t cudaGetDeviceCount(int* n) {
  DRIVER(false);
  return call(D->cuDeviceGetCount(n));
}
EXPORT cudaError_t cudaSetDevice(int device) {
  DRIVER(false);
  return record(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}
EXPORT cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
EXPORT cudaError_t cudaDriverGetVersion(int* v) {
  if (v == nullptr) return record(cudaErrorInvalidValue);
  *v = driver() != nullptr ? rt().driverVersion : 0;
  return cudaSuccess;
}
EXPORT cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == nullptr) return record(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}
EXPORT cudaError_t cudaGetLastError() {
  const cudaError_t e = lastError;
  lastError = cudaSuccess;
  return e;
}
EXPORT cudaError_t cudaPeekAtLastError() { return lastError; }
EXPORT const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    default: return "cudaErrorUnknown";
  }
}
EXPORT const char* cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }
EXPORT cudaError_t cudaDeviceSynchronize() {
  DRIVER(false);
  return call(D->cuCtxSynchronize());
}
EXPORT cudaError_t cudaDeviceReset() {
  DRIVER(false);
  return call(D->cuDevicePrimaryCtxReset(0));
}

// ------------------------------------------------------------------ memory
EXPORT cudaError_t cudaMalloc(void** p, size_t n) {
  DRIVER(false);
  return call(D->cuMemAlloc(reinterpret_cast<CUdeviceptr*>(p), n));
}
EXPORT cudaError_t cudaMallocManaged(void** p, size_t n, unsigned flags) {
  DRIVER(false);
  return call(D->cuMemAllocManaged(reinterpret_cast<CUdeviceptr*>(p), n, flags));
}
EXPORT cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t w, size_t h) {
  DRIVER(false);
  return call(D->cuMemAllocPitch(reinterpret_cast<CUdeviceptr*>(p), pitch, w, h, 4));
}
EXPORT cudaError_t cudaMallocHost(void** p, size_t n) {
  DRIVER(false);
  return call(D->cuMemAllocHost(p, n));
}
EXPORT cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags) {
  DRIVER(false);
  return call(D->cuMemHostAlloc(p, n, flags));
}
EXPORT cudaError_t cudaFree(void* p) {
  DRIVER(false);
  return p == nullptr ? cudaSuccess : call(D->cuMemFree(dptr(p)));
}
EXPORT cudaError_t cudaFreeHost(void* p) {
  DRIVER(false);
  return p == nullptr ? cudaSuccess : call(D->cuMemFreeHost(p));
}
#define ASYNC_ALLOC(name, pt)                                                    \
  EXPORT cudaError_t name(void** p, size_t n, cudaStream_t s) {                  \
    DRIVER(pt);                                                                  \
    return call(D->cuMemAllocAsync(reinterpret_cast<CUdeviceptr*>(p), n, s));   \
  }
ASYNC_ALLOC(cudaMallocAsync, false)
ASYNC_ALLOC(cudaMallocAsync_ptsz, true)
#undef ASYNC_ALLOC
#define POOL_ALLOC(name, pt)                                                                                    \
  EXPORT cudaError_t name(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {                             \
    DRIVER(pt);                                                                                                 \
    return call(D->cuMemAllocFromPoolAsync(reinterpret_cast<CUdeviceptr*>(p), n, reinterpret_cast<CUmemoryPool>(pool), s)); \
  }
POOL_ALLOC(cudaMallocFromPoolAsync, false)
POOL_ALLOC(cudaMallocFromPoolAsync_ptsz, true)
#undef POOL_ALLOC
#define ASYNC_FREE(name, pt)                                  \
  EXPORT cudaError_t name(void* p, cudaStream_t s) {          \
    DRIVER(pt);                                               \
    return call(D->cuMemFreeAsync(dptr(p), s));               \
  }
ASYNC_FREE(cudaFreeAsync, false)
ASYNC_FREE(cudaFreeAsync_ptsz, true)
#undef ASYNC_FREE

// ------------------------------------------------------------------ copies
EXPORT cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) { return memcpyImpl(false, d, s, n, k, false, nullptr); }
EXPORT cudaError_t cudaMemcpy_ptds(void* d, const void* s, size_t n, cudaMemcpyKind k) { return memcpyImpl(true, d, s, n, k, false, nullptr); }
EXPORT cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
  return memcpyImpl(false, d, s, n, k, true, st);
}
EXPORT cudaError_t cudaMemcpyAsync_ptsz(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
  return memcpyImpl(true, d, s, n, k, true, st);
}
#define COPY2D(name, pt)                                                                                    \
  EXPORT cudaError_t name(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind k) { \
    DRIVER(pt);                                                                                             \
    const CUDA_MEMCPY2D c = copy2D(d, dp, s, sp, w, h, k);                                                  \
    return call(D->cuMemcpy2D(&c));                                                                          \
  }
COPY2D(cudaMemcpy2D, false)
COPY2D(cudaMemcpy2D_ptds, true)
#undef COPY2D
#define COPY2D_ASYNC(name, pt)                                                                                                \
  EXPORT cudaError_t name(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t st) { \
    DRIVER(pt);                                                                                                               \
    const CUDA_MEMCPY2D c = copy2D(d, dp, s, sp, w, h, k);                                                                    \
    return call(D->cuMemcpy2DAsync(&c, st));                                                                                   \
  }
COPY2D_ASYNC(cudaMemcpy2DAsync, false)
COPY2D_ASYNC(cudaMemcpy2DAsync_ptsz, true)
#undef COPY2D_ASYNC
#define COPY3D(name, pt)                                               \
  EXPORT cudaError_t name(const cudaMemcpy3DParms* p) {                \
    DRIVER(pt);                                                        \
    if (p == nullptr) return record(cudaErrorInvalidValue);             \
    const CUDA_MEMCPY3D c = copy3D(p);                                 \
    return call(D->cuMemcpy3D(&c));                                    \
  }
COPY3D(cudaMemcpy3D, false)
COPY3D(cudaMemcpy3D_ptds, true)
#undef COPY3D
#define COPY3D_ASYNC(name, pt)                                                 \
  EXPORT cudaError_t name(const cudaMemcpy3DParms* p, cudaStream_t st) {        \
    DRIVER(pt);                                                                \
    if (p == nullptr) return record(cudaErrorInvalidValue);                     \
    const CUDA_MEMCPY3D c = copy3D(p);                                         \
    return call(D->cuMemcpy3DAsync(&c, st));                                    \
  }
COPY3D_ASYNC(cudaMemcpy3DAsync, false)
COPY3D_ASYNC(cudaMemcpy3DAsync_ptsz, true)
#undef COPY3D_ASYNC
EXPORT cudaError_t cudaMemcpyToSymbol(const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k) {
  return toSymbol(false, sym, src, n, off, k, false, nullptr);
}
EXPORT cudaError_t cudaMemcpyToSymbol_ptds(const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k) {
  return toSymbol(true, sym, src, n, off, k, false, nullptr);
}
EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k) {
  return fromSymbol(false, dst, sym, n, off, k, false, nullptr);
}
EXPORT cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k) {
  return fromSymbol(true, dst, sym, n, off, k, false, nullptr);
}
EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k, cudaStream_t s) {
  return toSymbol(false, sym, src, n, off, k, true, s);
}
EXPORT cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* sym, const void* src, size_t n, size_t off, cudaMemcpyKind k,
                                                cudaStream_t s) {
  return toSymbol(true, sym, src, n, off, k, true, s);
}
EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k, cudaStream_t s) {
  return fromSymbol(false, dst, sym, n, off, k, true, s);
}
EXPORT cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* sym, size_t n, size_t off, cudaMemcpyKind k,
                                                  cudaStream_t s) {
  return fromSymbol(true, dst, sym, n, off, k, true, s);
}
EXPORT cudaError_t cudaMemcpyPeer(void* d, int, const void* s, int, size_t n) {
  DRIVER(false);
  return call(D->cuMemcpyPeer(dptr(d), nullptr, dptr(s), nullptr, n));
}
EXPORT cudaError_t cudaMemcpyPeerAsync(void* d, int, const void* s, int, size_t n, cudaStream_t st) {
  DRIVER(false);
  return call(D->cuMemcpyPeerAsync(dptr(d), nullptr, dptr(s), nullptr, n, st));
}

// ------------------------------------------------------------------ sets
EXPORT cudaError_t cudaMemset(void* p, int v, size_t n) {
  DRIVER(false);
  return call(D->cuMemsetD8(dptr(p), static_cast<unsigned char>(v), n));
}
EXPORT cudaError_t cudaMemset_ptds(void* p, int v, size_t n) {
  DRIVER(true);
  return call(D->cuMemsetD8(dptr(p), static_cast<unsigned char>(v), n));
}
EXPORT cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  DRIVER(false);
  return call(D->cuMemsetD8Async(dptr(p), static_cast<unsigned char>(v), n, s));
}
EXPORT cudaError_t cudaMemsetAsync_ptsz(void* p, int v, size_t n, cudaStream_t s) {
  DRIVER(true);
  return call(D->cuMemsetD8Async(dptr(p), static_cast<unsigned char>(v), n, s));
}
EXPORT cudaError_t cudaMemset2D(void* p, size_t pitch, int v, size_t w, size_t h) {
  DRIVER(false);
  return call(D->cuMemsetD2D8(dptr(p), pitch, static_cast<unsigned char>(v), w, h));
}
EXPORT cudaError_t cudaMemset2D_ptds(void* p, size_t pitch, int v, size_t w, size_t h) {
  DRIVER(true);
  return call(D->cuMemsetD2D8(dptr(p), pitch, static_cast<unsigned char>(v), w, h));
}
EXPORT cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s) {
  DRIVER(false);
  return call(D->cuMemsetD2D8Async(dptr(p), pitch, static_cast<unsigned char>(v), w, h, s));
}
EXPORT cudaError_t cudaMemset2DAsync_ptsz(void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s) {
  DRIVER(true);
  return call(D->cuMemsetD2D8Async(dptr(p), pitch, static_cast<unsigned char>(v), w, h, s));
}

// ------------------------------------------------------------------ streams, events, profiler
EXPORT cudaError_t cudaStreamCreate(cudaStream_t* s) {
  DRIVER(false);
  return call(D->cuStreamCreate(s, 0));
}
EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  DRIVER(false);
  return call(D->cuStreamCreate(s, flags));
}
EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s) {
  DRIVER(false);
  return call(D->cuStreamDestroy(s));
}
EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  DRIVER(false);
  return call(D->cuStreamSynchronize(s));
}
EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  DRIVER(true);
  return call(D->cuStreamSynchronize(s));
}
EXPORT cudaError_t cudaEventCreate(cudaEvent_t* e) {
  DRIVER(false);
  return call(D->cuEventCreate(e, 0));
}
EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  DRIVER(false);
  return call(D->cuEventCreate(e, flags));
}
EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  DRIVER(false);
  return call(D->cuEventRecord(e, s));
}
EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  DRIVER(true);
  return call(D->cuEventRecord(e, s));
}
EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  DRIVER(false);
  return call(D->cuEventSynchronize(e));
}
EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  DRIVER(false);
  return call(D->cuEventElapsedTime(ms, a, b));
}
EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  DRIVER(false);
  return call(D->cuEventDestroy(e));
}
EXPORT cudaError_t cudaProfilerStart() {
  DRIVER(false);
  return call(D->cuProfilerStart());
}
EXPORT cudaError_t cudaProfilerStop() {
  DRIVER(false);
  return call(D->cuProfilerStop());
}

}  // extern "C"
