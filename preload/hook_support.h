#pragma once
// What the generated shims in hooks.cpp need: the hook ids, the real-pointer table, the
// per-call recorder and the kernel-name bookkeeping. Everything on the hot path is inline and
// allocation-free.

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collector/alt_stack.h"
#include "collector/capture.h"
#include "collector/collector.h"
#include "collector/graph_capture.h"
#include "collector/stack_capture.h"

namespace cutrace {

enum class HookId : uint16_t {
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) k##name,
#include "preload/hooks.def"
#undef CUTRACE_HOOK
};

inline constexpr std::size_t kHookCount = 0
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) +1
#include "preload/hooks.def"
#undef CUTRACE_HOOK
    ;

extern const HookDescriptor kHookDescriptors[kHookCount];
extern const char* const kHookSymbols[kHookCount];
extern void* const kHookWrappers[kHookCount];
extern std::atomic<void*> g_realFunctions[kHookCount];

// Initialises the collector the first time any hook or the constructor runs.
void initializePreload();

// CUPTI starts with the first recorded CUDA call of the process (not in a constructor, not in
// dlsym: CUPTI itself calls into the driver).
extern std::atomic<bool> g_deviceTracingStarted;
void startDeviceTracing();
void flushDeviceActivity();
// The current context's device ordinal through the real driver, or -1.
int currentDeviceOrdinal();

// Slow path of realFunction(): finds the library that defines the real function, resolves the
// whole layer, and returns the pointer (nullptr if that library is not loaded). `caller` is
// the shim's return address, used to find a runtime loaded into a private (RTLD_LOCAL) scope.
void* resolveRealFunction(HookId id, const void* caller);

inline void* realFunction(HookId id, const void* caller) {
  void* p = g_realFunctions[static_cast<std::size_t>(id)].load(std::memory_order_relaxed);
  if (__builtin_expect(p != nullptr, 1)) return p;
  return resolveRealFunction(id, caller);
}

// Slow path of an event (its frame at `sp`) on a busy thread: whether the thread left every
// ReentrancyGuard without returning from it; then it is not busy any more.
bool busyLeftBehind(uintptr_t sp);

// Whether an event whose frame is at `sp` comes from inside the tracer (a guard still runs).
inline bool insideTracer(uintptr_t sp) { return tls::busy != 0 && !busyLeftBehind(sp); }

inline bool hookRecording(uintptr_t sp) {
  Mode m = detail::mode.load(std::memory_order_relaxed);
  if (__builtin_expect(m == Mode::Uninitialized, 0)) {
    initializePreload();
    m = currentMode();
  }
  return m == Mode::On && !insideTracer(sp);
}

// What a shim returns when the real library is not loaded (only reachable through a lookup
// that found cutrace's own export, e.g. dlsym(RTLD_DEFAULT, ...) with no CUDA loaded).
template <typename R>
R missingLibraryResult(ApiLayer layer) {
  if constexpr (std::is_void_v<R>) {
    return;
  } else if constexpr (std::is_same_v<R, CUresult>) {
    (void)layer;
    return CUDA_ERROR_NOT_INITIALIZED;
  } else {
    (void)layer;
    return cudaErrorInsufficientDriver;
  }
}

// One recorded API call. Constructed before the real call, it takes the launch nesting; start()
// captures the stack, takes the sequence number and stamps t0 right before the real call (so
// nested calls, and a signal handler's events outside the call, get numbers in time order); the
// destructor stamps t1 and appends the record. start() and the destructor are RecordSections
// (collector/collector.h): a signal handler's call that interrupts one is dropped and counted;
// the real call runs outside any section.
//
// errno: the program's value is taken first thing and given back right before the real call
// (whatever cutrace did on the way, lazy initialisation, CUPTI, symbol lookups, a new ring, the
// drain thread, a stack walk, leaves nothing behind); returned() takes the real call's value,
// which the destructor gives back after cutrace's bookkeeping.
class HookCall {
 public:
  // The constructor, start() and the destructor are inlined into every shim: as calls they
  // cost ~29 instructions per hook (callgrind); each shim grows by ~350 bytes.
  __attribute__((always_inline)) HookCall(HookId id, ApiKind kind, const dwarf::WalkStart& shim)
      : errnoAt_(&errno), errno_(*errnoAt_), shim_(shim) {
    if (!isRecorded(kind)) return;  // bookkeeping, not events
    if (!hookRecording(shim.sp)) return;
    if (kind == ApiKind::Profiler) capture::onProfilerCall(static_cast<uint16_t>(id));
    ThreadState* s = currentThread();
    if (s == nullptr) return;
    // CUPTI starts at the first CUDA call whatever the capture: started later, once the context
    // exists, it linked no device work to its call on an H100 (capture nvtx:NAME, PyTorch, CUDA
    // 13). The device work of calls made outside the capture is left out by the writer.
    if (__builtin_expect(!g_deviceTracingStarted.load(std::memory_order_relaxed), 0)) startDeviceTracing();
    if (!capture::on()) return;
    s_ = s;
    // The outermost recorded call of the thread, or one inside such a call (a call it made, a
    // handler's); it counts as running from start(), where it takes its sequence number. Calls
    // the thread never returned from (a handler's siglongjmp out of a call that hung, as a
    // timeout does) left the depth raised: they are not running any more (insideActiveCall),
    // this call is outermost, and the depth it puts back when it returns is 0. Left raised, it
    // made every later call of the thread nested: no stack, no kernel name. Each of them took
    // its number and wrote no record: counted as dropped in start() (countLeftSeqs).
    // Asked for the shim's canonical frame address (its caller's rsp; every shim keeps a frame
    // pointer, pushed first): the mark of a call left by a jump and made again from the same
    // frame (a loop retrying what timed out) lies inside this shim's own frame, below it,
    // where this call has not yet written over it; a running call's lies above.
    uint16_t depth = s->apiDepth;
    if (depth != 0 && __builtin_expect(!insideActiveCall(s, shim.bp + 16), 0)) {
      s->apiDepth = 0;
      s->launchDepth = 0;
      depth = 0;
    }
    foundApiDepth_ = depth;
    r_.type = RecordType::Api;
    r_.extra = 0;
    r_.hook = static_cast<uint16_t>(id);
    r_.result = 0;
    r_.mem = MemPayload{};
    // Only the outermost recorded call takes a stack: a nested call (the driver call a runtime
    // call made) shares it, which the exporters know from the nesting. None from a signal
    // handler on a small alternate stack (roomToWalk): the walk would run off its end.
    wantStack_ = depth == 0 && stacks::wanted(kind) && roomToWalk(shim.sp);
    if (kind == ApiKind::Launch) {
      launch_ = true;
      foundLaunchDepth_ = s->launchDepth;
      outermostLaunch_ = foundLaunchDepth_ == 0;
    }
  }
  __attribute__((always_inline)) ~HookCall() {
    if (s_ != nullptr) {
      if (launch_) s_->launchDepth = foundLaunchDepth_;
      if (lost_) {
        s_->apiDepth = foundApiDepth_;
      } else {
        // The end is taken inside the section, so no signal handler's record (whose time would
        // be later) can come between it and this record: on a thread, records come in the order
        // of their times but for those made inside a call (flagged), which the drain reorders.
        RecordSection section(s_, shim_.bp);
        r_.t1 = Clock::now();
        s_->apiDepth = foundApiDepth_;
        if (foundApiDepth_ != 0) r_.mem.stack |= kNestedCallBit;
        // Not owned: a section left open above this call's frame (a handler's siglongjmp out of
        // one) holds it; this call's number stays unsettled, counted where one takes it over.
        if (section.owned() && !appendEvent(s_, r_)) countDrop(s_);
      }
    }
    *errnoAt_ = errno_;
  }
  HookCall(const HookCall&) = delete;
  HookCall& operator=(const HookCall&) = delete;

  bool recording() const { return s_ != nullptr; }
  bool outermostLaunch() const { return outermostLaunch_; }
  __attribute__((always_inline)) void start() {
    if (s_ != nullptr) {
      RecordSection section(s_, shim_.bp);
      if (!section.owned()) {  // a signal handler's call while this thread records another event
        section.dropEvent();
        lost_ = true;
      } else {
        // One number unsettled per call running, but for calls and events left (the depth put
        // right in the constructor).
        if (__builtin_expect(s_->unsettled != foundApiDepth_, 0)) countLeftSeqs(s_);
        // Inside the section: the unwinder's per-thread memo is the thread's own.
        if (wantStack_) r_.mem.stack = stacks::capture(s_, shim_);
        r_.seq = takeSeq(s_);
        r_.t0 = Clock::now();
        // Running from here. The outermost call's token (its sequence number, in its frame) is
        // set before the depth says a call runs, so that a handler never finds one running
        // without it; inside the section no handler's call sets its own.
        if (foundApiDepth_ == 0) {
          s_->callTokenAt = &r_.seq;
          s_->callToken = r_.seq;
          std::atomic_signal_fence(std::memory_order_seq_cst);
        }
        s_->apiDepth = static_cast<uint16_t>(foundApiDepth_ + 1);
        if (launch_) s_->launchDepth = static_cast<uint16_t>(foundLaunchDepth_ + 1);
      }
    }
    *errnoAt_ = errno_;
  }
  void returned() { errno_ = *errnoAt_; }
  // After a call that can make device work (`kind`): whether its stream is being captured into
  // a graph, where its work then runs (graph_capture.h).
  __attribute__((always_inline)) void noteCapture(ApiKind kind) {
    if (s_ != nullptr &&
        __builtin_expect(graph_capture::capturing(kind == ApiKind::Launch ? r_.launch.stream : r_.mem.stream), 0))
      r_.mem.stack |= kCapturedBit;
  }
  template <typename R>
  void setResult(const R& rc) {
    if constexpr (std::is_enum_v<R> || std::is_integral_v<R>) r_.result = static_cast<int32_t>(rc);
  }

  void launch(uint32_t kernelName, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
              std::size_t shared, const void* stream) {
    LaunchPayload& l = r_.launch;
    l.stream = reinterpret_cast<uintptr_t>(stream);
    l.gridX = gx;
    l.gridY = static_cast<uint16_t>(gy);
    l.gridZ = static_cast<uint16_t>(gz);
    l.block = LaunchPayload::packBlock(bx, by, bz);
    l.kernelName = kernelName;
    l.sharedMem = static_cast<uint32_t>(shared);
  }
  void launchEx(uint32_t kernelName, const CUlaunchConfig* c) {
    if (c == nullptr) return launch(kernelName, 0, 0, 0, 0, 0, 0, 0, nullptr);
    launch(kernelName, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
           c->sharedMemBytes, c->hStream);
  }
  void launchEx(uint32_t kernelName, const cudaLaunchConfig_t* c) {
    if (c == nullptr) return launch(kernelName, 0, 0, 0, 0, 0, 0, 0, nullptr);
    launch(kernelName, c->gridDim.x, c->gridDim.y, c->gridDim.z, c->blockDim.x, c->blockDim.y, c->blockDim.z,
           c->dynamicSmemBytes, c->stream);
  }
  void copy(std::size_t bytes, const void* stream, CopyKind kind) {
    r_.mem.bytes = bytes;
    r_.mem.stream = reinterpret_cast<uintptr_t>(stream);
    r_.mem.copyKind = static_cast<uint8_t>(kind);
  }
  void set(std::size_t bytes, const void* stream) {
    r_.mem.bytes = bytes;
    r_.mem.stream = reinterpret_cast<uintptr_t>(stream);
    r_.mem.copyKind = static_cast<uint8_t>(CopyKind::Unknown);
  }
  void alloc(std::size_t bytes, const void* stream) {
    set(bytes, stream);
    r_.mem.device = -1;
  }
  void onCurrentDevice() { r_.mem.device = static_cast<int8_t>(currentDeviceOrdinal()); }
  template <typename P>
  void allocated(P ptr) {
    if (s_ != nullptr) r_.mem.ptr = (uint64_t)(ptr);
  }
  // After a cuMemCreate that succeeded (the driver read `prop`): its handle stands for the
  // pointer where the memory is a device's, which the counters take it to be; host memory made
  // so names none (its release then changes nothing either).
  void createdPhysical(CUmemGenericAllocationHandle handle, const CUmemAllocationProp* prop) {
    if (s_ == nullptr || prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return;
    r_.mem.ptr = handle;
    r_.mem.device = static_cast<int8_t>(prop->location.id);
  }
  // A virtual address range (reserved, mapped, unmapped, ...): its start and length; no device
  // named, so that no memory counter takes it.
  void range(uint64_t ptr, std::size_t bytes) {
    set(bytes, nullptr);
    r_.mem.ptr = ptr;
    r_.mem.device = -1;
  }
  void allocatedBytes(std::size_t bytes) {
    if (s_ != nullptr) r_.mem.bytes = bytes;
  }
  // After a batch of copies that succeeded (the sizes were the driver's to read, so readable).
  void batchBytes(const std::size_t* sizes, std::size_t count) {
    if (s_ == nullptr) return;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < count; ++i) bytes += sizes[i];
    r_.mem.bytes = bytes;
  }
  // After a batch of decompressions that succeeded: the compressed bytes read.
  void decompressedBytes(const CUmemDecompressParams* params, std::size_t count) {
    if (s_ == nullptr) return;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < count; ++i) bytes += params[i].srcNumBytes;
    r_.mem.bytes = bytes;
  }
  // The same of a batch of 3D copies (the driver's or the runtime's operations; below).
  template <typename Op>
  void batchBytes3D(const Op* ops, std::size_t count);
  // After a cuMemRelease that succeeded: where it let go of a reference retained
  // (retainedReference), not of the memory, the record names no memory (below).
  void releasedReference(CUmemGenericAllocationHandle handle);
  // Device memory shared with or from another process (cuIpc*): the address and the bytes of the
  // allocation it lies in (below). Before the call or after it, wherever the memory is there.
  template <typename P>
  void sharedMemory(P ptr);
  // After a call that made a CUDA array: the array as the allocation, where recording, and its
  // element's bytes noted whether recording or not (below).
  void madeArray(const void* array, std::size_t elementBytes);
  template <typename P>
  void release(P ptr, const void* stream) {
    set(0, stream);
    r_.mem.ptr = (uint64_t)(ptr);
  }
  void handle(const void* h, const void* stream) {
    r_.handle.handle = reinterpret_cast<uintptr_t>(h);
    r_.handle.stream = reinterpret_cast<uintptr_t>(stream);
  }
  // After a call that made a handle (a graph from a capture): the handle, where recording.
  void madeHandle(const void* h) {
    if (s_ != nullptr) r_.handle.handle = reinterpret_cast<uintptr_t>(h);
  }
  // After a call that made a stream: the stream, where recording.
  void madeStream(const void* stream) {
    if (s_ != nullptr) r_.handle.stream = reinterpret_cast<uintptr_t>(stream);
  }

 private:
  ThreadState* s_ = nullptr;
  // The thread's errno, found once per call (errno is a function call away from a shared object).
  int* const errnoAt_;
  int errno_;
  dwarf::WalkStart shim_;  // where the stack walk starts
  bool lost_ = false;
  bool wantStack_ = false;
  bool launch_ = false;
  bool outermostLaunch_ = false;
  uint16_t foundApiDepth_ = 0;  // 0: the outermost recorded call of the thread
  uint16_t foundLaunchDepth_ = 0;
  Record r_;
};

// Kernel names. The runtime registers host stubs by name; __cudaGetKernel maps a stub to a
// cudaKernel_t; the driver names a CUfunction (or CUkernel) on request, cached per handle.
void registerKernelName(const void* hostFun, const char* deviceName);
void aliasKernelName(const void* alias, const void* hostFun);
uint32_t runtimeKernelNameSlow(const void* func);
uint32_t driverKernelNameSlow(CUfunction f);
// A module or library was unloaded: the names cached for driver handles are looked up again.
void forgetKernelHandles();
// The stream of a runtime call whose parameters CUDA 13 changed under the same name, moving the
// stream one word: `before13` where the loaded runtime is CUDA 11's or 12's, `since13` where 13's
// or later; none when it cannot tell. (cudaMemPrefetchAsync: a device ordinal third, then the
// stream; 13's a location and flags. cudaMemcpyBatchAsync and cudaMemcpy3DBatchAsync: 12.8's
// have a failing index before the stream, 13's not.)
const void* runtimeStream(uint64_t before13, uint64_t since13);

// Handle -> interned name, filled by the registrations and the slow lookups (hook_table.cpp).
extern PointerMap g_kernelNames;
// Inline in the shims: every launch looks its kernel up (0: not known yet, or the table not set
// up yet; the slow lookup sets it up).
inline uint32_t cachedKernelName(const void* key) { return g_kernelNames.find(key); }

inline uint32_t runtimeKernelName(const HookCall& c, const void* func) {
  if (!c.outermostLaunch()) return 0;
  const uint32_t id = cachedKernelName(func);
  return id != 0 ? id : runtimeKernelNameSlow(func);
}

inline uint32_t driverKernelName(const HookCall& c, CUfunction f) {
  if (!c.outermostLaunch()) return 0;
  const uint32_t id = cachedKernelName(f);
  return id != 0 ? id : driverKernelNameSlow(f);
}

// The first launch API (cuLaunch, cuLaunchGrid, cuLaunchGridAsync) takes the block shape and
// shared bytes set on the function before (cuFuncSetBlockShape, cuFuncSetSharedSize): noted per
// function after those calls, recording or not. A function handle a module issued
// (cuModuleGetFunction) to a new owner, the driver handing an unloaded one out again, starts with
// nothing noted; a module unloaded counts as another owner of its handle from then on.
void noteLegacyBlock(CUfunction f, int x, int y, int z);
void noteLegacyShared(CUfunction f, unsigned bytes);
void functionIssued(CUfunction f, CUmodule module);
void moduleUnloaded(CUmodule module);
// The block (LaunchPayload::packBlock; 0: none set) and shared bytes noted for `f`.
uint32_t legacyBlock(CUfunction f);
uint32_t legacyShared(CUfunction f);
inline void legacyLaunch(HookCall& c, CUfunction f, int width, int height, CUstream stream) {
  LaunchPayload shape{};
  shape.block = legacyBlock(f);
  c.launch(driverKernelName(c, f), static_cast<unsigned>(width), static_cast<unsigned>(height), 1, shape.blockX(),
           shape.blockY(), shape.blockZ(), legacyShared(f), stream);
}
// A cooperative launch on several devices at once: the first device's launch describes the call
// (its kernel, geometry and stream; the devices' kernels all link to the call with CUPTI). An
// empty list names no function: the launch's kernel is a null one, as for a null function.
inline void multiDeviceLaunch(HookCall& c, const CUDA_LAUNCH_PARAMS* list, unsigned count) {
  if (list == nullptr || count == 0) return c.launch(driverKernelName(c, nullptr), 0, 0, 0, 0, 0, 0, 0, nullptr);
  const CUDA_LAUNCH_PARAMS& p = list[0];
  c.launch(driverKernelName(c, p.function), p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
           p.sharedMemBytes, p.hStream);
}

// CUDA 9-12.9's cudaLaunchParams (13's headers dropped it with the call that takes it).
struct RuntimeLaunchParams {
  void* func;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
inline void multiDeviceLaunch(HookCall& c, const RuntimeLaunchParams* list, unsigned count) {
  if (list == nullptr || count == 0) return c.launch(runtimeKernelName(c, nullptr), 0, 0, 0, 0, 0, 0, 0, nullptr);
  const RuntimeLaunchParams& p = list[0];
  c.launch(runtimeKernelName(c, p.func), p.gridDim.x, p.gridDim.y, p.gridDim.z, p.blockDim.x, p.blockDim.y,
           p.blockDim.z, p.sharedMem, p.stream);
}

// The first of the `count` handles a call acts on together (external semaphores signalled or
// waited for): the call's handle, as the first device's launch is a multi-device launch's. The
// driver reads them all; none where there are none (a count of 0, or below: the runtime's
// graphics calls take an int).
template <typename H, typename Count>
inline const void* firstHandle(const H* handles, Count count) {
  return handles != nullptr && count > 0 ? handles[0] : nullptr;
}

// cuGetProcAddress answered *pfn for `symbol`: swap in the shim with the same ABI.
void redirectProcAddress(const char* symbol, void** pfn);

// Copy helpers for the hook list.
inline CopyKind copyKindOf(cudaMemcpyKind k) {
  return static_cast<unsigned>(k) <= 4 ? static_cast<CopyKind>(k) : CopyKind::Unknown;
}
inline CopyKind memoryTypeKind(CUmemorytype src, CUmemorytype dst) {
  const bool srcHost = src == CU_MEMORYTYPE_HOST;
  const bool dstHost = dst == CU_MEMORYTYPE_HOST;
  if (src == CU_MEMORYTYPE_UNIFIED || dst == CU_MEMORYTYPE_UNIFIED) return CopyKind::Default;
  if (srcHost && dstHost) return CopyKind::HostToHost;
  if (srcHost) return CopyKind::HostToDevice;
  if (dstHost) return CopyKind::DeviceToHost;
  return CopyKind::DeviceToDevice;
}
inline CopyKind copyKindOf(const CUDA_MEMCPY2D* p) {
  return p ? memoryTypeKind(p->srcMemoryType, p->dstMemoryType) : CopyKind::Unknown;
}
inline CopyKind copyKindOf(const CUDA_MEMCPY3D* p) {
  return p ? memoryTypeKind(p->srcMemoryType, p->dstMemoryType) : CopyKind::Unknown;
}
inline CopyKind copyKindOf(const cudaMemcpy3DParms* p) { return p ? copyKindOf(p->kind) : CopyKind::Unknown; }
inline std::size_t bytes2D(const CUDA_MEMCPY2D* p) { return p ? p->WidthInBytes * p->Height : 0; }
inline std::size_t bytes3D(const CUDA_MEMCPY3D* p) { return p ? p->WidthInBytes * p->Height * p->Depth : 0; }
// A CUDA array's elements, in bytes (0 for a format without a fixed element size: compressed).
inline std::size_t formatBytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}
inline std::size_t elementBytes(const CUDA_ARRAY_DESCRIPTOR* a) { return a ? a->NumChannels * formatBytes(a->Format) : 0; }
inline std::size_t elementBytes(const CUDA_ARRAY3D_DESCRIPTOR* a) { return a ? a->NumChannels * formatBytes(a->Format) : 0; }
// The runtime's: an element of the channels' bits.
inline std::size_t elementBytes(const cudaChannelFormatDesc* f) {
  if (f == nullptr || f->x < 0 || f->y < 0 || f->z < 0 || f->w < 0) return 0;
  return static_cast<std::size_t>(f->x + f->y + f->z + f->w) / 8;
}
inline std::size_t extentElements(std::size_t w, std::size_t h, std::size_t d) { return w * (h ? h : 1) * (d ? d : 1); }
inline std::size_t arrayBytes(const CUDA_ARRAY_DESCRIPTOR* a) {
  return a ? extentElements(a->Width, a->Height, 0) * elementBytes(a) : 0;
}
inline std::size_t arrayBytes(const CUDA_ARRAY3D_DESCRIPTOR* a) {
  return a ? extentElements(a->Width, a->Height, a->Depth) * elementBytes(a) : 0;
}
inline std::size_t arrayBytes(const cudaChannelFormatDesc* f, std::size_t w, std::size_t h, std::size_t d) {
  return extentElements(w, h, d) * elementBytes(f);
}
// A mipmapped array's: every level's elements, each level half the last in every extent (at
// least 1; an extent of 0, no dimension, stays 0).
inline std::size_t mipmapElements(std::size_t w, std::size_t h, std::size_t d, unsigned levels) {
  const auto halved = [](std::size_t extent, unsigned l) { return extent == 0 ? 0 : std::max<std::size_t>(extent >> l, 1); };
  std::size_t elements = 0;
  for (unsigned l = 0; l < levels && l < 64; ++l) elements += extentElements(halved(w, l), halved(h, l), halved(d, l));
  return elements;
}
inline std::size_t mipmapBytes(const CUDA_ARRAY3D_DESCRIPTOR* a, unsigned levels) {
  return a ? mipmapElements(a->Width, a->Height, a->Depth, levels) * elementBytes(a) : 0;
}
inline std::size_t mipmapBytes(const cudaChannelFormatDesc* f, const cudaExtent& e, unsigned levels) {
  return mipmapElements(e.width, e.height, e.depth, levels) * elementBytes(f);
}

// CUDA arrays' element bytes, noted as cutrace sees them made (after the call, recording or not):
// the extents of the runtime's 3D copies and of 3D batches count an array's elements. 1 for an
// array not seen made (the elements are counted then), or once the table is full.
void noteArrayElements(const void* array, std::size_t bytes);
std::size_t arrayElementBytes(const void* array);
// An extent between two sides, either of which may be an array: in bytes.
inline std::size_t extentBytes(std::size_t w, std::size_t h, std::size_t d, const void* srcArray, const void* dstArray) {
  const void* array = srcArray != nullptr ? srcArray : dstArray;
  return w * h * d * (array != nullptr ? arrayElementBytes(array) : 1);
}
inline std::size_t bytes3D(const cudaMemcpy3DParms* p) {
  return p ? extentBytes(p->extent.width, p->extent.height, p->extent.depth, p->srcArray, p->dstArray) : 0;
}
inline std::size_t bytes3D(const CUDA_MEMCPY3D_PEER* p) { return p ? p->WidthInBytes * p->Height * p->Depth : 0; }
inline std::size_t bytes3D(const cudaMemcpy3DPeerParms* p) {
  return p ? extentBytes(p->extent.width, p->extent.height, p->extent.depth, p->srcArray, p->dstArray) : 0;
}
// The array operand of a 3D batch's copy, if any.
inline const void* arrayOf(const CUmemcpy3DOperand& o) {
  return o.type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? o.op.array.array : nullptr;
}
inline const void* arrayOf(const cudaMemcpy3DOperand& o) {
  return o.type == cudaMemcpyOperandTypeArray ? o.op.array.array : nullptr;
}

// References to physical memory retained by handle (cuMemRetainAllocationHandle), noted whether
// recording or not; a release takes one back (true) while any is left. Threads retaining and
// releasing one handle at once lose no count (PointerMap::adjust).
void retainedReference(CUmemGenericAllocationHandle handle);
bool releaseRetained(CUmemGenericAllocationHandle handle);
inline void HookCall::releasedReference(CUmemGenericAllocationHandle handle) {
  if (releaseRetained(handle) && s_ != nullptr) r_.mem.ptr = 0;
}

// The bytes of the device allocation that `ptr` lies in, as the driver knows it (a query of its
// own, made only by the interprocess calls, which take milliseconds anyway); 0 when it does not.
std::size_t deviceAllocationBytes(uint64_t ptr);
template <typename P>
void HookCall::sharedMemory(P ptr) {
  if (s_ == nullptr) return;
  const auto at = (uint64_t)(ptr);
  range(at, deviceAllocationBytes(at));
}

inline void HookCall::madeArray(const void* array, std::size_t elementBytes) {
  allocated(array);
  noteArrayElements(array, elementBytes);
}

template <typename Op>
void HookCall::batchBytes3D(const Op* ops, std::size_t count) {
  if (s_ == nullptr) return;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const Op& op = ops[i];
    bytes += extentBytes(op.extent.width, op.extent.height, op.extent.depth, arrayOf(op.src), arrayOf(op.dst));
  }
  r_.mem.bytes = bytes;
}

}  // namespace cutrace
