#include "collector/cupti_session.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "collector/clock.h"
#include "collector/collector.h"
#include "collector/name_table.h"

namespace cutrace {

namespace {

constexpr CUpti_ActivityKind kDeviceKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

constexpr std::size_t kBufferBytes = 4u << 20;

// The CUPTI entry points cutrace calls, resolved with dlsym from the library in use.
#define CUTRACE_CUPTI_FUNCTIONS(X)                                                             \
  X(cuptiGetResultString) X(cuptiSubscribe) X(cuptiUnsubscribe) X(cuptiSetThreadIdType)       \
  X(cuptiActivityRegisterCallbacks) X(cuptiActivityEnable) X(cuptiActivityEnableDriverApi)    \
  X(cuptiActivityFlushAll) X(cuptiActivityFlushPeriod) X(cuptiActivityGetNextRecord)          \
  X(cuptiActivityGetNumDroppedRecords) X(cuptiGetTimestamp) X(cuptiActivityDisable) X(cuptiFinalize)

struct Api {
#define CUTRACE_CUPTI_FIELD(name) decltype(&::name) name = nullptr;
  CUTRACE_CUPTI_FUNCTIONS(CUTRACE_CUPTI_FIELD)
#undef CUTRACE_CUPTI_FIELD
};

struct PendingDevice {
  DeviceEvent event;
  uint32_t nameId;  // NameTable id, converted when collected
};

// Constant-initialised (see st()): every member has a constexpr default.
struct State {
  std::atomic<bool> started{false};
  std::atomic<bool> on{false};
  std::once_flag once;
  void* library = nullptr;
  Api api;
  std::vector<uint32_t> driverCbids;
  int64_t cuptiMinusMonotonic = 0;  // CUPTI timestamp - CLOCK_MONOTONIC, fixed at start

  // The hand-over runs once; a second thread's CUPTI call waits for it to finish.
  std::once_flag handOverOnce;

  std::mutex mutex;  // everything below
  std::vector<PendingDevice> device;
  std::vector<ApiActivity> apiActivity;
  std::vector<uint8_t*> ownBuffers;  // buffers cutrace handed to CUPTI and has not got back (a few)
  bool programRegistered = false;  // the program set CUPTI up for a profiler of its own
  bool handedOver = false;  // CUPTI was handed to the program's own profiler
  uint64_t dropped = 0;
  uint64_t kernels = 0;
  const char* stateName = "off";
  std::string reason;
  bool reasonSet = false;  // before: "no CUDA call was made" (a constant initialiser cannot allocate)
};

// Constant-initialised: no guard variable that a fork could leave taken by a thread the child
// lacks (a function-local static initialised on first use had one). Never destroyed: CUPTI may
// call back during exit. Its mutex is held across fork() (lockForFork), so the child finds the
// members consistent.
union StateStorage {
  State value;
  constexpr StateStorage() : value() {}
  ~StateStorage() {}
};
constinit StateStorage g_state;

State& st() { return g_state.value; }

const char* resultString(CUptiResult r) {
  const char* text = nullptr;
  if (st().api.cuptiGetResultString == nullptr || st().api.cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text)
    return "unknown CUPTI error";
  return text;
}

void* openCupti(std::string& tried) {
  // A CUPTI already in the process (PyTorch links one) must be the one we use: two copies in
  // one process would fight over the driver. Same soname: the loader never loads a second.
  static constexpr const char* kNames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  for (const char* n : kNames)
    if (void* h = dlopen(n, RTLD_LAZY | RTLD_NOLOAD)) return h;
  for (const char* n : kNames)
    if (void* h = dlopen(n, RTLD_LAZY | RTLD_LOCAL)) return h;
  std::vector<std::string> candidates;
  if (const char* home = getenv("CUDA_HOME")) {
    candidates.push_back(std::string(home) + "/extras/CUPTI/lib64/libcupti.so");
    candidates.push_back(std::string(home) + "/lib64/libcupti.so");
  }
  // Next to the CUDA runtime in use: pip wheels put nvidia/cuda_runtime/lib and
  // nvidia/cuda_cupti/lib side by side; toolkits put both in lib64.
  if (void* rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD)) {
    Dl_info info{};
    if (dladdr(dlsym(rt, "cudaGetDeviceCount"), &info) != 0 && info.dli_fname != nullptr) {
      std::string dir = info.dli_fname;
      dir = dir.substr(0, dir.rfind('/'));
      candidates.push_back(dir + "/libcupti.so.13");
      candidates.push_back(dir + "/../../cuda_cupti/lib/libcupti.so.13");
    }
    dlclose(rt);
  }
  candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  candidates.push_back("/usr/local/cuda/lib64/libcupti.so");
  for (const auto& c : candidates)
    if (void* h = dlopen(c.c_str(), RTLD_LAZY | RTLD_LOCAL)) return h;
  tried = "libcupti.so.13 not found (searched the library path, $CUDA_HOME, next to libcudart, /usr/local/cuda)";
  dlerror();
  return nullptr;
}

bool resolve(void* lib, std::string& missing) {
  Api& a = st().api;
#define CUTRACE_CUPTI_RESOLVE(name)                                        \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, #name));          \
  if (a.name == nullptr) {                                                 \
    missing = "libcupti lacks " #name;                                     \
    return false;                                                          \
  }
  CUTRACE_CUPTI_FUNCTIONS(CUTRACE_CUPTI_RESOLVE)
#undef CUTRACE_CUPTI_RESOLVE
  return true;
}

void CUPTIAPI noopCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// CUPTI calls these on whichever thread needs a buffer, the program's included (inside its CUDA
// call): they leave that thread's errno alone.
// Under s.mutex: `buffer` was handed out by bufferRequested (then it is forgotten here and the
// caller frees it), or it is the program's own.
bool forgetOwnBuffer(State& s, uint8_t* buffer) {
  for (auto it = s.ownBuffers.begin(); it != s.ownBuffers.end(); ++it)
    if (*it == buffer) {
      s.ownBuffers.erase(it);
      return true;
    }
  return false;
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  ErrnoKeeper keepErrno;
  State& s = st();
  auto* b = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  if (b != nullptr) {
    try {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.ownBuffers.push_back(b);
    } catch (const std::exception&) {  // no memory to remember it: CUPTI gets no buffer
      free(b);
      b = nullptr;
    }
  }
  *buffer = b;
  *size = b != nullptr ? kBufferBytes : 0;
  *maxRecords = 0;
}

bool wantedDriverCbid(uint32_t cbid) {
  for (uint32_t c : st().driverCbids)
    if (c == cbid) return true;
  return false;
}

// The fields every device activity record has, on the collector's clock.
template <typename R, typename Mono>
PendingDevice pending(const R* r, DeviceKind kind, const Mono& mono) {
  PendingDevice p{};
  p.event.kind = kind;
  p.event.start = mono(r->start);
  p.event.end = mono(r->end);
  p.event.correlation = r->correlationId;
  p.event.device = r->deviceId;
  p.event.stream = r->streamId;
  return p;
}

void takeRecords(CUcontext ctx, uint32_t streamId, uint8_t* buffer, size_t validSize);

// An exception must not unwind into CUPTI: out of memory, the buffer's records are lost, the
// device timeline ends (one warning) and the buffer goes back.
void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t streamId, uint8_t* buffer, size_t, size_t validSize) {
  ReentrancyGuard guard;  // CUPTI's thread: anything it does is not the program's activity
  ErrnoKeeper keepErrno;
  State& s = st();
  try {
    takeRecords(ctx, streamId, buffer, validSize);
    return;
  } catch (const std::exception&) {
  }
  s.on.store(false, std::memory_order_release);
  Collector::warnOnce("cutrace: out of memory for CUPTI records; the device timeline ends here\n");
  bool own = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    own = forgetOwnBuffer(s, buffer);
  }
  if (own) free(buffer);
}

void takeRecords(CUcontext ctx, uint32_t streamId, uint8_t* buffer, size_t validSize) {
  State& s = st();
  std::vector<PendingDevice> device;
  std::vector<ApiActivity> api;
  uint64_t kernels = 0;
  const auto mono = [&](uint64_t t) { return t == 0 ? 0 : static_cast<uint64_t>(static_cast<int64_t>(t) - s.cuptiMinusMonotonic); };
  CUpti_Activity* record = nullptr;
  while (buffer != nullptr && s.api.cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        PendingDevice p = pending(k, DeviceKind::Kernel, mono);
        DeviceEvent& e = p.event;
        e.registers = k->registersPerThread;
        e.grid[0] = k->gridX, e.grid[1] = k->gridY, e.grid[2] = k->gridZ;
        e.block[0] = k->blockX, e.block[1] = k->blockY, e.block[2] = k->blockZ;
        e.staticShared = k->staticSharedMemory;
        e.dynamicShared = k->dynamicSharedMemory;
        p.nameId = k->name != nullptr ? Collector::names().intern(k->name) : 0;
        device.push_back(p);
        ++kernels;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        PendingDevice p = pending(m, DeviceKind::Memcpy, mono);
        p.event.bytes = m->bytes;
        p.event.copyKind = m->copyKind;
        device.push_back(p);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        PendingDevice p = pending(m, DeviceKind::Memset, mono);
        p.event.bytes = m->bytes;
        device.push_back(p);
        break;
      }
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        // A program's profiler may enable every API record; keep the launch/copy/set ones.
        if (wantedDriverCbid(a->cbid)) api.push_back(ApiActivity{mono(a->start), mono(a->end), a->threadId, a->correlationId});
        break;
      }
      default:
        break;
    }
  }
  size_t dropped = 0;
  if (s.api.cuptiActivityGetNumDroppedRecords != nullptr)
    s.api.cuptiActivityGetNumDroppedRecords(ctx, streamId, &dropped);

  bool own = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.device.insert(s.device.end(), device.begin(), device.end());
    s.apiActivity.insert(s.apiActivity.end(), api.begin(), api.end());
    s.dropped += dropped;
    s.kernels += kernels;
    own = forgetOwnBuffer(s, buffer);
  }
  if (own) free(buffer);
}

// (Re)applies what cutrace records: device kinds and the API records used for linking.
bool enableOurs(std::string& error) {
  Api& a = st().api;
  for (CUpti_ActivityKind kind : kDeviceKinds) {
    const CUptiResult r = a.cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      error = std::string("cuptiActivityEnable: ") + resultString(r);
      return false;
    }
  }
  // API records are only used to link host launches to their device work: a failure here
  // leaves the device timeline intact, unlinked, and says so.
  CUptiResult failed = CUPTI_SUCCESS;
  for (uint32_t cbid : st().driverCbids)
    if (const CUptiResult r = a.cuptiActivityEnableDriverApi(cbid, 1); r != CUPTI_SUCCESS) failed = r;
  if (failed != CUPTI_SUCCESS) error = std::string("API records for linking unavailable: ") + resultString(failed);
  return true;
}

void setState(const char* name, std::string reason) {
  std::lock_guard<std::mutex> lock(st().mutex);
  st().stateName = name;
  st().reason = std::move(reason);
  st().reasonSet = true;
}

void flushAtExit() {
  // Not in a child made by a raw clone system call: CUPTI's state there is the parent's.
  if (Collector::ownsProcess()) Cupti::flush();
}

void startOnce(CuptiMode mode, const CuptiApiFilter& filter) {
  State& s = st();
  if (mode == CuptiMode::Off) {
    setState("off", "disabled by CUTRACE_CUPTI=off");
    return;
  }
  auto unavailable = [&](const std::string& why, bool otherTool) {
    setState(otherTool ? "host-only" : "off", why);
    if (otherTool || mode == CuptiMode::On) {
      std::string line = "cutrace: " + why + "; tracing host calls only\n";
      Collector::warnOnce(line.c_str());
    }
  };
  if (const char* injected = getenv("CUDA_INJECTION64_PATH"); injected != nullptr && injected[0] != '\0') {
    unavailable(std::string("another CUDA tool is injected (CUDA_INJECTION64_PATH=") + injected + ")", true);
    return;
  }
  if (Collector::loaderStuckSinceFork()) {
    unavailable("forked while another thread of the parent was loading a library, so no library can be loaded "
                "here: CUPTI not loaded", false);
    return;
  }
  std::string why;
  s.library = openCupti(why);
  if (s.library == nullptr) return unavailable(why, false);
  if (!resolve(s.library, why)) return unavailable(why, false);
  s.driverCbids.assign(filter.driverCbids, filter.driverCbids + filter.driverCount);

  // CUPTI has one subscriber slot. If somebody holds it, they are profiling this process and
  // would lose data to us; if it is free, leave it free for the program.
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult sub = s.api.cuptiSubscribe(&probe, noopCallback, nullptr);
  if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return unavailable("CUPTI is in use by another subscriber (nsys, ncu or the program's own profiler)", true);
  if (sub != CUPTI_SUCCESS) return unavailable(std::string("CUPTI unusable: ") + resultString(sub), false);
  s.api.cuptiUnsubscribe(probe);

  s.api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  {
    // CUPTI's own clock (CLOCK_REALTIME-based on Linux), mapped onto CLOCK_MONOTONIC by one
    // bracketed sample. A timestamp callback would do the same per record, at a measured cost.
    uint64_t c = 0;
    const uint64_t m0 = Clock::monotonicNs();
    s.api.cuptiGetTimestamp(&c);
    const uint64_t m1 = Clock::monotonicNs();
    s.cuptiMinusMonotonic = static_cast<int64_t>(c - (m0 + (m1 - m0) / 2));
  }
  bool programFirst = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    programFirst = s.programRegistered;
  }
  // The program's own profiler registered its buffers before CUDA started: CUPTI is its own.
  if (programFirst) return unavailable("CUPTI is in use by the program's own profiler, which started first", true);
  const CUptiResult r = s.api.cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
  if (r != CUPTI_SUCCESS) return unavailable(std::string("cuptiActivityRegisterCallbacks: ") + resultString(r), false);
  why.clear();
  if (!enableOurs(why)) return unavailable(why, false);
  s.api.cuptiActivityFlushPeriod(200);  // buffers reach the collector continuously
  setState("on", why);
  s.on.store(true, std::memory_order_release);
  atexit(flushAtExit);  // registered after the CUDA runtime's teardown handler, so it runs first
}

}  // namespace

void Cupti::start(CuptiMode mode, const CuptiApiFilter& filter) {
  State& s = st();
  if (s.started.load(std::memory_order_acquire)) return;
  ReentrancyGuard guard;  // CUPTI's own lookups and driver calls during start-up are not traced
  // Loading CUPTI tries paths that do not exist and CUPTI reads configuration files that may
  // not: none of that reaches the program's errno.
  ErrnoKeeper keepErrno;
  std::call_once(s.once, [&] {
    try {
      startOnce(mode, filter);
    } catch (const std::exception&) {  // out of memory while starting: no device timeline
      s.on.store(false, std::memory_order_release);
      Collector::warnOnce("cutrace: out of memory while starting CUPTI; tracing host calls only\n");
    }
  });
  s.started.store(true, std::memory_order_release);
}

bool Cupti::started() { return st().started.load(std::memory_order_acquire); }

void Cupti::flush() {
  State& s = st();
  if (!s.on.load(std::memory_order_acquire)) return;
  ErrnoKeeper keepErrno;
  ReentrancyGuard guard;
  s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void Cupti::lockForFork() { st().mutex.lock(); }

void Cupti::unlockAfterFork() { st().mutex.unlock(); }

void Cupti::forgetAfterFork() {
  State& s = st();
  // The forking thread, the only one here, holds the mutex (lockForFork): the members are
  // consistent.
  if (s.started.load()) {
    s.on.store(false, std::memory_order_release);
    s.device.clear();
    s.apiActivity.clear();
    s.kernels = 0;
    s.dropped = 0;
    s.stateName = "off";
    s.reason = "forked child: CUPTI does not survive fork";
    s.reasonSet = true;
  }
  s.mutex.unlock();
}

void Cupti::collect(TraceData& data, const NameTable& names) {
  State& s = st();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::unordered_map<uint32_t, uint32_t> pooled;
  data.device.reserve(data.device.size() + s.device.size());
  for (const PendingDevice& p : s.device) {
    DeviceEvent e = p.event;
    if (p.nameId != 0) {
      auto it = pooled.find(p.nameId);
      if (it == pooled.end()) it = pooled.emplace(p.nameId, data.strings.intern(names.get(p.nameId))).first;
      e.name = it->second;
    }
    data.device.push_back(e);
  }
  s.device.clear();
  data.apiActivity.insert(data.apiActivity.end(), s.apiActivity.begin(), s.apiActivity.end());
  s.apiActivity.clear();
  data.cupti.state = s.stateName;
  data.cupti.reason = s.reasonSet ? s.reason : "no CUDA call was made";
  data.cupti.droppedRecords = s.dropped;
  data.cupti.kernels = s.kernels;
}

void Cupti::programUsesCupti() {
  ErrnoKeeper keepErrno;
  State& s = st();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.programRegistered = true;
  }
  if (!s.on.load(std::memory_order_acquire)) return;
  // The program starts its own profiler (torch.profiler) while cutrace's session is on. Sharing
  // CUPTI's activity session with it was measured not to work (torch.profiler got no CUDA
  // records whatever cutrace left out), so cutrace hands CUPTI over: its records so far are
  // flushed to it, its kinds disabled, and CUPTI finalized, so the program's call (which follows
  // in the preload) attaches CUPTI afresh, as if cutrace had never used it. The device timeline
  // ends there; host calls, NVTX and stacks stay traced.
  std::call_once(s.handOverOnce, [&] {
    Collector::warnOnce("cutrace: the program started its own CUPTI profiler (e.g. torch.profiler); cutrace hands "
                        "CUPTI over to it: the device timeline ends here, host calls stay traced\n");
    ReentrancyGuard guard;
    s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (CUpti_ActivityKind kind : kDeviceKinds) s.api.cuptiActivityDisable(kind);
    for (uint32_t cbid : s.driverCbids) s.api.cuptiActivityEnableDriverApi(cbid, 0);
    s.on.store(false, std::memory_order_release);
    s.api.cuptiFinalize();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.handedOver = true;
    s.reason = "handed CUPTI over to the program's own profiler after " + std::to_string(s.device.size()) +
               " device records; later device work is in that profiler's output";
    s.reasonSet = true;
  });
}

void Cupti::programDisabled(int) {
  ErrnoKeeper keepErrno;
  State& s = st();
  if (!s.on.load(std::memory_order_acquire)) return;
  // The program switched a kind off without a profiling session of its own (it never
  // registered buffers): what cutrace records stays on.
  ReentrancyGuard guard;
  std::string error;
  enableOurs(error);
}

bool Cupti::programFinalizing() {
  // cuptiFinalize would tear down cutrace's session: while cutrace holds CUPTI it is skipped.
  return st().on.load(std::memory_order_acquire);
}

}  // namespace cutrace
