// Stand-in libcudart.so.13 for machines without a GPU. It reaches the driver exactly as the real
// CUDA runtime does: dlopen("libcuda.so.1") on first use, dlsym("cuGetProcAddress_v2"), ask that
// function for "cuGetProcAddress" itself (at 11030 and 12000), then fetch every driver entry it
// uses through the pointer that lookup returned: once with default-stream semantics and once with
// per-thread default streams for the _ptsz/_ptds entry points. Every runtime call with a driver
// counterpart makes that call through the table, so a trace shows the runtime call with the
// driver call nested inside, as on a GPU.
//
// Kernels registered by nvcc-generated code become CUkernels (cuLibraryLoadData on the fatbin +
// cuLibraryGetKernel) and are launched cast to CUfunction, like the CUDA 13 runtime does.

// See fake_driver.cpp: every _ptds/_ptsz variant declared under its own name and checked.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaProfiler.h>
#pragma GCC visibility push(default)
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "gl_interop.h"
#pragma GCC visibility pop

#include <dlfcn.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "array_format.h"

// Entry points of nvcc-generated host code (crt/host_runtime.h and crt/device_functions.h
// declare them only while nvcc compiles).
#define STANDIN_EXPORT __attribute__((visibility("default")))
extern "C" {
STANDIN_EXPORT void** __cudaRegisterFatBinary(void* fatCubin);
STANDIN_EXPORT void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
STANDIN_EXPORT void __cudaUnregisterFatBinary(void** fatCubinHandle);
STANDIN_EXPORT void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                           const char* deviceName, int threadLimit, uint3* tid, uint3* bid, dim3* bDim,
                                           dim3* gDim, int* wSize);
STANDIN_EXPORT void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress, const char* deviceName,
                                      int ext, size_t size, int constant, int global);
STANDIN_EXPORT void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char* deviceAddress,
                                             const char* deviceName, int ext, size_t size, int constant, int global);
STANDIN_EXPORT void __cudaRegisterHostVar(void** fatCubinHandle, const char* deviceName, char* hostVar, size_t size);
STANDIN_EXPORT char __cudaInitModule(void** fatCubinHandle);
STANDIN_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream);
STANDIN_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream);
STANDIN_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
STANDIN_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                              size_t sharedMem, cudaStream_t stream);
STANDIN_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                                   size_t sharedMem, cudaStream_t stream);
}

namespace {

using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// The driver entries the runtime uses: {table field = name asked for, exported function whose
// ABI the field has, version asked for}. The runtime asks at its own version, except where the
// entry it wants has since been replaced under the same name.
constexpr int kRuntimeVersion = CUDART_VERSION;
#define STANDIN_DRIVER_TABLE(X)                                                                               \
  X(cuInit, cuInit, kRuntimeVersion)                                                                          \
  X(cuDeviceGetCount, cuDeviceGetCount, kRuntimeVersion)                                                      \
  X(cuDeviceGet, cuDeviceGet, kRuntimeVersion)                                                                \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, kRuntimeVersion)                                              \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, kRuntimeVersion)                                      \
  X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, kRuntimeVersion)                                     \
  X(cuCtxSetCurrent, cuCtxSetCurrent, kRuntimeVersion)                                                        \
  /* 13.0 made cuCtxSynchronize_v2(ctx) the default; the runtime synchronises the current context */         \
  X(cuCtxSynchronize, cuCtxSynchronize, 12000)                                                                \
  X(cuLibraryLoadData, cuLibraryLoadData, kRuntimeVersion)                                                    \
  X(cuLibraryGetKernel, cuLibraryGetKernel, kRuntimeVersion)                                                  \
  X(cuLibraryLoadFromFile, cuLibraryLoadFromFile, kRuntimeVersion)                                            \
  X(cuKernelGetName, cuKernelGetName, kRuntimeVersion)                                                        \
  X(cuLibraryUnload, cuLibraryUnload, kRuntimeVersion)                                                        \
  X(cuLaunchKernel, cuLaunchKernel, kRuntimeVersion)                                                          \
  X(cuLaunchKernelEx, cuLaunchKernelEx, kRuntimeVersion)                                                      \
  X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, kRuntimeVersion)                                    \
  X(cuGraphLaunch, cuGraphLaunch, kRuntimeVersion)                                                            \
  X(cuGraphUpload, cuGraphUpload, kRuntimeVersion)                                                            \
  X(cuStreamBeginCapture, cuStreamBeginCapture_v2, kRuntimeVersion)                                          \
  X(cuStreamEndCapture, cuStreamEndCapture, kRuntimeVersion)                                                  \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, kRuntimeVersion)                                \
  X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, kRuntimeVersion)                              \
  X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, kRuntimeVersion)                                \
  X(cuGraphCreate, cuGraphCreate, kRuntimeVersion)                                                            \
  X(cuGraphAddKernelNode, cuGraphAddKernelNode_v2, kRuntimeVersion)                                          \
  X(cuGraphAddMemcpyNode, cuGraphAddMemcpyNode, kRuntimeVersion)                                              \
  X(cuGraphAddMemsetNode, cuGraphAddMemsetNode, kRuntimeVersion)                                              \
  X(cuGraphAddHostNode, cuGraphAddHostNode, kRuntimeVersion)                                                  \
  X(cuGraphAddChildGraphNode, cuGraphAddChildGraphNode, kRuntimeVersion)                                      \
  X(cuGraphAddEmptyNode, cuGraphAddEmptyNode, kRuntimeVersion)                                                \
  X(cuGraphAddEventRecordNode, cuGraphAddEventRecordNode, kRuntimeVersion)                                    \
  X(cuGraphAddEventWaitNode, cuGraphAddEventWaitNode, kRuntimeVersion)                                        \
  X(cuGraphAddNode, cuGraphAddNode_v2, kRuntimeVersion)                                                       \
  X(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode, kRuntimeVersion)                                        \
  X(cuGraphAddMemFreeNode, cuGraphAddMemFreeNode, kRuntimeVersion)                                          \
  X(cuGraphKernelNodeSetParams, cuGraphKernelNodeSetParams_v2, kRuntimeVersion)                              \
  X(cuGraphMemcpyNodeSetParams, cuGraphMemcpyNodeSetParams, kRuntimeVersion)                                  \
  X(cuGraphMemsetNodeSetParams, cuGraphMemsetNodeSetParams, kRuntimeVersion)                                  \
  X(cuGraphHostNodeSetParams, cuGraphHostNodeSetParams, kRuntimeVersion)                                      \
  X(cuGraphEventRecordNodeSetEvent, cuGraphEventRecordNodeSetEvent, kRuntimeVersion)                          \
  X(cuGraphEventWaitNodeSetEvent, cuGraphEventWaitNodeSetEvent, kRuntimeVersion)                              \
  X(cuGraphNodeSetParams, cuGraphNodeSetParams, kRuntimeVersion)                                              \
  X(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2, kRuntimeVersion)                      \
  X(cuGraphExecMemcpyNodeSetParams, cuGraphExecMemcpyNodeSetParams, kRuntimeVersion)                          \
  X(cuGraphExecMemsetNodeSetParams, cuGraphExecMemsetNodeSetParams, kRuntimeVersion)                          \
  X(cuGraphExecHostNodeSetParams, cuGraphExecHostNodeSetParams, kRuntimeVersion)                              \
  X(cuGraphExecChildGraphNodeSetParams, cuGraphExecChildGraphNodeSetParams, kRuntimeVersion)                  \
  X(cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventRecordNodeSetEvent, kRuntimeVersion)                  \
  X(cuGraphExecEventWaitNodeSetEvent, cuGraphExecEventWaitNodeSetEvent, kRuntimeVersion)                      \
  X(cuGraphAddExternalSemaphoresSignalNode, cuGraphAddExternalSemaphoresSignalNode, kRuntimeVersion)          \
  X(cuGraphAddExternalSemaphoresWaitNode, cuGraphAddExternalSemaphoresWaitNode, kRuntimeVersion)              \
  X(cuGraphExternalSemaphoresSignalNodeSetParams, cuGraphExternalSemaphoresSignalNodeSetParams, kRuntimeVersion) \
  X(cuGraphExternalSemaphoresWaitNodeSetParams, cuGraphExternalSemaphoresWaitNodeSetParams, kRuntimeVersion)  \
  X(cuGraphExecExternalSemaphoresSignalNodeSetParams, cuGraphExecExternalSemaphoresSignalNodeSetParams,       \
    kRuntimeVersion)                                                                                          \
  X(cuGraphExecExternalSemaphoresWaitNodeSetParams, cuGraphExecExternalSemaphoresWaitNodeSetParams,           \
    kRuntimeVersion)                                                                                          \
  X(cuGraphExecNodeSetParams, cuGraphExecNodeSetParams, kRuntimeVersion)                                      \
  X(cuGraphExecUpdate, cuGraphExecUpdate_v2, kRuntimeVersion)                                                 \
  X(cuGraphDestroy, cuGraphDestroy, kRuntimeVersion)                                                          \
  X(cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies_v2, kRuntimeVersion)                \
  X(cuGraphKernelNodeSetAttribute, cuGraphKernelNodeSetAttribute, kRuntimeVersion)                            \
  X(cuGraphKernelNodeCopyAttributes, cuGraphKernelNodeCopyAttributes, kRuntimeVersion)                        \
  X(cuGraphNodeSetEnabled, cuGraphNodeSetEnabled, kRuntimeVersion)                                            \
  X(cuGraphConditionalHandleCreate, cuGraphConditionalHandleCreate, kRuntimeVersion)                          \
  X(cuDeviceGraphMemTrim, cuDeviceGraphMemTrim, kRuntimeVersion)                                              \
  X(cuUserObjectCreate, cuUserObjectCreate, kRuntimeVersion)                                                  \
  X(cuUserObjectRetain, cuUserObjectRetain, kRuntimeVersion)                                                  \
  X(cuUserObjectRelease, cuUserObjectRelease, kRuntimeVersion)                                                \
  X(cuGraphRetainUserObject, cuGraphRetainUserObject, kRuntimeVersion)                                        \
  X(cuGraphReleaseUserObject, cuGraphReleaseUserObject, kRuntimeVersion)                                      \
  X(cuGraphAddDependencies, cuGraphAddDependencies_v2, kRuntimeVersion)                                      \
  X(cuGraphRemoveDependencies, cuGraphRemoveDependencies_v2, kRuntimeVersion)                                \
  X(cuGraphDestroyNode, cuGraphDestroyNode, kRuntimeVersion)                                                  \
  X(cuGraphClone, cuGraphClone, kRuntimeVersion)                                                              \
  X(cuGraphExecDestroy, cuGraphExecDestroy, kRuntimeVersion)                                                  \
  X(cuMemAlloc, cuMemAlloc_v2, kRuntimeVersion)                                                               \
  X(cuMemAllocPitch, cuMemAllocPitch_v2, kRuntimeVersion)                                                     \
  X(cuMemAllocManaged, cuMemAllocManaged, kRuntimeVersion)                                                    \
  X(cuMemAllocHost, cuMemAllocHost_v2, kRuntimeVersion)                                                       \
  X(cuMemHostAlloc, cuMemHostAlloc, kRuntimeVersion)                                                          \
  X(cuMemFree, cuMemFree_v2, kRuntimeVersion)                                                                 \
  X(cuArrayCreate, cuArrayCreate_v2, kRuntimeVersion)                                                         \
  X(cuArray3DCreate, cuArray3DCreate_v2, kRuntimeVersion)                                                     \
  X(cuArrayDestroy, cuArrayDestroy, kRuntimeVersion)                                                          \
  X(cuArray3DGetDescriptor, cuArray3DGetDescriptor_v2, kRuntimeVersion)                                      \
  X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, kRuntimeVersion)                                          \
  X(cuMipmappedArrayGetLevel, cuMipmappedArrayGetLevel, kRuntimeVersion)                                      \
  X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, kRuntimeVersion)                                        \
  X(cuExternalMemoryGetMappedMipmappedArray, cuExternalMemoryGetMappedMipmappedArray, kRuntimeVersion)        \
  X(cuMemFreeHost, cuMemFreeHost, kRuntimeVersion)                                                            \
  X(cuMemHostRegister, cuMemHostRegister_v2, kRuntimeVersion)                                                \
  X(cuMemHostUnregister, cuMemHostUnregister, kRuntimeVersion)                                                \
  X(cuMemAllocAsync, cuMemAllocAsync, kRuntimeVersion)                                                        \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, kRuntimeVersion)                                        \
  X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, kRuntimeVersion)                                    \
  X(cuMemPoolCreate, cuMemPoolCreate, kRuntimeVersion)                                                        \
  X(cuMemPoolDestroy, cuMemPoolDestroy, kRuntimeVersion)                                                      \
  X(cuMemPoolTrimTo, cuMemPoolTrimTo, kRuntimeVersion)                                                        \
  X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, kRuntimeVersion)                                            \
  X(cuMemPoolSetAccess, cuMemPoolSetAccess, kRuntimeVersion)                                                  \
  X(cuDeviceSetMemPool, cuDeviceSetMemPool, kRuntimeVersion)                                                  \
  X(cuMemSetMemPool, cuMemSetMemPool, kRuntimeVersion)                                                        \
  X(cuKernelSetAttribute, cuKernelSetAttribute, kRuntimeVersion)                                              \
  X(cuKernelSetCacheConfig, cuKernelSetCacheConfig, kRuntimeVersion)                                          \
  X(cuCtxSetLimit, cuCtxSetLimit, kRuntimeVersion)                                                            \
  X(cuCtxSetCacheConfig, cuCtxSetCacheConfig, kRuntimeVersion)                                                \
  X(cuCtxResetPersistingL2Cache, cuCtxResetPersistingL2Cache, kRuntimeVersion)                                \
  X(cuStreamSetAttribute, cuStreamSetAttribute, kRuntimeVersion)                                              \
  X(cuMemPoolExportToShareableHandle, cuMemPoolExportToShareableHandle, kRuntimeVersion)                      \
  X(cuMemPoolImportFromShareableHandle, cuMemPoolImportFromShareableHandle, kRuntimeVersion)                  \
  X(cuMemPoolExportPointer, cuMemPoolExportPointer, kRuntimeVersion)                                          \
  X(cuMemPoolImportPointer, cuMemPoolImportPointer, kRuntimeVersion)                                          \
  X(cuGraphicsGLRegisterBuffer, cuGraphicsGLRegisterBuffer, kRuntimeVersion)                                  \
  X(cuGraphicsGLRegisterImage, cuGraphicsGLRegisterImage, kRuntimeVersion)                                    \
  X(cuGraphicsUnregisterResource, cuGraphicsUnregisterResource, kRuntimeVersion)                              \
  X(cuGraphicsMapResources, cuGraphicsMapResources, kRuntimeVersion)                                          \
  X(cuGraphicsUnmapResources, cuGraphicsUnmapResources, kRuntimeVersion)                                      \
  X(cuGraphicsResourceGetMappedPointer, cuGraphicsResourceGetMappedPointer_v2, kRuntimeVersion)               \
  X(cuImportExternalMemory, cuImportExternalMemory, kRuntimeVersion)                                          \
  X(cuExternalMemoryGetMappedBuffer, cuExternalMemoryGetMappedBuffer, kRuntimeVersion)                        \
  X(cuDestroyExternalMemory, cuDestroyExternalMemory, kRuntimeVersion)                                        \
  X(cuImportExternalSemaphore, cuImportExternalSemaphore, kRuntimeVersion)                                    \
  X(cuSignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync, kRuntimeVersion)                        \
  X(cuWaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync, kRuntimeVersion)                            \
  X(cuDestroyExternalSemaphore, cuDestroyExternalSemaphore, kRuntimeVersion)                                  \
  X(cuMemFreeAsync, cuMemFreeAsync, kRuntimeVersion)                                                          \
  X(cuMemcpy, cuMemcpy, kRuntimeVersion)                                                                      \
  X(cuMemcpyAsync, cuMemcpyAsync, kRuntimeVersion)                                                            \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, kRuntimeVersion)                                                           \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2, kRuntimeVersion)                                                           \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2, kRuntimeVersion)                                                           \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, kRuntimeVersion)                                                 \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, kRuntimeVersion)                                                 \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, kRuntimeVersion)                                                 \
  X(cuMemcpy2D, cuMemcpy2D_v2, kRuntimeVersion)                                                               \
  X(cuMemcpy2DAsync, cuMemcpy2DAsync_v2, kRuntimeVersion)                                                     \
  X(cuMemcpy3D, cuMemcpy3D_v2, kRuntimeVersion)                                                               \
  X(cuMemcpy3DAsync, cuMemcpy3DAsync_v2, kRuntimeVersion)                                                     \
  X(cuMemcpy3DPeer, cuMemcpy3DPeer, kRuntimeVersion)                                                          \
  X(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, kRuntimeVersion)                                                \
  X(cuMemcpyPeer, cuMemcpyPeer, kRuntimeVersion)                                                              \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, kRuntimeVersion)                                                    \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync_v2, kRuntimeVersion)                                              \
  X(cuMemAdvise, cuMemAdvise_v2, kRuntimeVersion)                                                            \
  X(cuStreamAttachMemAsync, cuStreamAttachMemAsync, kRuntimeVersion)                                          \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync_v2, kRuntimeVersion)                                              \
  X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_v2, kRuntimeVersion)                                          \
  X(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync, kRuntimeVersion)                                        \
  X(cuMemDiscardBatchAsync, cuMemDiscardBatchAsync, kRuntimeVersion)                                          \
  X(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync, kRuntimeVersion)                    \
  X(cuMemsetD8, cuMemsetD8_v2, kRuntimeVersion)                                                               \
  X(cuMemsetD8Async, cuMemsetD8Async, kRuntimeVersion)                                                        \
  X(cuMemsetD2D8, cuMemsetD2D8_v2, kRuntimeVersion)                                                           \
  X(cuMemsetD2D8Async, cuMemsetD2D8Async, kRuntimeVersion)                                                    \
  X(cuStreamCreate, cuStreamCreate, kRuntimeVersion)                                                          \
  X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, kRuntimeVersion)                                  \
  X(cuStreamDestroy, cuStreamDestroy_v2, kRuntimeVersion)                                                     \
  X(cuStreamSynchronize, cuStreamSynchronize, kRuntimeVersion)                                                \
  X(cuStreamQuery, cuStreamQuery, kRuntimeVersion)                                                            \
  X(cuEventCreate, cuEventCreate, kRuntimeVersion)                                                            \
  X(cuEventRecord, cuEventRecord, kRuntimeVersion)                                                            \
  X(cuEventRecordWithFlags, cuEventRecordWithFlags, kRuntimeVersion)                                          \
  X(cuLaunchHostFunc, cuLaunchHostFunc, kRuntimeVersion)                                                      \
  X(cuStreamAddCallback, cuStreamAddCallback, kRuntimeVersion)                                                \
  X(cuEventQuery, cuEventQuery, kRuntimeVersion)                                                              \
  X(cuStreamWaitEvent, cuStreamWaitEvent, kRuntimeVersion)                                                    \
  X(cuEventSynchronize, cuEventSynchronize, kRuntimeVersion)                                                  \
  X(cuEventElapsedTime, cuEventElapsedTime_v2, kRuntimeVersion)                                               \
  X(cuEventDestroy, cuEventDestroy_v2, kRuntimeVersion)                                                       \
  X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, kRuntimeVersion)                                            \
  X(cuIpcGetMemHandle, cuIpcGetMemHandle, kRuntimeVersion)                                                    \
  X(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2, kRuntimeVersion)                                               \
  X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, kRuntimeVersion)                                                \
  X(cuIpcGetEventHandle, cuIpcGetEventHandle, kRuntimeVersion)                                                \
  X(cuIpcOpenEventHandle, cuIpcOpenEventHandle, kRuntimeVersion)                                              \
  X(cuProfilerStart, cuProfilerStart, kRuntimeVersion)                                                        \
  X(cuProfilerStop, cuProfilerStop, kRuntimeVersion)

// decltype only names the prototypes: nothing here links against libcuda.
struct DriverTable {
#define STANDIN_FIELD(field, function, version) decltype(&::function) field = nullptr;
  STANDIN_DRIVER_TABLE(STANDIN_FIELD)
#undef STANDIN_FIELD
};

// What nvcc registered for one translation unit: its fatbin, loaded as a library on first use.
struct FatBinary {
  const void* image;
  std::once_flag loadOnce;
  CUresult loadResult = CUDA_SUCCESS;
  CUlibrary library = nullptr;
};

struct KernelEntry {
  std::string deviceName;  // mangled, as registered
  FatBinary* binary;
  std::once_flag resolveOnce;  // one cuLibraryGetKernel per kernel, however many threads race
  cudaError_t resolveError = cudaSuccess;
  CUkernel kernel = nullptr;
};

// Device copies of __device__/__constant__/__managed__ variables. The device initialisers live
// only in the (opaque) image, so the copies start zero-filled, as the host shadows do.
struct Symbol {
  void* storage;
  size_t size;
};

struct Runtime {
  std::once_flag once;
  cudaError_t initError = cudaSuccess;
  DriverTable legacy;     // default stream semantics
  DriverTable perThread;  // per-thread default stream: the _ptsz/_ptds entry points
  int driverVersion = 0;
  CUcontext context = nullptr;
  std::shared_mutex mutex;  // guards the maps below; never held across a driver call
  std::unordered_map<const void*, KernelEntry*> byHostFun;
  std::unordered_map<const void*, KernelEntry*> byKernel;
  std::unordered_map<const void*, Symbol> symbols;
  // The bytes of an element, by array (or mipmapped array) made here.
  std::unordered_map<const void*, size_t> arrayElements;
};

// Never destroyed: programs call the runtime from their own static destructors and atexit.
Runtime& rt() {
  static Runtime* runtime = new Runtime();
  return *runtime;
}
// Made when the library is loaded, not by the first call: a child forked while another thread
// was inside that first construction waited forever on the static's guard, which no thread of
// the child would release (fork_storm hung so, 1 run in ~12 under load). The rest of the first
// call is std::call_once, which glibc restarts in a fork child.
[[gnu::constructor]] void makeRuntimeAtLoad() { rt(); }

thread_local cudaError_t lastError = cudaSuccess;
thread_local bool contextBound = false;

struct CallConfiguration {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};
thread_local std::vector<CallConfiguration> callStack;  // <<<>>> pushes, the stub pops

// ------------------------------------------------------------------ errors
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorProfilerDisabled, "cudaErrorProfilerDisabled", "profiler disabled while using external profiling tool"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorContextIsDestroyed, "cudaErrorContextIsDestroyed", "context is destroyed"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {cudaErrorFileNotFound, "cudaErrorFileNotFound", "file not found"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* errorText(cudaError_t code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

cudaError_t fromDriver(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
    case CUDA_ERROR_PROFILER_DISABLED: return cudaErrorProfilerDisabled;
    case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_IMAGE: return cudaErrorInvalidKernelImage;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return cudaErrorContextIsDestroyed;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return cudaErrorNoKernelImageForDevice;
    case CUDA_ERROR_FILE_NOT_FOUND: return cudaErrorFileNotFound;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY: return cudaErrorNotReady;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return cudaErrorLaunchOutOfResources;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    case CUDA_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return cudaErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return cudaErrorHostMemoryNotRegistered;
    case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: return cudaErrorGraphExecUpdateFailure;
    case CUDA_ERROR_UNSUPPORTED_LIMIT: return cudaErrorUnsupportedLimit;
    case CUDA_ERROR_ALREADY_MAPPED: return cudaErrorAlreadyMapped;
    case CUDA_ERROR_NOT_MAPPED: return cudaErrorNotMapped;
    case CUDA_ERROR_NOT_MAPPED_AS_POINTER: return cudaErrorNotMappedAsPointer;
    default: return cudaErrorUnknown;
  }
}

// Every failing call becomes the thread's last error (cudaGetLastError returns and clears it).
cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) lastError = e;
  return e;
}

cudaError_t call(CUresult r) { return record(fromDriver(r)); }

// ------------------------------------------------------------------ reaching the driver
template <typename Fn>
bool fetch(GetProcV2 getProc, const char* name, int version, cuuint64_t flags, Fn& out) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (getProc(name, &p, version, flags, &status) != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || p == nullptr)
    return false;
  out = reinterpret_cast<Fn>(p);
  return true;
}

bool fetchTable(GetProcV2 getProc, cuuint64_t flags, DriverTable& table) {
  bool ok = true;
#define STANDIN_FETCH(field, function, version) ok = fetch(getProc, #field, version, flags, table.field) && ok;
  STANDIN_DRIVER_TABLE(STANDIN_FETCH)
#undef STANDIN_FETCH
  return ok;
}

// STANDIN_DRIVER_AT_LOAD=1 (fork_storm): libcuda.so.1 is loaded with this library, and only the
// rest of the initialisation waits for the first call. A dlopen that adds an object holds the
// loader's write lock (dl_load_write_lock, which glibc does not reset in a fork child): a child
// forked while a thread of its parent added libcuda waited for that lock forever (caught with
// gdb: the child's own dlopen and its drain thread's dl_iterate_phdr both blocked). That is the
// program's race with glibc, traced or not (the tracer's slower first calls only widen the
// window); the test is about the tracer's own locks. The first call then uses the handle and
// calls no dlopen: one in a child forked during another thread's dlopen fails ld.so's
// consistency assertion (the child exits with 127).
void* g_driverAtLoad = nullptr;
[[gnu::constructor]] void loadDriverAtLoad() {
  const char* v = getenv("STANDIN_DRIVER_AT_LOAD");
  if (v != nullptr && strcmp(v, "1") == 0) g_driverAtLoad = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

cudaError_t initialise(Runtime& r) {
  void* lib = g_driverAtLoad != nullptr ? g_driverAtLoad : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return cudaErrorInsufficientDriver;
  auto bootstrap = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
  if (bootstrap == nullptr) return cudaErrorInsufficientDriver;
  // The lookup function itself comes from the lookup, in both generations; everything after
  // goes through what it returned, never through the dlsym'd pointer.
  GetProcV1 getProc1 = nullptr;
  GetProcV2 getProc2 = nullptr;
  CUdriverProcAddressQueryResult status;
  if (bootstrap("cuGetProcAddress", reinterpret_cast<void**>(&getProc1), 11030, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
          CUDA_SUCCESS ||
      bootstrap("cuGetProcAddress", reinterpret_cast<void**>(&getProc2), 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
          CUDA_SUCCESS ||
      getProc1 == nullptr || getProc2 == nullptr)
    return cudaErrorInsufficientDriver;
  void* driverGetVersion = nullptr;
  if (getProc1("cuDriverGetVersion", &driverGetVersion, 2020, CU_GET_PROC_ADDRESS_DEFAULT) != CUDA_SUCCESS ||
      reinterpret_cast<decltype(&::cuDriverGetVersion)>(driverGetVersion)(&r.driverVersion) != CUDA_SUCCESS ||
      r.driverVersion < kRuntimeVersion)
    return cudaErrorInsufficientDriver;
  if (!fetchTable(getProc2, CU_GET_PROC_ADDRESS_DEFAULT, r.legacy) ||
      !fetchTable(getProc2, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, r.perThread))
    return cudaErrorInsufficientDriver;
  int count = 0;
  CUdevice device = 0;
  if (CUresult e = r.legacy.cuInit(0)) return e == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : fromDriver(e);
  if (r.legacy.cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) return cudaErrorNoDevice;
  if (CUresult e = r.legacy.cuDeviceGet(&device, 0)) return fromDriver(e);
  if (CUresult e = r.legacy.cuDevicePrimaryCtxRetain(&r.context, device)) return fromDriver(e);
  return cudaSuccess;
}


// The driver table for a call, after lazy initialisation and binding the primary context to
// the calling thread (as the runtime does on each thread's first call). Errors are recorded.
cudaError_t acquire(bool perThread, const DriverTable*& table) {
  Runtime& r = rt();
  std::call_once(r.once, [&r] { r.initError = initialise(r); });
  if (r.initError != cudaSuccess) return record(r.initError);
  if (!contextBound) {
    if (CUresult e = r.legacy.cuCtxSetCurrent(r.context)) return record(fromDriver(e));
    contextBound = true;
  }
  table = perThread ? &r.perThread : &r.legacy;
  return cudaSuccess;
}

#define STANDIN_DRIVER(perThread)     \
  const DriverTable* D = nullptr;     \
  if (cudaError_t e_ = acquire(perThread, D)) return e_

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// ------------------------------------------------------------------ kernels
KernelEntry* findKernel(const void* func) {
  Runtime& r = rt();
  std::shared_lock lock(r.mutex);
  if (auto it = r.byHostFun.find(func); it != r.byHostFun.end()) return it->second;
  if (auto it = r.byKernel.find(func); it != r.byKernel.end()) return it->second;  // a cudaKernel_t
  return nullptr;
}

// The CUkernel of a host stub or cudaKernel_t: its fatbin is loaded and the kernel looked up on
// first use, once, whichever thread gets there first.
cudaError_t resolveKernel(const DriverTable& d, const void* func, CUkernel& out) {
  KernelEntry* entry = findKernel(func);
  if (entry == nullptr) {
    // Not a registered function: a kernel of a library the program loaded (cudaLibraryGetKernel),
    // which the runtime hands to the driver as it is.
    const char* name = nullptr;
    const auto kernel = static_cast<CUkernel>(const_cast<void*>(func));
    if (func == nullptr || d.cuKernelGetName(&name, kernel) != CUDA_SUCCESS) return cudaErrorInvalidDeviceFunction;
    out = kernel;
    return cudaSuccess;
  }
  std::call_once(entry->resolveOnce, [&d, entry] {
    FatBinary& binary = *entry->binary;
    std::call_once(binary.loadOnce, [&d, &binary] {
      binary.loadResult = d.cuLibraryLoadData(&binary.library, binary.image, nullptr, nullptr, 0, nullptr, nullptr, 0);
    });
    if (binary.loadResult != CUDA_SUCCESS) {
      entry->resolveError = fromDriver(binary.loadResult);
      return;
    }
    if (d.cuLibraryGetKernel(&entry->kernel, binary.library, entry->deviceName.c_str()) != CUDA_SUCCESS) {
      entry->resolveError = cudaErrorInvalidDeviceFunction;
      return;
    }
    Runtime& r = rt();
    std::unique_lock lock(r.mutex);
    r.byKernel[entry->kernel] = entry;
  });
  if (entry->resolveError != cudaSuccess) return entry->resolveError;
  out = entry->kernel;
  return cudaSuccess;
}

// The driver rejects bad launch geometry and more dynamic shared memory than the function allows
// alike, with INVALID_VALUE; the runtime calls the first a bad configuration and the second an
// invalid value ("invalid argument", what a kernel launched with more than 48 KiB before
// cudaFuncSetAttribute gets): it checks the geometry itself.
bool validGeometry(dim3 g, dim3 b) {
  return g.x != 0 && g.y != 0 && g.z != 0 && g.x <= 2147483647u && g.y <= 65535 && g.z <= 65535 && b.x != 0 &&
         b.y != 0 && b.z != 0 && b.x <= 1024 && b.y <= 1024 && b.z <= 64 && static_cast<uint64_t>(b.x) * b.y * b.z <= 1024;
}
cudaError_t launchError(CUresult r, dim3 g, dim3 b) {
  return r == CUDA_ERROR_INVALID_VALUE && !validGeometry(g, b) ? cudaErrorInvalidConfiguration : fromDriver(r);
}

cudaError_t launchKernel(const DriverTable& d, CUkernel k, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s,
                         bool cooperative) {
  if (shared > UINT_MAX) return record(cudaErrorInvalidValue);
  const auto f = reinterpret_cast<CUfunction>(k);  // CUDA 13 launches the CUkernel itself
  const auto sh = static_cast<unsigned>(shared);
  const CUresult r = cooperative ? d.cuLaunchCooperativeKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, sh, s, args)
                                 : d.cuLaunchKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, sh, s, args, nullptr);
  return record(launchError(r, g, b));
}

cudaError_t launchFunction(bool perThread, const void* func, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s,
                           bool cooperative) {
  STANDIN_DRIVER(perThread);
  CUkernel k = nullptr;
  if (cudaError_t e = resolveKernel(*D, func, k)) return record(e);
  return launchKernel(*D, k, g, b, args, shared, s, cooperative);
}

cudaError_t launchEx(bool perThread, const cudaLaunchConfig_t* c, const void* func, void** args) {
  STANDIN_DRIVER(perThread);
  if (c == nullptr || c->dynamicSmemBytes > UINT_MAX) return record(cudaErrorInvalidValue);
  CUkernel k = nullptr;
  if (cudaError_t e = resolveKernel(*D, func, k)) return record(e);
  static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "launch attributes share one layout");
  CUlaunchConfig config{};
  config.gridDimX = c->gridDim.x, config.gridDimY = c->gridDim.y, config.gridDimZ = c->gridDim.z;
  config.blockDimX = c->blockDim.x, config.blockDimY = c->blockDim.y, config.blockDimZ = c->blockDim.z;
  config.sharedMemBytes = static_cast<unsigned>(c->dynamicSmemBytes);
  config.hStream = c->stream;
  config.attrs = reinterpret_cast<CUlaunchAttribute*>(c->attrs);
  config.numAttrs = c->numAttrs;
  return record(launchError(D->cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(k), args, nullptr), c->gridDim,
                            c->blockDim));
}

// ------------------------------------------------------------------ copies
cudaError_t copyLinear(bool perThread, void* dst, const void* src, size_t n, cudaMemcpyKind kind, bool async,
                       cudaStream_t s) {
  STANDIN_DRIVER(perThread);
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

bool validKind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

CUmemorytype memoryType(cudaMemcpyKind kind, bool source) {
  if (kind == cudaMemcpyDefault) return CU_MEMORYTYPE_UNIFIED;
  const bool host = source ? (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost)
                           : (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost);
  return host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

CUDA_MEMCPY2D describe2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = memoryType(kind, true), c.srcHost = src, c.srcDevice = dptr(src), c.srcPitch = spitch;
  c.dstMemoryType = memoryType(kind, false), c.dstHost = dst, c.dstDevice = dptr(dst), c.dstPitch = dpitch;
  c.WidthInBytes = width, c.Height = height;
  return c;
}

cudaError_t copy2D(bool perThread, void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                   size_t height, cudaMemcpyKind kind, bool async, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  if (!validKind(kind)) return record(cudaErrorInvalidMemcpyDirection);
  if (width > dpitch || width > spitch) return record(cudaErrorInvalidPitchValue);
  const CUDA_MEMCPY2D c = describe2D(dst, dpitch, src, spitch, width, height, kind);
  return call(async ? D->cuMemcpy2DAsync(&c, s) : D->cuMemcpy2D(&c));
}

// The bytes of an element of an array made by cudaMallocArray or cudaMalloc3DArray, of a
// mipmapped array's or one of its levels (cudaGetMipmappedArrayLevel); of another array, the
// driver's answer (an array the program made through the driver; the runtime is initialised, as
// the array's handle came from a call); 0 for none.
size_t arrayElement(const void* array) {
  {
    Runtime& r = rt();
    std::shared_lock lock(r.mutex);
    const auto it = r.arrayElements.find(array);
    if (it != r.arrayElements.end()) return it->second;
  }
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  if (rt().legacy.cuArray3DGetDescriptor(&desc, static_cast<CUarray>(const_cast<void*>(array))) != CUDA_SUCCESS) return 0;
  return desc.NumChannels * standin::formatBytes(desc.Format);
}

// One side of a 3D copy: an array made here, or linear memory of `linear`'s type. With an array on
// either side, positions' x count elements of `element` bytes.
struct Side3D {
  CUmemorytype type;
  void* host;
  CUdeviceptr device;
  CUarray array;
  size_t pitch, height, xBytes, y, z;
};
Side3D side3D(cudaArray_const_t array, const cudaPitchedPtr& ptr, const cudaPos& pos, size_t element,
              CUmemorytype linear) {
  Side3D s{};
  if (array != nullptr) {
    s.type = CU_MEMORYTYPE_ARRAY, s.array = reinterpret_cast<CUarray>(const_cast<cudaArray_t>(array));
  } else {
    s.type = linear, s.host = ptr.ptr, s.device = dptr(ptr.ptr), s.pitch = ptr.pitch, s.height = ptr.ysize;
  }
  s.xBytes = pos.x * element, s.y = pos.y, s.z = pos.z;
  return s;
}
// Sets the `side` (src or dst) members of a CUDA_MEMCPY3D or CUDA_MEMCPY3D_PEER from Side3D `s`.
#define STANDIN_SET_SIDE(c, side, s)                                                                    \
  (c.side##MemoryType = s.type, c.side##Host = s.host, c.side##Device = s.device, c.side##Array = s.array, \
   c.side##Pitch = s.pitch, c.side##Height = s.height, c.side##XInBytes = s.xBytes, c.side##Y = s.y, c.side##Z = s.z)

// Linear memory and arrays made here: with an array on a side, the positions' x and the extent's
// width count its elements. cudaSuccess when `p` describes a copy.
cudaError_t describe3D(const cudaMemcpy3DParms* p, CUDA_MEMCPY3D& c) {
  if (p == nullptr) return cudaErrorInvalidValue;
  if (!validKind(p->kind)) return cudaErrorInvalidMemcpyDirection;
  const cudaArray_const_t array = p->srcArray != nullptr ? p->srcArray : p->dstArray;
  const size_t element = array != nullptr ? arrayElement(array) : 1;
  if (element == 0) return cudaErrorInvalidValue;
  c = CUDA_MEMCPY3D{};
  const Side3D src = side3D(p->srcArray, p->srcPtr, p->srcPos, element, memoryType(p->kind, true));
  const Side3D dst = side3D(p->dstArray, p->dstPtr, p->dstPos, element, memoryType(p->kind, false));
  STANDIN_SET_SIDE(c, src, src);
  STANDIN_SET_SIDE(c, dst, dst);
  c.WidthInBytes = p->extent.width * element, c.Height = p->extent.height, c.Depth = p->extent.depth;
  return cudaSuccess;
}

cudaError_t copy3D(bool perThread, const cudaMemcpy3DParms* p, bool async, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  CUDA_MEMCPY3D c;
  if (cudaError_t e = describe3D(p, c)) return record(e);
  return call(async ? D->cuMemcpy3DAsync(&c, s) : D->cuMemcpy3D(&c));
}

// Between two devices' linear memory (the one device here, its primary context on both sides).
cudaError_t copy3DPeer(bool perThread, const cudaMemcpy3DPeerParms* p, bool async, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr) return record(cudaErrorInvalidValue);
  if (p->srcDevice != 0 || p->dstDevice != 0) return record(cudaErrorInvalidDevice);
  CUDA_MEMCPY3D_PEER c{};
  const Side3D src = side3D(nullptr, p->srcPtr, p->srcPos, 1, CU_MEMORYTYPE_DEVICE);
  const Side3D dst = side3D(nullptr, p->dstPtr, p->dstPos, 1, CU_MEMORYTYPE_DEVICE);
  STANDIN_SET_SIDE(c, src, src);
  STANDIN_SET_SIDE(c, dst, dst);
  c.srcContext = c.dstContext = rt().context;
  c.WidthInBytes = p->extent.width, c.Height = p->extent.height, c.Depth = p->extent.depth;
  return call(async ? D->cuMemcpy3DPeerAsync(&c, s) : D->cuMemcpy3DPeer(&c));
}
#undef STANDIN_SET_SIDE

// The device copy of a registered variable, checked against its size.
cudaError_t symbolRange(const void* symbol, size_t offset, size_t n, char*& out) {
  Runtime& r = rt();
  std::shared_lock lock(r.mutex);
  auto it = r.symbols.find(symbol);
  if (it == r.symbols.end()) return cudaErrorInvalidSymbol;
  if (offset > it->second.size || n > it->second.size - offset) return cudaErrorInvalidValue;
  out = static_cast<char*>(it->second.storage) + offset;
  return cudaSuccess;
}

// The device bytes of a copy to (`to`) or from a registered variable, the direction checked.
cudaError_t symbolSide(const void* symbol, size_t offset, size_t n, cudaMemcpyKind kind, bool to, char*& out) {
  const cudaMemcpyKind host = to ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (kind != host && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  return symbolRange(symbol, offset, n, out);
}

cudaError_t toSymbol(bool perThread, const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind,
                     bool async, cudaStream_t s) {
  const DriverTable* D = nullptr;
  if (cudaError_t e = acquire(perThread, D)) return e;
  char* device = nullptr;
  if (cudaError_t e = symbolSide(symbol, offset, n, kind, true, device)) return record(e);
  return copyLinear(perThread, device, src, n, kind, async, s);
}

cudaError_t fromSymbol(bool perThread, void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind,
                       bool async, cudaStream_t s) {
  const DriverTable* D = nullptr;
  if (cudaError_t e = acquire(perThread, D)) return e;
  char* device = nullptr;
  if (cudaError_t e = symbolSide(symbol, offset, n, kind, false, device)) return record(e);
  return copyLinear(perThread, dst, device, n, kind, async, s);
}

// Copy nodes' shorthands as a 3D copy's description: a linear copy (one row), to or from a
// registered variable.
cudaError_t describe1D(void* dst, const void* src, size_t n, cudaMemcpyKind kind, CUDA_MEMCPY3D& c) {
  cudaMemcpy3DParms p{};
  p.srcPtr = cudaPitchedPtr{const_cast<void*>(src), n, n, 1};
  p.dstPtr = cudaPitchedPtr{dst, n, n, 1};
  p.extent = cudaExtent{n, 1, 1};
  p.kind = kind;
  return describe3D(&p, c);
}
cudaError_t describeToSymbol(const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind,
                             CUDA_MEMCPY3D& c) {
  char* device = nullptr;
  if (cudaError_t e = symbolSide(symbol, offset, n, kind, true, device)) return e;
  return describe1D(device, src, n, kind, c);
}
cudaError_t describeFromSymbol(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind,
                               CUDA_MEMCPY3D& c) {
  char* device = nullptr;
  if (cudaError_t e = symbolSide(symbol, offset, n, kind, false, device)) return e;
  return describe1D(dst, device, n, kind, c);
}

// ------------------------------------------------------------------ sets
cudaError_t set(bool perThread, void* p, int value, size_t n, bool async, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  const auto v = static_cast<unsigned char>(value);
  return call(async ? D->cuMemsetD8Async(dptr(p), v, n, s) : D->cuMemsetD8(dptr(p), v, n));
}

cudaError_t set2D(bool perThread, void* p, size_t pitch, int value, size_t width, size_t height, bool async,
                  cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  const auto v = static_cast<unsigned char>(value);
  return call(async ? D->cuMemsetD2D8Async(dptr(p), pitch, v, width, height, s)
                    : D->cuMemsetD2D8(dptr(p), pitch, v, width, height));
}

// A pitched volume, a slice (a 2D set) at a time: slices are `ysize` rows apart.
cudaError_t set3D(bool perThread, cudaPitchedPtr p, int value, cudaExtent extent, bool async, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  if (extent.width > p.pitch || (extent.depth > 1 && extent.height > p.ysize)) return record(cudaErrorInvalidValue);
  const auto v = static_cast<unsigned char>(value);
  for (size_t z = 0; z < extent.depth; ++z) {
    const CUdeviceptr slice = dptr(p.ptr) + z * p.pitch * p.ysize;
    const cudaError_t e = call(async ? D->cuMemsetD2D8Async(slice, p.pitch, v, extent.width, extent.height, s)
                                     : D->cuMemsetD2D8(slice, p.pitch, v, extent.width, extent.height));
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// A runtime stream callback called through the driver's: the stand-in driver runs it before
// cuStreamAddCallback returns, so the pair can live on the caller's stack.
struct StreamCallback {
  cudaStreamCallback_t fn;
  void* userData;
};
void CUDA_CB runStreamCallback(CUstream s, CUresult status, void* data) {
  const auto* c = static_cast<const StreamCallback*>(data);
  c->fn(s, fromDriver(status), c->userData);
}
cudaError_t addCallback(bool perThread, cudaStream_t s, cudaStreamCallback_t fn, void* userData, unsigned flags) {
  STANDIN_DRIVER(perThread);
  if (fn == nullptr) return record(cudaErrorInvalidValue);
  StreamCallback c{fn, userData};
  return call(D->cuStreamAddCallback(s, runStreamCallback, &c, flags));
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ registration (nvcc-generated code)
// These run from static constructors: no driver call here, the runtime starts on first use.
void** __cudaRegisterFatBinary(void* fatCubin) {
  struct Wrapper {  // __fatBinC_Wrapper_t, fatbinary_section.h
    int magic;
    int version;
    const unsigned long long* data;
    void* filenameOrFatbins;
  };
  constexpr int kWrapperMagic = 0x466243b1;
  auto* binary = new FatBinary();
  const auto* wrapper = static_cast<const Wrapper*>(fatCubin);
  binary->image = wrapper != nullptr && wrapper->magic == kWrapperMagic ? static_cast<const void*>(wrapper->data) : fatCubin;
  return reinterpret_cast<void**>(binary);
}
void __cudaRegisterFatBinaryEnd(void**) {}
// Runs from atexit, when the driver may already be going away: libraries stay loaded.
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char*, const char* deviceName, int, uint3*, uint3*,
                            dim3*, dim3*, int*) {
  if (hostFun == nullptr || deviceName == nullptr) return;
  auto* entry = new KernelEntry{deviceName, reinterpret_cast<FatBinary*>(fatCubinHandle)};
  Runtime& r = rt();
  std::unique_lock lock(r.mutex);
  r.byHostFun[hostFun] = entry;
}
void __cudaRegisterVar(void**, char* hostVar, char*, const char*, int, size_t size, int, int) {
  Symbol symbol{calloc(1, size != 0 ? size : 1), size};
  Runtime& r = rt();
  std::unique_lock lock(r.mutex);
  r.symbols[hostVar] = symbol;
}
// Host code reaches a __managed__ variable through the pointer stored here; the variable's
// address is also its symbol.
void __cudaRegisterManagedVar(void**, void** hostVarPtrAddress, char*, const char*, int, size_t size, int, int) {
  Symbol symbol{calloc(1, size != 0 ? size : 1), size};
  *hostVarPtrAddress = symbol.storage;
  Runtime& r = rt();
  std::unique_lock lock(r.mutex);
  r.symbols[symbol.storage] = symbol;
}
void __cudaRegisterHostVar(void**, const char*, char*, size_t) {}
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream) {
  callStack.push_back(CallConfiguration{gridDim, blockDim, sharedMem, stream});
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  if (callStack.empty()) return cudaErrorMissingConfiguration;
  const CallConfiguration c = callStack.back();
  callStack.pop_back();
  *gridDim = c.grid, *blockDim = c.block, *sharedMem = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

// ------------------------------------------------------------------ kernels
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  STANDIN_DRIVER(false);
  if (kernel == nullptr) return record(cudaErrorInvalidValue);
  CUkernel k = nullptr;
  if (cudaError_t e = resolveKernel(*D, hostFun, k)) return record(e);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}
cudaError_t cudaGetKernel(cudaKernel_t* kernel, const void* entryFuncAddr) { return __cudaGetKernel(kernel, entryFuncAddr); }
// The triple-chevron path: the kernel handle goes to the driver as it is, as in the real runtime.
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  STANDIN_DRIVER(false);
  if (kernel == nullptr) return record(cudaErrorInvalidDeviceFunction);
  return launchKernel(*D, reinterpret_cast<CUkernel>(kernel), g, b, args, shared, s, false);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  STANDIN_DRIVER(true);
  if (kernel == nullptr) return record(cudaErrorInvalidDeviceFunction);
  return launchKernel(*D, reinterpret_cast<CUkernel>(kernel), g, b, args, shared, s, false);
}
// A kernel's settings, on its CUkernel for device 0, as CUDA 13's runtime sets them.
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  STANDIN_DRIVER(false);
  CUkernel k = nullptr;
  if (cudaError_t e = resolveKernel(*D, func, k)) return record(e);
  return call(D->cuKernelSetAttribute(static_cast<CUfunction_attribute>(attr), value, k, 0));
}
cudaError_t cudaFuncSetCacheConfig(const void* func, cudaFuncCache config) {
  STANDIN_DRIVER(false);
  CUkernel k = nullptr;
  if (cudaError_t e = resolveKernel(*D, func, k)) return record(e);
  return call(D->cuKernelSetCacheConfig(k, static_cast<CUfunc_cache>(config), 0));
}
// The current context's limits and persisting L2 lines, as the driver's.
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  STANDIN_DRIVER(false);
  return call(D->cuCtxSetLimit(static_cast<CUlimit>(limit), value));
}
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache config) {
  STANDIN_DRIVER(false);
  return call(D->cuCtxSetCacheConfig(static_cast<CUfunc_cache>(config)));
}
cudaError_t cudaCtxResetPersistingL2Cache() {
  STANDIN_DRIVER(false);
  return call(D->cuCtxResetPersistingL2Cache());
}
cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (name == nullptr) return record(cudaErrorInvalidValue);
  KernelEntry* entry = findKernel(func);
  if (entry == nullptr) return record(cudaErrorInvalidDeviceFunction);
  *name = entry->deviceName.c_str();
  return cudaSuccess;
}

// ------------------------------------------------------------------ launches
cudaError_t cudaLaunchKernel(const void* func, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return launchFunction(false, func, g, b, args, shared, s, false);
}
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return launchFunction(true, func, g, b, args, shared, s, false);
}
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return launchFunction(false, func, g, b, args, shared, s, true);
}
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 g, dim3 b, void** args, size_t shared, cudaStream_t s) {
  return launchFunction(true, func, g, b, args, shared, s, true);
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launchEx(false, config, func, args);
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  return launchEx(true, config, func, args);
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamBeginCapture(s, static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, cudaStreamCaptureMode mode) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamBeginCapture(s, static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamEndCapture(s, reinterpret_cast<CUgraph*>(graph)));
}
// CUDA 13's, with each dependency's edge data (12.x's took none under this name).
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edges,
                                                size_t count, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamUpdateCaptureDependencies(s, reinterpret_cast<CUgraphNode*>(dependencies),
                                                   reinterpret_cast<const CUgraphEdgeData*>(edges), count, flags));
}
cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t s, cudaGraphNode_t* dependencies,
                                                     const cudaGraphEdgeData* edges, size_t count, unsigned flags) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamUpdateCaptureDependencies(s, reinterpret_cast<CUgraphNode*>(dependencies),
                                                   reinterpret_cast<const CUgraphEdgeData*>(edges), count, flags));
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* graph) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamEndCapture(s, reinterpret_cast<CUgraph*>(graph)));
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphInstantiateWithFlags(reinterpret_cast<CUgraphExec*>(exec), reinterpret_cast<CUgraph>(graph), flags));
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphInstantiateWithFlags(reinterpret_cast<CUgraphExec*>(exec), reinterpret_cast<CUgraph>(graph), flags));
}
cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData* edges, size_t count, cudaStreamCaptureMode mode) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamBeginCaptureToGraph(s, graph, dependencies, reinterpret_cast<const CUgraphEdgeData*>(edges), count,
                                             static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t s, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                               const cudaGraphEdgeData* edges, size_t count, cudaStreamCaptureMode mode) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamBeginCaptureToGraph(s, graph, dependencies, reinterpret_cast<const CUgraphEdgeData*>(edges), count,
                                             static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphDestroy(reinterpret_cast<CUgraph>(graph)));
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(exec)));
}
cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphCreate(reinterpret_cast<CUgraph*>(graph), flags));
}
// CUDA 13's edge calls: each edge's data before the count.
cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                     const cudaGraphEdgeData* edges, size_t count) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddDependencies(graph, from, to, reinterpret_cast<const CUgraphEdgeData*>(edges), count));
}
cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                        const cudaGraphEdgeData* edges, size_t count) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphRemoveDependencies(graph, from, to, reinterpret_cast<const CUgraphEdgeData*>(edges), count));
}
cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphDestroyNode(node));
}
cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t original) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphClone(clone, original));
}
// A node's parameters as the driver's: for nodes added and nodes set.
static cudaError_t kernelNodeParams(const DriverTable& d, const cudaKernelNodeParams* p, CUDA_KERNEL_NODE_PARAMS& c) {
  if (p == nullptr) return cudaErrorInvalidValue;
  CUkernel k = nullptr;
  if (cudaError_t e = resolveKernel(d, p->func, k)) return e;
  c = CUDA_KERNEL_NODE_PARAMS{};
  c.func = reinterpret_cast<CUfunction>(k);
  c.gridDimX = p->gridDim.x, c.gridDimY = p->gridDim.y, c.gridDimZ = p->gridDim.z;
  c.blockDimX = p->blockDim.x, c.blockDimY = p->blockDim.y, c.blockDimZ = p->blockDim.z;
  c.sharedMemBytes = p->sharedMemBytes, c.kernelParams = p->kernelParams, c.extra = p->extra;
  return cudaSuccess;
}
static cudaError_t memsetNodeParams(const cudaMemsetParams* p, CUDA_MEMSET_NODE_PARAMS& c) {
  if (p == nullptr) return cudaErrorInvalidValue;
  c = CUDA_MEMSET_NODE_PARAMS{};
  c.dst = dptr(p->dst), c.pitch = p->pitch, c.value = p->value, c.elementSize = p->elementSize;
  c.width = p->width, c.height = p->height;
  return cudaSuccess;
}
static cudaError_t hostNodeParams(const cudaHostNodeParams* p, CUDA_HOST_NODE_PARAMS& c) {
  if (p == nullptr) return cudaErrorInvalidValue;
  c = CUDA_HOST_NODE_PARAMS{p->fn, p->userData};
  return cudaSuccess;
}
// Graphs built node by node: each node through the driver's call for it, its parameters converted.
#define STANDIN_NODE_ARGS reinterpret_cast<CUgraphNode*>(node), reinterpret_cast<CUgraph>(graph), \
                          reinterpret_cast<const CUgraphNode*>(dependencies), count
// Nodes whose runtime parameters are converted to the driver's: each kind's conversion once, for a
// node added, set in its graph and set in an exec (`extra`: the context the driver's add and exec
// calls take for copies and sets).
#define STANDIN_NODE reinterpret_cast<CUgraphNode>(node)
#define STANDIN_EXEC_NODE reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUgraphNode>(node)
#define STANDIN_NODE_PARAMS(Kind, RuntimeParams, DriverParams, convert, extra)                                       \
  cudaError_t cudaGraphAdd##Kind##Node(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies, \
                                       size_t count, const RuntimeParams* p) {                                      \
    STANDIN_DRIVER(false);                                                                                          \
    DriverParams c;                                                                                                 \
    if (cudaError_t e = convert) return record(e);                                                                  \
    return call(D->cuGraphAdd##Kind##Node(STANDIN_NODE_ARGS, &c extra));                                            \
  }                                                                                                                 \
  cudaError_t cudaGraph##Kind##NodeSetParams(cudaGraphNode_t node, const RuntimeParams* p) {                        \
    STANDIN_DRIVER(false);                                                                                          \
    DriverParams c;                                                                                                 \
    if (cudaError_t e = convert) return record(e);                                                                  \
    return call(D->cuGraph##Kind##NodeSetParams(STANDIN_NODE, &c));                                                 \
  }                                                                                                                 \
  cudaError_t cudaGraphExec##Kind##NodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, const RuntimeParams* p) { \
    STANDIN_DRIVER(false);                                                                                          \
    DriverParams c;                                                                                                 \
    if (cudaError_t e = convert) return record(e);                                                                  \
    return call(D->cuGraphExec##Kind##NodeSetParams(STANDIN_EXEC_NODE, &c extra));                                  \
  }
#define STANDIN_COMMA ,
STANDIN_NODE_PARAMS(Kernel, cudaKernelNodeParams, CUDA_KERNEL_NODE_PARAMS, kernelNodeParams(*D, p, c), )
STANDIN_NODE_PARAMS(Memcpy, cudaMemcpy3DParms, CUDA_MEMCPY3D, describe3D(p, c), STANDIN_COMMA rt().context)
STANDIN_NODE_PARAMS(Memset, cudaMemsetParams, CUDA_MEMSET_NODE_PARAMS, memsetNodeParams(p, c), STANDIN_COMMA rt().context)
STANDIN_NODE_PARAMS(Host, cudaHostNodeParams, CUDA_HOST_NODE_PARAMS, hostNodeParams(p, c), )
#undef STANDIN_NODE_PARAMS
#undef STANDIN_COMMA
// The copy nodes' shorthands, the same way: `params` their parameters after the node's, `convert`
// their description.
#define STANDIN_UNPAREN(...) __VA_ARGS__
#define STANDIN_MEMCPY_NODE(Suffix, params, convert)                                                                    \
  cudaError_t cudaGraphAddMemcpyNode##Suffix(cudaGraphNode_t* node, cudaGraph_t graph,                                 \
                                             const cudaGraphNode_t* dependencies, size_t count, STANDIN_UNPAREN params) { \
    STANDIN_DRIVER(false);                                                                                             \
    CUDA_MEMCPY3D c;                                                                                                   \
    if (cudaError_t e = convert) return record(e);                                                                     \
    return call(D->cuGraphAddMemcpyNode(STANDIN_NODE_ARGS, &c, rt().context));                                        \
  }                                                                                                                    \
  cudaError_t cudaGraphMemcpyNodeSetParams##Suffix(cudaGraphNode_t node, STANDIN_UNPAREN params) {                     \
    STANDIN_DRIVER(false);                                                                                             \
    CUDA_MEMCPY3D c;                                                                                                   \
    if (cudaError_t e = convert) return record(e);                                                                     \
    return call(D->cuGraphMemcpyNodeSetParams(STANDIN_NODE, &c));                                                      \
  }                                                                                                                    \
  cudaError_t cudaGraphExecMemcpyNodeSetParams##Suffix(cudaGraphExec_t exec, cudaGraphNode_t node,                     \
                                                       STANDIN_UNPAREN params) {                                       \
    STANDIN_DRIVER(false);                                                                                             \
    CUDA_MEMCPY3D c;                                                                                                   \
    if (cudaError_t e = convert) return record(e);                                                                     \
    return call(D->cuGraphExecMemcpyNodeSetParams(STANDIN_EXEC_NODE, &c, rt().context));                              \
  }
STANDIN_MEMCPY_NODE(1D, (void* dst, const void* src, size_t n, cudaMemcpyKind kind), describe1D(dst, src, n, kind, c))
STANDIN_MEMCPY_NODE(ToSymbol, (const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind),
                    describeToSymbol(symbol, src, n, offset, kind, c))
STANDIN_MEMCPY_NODE(FromSymbol, (void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind),
                    describeFromSymbol(dst, symbol, n, offset, kind, c))
#undef STANDIN_MEMCPY_NODE
#undef STANDIN_UNPAREN
cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                       size_t count, cudaGraph_t child) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddChildGraphNode(STANDIN_NODE_ARGS, reinterpret_cast<CUgraph>(child)));
}
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                  size_t count) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddEmptyNode(STANDIN_NODE_ARGS));
}
cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                        size_t count, cudaEvent_t event) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddEventRecordNode(STANDIN_NODE_ARGS, reinterpret_cast<CUevent>(event)));
}
cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                      size_t count, cudaEvent_t event) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddEventWaitNode(STANDIN_NODE_ARGS, reinterpret_cast<CUevent>(event)));
}
// The runtime's allocation parameters are the driver's, field for field.
static_assert(sizeof(cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS));
cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                     size_t count, cudaMemAllocNodeParams* p) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddMemAllocNode(STANDIN_NODE_ARGS, reinterpret_cast<CUDA_MEM_ALLOC_NODE_PARAMS*>(p)));
}
cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                    size_t count, void* p) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddMemFreeNode(STANDIN_NODE_ARGS, dptr(p)));
}
// External semaphores signalled or waited for as nodes (the parameters are the driver's, above).
#define STANDIN_SEMAPHORE_NODES(Kind, Params, DriverParams)                                                    \
  cudaError_t cudaGraphAddExternalSemaphores##Kind##Node(cudaGraphNode_t* node, cudaGraph_t graph,              \
                                                         const cudaGraphNode_t* dependencies, size_t count,     \
                                                         const Params* p) {                                     \
    STANDIN_DRIVER(false);                                                                                      \
    return call(D->cuGraphAddExternalSemaphores##Kind##Node(STANDIN_NODE_ARGS, reinterpret_cast<const DriverParams*>(p))); \
  }                                                                                                             \
  cudaError_t cudaGraphExternalSemaphores##Kind##NodeSetParams(cudaGraphNode_t node, const Params* p) {         \
    STANDIN_DRIVER(false);                                                                                      \
    return call(D->cuGraphExternalSemaphores##Kind##NodeSetParams(STANDIN_NODE, reinterpret_cast<const DriverParams*>(p))); \
  }                                                                                                             \
  cudaError_t cudaGraphExecExternalSemaphores##Kind##NodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,  \
                                                                   const Params* p) {                           \
    STANDIN_DRIVER(false);                                                                                      \
    return call(D->cuGraphExecExternalSemaphores##Kind##NodeSetParams(STANDIN_EXEC_NODE,                        \
                                                                      reinterpret_cast<const DriverParams*>(p))); \
  }
STANDIN_SEMAPHORE_NODES(Signal, cudaExternalSemaphoreSignalNodeParams, CUDA_EXT_SEM_SIGNAL_NODE_PARAMS)
STANDIN_SEMAPHORE_NODES(Wait, cudaExternalSemaphoreWaitNodeParams, CUDA_EXT_SEM_WAIT_NODE_PARAMS)
#undef STANDIN_SEMAPHORE_NODES
#undef STANDIN_NODE_ARGS
// CUDA 13's (12.x's took no edge data under this name). The runtime's parameters are the
// driver's, field for field.
static_assert(sizeof(cudaGraphNodeParams) == sizeof(CUgraphNodeParams) && sizeof(cudaGraphEdgeData) == sizeof(CUgraphEdgeData));
cudaError_t cudaGraphAddNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                             const cudaGraphEdgeData* edges, size_t count, cudaGraphNodeParams* params) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphAddNode(reinterpret_cast<CUgraphNode*>(node), reinterpret_cast<CUgraph>(graph),
                                reinterpret_cast<const CUgraphNode*>(dependencies),
                                reinterpret_cast<const CUgraphEdgeData*>(edges), count,
                                reinterpret_cast<CUgraphNodeParams*>(params)));
}
// Graphs edited, the other kinds: a node's event or child graph, or its generic parameters.
cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphEventRecordNodeSetEvent(STANDIN_NODE, reinterpret_cast<CUevent>(event)));
}
cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphExecEventRecordNodeSetEvent(STANDIN_EXEC_NODE, reinterpret_cast<CUevent>(event)));
}
cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphEventWaitNodeSetEvent(STANDIN_NODE, reinterpret_cast<CUevent>(event)));
}
cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphExecEventWaitNodeSetEvent(STANDIN_EXEC_NODE, reinterpret_cast<CUevent>(event)));
}
cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraph_t child) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphExecChildGraphNodeSetParams(STANDIN_EXEC_NODE, reinterpret_cast<CUgraph>(child)));
}
cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, cudaGraphNodeParams* params) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphNodeSetParams(STANDIN_NODE, reinterpret_cast<CUgraphNodeParams*>(params)));
}
cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNodeParams* params) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphExecNodeSetParams(STANDIN_EXEC_NODE, reinterpret_cast<CUgraphNodeParams*>(params)));
}
// Graphs edited further, as the driver's: a kernel node's attributes (the runtime's values have
// the driver's layout), a node enabled in an exec, a conditional handle made (in the runtime's
// context), graph memory given back, user objects and graphs' references to them.
static_assert(sizeof(cudaKernelNodeAttrValue) == sizeof(CUkernelNodeAttrValue));
cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                            const cudaKernelNodeAttrValue* value) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphKernelNodeSetAttribute(STANDIN_NODE, static_cast<CUkernelNodeAttrID>(attr),
                                               reinterpret_cast<const CUkernelNodeAttrValue*>(value)));
}
cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t dst, cudaGraphNode_t src) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphKernelNodeCopyAttributes(reinterpret_cast<CUgraphNode>(dst), reinterpret_cast<CUgraphNode>(src)));
}
cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned enabled) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphNodeSetEnabled(STANDIN_EXEC_NODE, enabled));
}
cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* handle, cudaGraph_t graph, unsigned defaultValue,
                                             unsigned flags) {
  STANDIN_DRIVER(false);
  static_assert(sizeof(cudaGraphConditionalHandle) == sizeof(CUgraphConditionalHandle));
  return call(D->cuGraphConditionalHandleCreate(reinterpret_cast<CUgraphConditionalHandle*>(handle),
                                                reinterpret_cast<CUgraph>(graph), rt().context, defaultValue, flags));
}
cudaError_t cudaDeviceGraphMemTrim(int device) {
  STANDIN_DRIVER(false);
  return call(D->cuDeviceGraphMemTrim(device));
}
cudaError_t cudaUserObjectCreate(cudaUserObject_t* object, void* ptr, cudaHostFn_t destroy, unsigned references,
                                 unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuUserObjectCreate(reinterpret_cast<CUuserObject*>(object), ptr, destroy, references, flags));
}
cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned count) {
  STANDIN_DRIVER(false);
  return call(D->cuUserObjectRetain(reinterpret_cast<CUuserObject>(object), count));
}
cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned count) {
  STANDIN_DRIVER(false);
  return call(D->cuUserObjectRelease(reinterpret_cast<CUuserObject>(object), count));
}
cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned count, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphRetainUserObject(reinterpret_cast<CUgraph>(graph), reinterpret_cast<CUuserObject>(object), count,
                                         flags));
}
cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned count) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphReleaseUserObject(reinterpret_cast<CUgraph>(graph), reinterpret_cast<CUuserObject>(object), count));
}
#undef STANDIN_NODE
#undef STANDIN_EXEC_NODE
// CUDA 12's and 13's (11's took an error node and a result out under this name). The result info is
// the driver's, field for field.
static_assert(sizeof(cudaGraphExecUpdateResultInfo) == sizeof(CUgraphExecUpdateResultInfo));
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo* info) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphExecUpdate(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUgraph>(graph),
                                   reinterpret_cast<CUgraphExecUpdateResultInfo*>(info)));
}
// The runtime's parameters are the driver's, field for field.
static_assert(sizeof(cudaGraphInstantiateParams) == sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS));
cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphInstantiateParams* params) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphInstantiateWithParams(reinterpret_cast<CUgraphExec*>(exec), reinterpret_cast<CUgraph>(graph),
                                              reinterpret_cast<CUDA_GRAPH_INSTANTIATE_PARAMS*>(params)));
}
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphInstantiateParams* params) {
  STANDIN_DRIVER(true);
  return call(D->cuGraphInstantiateWithParams(reinterpret_cast<CUgraphExec*>(exec), reinterpret_cast<CUgraph>(graph),
                                              reinterpret_cast<CUDA_GRAPH_INSTANTIATE_PARAMS*>(params)));
}
cudaError_t cudaGraphUpload(cudaGraphExec_t graph, cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphUpload(reinterpret_cast<CUgraphExec>(graph), s));
}
cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graph, cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuGraphUpload(reinterpret_cast<CUgraphExec>(graph), s));
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t graph, cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphLaunch(reinterpret_cast<CUgraphExec>(graph), s));
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graph, cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuGraphLaunch(reinterpret_cast<CUgraphExec>(graph), s));
}

// ------------------------------------------------------------------ devices, versions, errors
cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  *count = 0;
  STANDIN_DRIVER(false);
  return call(D->cuDeviceGetCount(count));
}
cudaError_t cudaSetDevice(int device) {
  STANDIN_DRIVER(false);
  return device == 0 ? cudaSuccess : record(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  STANDIN_DRIVER(false);
  *device = 0;
  return cudaSuccess;
}
// Peer access between devices: the one device has no peer; the runtime refuses itself and any
// device that is not there before asking the driver.
cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  STANDIN_DRIVER(false);
  return call(D->cuDeviceCanAccessPeer(can, device, peer));
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags) {
  STANDIN_DRIVER(false);
  if (flags != 0) return record(cudaErrorInvalidValue);
  (void)peer;  // this device, or none
  return record(cudaErrorInvalidDevice);
}
cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  STANDIN_DRIVER(false);
  (void)peer;
  return record(cudaErrorInvalidDevice);
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  STANDIN_DRIVER(false);
  return call(D->cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
}
// Answers without a usable device, like the real one: 0 when there is no driver at all.
cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(cudaErrorInvalidValue);
  Runtime& r = rt();
  std::call_once(r.once, [&r] { r.initError = initialise(r); });
  *driverVersion = r.driverVersion;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = kRuntimeVersion;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = lastError;
  lastError = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return lastError; }
const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* e = errorText(error);
  return e != nullptr ? e->name : "unrecognized error code";
}
const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* e = errorText(error);
  return e != nullptr ? e->text : "unrecognized error code";
}
cudaError_t cudaDeviceSynchronize() {
  STANDIN_DRIVER(false);
  return call(D->cuCtxSynchronize());
}
cudaError_t cudaDeviceReset() {
  STANDIN_DRIVER(false);
  return call(D->cuDevicePrimaryCtxReset(0));
}

// ------------------------------------------------------------------ memory
cudaError_t cudaMalloc(void** p, size_t n) {
  STANDIN_DRIVER(false);
  if (p == nullptr) return record(cudaErrorInvalidValue);
  if (n == 0) {  // no allocation, no error: the runtime hands out NULL
    *p = nullptr;
    return cudaSuccess;
  }
  return call(D->cuMemAlloc(reinterpret_cast<CUdeviceptr*>(p), n));
}
cudaError_t cudaMallocManaged(void** p, size_t n, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuMemAllocManaged(reinterpret_cast<CUdeviceptr*>(p), n, flags));
}
cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  STANDIN_DRIVER(false);
  return call(D->cuMemAllocPitch(reinterpret_cast<CUdeviceptr*>(p), pitch, width, height, 16));
}
// The slices' rows one after the other in one pitched allocation.
cudaError_t cudaMalloc3D(cudaPitchedPtr* p, cudaExtent extent) {
  STANDIN_DRIVER(false);
  if (p == nullptr) return record(cudaErrorInvalidValue);
  CUdeviceptr ptr = 0;
  size_t pitch = 0;
  if (cudaError_t e = call(D->cuMemAllocPitch(&ptr, &pitch, extent.width, extent.height * extent.depth, 16))) return e;
  *p = cudaPitchedPtr{reinterpret_cast<void*>(ptr), pitch, extent.width, extent.height};
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t n) {
  STANDIN_DRIVER(false);
  return call(D->cuMemAllocHost(p, n));
}
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuMemHostAlloc(p, n, flags));
}
// cudaFree(nullptr) is the idiom that starts the runtime; it frees nothing.
// A channel description as the driver's array format: channels of one size and kind.
static bool arrayFormat(const cudaChannelFormatDesc* f, CUarray_format& format, unsigned& channels) {
  if (f == nullptr || f->x <= 0) return false;
  channels = 1 + (f->y != 0) + (f->z != 0) + (f->w != 0);
  if ((f->y != 0 && f->y != f->x) || (f->z != 0 && f->z != f->x) || (f->w != 0 && f->w != f->x) || channels == 3)
    return false;
  switch (f->f) {
    case cudaChannelFormatKindUnsigned:
      format = f->x == 8 ? CU_AD_FORMAT_UNSIGNED_INT8 : f->x == 16 ? CU_AD_FORMAT_UNSIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT32;
      return f->x == 8 || f->x == 16 || f->x == 32;
    case cudaChannelFormatKindSigned:
      format = f->x == 8 ? CU_AD_FORMAT_SIGNED_INT8 : f->x == 16 ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_SIGNED_INT32;
      return f->x == 8 || f->x == 16 || f->x == 32;
    case cudaChannelFormatKindFloat:
      format = f->x == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
      return f->x == 16 || f->x == 32;
    default: return false;
  }
}
// After an array (or a mipmapped array) was made: its element's bytes kept (cudaMemcpy3D counts
// its elements).
extern "C++" {
template <typename Array>
static cudaError_t madeArray(Array* array, size_t elementBytes, cudaError_t e) {
  if (e == cudaSuccess) {
    std::unique_lock lock(rt().mutex);
    rt().arrayElements[*array] = elementBytes;
  }
  return e;
}
}
cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width, size_t height,
                            unsigned flags) {
  STANDIN_DRIVER(false);
  CUDA_ARRAY_DESCRIPTOR d{};
  if (!arrayFormat(desc, d.Format, d.NumChannels) || flags != 0) return record(cudaErrorInvalidValue);
  d.Width = width, d.Height = height;
  return madeArray(array, d.NumChannels * desc->x / 8, call(D->cuArrayCreate(reinterpret_cast<CUarray*>(array), &d)));
}
cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned flags) {
  STANDIN_DRIVER(false);
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (!arrayFormat(desc, d.Format, d.NumChannels) || flags != 0) return record(cudaErrorInvalidValue);
  d.Width = extent.width, d.Height = extent.height, d.Depth = extent.depth;
  return madeArray(array, d.NumChannels * desc->x / 8, call(D->cuArray3DCreate(reinterpret_cast<CUarray*>(array), &d)));
}
// Mipmapped arrays, as the driver's; each level's element noted as an array's is, when asked for.
static bool mipmapDescriptor(const cudaChannelFormatDesc* desc, cudaExtent extent, unsigned flags,
                             CUDA_ARRAY3D_DESCRIPTOR& d) {
  d = CUDA_ARRAY3D_DESCRIPTOR{};
  if (!arrayFormat(desc, d.Format, d.NumChannels) || flags != 0) return false;
  d.Width = extent.width, d.Height = extent.height, d.Depth = extent.depth;
  return true;
}
cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t* mipmap, const cudaChannelFormatDesc* desc, cudaExtent extent,
                                     unsigned levels, unsigned flags) {
  STANDIN_DRIVER(false);
  CUDA_ARRAY3D_DESCRIPTOR d;
  if (!mipmapDescriptor(desc, extent, flags, d)) return record(cudaErrorInvalidValue);
  return madeArray(mipmap, d.NumChannels * desc->x / 8,
                   call(D->cuMipmappedArrayCreate(reinterpret_cast<CUmipmappedArray*>(mipmap), &d, levels)));
}
cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t* array, cudaMipmappedArray_const_t mipmap, unsigned level) {
  STANDIN_DRIVER(false);
  const cudaError_t e = call(D->cuMipmappedArrayGetLevel(reinterpret_cast<CUarray*>(array),
                                                         reinterpret_cast<CUmipmappedArray>(const_cast<cudaMipmappedArray*>(mipmap)), level));
  return madeArray(array, arrayElement(mipmap), e);
}
cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmap) {
  STANDIN_DRIVER(false);
  return mipmap == nullptr ? cudaSuccess : call(D->cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(mipmap)));
}
cudaError_t cudaExternalMemoryGetMappedMipmappedArray(cudaMipmappedArray_t* mipmap, cudaExternalMemory_t memory,
                                                      const cudaExternalMemoryMipmappedArrayDesc* desc) {
  STANDIN_DRIVER(false);
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC d{};
  if (desc == nullptr || !mipmapDescriptor(&desc->formatDesc, desc->extent, desc->flags, d.arrayDesc))
    return record(cudaErrorInvalidValue);
  d.offset = desc->offset, d.numLevels = desc->numLevels;
  return madeArray(mipmap, d.arrayDesc.NumChannels * desc->formatDesc.x / 8,
                   call(D->cuExternalMemoryGetMappedMipmappedArray(reinterpret_cast<CUmipmappedArray*>(mipmap),
                                                                   reinterpret_cast<CUexternalMemory>(memory), &d)));
}
cudaError_t cudaFreeArray(cudaArray_t array) {
  STANDIN_DRIVER(false);
  if (array == nullptr) return cudaSuccess;
  const cudaError_t e = call(D->cuArrayDestroy(reinterpret_cast<CUarray>(array)));
  if (e == cudaSuccess) {
    std::unique_lock lock(rt().mutex);
    rt().arrayElements.erase(array);
  }
  return e;
}
cudaError_t cudaFree(void* p) {
  STANDIN_DRIVER(false);
  return p == nullptr ? cudaSuccess : call(D->cuMemFree(dptr(p)));
}
cudaError_t cudaFreeHost(void* p) {
  STANDIN_DRIVER(false);
  return p == nullptr ? cudaSuccess : call(D->cuMemFreeHost(p));
}
cudaError_t cudaHostRegister(void* p, size_t n, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuMemHostRegister(p, n, flags));
}
cudaError_t cudaHostUnregister(void* p) {
  STANDIN_DRIVER(false);
  return call(D->cuMemHostUnregister(p));
}
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuMemAllocAsync(reinterpret_cast<CUdeviceptr*>(p), n, s));
}
cudaError_t cudaMallocAsync_ptsz(void** p, size_t n, cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuMemAllocAsync(reinterpret_cast<CUdeviceptr*>(p), n, s));
}
// Pools: the runtime's have the driver's layout.
static_assert(sizeof(cudaMemPoolProps) == sizeof(CUmemPoolProps));
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  STANDIN_DRIVER(false);
  return call(D->cuDeviceGetDefaultMemPool(reinterpret_cast<CUmemoryPool*>(pool), device));
}
cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolCreate(reinterpret_cast<CUmemoryPool*>(pool), reinterpret_cast<const CUmemPoolProps*>(props)));
}
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolDestroy(reinterpret_cast<CUmemoryPool>(pool)));
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolTrimTo(reinterpret_cast<CUmemoryPool>(pool), keep));
}
// External memory and semaphores, as the driver's: the runtime's descriptors and parameters have
// the driver's layout and handle types.
static_assert(sizeof(cudaExternalMemoryHandleDesc) == sizeof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC) &&
              sizeof(cudaExternalMemoryBufferDesc) == sizeof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC) &&
              sizeof(cudaExternalSemaphoreHandleDesc) == sizeof(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC) &&
              sizeof(cudaExternalSemaphoreSignalParams) == sizeof(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS) &&
              sizeof(cudaExternalSemaphoreWaitParams) == sizeof(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS) &&
              sizeof(cudaExternalSemaphoreSignalNodeParams) == sizeof(CUDA_EXT_SEM_SIGNAL_NODE_PARAMS) &&
              sizeof(cudaExternalSemaphoreWaitNodeParams) == sizeof(CUDA_EXT_SEM_WAIT_NODE_PARAMS));
static_assert(int(cudaExternalMemoryHandleTypeOpaqueFd) == int(CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) &&
              int(cudaExternalSemaphoreHandleTypeOpaqueFd) == int(CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD) &&
              int(cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd) ==
                  int(CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD));
cudaError_t cudaImportExternalMemory(cudaExternalMemory_t* memory, const cudaExternalMemoryHandleDesc* desc) {
  STANDIN_DRIVER(false);
  return call(D->cuImportExternalMemory(reinterpret_cast<CUexternalMemory*>(memory),
                                        reinterpret_cast<const CUDA_EXTERNAL_MEMORY_HANDLE_DESC*>(desc)));
}
cudaError_t cudaExternalMemoryGetMappedBuffer(void** p, cudaExternalMemory_t memory, const cudaExternalMemoryBufferDesc* desc) {
  STANDIN_DRIVER(false);
  return call(D->cuExternalMemoryGetMappedBuffer(reinterpret_cast<CUdeviceptr*>(p), reinterpret_cast<CUexternalMemory>(memory),
                                                 reinterpret_cast<const CUDA_EXTERNAL_MEMORY_BUFFER_DESC*>(desc)));
}
cudaError_t cudaDestroyExternalMemory(cudaExternalMemory_t memory) {
  STANDIN_DRIVER(false);
  return call(D->cuDestroyExternalMemory(reinterpret_cast<CUexternalMemory>(memory)));
}
cudaError_t cudaImportExternalSemaphore(cudaExternalSemaphore_t* semaphore, const cudaExternalSemaphoreHandleDesc* desc) {
  STANDIN_DRIVER(false);
  return call(D->cuImportExternalSemaphore(reinterpret_cast<CUexternalSemaphore*>(semaphore),
                                           reinterpret_cast<const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC*>(desc)));
}
cudaError_t cudaDestroyExternalSemaphore(cudaExternalSemaphore_t semaphore) {
  STANDIN_DRIVER(false);
  return call(D->cuDestroyExternalSemaphore(reinterpret_cast<CUexternalSemaphore>(semaphore)));
}
#define STANDIN_SEMAPHORES(name, perThread, Params, DriverParams, driverName)                                \
  cudaError_t name(const cudaExternalSemaphore_t* semaphores, const Params* params, unsigned count, cudaStream_t s) { \
    STANDIN_DRIVER(perThread);                                                                               \
    return call(D->driverName(reinterpret_cast<const CUexternalSemaphore*>(semaphores),                      \
                              reinterpret_cast<const DriverParams*>(params), count, s));                     \
  }
STANDIN_SEMAPHORES(cudaSignalExternalSemaphoresAsync, false, cudaExternalSemaphoreSignalParams,
                   CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, cuSignalExternalSemaphoresAsync)
STANDIN_SEMAPHORES(cudaSignalExternalSemaphoresAsync_ptsz, true, cudaExternalSemaphoreSignalParams,
                   CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, cuSignalExternalSemaphoresAsync)
STANDIN_SEMAPHORES(cudaWaitExternalSemaphoresAsync, false, cudaExternalSemaphoreWaitParams,
                   CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, cuWaitExternalSemaphoresAsync)
STANDIN_SEMAPHORES(cudaWaitExternalSemaphoresAsync_ptsz, true, cudaExternalSemaphoreWaitParams,
                   CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, cuWaitExternalSemaphoresAsync)
#undef STANDIN_SEMAPHORES
// A pool's settings, as the driver's (the runtime's attributes, access descriptors and pools are
// the driver's).
static_assert(int(cudaMemPoolAttrReleaseThreshold) == int(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) &&
              int(cudaMemPoolAttrReservedMemHigh) == int(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) &&
              sizeof(cudaMemAccessDesc) == sizeof(CUmemAccessDesc));
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolSetAttribute(reinterpret_cast<CUmemoryPool>(pool), static_cast<CUmemPool_attribute>(attr), value));
}
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const cudaMemAccessDesc* map, size_t count) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolSetAccess(reinterpret_cast<CUmemoryPool>(pool), reinterpret_cast<const CUmemAccessDesc*>(map),
                                    count));
}
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  STANDIN_DRIVER(false);
  return call(D->cuDeviceSetMemPool(device, reinterpret_cast<CUmemoryPool>(pool)));
}
// OpenGL interop, as the driver's.
cudaError_t cudaGraphicsGLRegisterBuffer(cudaGraphicsResource** resource, unsigned buffer, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphicsGLRegisterBuffer(reinterpret_cast<CUgraphicsResource*>(resource), buffer, flags));
}
cudaError_t cudaGraphicsGLRegisterImage(cudaGraphicsResource** resource, unsigned image, unsigned target,
                                        unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphicsGLRegisterImage(reinterpret_cast<CUgraphicsResource*>(resource), image, target, flags));
}
cudaError_t cudaGraphicsUnregisterResource(cudaGraphicsResource_t resource) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphicsUnregisterResource(reinterpret_cast<CUgraphicsResource>(resource)));
}
cudaError_t cudaGraphicsMapResources(int count, cudaGraphicsResource_t* resources, cudaStream_t s) {
  STANDIN_DRIVER(false);
  if (count < 0) return record(cudaErrorInvalidValue);
  return call(D->cuGraphicsMapResources(static_cast<unsigned>(count), reinterpret_cast<CUgraphicsResource*>(resources), s));
}
cudaError_t cudaGraphicsUnmapResources(int count, cudaGraphicsResource_t* resources, cudaStream_t s) {
  STANDIN_DRIVER(false);
  if (count < 0) return record(cudaErrorInvalidValue);
  return call(
      D->cuGraphicsUnmapResources(static_cast<unsigned>(count), reinterpret_cast<CUgraphicsResource*>(resources), s));
}
cudaError_t cudaGraphicsResourceGetMappedPointer(void** p, size_t* bytes, cudaGraphicsResource_t resource) {
  STANDIN_DRIVER(false);
  return call(D->cuGraphicsResourceGetMappedPointer(reinterpret_cast<CUdeviceptr*>(p), bytes,
                                                    reinterpret_cast<CUgraphicsResource>(resource)));
}
// Pools shared between processes, as the driver's.
cudaError_t cudaMemPoolExportToShareableHandle(void* out, cudaMemPool_t pool, cudaMemAllocationHandleType type,
                                               unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolExportToShareableHandle(out, reinterpret_cast<CUmemoryPool>(pool),
                                                  static_cast<CUmemAllocationHandleType>(type), flags));
}
cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t* pool, void* handle, cudaMemAllocationHandleType type,
                                                 unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolImportFromShareableHandle(reinterpret_cast<CUmemoryPool*>(pool), handle,
                                                    static_cast<CUmemAllocationHandleType>(type), flags));
}
cudaError_t cudaMemPoolExportPointer(cudaMemPoolPtrExportData* data, void* p) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolExportPointer(reinterpret_cast<CUmemPoolPtrExportData*>(data), reinterpret_cast<CUdeviceptr>(p)));
}
cudaError_t cudaMemPoolImportPointer(void** p, cudaMemPool_t pool, cudaMemPoolPtrExportData* data) {
  STANDIN_DRIVER(false);
  return call(D->cuMemPoolImportPointer(reinterpret_cast<CUdeviceptr*>(p), reinterpret_cast<CUmemoryPool>(pool),
                                        reinterpret_cast<CUmemPoolPtrExportData*>(data)));
}
cudaError_t cudaMemSetMemPool(cudaMemLocation* location, cudaMemAllocationType type, cudaMemPool_t pool) {
  STANDIN_DRIVER(false);
  return call(D->cuMemSetMemPool(reinterpret_cast<CUmemLocation*>(location), static_cast<CUmemAllocationType>(type),
                                 reinterpret_cast<CUmemoryPool>(pool)));
}
cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuMemAllocFromPoolAsync(reinterpret_cast<CUdeviceptr*>(p), n, reinterpret_cast<CUmemoryPool>(pool), s));
}
cudaError_t cudaMallocFromPoolAsync_ptsz(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuMemAllocFromPoolAsync(reinterpret_cast<CUdeviceptr*>(p), n, reinterpret_cast<CUmemoryPool>(pool), s));
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuMemFreeAsync(dptr(p), s));
}
cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuMemFreeAsync(dptr(p), s));
}

// ------------------------------------------------------------------ copies
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return copyLinear(false, dst, src, n, kind, false, nullptr);
}
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return copyLinear(true, dst, src, n, kind, false, nullptr);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  return copyLinear(false, dst, src, n, kind, true, s);
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  return copyLinear(true, dst, src, n, kind, true, s);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, cudaMemcpyKind kind) {
  return copy2D(false, dst, dpitch, src, spitch, w, h, kind, false, nullptr);
}
cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
                              cudaMemcpyKind kind) {
  return copy2D(true, dst, dpitch, src, spitch, w, h, kind, false, nullptr);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
                              cudaMemcpyKind kind, cudaStream_t s) {
  return copy2D(false, dst, dpitch, src, spitch, w, h, kind, true, s);
}
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
                                   cudaMemcpyKind kind, cudaStream_t s) {
  return copy2D(true, dst, dpitch, src, spitch, w, h, kind, true, s);
}
// CUDA arrays: the side that is an array replaces its linear description (a byte and row offset,
// the array's own rows).
namespace {
cudaError_t arrayCopy(bool perThread, CUDA_MEMCPY2D c, bool async, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  return call(async ? D->cuMemcpy2DAsync(&c, s) : D->cuMemcpy2D(&c));
}
CUDA_MEMCPY2D toArrayCopy(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch, size_t w,
                          size_t h, cudaMemcpyKind kind) {
  CUDA_MEMCPY2D c = describe2D(nullptr, 0, src, spitch, w, h, kind);
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY, c.dstArray = reinterpret_cast<CUarray>(dst);
  c.dstXInBytes = wOffset, c.dstY = hOffset;
  return c;
}
CUDA_MEMCPY2D fromArrayCopy(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t w,
                            size_t h, cudaMemcpyKind kind) {
  CUDA_MEMCPY2D c = describe2D(dst, dpitch, nullptr, 0, w, h, kind);
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY, c.srcArray = reinterpret_cast<CUarray>(const_cast<cudaArray*>(src));
  c.srcXInBytes = wOffset, c.srcY = hOffset;
  return c;
}
// An array on a side the kind says is host memory is refused.
bool arrayKind(cudaMemcpyKind kind, bool source) {
  return validKind(kind) && memoryType(kind, source) != CU_MEMORYTYPE_HOST;
}
}  // namespace
#define STANDIN_TO_ARRAY(name, perThread, async, streamParam, stream)                                                 \
  cudaError_t name(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch, size_t w, size_t h, \
                   cudaMemcpyKind kind streamParam) {                                                                  \
    if (!arrayKind(kind, false)) return record(cudaErrorInvalidMemcpyDirection);                                      \
    return arrayCopy(perThread, toArrayCopy(dst, wOffset, hOffset, src, spitch, w, h, kind), async, stream);          \
  }
#define STANDIN_FROM_ARRAY(name, perThread, async, streamParam, stream)                                              \
  cudaError_t name(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t w, size_t h, \
                   cudaMemcpyKind kind streamParam) {                                                                  \
    if (!arrayKind(kind, true)) return record(cudaErrorInvalidMemcpyDirection);                                       \
    return arrayCopy(perThread, fromArrayCopy(dst, dpitch, src, wOffset, hOffset, w, h, kind), async, stream);        \
  }
#define STANDIN_COMMA ,
STANDIN_TO_ARRAY(cudaMemcpy2DToArray, false, false, , nullptr)
STANDIN_TO_ARRAY(cudaMemcpy2DToArray_ptds, true, false, , nullptr)
STANDIN_TO_ARRAY(cudaMemcpy2DToArrayAsync, false, true, STANDIN_COMMA cudaStream_t s, s)
STANDIN_TO_ARRAY(cudaMemcpy2DToArrayAsync_ptsz, true, true, STANDIN_COMMA cudaStream_t s, s)
STANDIN_FROM_ARRAY(cudaMemcpy2DFromArray, false, false, , nullptr)
STANDIN_FROM_ARRAY(cudaMemcpy2DFromArray_ptds, true, false, , nullptr)
STANDIN_FROM_ARRAY(cudaMemcpy2DFromArrayAsync, false, true, STANDIN_COMMA cudaStream_t s, s)
STANDIN_FROM_ARRAY(cudaMemcpy2DFromArrayAsync_ptsz, true, true, STANDIN_COMMA cudaStream_t s, s)
#undef STANDIN_TO_ARRAY
#undef STANDIN_FROM_ARRAY
#undef STANDIN_COMMA
// The first versions: `n` bytes from a byte and row offset on, one row of `n` bytes (the stand-in's
// rows follow each other, so a copy past a row's end goes on in the next, as NVIDIA's does).
#define STANDIN_TO_ARRAY_1D(name, perThread, async, streamParam, stream)                                               \
  cudaError_t name(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t n,                         \
                   cudaMemcpyKind kind streamParam) {                                                                  \
    if (!arrayKind(kind, false)) return record(cudaErrorInvalidMemcpyDirection);                                      \
    return arrayCopy(perThread, toArrayCopy(dst, wOffset, hOffset, src, n, n, 1, kind), async, stream);               \
  }
#define STANDIN_FROM_ARRAY_1D(name, perThread, async, streamParam, stream)                                             \
  cudaError_t name(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t n,                         \
                   cudaMemcpyKind kind streamParam) {                                                                  \
    if (!arrayKind(kind, true)) return record(cudaErrorInvalidMemcpyDirection);                                       \
    return arrayCopy(perThread, fromArrayCopy(dst, n, src, wOffset, hOffset, n, 1, kind), async, stream);             \
  }
#define STANDIN_COMMA ,
STANDIN_TO_ARRAY_1D(cudaMemcpyToArray, false, false, , nullptr)
STANDIN_TO_ARRAY_1D(cudaMemcpyToArray_ptds, true, false, , nullptr)
STANDIN_TO_ARRAY_1D(cudaMemcpyToArrayAsync, false, true, STANDIN_COMMA cudaStream_t s, s)
STANDIN_TO_ARRAY_1D(cudaMemcpyToArrayAsync_ptsz, true, true, STANDIN_COMMA cudaStream_t s, s)
STANDIN_FROM_ARRAY_1D(cudaMemcpyFromArray, false, false, , nullptr)
STANDIN_FROM_ARRAY_1D(cudaMemcpyFromArray_ptds, true, false, , nullptr)
STANDIN_FROM_ARRAY_1D(cudaMemcpyFromArrayAsync, false, true, STANDIN_COMMA cudaStream_t s, s)
STANDIN_FROM_ARRAY_1D(cudaMemcpyFromArrayAsync_ptsz, true, true, STANDIN_COMMA cudaStream_t s, s)
#undef STANDIN_TO_ARRAY_1D
#undef STANDIN_FROM_ARRAY_1D
#undef STANDIN_COMMA
static cudaError_t arrayToArray(bool perThread, cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t w, size_t h,
                                cudaMemcpyKind kind) {
  if (!arrayKind(kind, true) || !arrayKind(kind, false)) return record(cudaErrorInvalidMemcpyDirection);
  CUDA_MEMCPY2D c = fromArrayCopy(nullptr, 0, src, wOffsetSrc, hOffsetSrc, w, h, kind);
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY, c.dstArray = reinterpret_cast<CUarray>(dst);
  c.dstXInBytes = wOffsetDst, c.dstY = hOffsetDst;
  return arrayCopy(perThread, c, false, nullptr);
}
cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t w, size_t h, cudaMemcpyKind kind) {
  return arrayToArray(false, dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, w, h, kind);
}
cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                   size_t wOffsetSrc, size_t hOffsetSrc, size_t n, cudaMemcpyKind kind) {
  return arrayToArray(false, dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, n, 1, kind);
}
cudaError_t cudaMemcpyArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                        size_t wOffsetSrc, size_t hOffsetSrc, size_t n, cudaMemcpyKind kind) {
  return arrayToArray(true, dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, n, 1, kind);
}
cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                          size_t wOffsetSrc, size_t hOffsetSrc, size_t w, size_t h, cudaMemcpyKind kind) {
  return arrayToArray(true, dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, w, h, kind);
}
cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) { return copy3D(false, p, false, nullptr); }
cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p) { return copy3D(true, p, false, nullptr); }
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t s) { return copy3D(false, p, true, s); }
cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p, cudaStream_t s) { return copy3D(true, p, true, s); }
cudaError_t cudaMemcpy3DPeer(const cudaMemcpy3DPeerParms* p) { return copy3DPeer(false, p, false, nullptr); }
cudaError_t cudaMemcpy3DPeer_ptds(const cudaMemcpy3DPeerParms* p) { return copy3DPeer(true, p, false, nullptr); }
cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p, cudaStream_t s) {
  return copy3DPeer(false, p, true, s);
}
cudaError_t cudaMemcpy3DPeerAsync_ptsz(const cudaMemcpy3DPeerParms* p, cudaStream_t s) {
  return copy3DPeer(true, p, true, s);
}
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind) {
  return toSymbol(false, symbol, src, n, offset, kind, false, nullptr);
}
cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind) {
  return toSymbol(true, symbol, src, n, offset, kind, false, nullptr);
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind) {
  return fromSymbol(false, dst, symbol, n, offset, kind, false, nullptr);
}
cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind) {
  return fromSymbol(true, dst, symbol, n, offset, kind, false, nullptr);
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind,
                                    cudaStream_t s) {
  return toSymbol(false, symbol, src, n, offset, kind, true, s);
}
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t n, size_t offset,
                                         cudaMemcpyKind kind, cudaStream_t s) {
  return toSymbol(true, symbol, src, n, offset, kind, true, s);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t s) {
  return fromSymbol(false, dst, symbol, n, offset, kind, true, s);
}
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind,
                                           cudaStream_t s) {
  return fromSymbol(true, dst, symbol, n, offset, kind, true, s);
}
cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  STANDIN_DRIVER(false);
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  char* device = nullptr;
  if (cudaError_t e = symbolRange(symbol, 0, 0, device)) return record(e);
  *devPtr = device;
  return cudaSuccess;
}
cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  STANDIN_DRIVER(false);
  if (size == nullptr) return record(cudaErrorInvalidValue);
  Runtime& r = rt();
  std::shared_lock lock(r.mutex);
  auto it = r.symbols.find(symbol);
  if (it == r.symbols.end()) return record(cudaErrorInvalidSymbol);
  *size = it->second.size;
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t n) {
  STANDIN_DRIVER(false);
  if (dstDevice != 0 || srcDevice != 0) return record(cudaErrorInvalidDevice);
  const CUcontext ctx = rt().context;
  return call(D->cuMemcpyPeer(dptr(dst), ctx, dptr(src), ctx, n));
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t n, cudaStream_t s) {
  STANDIN_DRIVER(false);
  if (dstDevice != 0 || srcDevice != 0) return record(cudaErrorInvalidDevice);
  const CUcontext ctx = rt().context;
  return call(D->cuMemcpyPeerAsync(dptr(dst), ctx, dptr(src), ctx, n, s));
}

// ------------------------------------------------------------------ prefetches
// CUDA 13's: a location and flags (the runtime before it took a device ordinal under this name).
namespace {
cudaError_t prefetch(bool perThread, const void* p, size_t n, cudaMemLocation location, unsigned flags, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  CUmemLocation to{};
  to.type = static_cast<CUmemLocationType>(location.type);
  to.id = location.id;
  return call(D->cuMemPrefetchAsync(dptr(p), n, to, flags, s));
}
}  // namespace
cudaError_t cudaMemPrefetchAsync(const void* p, size_t n, cudaMemLocation location, unsigned flags, cudaStream_t s) {
  return prefetch(false, p, n, location, flags, s);
}
cudaError_t cudaMemPrefetchAsync_ptsz(const void* p, size_t n, cudaMemLocation location, unsigned flags,
                                      cudaStream_t s) {
  return prefetch(true, p, n, location, flags, s);
}

// ------------------------------------------------------------------ batches (CUDA 13's parameters)
// The runtime's arrays converted to the driver's, whose types have the same members.
namespace {
CUdeviceptr* driverPointers(const void* const* p) { return reinterpret_cast<CUdeviceptr*>(const_cast<void**>(p)); }
CUmemLocation driverLocation(const cudaMemLocation& l) {
  CUmemLocation d{};
  d.type = static_cast<CUmemLocationType>(l.type);
  d.id = l.id;
  return d;
}
cudaError_t copyBatch(bool perThread, void* const* dsts, const void* const* srcs, const size_t* sizes,
                      size_t count, cudaMemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  std::vector<CUmemcpyAttributes> driverAttrs(attrs != nullptr ? numAttrs : 0);
  for (size_t i = 0; i < driverAttrs.size(); ++i) {
    driverAttrs[i].srcAccessOrder = static_cast<CUmemcpySrcAccessOrder>(attrs[i].srcAccessOrder);
    driverAttrs[i].srcLocHint = driverLocation(attrs[i].srcLocHint);
    driverAttrs[i].dstLocHint = driverLocation(attrs[i].dstLocHint);
    driverAttrs[i].flags = attrs[i].flags;
  }
  return call(D->cuMemcpyBatchAsync(driverPointers(dsts), driverPointers(srcs), const_cast<size_t*>(sizes), count,
                                    attrs != nullptr ? driverAttrs.data() : nullptr, attrsIdxs, numAttrs, s));
}
CUmemcpy3DOperand driverOperand(const cudaMemcpy3DOperand& o) {
  CUmemcpy3DOperand d{};
  d.type = static_cast<CUmemcpy3DOperandType>(o.type);
  if (o.type == cudaMemcpyOperandTypePointer) {
    d.op.ptr.ptr = dptr(o.op.ptr.ptr);
    d.op.ptr.rowLength = o.op.ptr.rowLength, d.op.ptr.layerHeight = o.op.ptr.layerHeight;
    d.op.ptr.locHint = driverLocation(o.op.ptr.locHint);
  } else {
    d.op.array.array = reinterpret_cast<CUarray>(o.op.array.array);
    d.op.array.offset = CUoffset3D{o.op.array.offset.x, o.op.array.offset.y, o.op.array.offset.z};
  }
  return d;
}
cudaError_t copy3DBatch(bool perThread, size_t count, cudaMemcpy3DBatchOp* ops, unsigned long long flags,
                        cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  std::vector<CUDA_MEMCPY3D_BATCH_OP> driverOps(ops != nullptr ? count : 0);
  for (size_t i = 0; i < driverOps.size(); ++i) {
    driverOps[i].src = driverOperand(ops[i].src);
    driverOps[i].dst = driverOperand(ops[i].dst);
    driverOps[i].extent = CUextent3D{ops[i].extent.width, ops[i].extent.height, ops[i].extent.depth};
    driverOps[i].srcAccessOrder = static_cast<CUmemcpySrcAccessOrder>(ops[i].srcAccessOrder);
    driverOps[i].flags = ops[i].flags;
  }
  return call(D->cuMemcpy3DBatchAsync(count, ops != nullptr ? driverOps.data() : nullptr, flags, s));
}
// Prefetches to the locations, discards, or discards then prefetches.
enum class BatchKind { Prefetch, Discard, DiscardAndPrefetch };
cudaError_t prefetchBatch(bool perThread, BatchKind kind, void** ptrs, size_t* sizes, size_t count,
                          cudaMemLocation* locations, size_t* locationIdxs, size_t numLocations,
                          unsigned long long flags, cudaStream_t s) {
  STANDIN_DRIVER(perThread);
  std::vector<CUmemLocation> to(locations != nullptr ? numLocations : 0);
  for (size_t i = 0; i < to.size(); ++i) to[i] = driverLocation(locations[i]);
  CUmemLocation* const at = locations != nullptr ? to.data() : nullptr;
  CUdeviceptr* const p = driverPointers(ptrs);
  switch (kind) {
    case BatchKind::Prefetch:
      return call(D->cuMemPrefetchBatchAsync(p, sizes, count, at, locationIdxs, numLocations, flags, s));
    case BatchKind::Discard: return call(D->cuMemDiscardBatchAsync(p, sizes, count, flags, s));
    case BatchKind::DiscardAndPrefetch:
      return call(D->cuMemDiscardAndPrefetchBatchAsync(p, sizes, count, at, locationIdxs, numLocations, flags, s));
  }
  return record(cudaErrorInvalidValue);
}
}  // namespace
// Each batch entry point and its _ptsz twin.
#define STANDIN_BATCHES(suffix, perThread)                                                                             \
  cudaError_t cudaMemcpyBatchAsync##suffix(void* const* dsts, const void* const* srcs, const size_t* sizes,            \
                                           size_t count, cudaMemcpyAttributes* attrs, size_t* attrsIdxs,               \
                                           size_t numAttrs, cudaStream_t s) {                                          \
    return copyBatch(perThread, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, s);                              \
  }                                                                                                                    \
  cudaError_t cudaMemcpy3DBatchAsync##suffix(size_t count, cudaMemcpy3DBatchOp* ops, unsigned long long flags,         \
                                             cudaStream_t s) {                                                         \
    return copy3DBatch(perThread, count, ops, flags, s);                                                               \
  }                                                                                                                    \
  cudaError_t cudaMemPrefetchBatchAsync##suffix(void** ptrs, size_t* sizes, size_t count, cudaMemLocation* locations, \
                                                size_t* locationIdxs, size_t numLocations, unsigned long long flags,   \
                                                cudaStream_t s) {                                                      \
    return prefetchBatch(perThread, BatchKind::Prefetch, ptrs, sizes, count, locations, locationIdxs, numLocations,   \
                         flags, s);                                                                                    \
  }                                                                                                                    \
  cudaError_t cudaMemDiscardBatchAsync##suffix(void** ptrs, size_t* sizes, size_t count, unsigned long long flags,     \
                                               cudaStream_t s) {                                                       \
    return prefetchBatch(perThread, BatchKind::Discard, ptrs, sizes, count, nullptr, nullptr, 0, flags, s);            \
  }                                                                                                                    \
  cudaError_t cudaMemDiscardAndPrefetchBatchAsync##suffix(void** ptrs, size_t* sizes, size_t count,                    \
                                                          cudaMemLocation* locations, size_t* locationIdxs,            \
                                                          size_t numLocations, unsigned long long flags,               \
                                                          cudaStream_t s) {                                            \
    return prefetchBatch(perThread, BatchKind::DiscardAndPrefetch, ptrs, sizes, count, locations, locationIdxs,        \
                         numLocations, flags, s);                                                                      \
  }
STANDIN_BATCHES(, false)
STANDIN_BATCHES(_ptsz, true)
#undef STANDIN_BATCHES

// ------------------------------------------------------------------ managed memory's placement
// CUDA 13's cudaMemAdvise takes a location (12's a device ordinal, under the same name).
cudaError_t cudaMemAdvise(const void* p, size_t n, cudaMemoryAdvise advice, cudaMemLocation location) {
  STANDIN_DRIVER(false);
  return call(D->cuMemAdvise(dptr(p), n, static_cast<CUmem_advise>(advice), driverLocation(location)));
}
namespace {
cudaError_t attachMemory(bool perThread, cudaStream_t s, void* p, size_t n, unsigned flags) {
  STANDIN_DRIVER(perThread);
  return call(D->cuStreamAttachMemAsync(s, dptr(p), n, flags));
}
}  // namespace
cudaError_t cudaStreamAttachMemAsync(cudaStream_t s, void* p, size_t n, unsigned flags) {
  return attachMemory(false, s, p, n, flags);
}
cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t s, void* p, size_t n, unsigned flags) {
  return attachMemory(true, s, p, n, flags);
}

// ------------------------------------------------------------------ sets
cudaError_t cudaMemset(void* p, int value, size_t n) { return set(false, p, value, n, false, nullptr); }
cudaError_t cudaMemset_ptds(void* p, int value, size_t n) { return set(true, p, value, n, false, nullptr); }
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s) { return set(false, p, value, n, true, s); }
cudaError_t cudaMemsetAsync_ptsz(void* p, int value, size_t n, cudaStream_t s) { return set(true, p, value, n, true, s); }
cudaError_t cudaMemset2D(void* p, size_t pitch, int value, size_t w, size_t h) {
  return set2D(false, p, pitch, value, w, h, false, nullptr);
}
cudaError_t cudaMemset2D_ptds(void* p, size_t pitch, int value, size_t w, size_t h) {
  return set2D(true, p, pitch, value, w, h, false, nullptr);
}
cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int value, size_t w, size_t h, cudaStream_t s) {
  return set2D(false, p, pitch, value, w, h, true, s);
}
cudaError_t cudaMemset2DAsync_ptsz(void* p, size_t pitch, int value, size_t w, size_t h, cudaStream_t s) {
  return set2D(true, p, pitch, value, w, h, true, s);
}
cudaError_t cudaMemset3D(cudaPitchedPtr p, int value, cudaExtent extent) {
  return set3D(false, p, value, extent, false, nullptr);
}
cudaError_t cudaMemset3D_ptds(cudaPitchedPtr p, int value, cudaExtent extent) {
  return set3D(true, p, value, extent, false, nullptr);
}
cudaError_t cudaMemset3DAsync(cudaPitchedPtr p, int value, cudaExtent extent, cudaStream_t s) {
  return set3D(false, p, value, extent, true, s);
}
cudaError_t cudaMemset3DAsync_ptsz(cudaPitchedPtr p, int value, cudaExtent extent, cudaStream_t s) {
  return set3D(true, p, value, extent, true, s);
}

// ------------------------------------------------------------------ streams
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamCreate(s, CU_STREAM_DEFAULT));
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamCreate(s, flags));
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int priority) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamCreateWithPriority(s, flags, priority));
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamDestroy(s));
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamSynchronize(s));
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamSynchronize(s));
}
// A stream's attributes, as the driver's.
cudaError_t cudaStreamSetAttribute(cudaStream_t s, cudaStreamAttrID attr, const cudaStreamAttrValue* value) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamSetAttribute(s, static_cast<CUstreamAttrID>(attr), reinterpret_cast<const CUstreamAttrValue*>(value)));
}
cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t s, cudaStreamAttrID attr, const cudaStreamAttrValue* value) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamSetAttribute(s, static_cast<CUstreamAttrID>(attr), reinterpret_cast<const CUstreamAttrValue*>(value)));
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamQuery(s));
}
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamQuery(s));
}

// ------------------------------------------------------------------ events
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  STANDIN_DRIVER(false);
  return call(D->cuEventCreate(e, CU_EVENT_DEFAULT));
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuEventCreate(e, flags));
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  STANDIN_DRIVER(false);
  return call(D->cuEventRecord(e, s));
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  STANDIN_DRIVER(true);
  return call(D->cuEventRecord(e, s));
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuEventRecordWithFlags(e, s, flags));
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned flags) {
  STANDIN_DRIVER(true);
  return call(D->cuEventRecordWithFlags(e, s, flags));
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* userData) {
  STANDIN_DRIVER(false);
  return call(D->cuLaunchHostFunc(s, fn, userData));
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* userData) {
  STANDIN_DRIVER(true);
  return call(D->cuLaunchHostFunc(s, fn, userData));
}
cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t fn, void* userData, unsigned flags) {
  return addCallback(false, s, fn, userData, flags);
}
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t fn, void* userData, unsigned flags) {
  return addCallback(true, s, fn, userData, flags);
}
// Libraries loaded by the program (CUDA 12.5), as the driver's: the runtime's options have the
// driver's values.
cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, cudaJitOption* jitOptions,
                                void** jitOptionsValues, unsigned numJitOptions, cudaLibraryOption* libraryOptions,
                                void** libraryOptionValues, unsigned numLibraryOptions) {
  STANDIN_DRIVER(false);
  return call(D->cuLibraryLoadData(reinterpret_cast<CUlibrary*>(library), code,
                                   reinterpret_cast<CUjit_option*>(jitOptions), jitOptionsValues, numJitOptions,
                                   reinterpret_cast<CUlibraryOption*>(libraryOptions), libraryOptionValues,
                                   numLibraryOptions));
}
cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* path, cudaJitOption* jitOptions,
                                    void** jitOptionsValues, unsigned numJitOptions, cudaLibraryOption* libraryOptions,
                                    void** libraryOptionValues, unsigned numLibraryOptions) {
  STANDIN_DRIVER(false);
  return call(D->cuLibraryLoadFromFile(reinterpret_cast<CUlibrary*>(library), path,
                                       reinterpret_cast<CUjit_option*>(jitOptions), jitOptionsValues, numJitOptions,
                                       reinterpret_cast<CUlibraryOption*>(libraryOptions), libraryOptionValues,
                                       numLibraryOptions));
}
cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) {
  STANDIN_DRIVER(false);
  return call(D->cuLibraryGetKernel(reinterpret_cast<CUkernel*>(kernel), reinterpret_cast<CUlibrary>(library), name));
}
cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  STANDIN_DRIVER(false);
  return call(D->cuLibraryUnload(reinterpret_cast<CUlibrary>(library)));
}

// Interprocess handles: the runtime's have the driver's layout (64 bytes).
static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle) && sizeof(cudaIpcEventHandle_t) == sizeof(CUipcEventHandle));
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* p) {
  STANDIN_DRIVER(false);
  return call(D->cuIpcGetMemHandle(reinterpret_cast<CUipcMemHandle*>(handle), reinterpret_cast<CUdeviceptr>(p)));
}
cudaError_t cudaIpcOpenMemHandle(void** p, cudaIpcMemHandle_t handle, unsigned flags) {
  STANDIN_DRIVER(false);
  CUipcMemHandle h;
  memcpy(&h, &handle, sizeof(h));
  return call(D->cuIpcOpenMemHandle(reinterpret_cast<CUdeviceptr*>(p), h, flags));
}
cudaError_t cudaIpcCloseMemHandle(void* p) {
  STANDIN_DRIVER(false);
  return call(D->cuIpcCloseMemHandle(reinterpret_cast<CUdeviceptr>(p)));
}
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t e) {
  STANDIN_DRIVER(false);
  return call(D->cuIpcGetEventHandle(reinterpret_cast<CUipcEventHandle*>(handle), e));
}
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* e, cudaIpcEventHandle_t handle) {
  STANDIN_DRIVER(false);
  CUipcEventHandle h;
  memcpy(&h, &handle, sizeof(h));
  return call(D->cuIpcOpenEventHandle(e, h));
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  STANDIN_DRIVER(false);
  return call(D->cuEventQuery(e));
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  STANDIN_DRIVER(false);
  return call(D->cuStreamWaitEvent(s, e, flags));
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  STANDIN_DRIVER(true);
  return call(D->cuStreamWaitEvent(s, e, flags));
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  STANDIN_DRIVER(false);
  return call(D->cuEventSynchronize(e));
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  STANDIN_DRIVER(false);
  return call(D->cuEventElapsedTime(ms, start, end));
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  STANDIN_DRIVER(false);
  return call(D->cuEventDestroy(e));
}

// ------------------------------------------------------------------ profiler control
cudaError_t cudaProfilerStart() {
  STANDIN_DRIVER(false);
  return call(D->cuProfilerStart());
}
cudaError_t cudaProfilerStop() {
  STANDIN_DRIVER(false);
  return call(D->cuProfilerStop());
}

}  // extern "C"
