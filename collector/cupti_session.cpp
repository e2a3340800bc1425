#include "collector/cupti_session.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_set>
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
  X(cuptiActivityGetNumDroppedRecords) X(cuptiGetTimestamp)

struct Api {
#define CUTRACE_CUPTI_FIELD(name) decltype(&::name) name = nullptr;
  CUTRACE_CUPTI_FUNCTIONS(CUTRACE_CUPTI_FIELD)
#undef CUTRACE_CUPTI_FIELD
};

struct PendingDevice {
  DeviceEvent event;
  uint32_t nameId;  // NameTable id, converted when collected
};

struct State {
  std::atomic<bool> started{false};
  std::atomic<bool> on{false};
  std::once_flag once;
  void* library = nullptr;
  Api api;
  std::vector<uint32_t> driverCbids;
  int64_t cuptiMinusMonotonic = 0;  // CUPTI timestamp - CLOCK_MONOTONIC, fixed at start

  std::mutex mutex;  // everything below
  std::vector<PendingDevice> device;
  std::vector<ApiActivity> apiActivity;
  std::unordered_set<uint8_t*> ownBuffers;
  CUpti_BuffersCallbackRequestFunc programRequest = nullptr;
  CUpti_BuffersCallbackCompleteFunc programComplete = nullptr;
  bool yielded = false;   // the program's callbacks are registered: its session owns the records
  unsigned yields = 0;
  uint64_t dropped = 0;
  uint64_t kernels = 0;
  std::string stateName = "off";
  std::string reason = "no CUDA call was made";
};

State& st() {
  static State* s = new State();  // never destroyed: CUPTI may call back during exit
  return *s;
}

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

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  State& s = st();
  auto* b = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *buffer = b;
  *size = b != nullptr ? kBufferBytes : 0;
  *maxRecords = 0;
  if (b != nullptr) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.ownBuffers.insert(b);
  }
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

void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t streamId, uint8_t* buffer, size_t size, size_t validSize) {
  ReentrancyGuard guard;  // CUPTI's thread: anything it does is not the program's activity
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
  CUpti_BuffersCallbackCompleteFunc programComplete = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.device.insert(s.device.end(), device.begin(), device.end());
    s.apiActivity.insert(s.apiActivity.end(), api.begin(), api.end());
    s.dropped += dropped;
    s.kernels += kernels;
    own = s.ownBuffers.erase(buffer) != 0;
    programComplete = s.programComplete;
  }
  if (own) {
    free(buffer);
  } else if (programComplete != nullptr) {
    // A buffer the program's allocator gave CUPTI during its session, completing after cutrace
    // took the callbacks back: it is the program's.
    programComplete(ctx, streamId, buffer, size, validSize);
  }
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
}

void flushAtExit() { Cupti::flush(); }

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
    // The program registered its callbacks before CUDA started: its session goes first.
    programFirst = s.programRequest != nullptr;
    if (programFirst) {
      s.yielded = true;
      ++s.yields;
    }
  }
  if (!programFirst) {
    const CUptiResult r = s.api.cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
    if (r != CUPTI_SUCCESS) return unavailable(std::string("cuptiActivityRegisterCallbacks: ") + resultString(r), false);
  }
  why.clear();
  if (!enableOurs(why)) return unavailable(why, false);
  s.api.cuptiActivityFlushPeriod(200);  // buffers reach the collector continuously
  if (programFirst) why = "yielded CUPTI to the program's own profiler, which started first; cutrace takes it back when that session ends";
  setState("on", why);
  s.on.store(true, std::memory_order_release);
  atexit(flushAtExit);  // registered after the CUDA runtime's teardown handler, so it runs first
}

}  // namespace

void Cupti::start(CuptiMode mode, const CuptiApiFilter& filter) {
  State& s = st();
  if (s.started.load(std::memory_order_acquire)) return;
  ReentrancyGuard guard;  // CUPTI's own lookups and driver calls during start-up are not traced
  std::call_once(s.once, [&] { startOnce(mode, filter); });
  s.started.store(true, std::memory_order_release);
}

bool Cupti::started() { return st().started.load(std::memory_order_acquire); }

void Cupti::flush() {
  State& s = st();
  if (!s.on.load(std::memory_order_acquire)) return;
  ReentrancyGuard guard;
  s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void Cupti::forgetAfterFork() {
  State& s = st();
  if (!s.started.load()) return;
  s.on.store(false, std::memory_order_release);
  // Only the forking thread exists: a mutex another thread held at the fork is rebuilt.
  new (&s.mutex) std::mutex();
  s.device.clear();
  s.apiActivity.clear();
  s.kernels = 0;
  s.dropped = 0;
  s.stateName = "off";
  s.reason = "forked child: CUPTI does not survive fork";
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
  data.cupti.reason = s.reason;
  data.cupti.droppedRecords = s.dropped;
  data.cupti.kernels = s.kernels;
}

bool Cupti::programRegistersCallbacks(void* request, void* complete, int*) {
  State& s = st();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.programRequest = reinterpret_cast<CUpti_BuffersCallbackRequestFunc>(request);
    s.programComplete = reinterpret_cast<CUpti_BuffersCallbackCompleteFunc>(complete);
  }
  if (!s.on.load(std::memory_order_acquire)) return false;
  // The program's profiler gets CUPTI as it would without cutrace: everything recorded so far is
  // delivered to cutrace first, then the program's callbacks replace ours (the real registration
  // follows in the preload) until the program ends its session.
  // Known gap, measured on an H100 with torch.profiler (PyTorch 2.11): once cutrace's activity
  // session was on, torch.profiler still received no CUDA records, whatever cutrace left out
  // (subscriber probe, flush period, thread id type, API records). Until that is understood the
  // user is told, never left with a silently empty profile.
  Collector::warnOnce("cutrace: the program started its own CUPTI profiler (e.g. torch.profiler) while cutrace's "
                      "device timeline is on; that profiler may record no CUDA activity. Rerun with CUTRACE_CUPTI=off "
                      "to give it CUPTI\n");
  ReentrancyGuard guard;
  s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.yielded) ++s.yields;
  s.yielded = true;
  s.reason = "yielded CUPTI to the program's own profiler for " + std::to_string(s.yields) +
             " session(s): device work in those windows is in its profile, not here";
  return false;
}

void Cupti::programDisabled(int kind) {
  State& s = st();
  if (!s.on.load(std::memory_order_acquire)) return;
  ReentrancyGuard guard;
  bool endOfSession = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    endOfSession = s.yielded && (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL);
  }
  if (endOfSession) {
    // The program's callbacks get every record of its session, then CUPTI is cutrace's again.
    s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    s.api.cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.yielded = false;
  }
  std::string error;
  enableOurs(error);  // a program's disable must not switch off what cutrace records
}

bool Cupti::programFinalizing() {
  // cuptiFinalize would tear down cutrace's session too: while cutrace is on it is skipped and
  // treated as the end of the program's session.
  if (!st().on.load(std::memory_order_acquire)) return false;
  programDisabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  return true;
}

}  // namespace cutrace
