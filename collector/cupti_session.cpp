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

// Runtime launch entry points (their correlation ids are the ones kernels launched through the
// runtime carry). Driver-level ids come from the preload's hook list.
constexpr CUpti_CallbackId kRuntimeLaunchCbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};

constexpr CUpti_ActivityKind kDeviceKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

constexpr std::size_t kBufferBytes = 4u << 20;

struct Api {
#define CUTRACE_CUPTI_FN(name) decltype(&::name) name = nullptr;
  CUTRACE_CUPTI_FN(cuptiGetResultString)
  CUTRACE_CUPTI_FN(cuptiSubscribe)
  CUTRACE_CUPTI_FN(cuptiUnsubscribe)
  CUTRACE_CUPTI_FN(cuptiSetThreadIdType)
  CUTRACE_CUPTI_FN(cuptiActivityRegisterTimestampCallback)
  CUTRACE_CUPTI_FN(cuptiActivityRegisterCallbacks)
  CUTRACE_CUPTI_FN(cuptiActivityEnable)
  CUTRACE_CUPTI_FN(cuptiActivityEnableDriverApi)
  CUTRACE_CUPTI_FN(cuptiActivityEnableRuntimeApi)
  CUTRACE_CUPTI_FN(cuptiActivityFlushAll)
  CUTRACE_CUPTI_FN(cuptiActivityFlushPeriod)
  CUTRACE_CUPTI_FN(cuptiActivityGetNextRecord)
  CUTRACE_CUPTI_FN(cuptiActivityGetNumDroppedRecords)
#undef CUTRACE_CUPTI_FN
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

  std::mutex mutex;  // everything below
  std::vector<PendingDevice> device;
  std::vector<ApiActivity> apiActivity;
  std::unordered_set<uint8_t*> ownBuffers;
  CUpti_BuffersCallbackRequestFunc programRequest = nullptr;
  CUpti_BuffersCallbackCompleteFunc programComplete = nullptr;
  bool shared = false;
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
#define CUTRACE_CUPTI_FN(name)                                              \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, #name));           \
  if (a.name == nullptr) {                                                  \
    missing = "libcupti lacks " #name;                                      \
    return false;                                                           \
  }
  CUTRACE_CUPTI_FN(cuptiGetResultString)
  CUTRACE_CUPTI_FN(cuptiSubscribe)
  CUTRACE_CUPTI_FN(cuptiUnsubscribe)
  CUTRACE_CUPTI_FN(cuptiSetThreadIdType)
  CUTRACE_CUPTI_FN(cuptiActivityRegisterTimestampCallback)
  CUTRACE_CUPTI_FN(cuptiActivityRegisterCallbacks)
  CUTRACE_CUPTI_FN(cuptiActivityEnable)
  CUTRACE_CUPTI_FN(cuptiActivityEnableDriverApi)
  CUTRACE_CUPTI_FN(cuptiActivityEnableRuntimeApi)
  CUTRACE_CUPTI_FN(cuptiActivityFlushAll)
  CUTRACE_CUPTI_FN(cuptiActivityFlushPeriod)
  CUTRACE_CUPTI_FN(cuptiActivityGetNextRecord)
  CUTRACE_CUPTI_FN(cuptiActivityGetNumDroppedRecords)
#undef CUTRACE_CUPTI_FN
  return true;
}

uint64_t CUPTIAPI timestamp() { return Clock::monotonicNs(); }

void CUPTIAPI noopCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  State& s = st();
  CUpti_BuffersCallbackRequestFunc programRequest = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.shared) programRequest = s.programRequest;
  }
  if (programRequest != nullptr) {
    // While the program profiles, its allocator serves the buffers and its callback gets them
    // back after we read them (bufferCompleted).
    programRequest(buffer, size, maxRecords);
    return;
  }
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

bool wantedRuntimeCbid(uint32_t cbid) {
  for (CUpti_CallbackId c : kRuntimeLaunchCbids)
    if (c == cbid) return true;
  return false;
}

void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t streamId, uint8_t* buffer, size_t size, size_t validSize) {
  ReentrancyGuard guard;  // CUPTI's thread: anything it does is not the program's activity
  State& s = st();
  std::vector<PendingDevice> device;
  std::vector<ApiActivity> api;
  uint64_t kernels = 0;
  CUpti_Activity* record = nullptr;
  while (buffer != nullptr && s.api.cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        PendingDevice p{};
        DeviceEvent& e = p.event;
        e.kind = DeviceKind::Kernel;
        e.start = k->start;
        e.end = k->end;
        e.correlation = k->correlationId;
        e.device = k->deviceId;
        e.stream = k->streamId;
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
        PendingDevice p{};
        DeviceEvent& e = p.event;
        e.kind = DeviceKind::Memcpy;
        e.start = m->start;
        e.end = m->end;
        e.correlation = m->correlationId;
        e.device = m->deviceId;
        e.stream = m->streamId;
        e.bytes = m->bytes;
        e.copyKind = m->copyKind;
        device.push_back(p);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        PendingDevice p{};
        DeviceEvent& e = p.event;
        e.kind = DeviceKind::Memset;
        e.start = m->start;
        e.end = m->end;
        e.correlation = m->correlationId;
        e.device = m->deviceId;
        e.stream = m->streamId;
        e.bytes = m->bytes;
        device.push_back(p);
        break;
      }
      case CUPTI_ACTIVITY_KIND_DRIVER:
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        // A program's profiler may enable every API record while it shares; keep ours only.
        const bool wanted = record->kind == CUPTI_ACTIVITY_KIND_DRIVER ? wantedDriverCbid(a->cbid)
                                                                       : wantedRuntimeCbid(a->cbid);
        if (wanted) api.push_back(ApiActivity{a->start, a->end, a->threadId, a->correlationId});
        break;
      }
      default:
        break;
    }
  }
  size_t dropped = 0;
  if (s.api.cuptiActivityGetNumDroppedRecords != nullptr)
    s.api.cuptiActivityGetNumDroppedRecords(ctx, streamId, &dropped);

  bool own = false, shared = false;
  CUpti_BuffersCallbackRequestFunc programRequest = nullptr;
  CUpti_BuffersCallbackCompleteFunc programComplete = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.device.insert(s.device.end(), device.begin(), device.end());
    s.apiActivity.insert(s.apiActivity.end(), api.begin(), api.end());
    s.dropped += dropped;
    s.kernels += kernels;
    own = s.ownBuffers.erase(buffer) != 0;
    shared = s.shared;
    programRequest = s.programRequest;
    programComplete = s.programComplete;
  }
  if (!own) {
    if (programComplete != nullptr) programComplete(ctx, streamId, buffer, size, validSize);  // its buffer
    return;
  }
  // CUPTI keeps filling the buffer it has when the program's session starts, so records of the
  // session can arrive in one of ours: the program gets a copy in a buffer of its own (its
  // profiler drops whatever lies outside its window, as it does for its own buffers).
  if (shared && programRequest != nullptr && programComplete != nullptr && validSize > 0) {
    uint8_t* copy = nullptr;
    size_t copySize = 0, maxRecords = 0;
    programRequest(&copy, &copySize, &maxRecords);
    if (copy != nullptr) {
      const size_t n = copySize >= validSize ? validSize : 0;  // never a torn record
      if (n > 0) memcpy(copy, buffer, n);
      programComplete(ctx, streamId, copy, copySize, n);
    }
  }
  free(buffer);
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
  for (CUpti_CallbackId cbid : kRuntimeLaunchCbids)
    if (const CUptiResult r = a.cuptiActivityEnableRuntimeApi(cbid, 1); r != CUPTI_SUCCESS) failed = r;
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
  CUptiResult r = s.api.cuptiActivityRegisterTimestampCallback(timestamp);
  if (r != CUPTI_SUCCESS) return unavailable(std::string("cuptiActivityRegisterTimestampCallback: ") + resultString(r), false);
  r = s.api.cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
  if (r != CUPTI_SUCCESS) return unavailable(std::string("cuptiActivityRegisterCallbacks: ") + resultString(r), false);
  why.clear();
  if (!enableOurs(why)) return unavailable(why, false);
  s.api.cuptiActivityFlushPeriod(200);  // buffers reach the collector continuously
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.programRequest != nullptr) s.shared = true;  // the program registered before we started
  }
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

bool Cupti::programRegistersCallbacks(void* request, void* complete, int* result) {
  State& s = st();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.programRequest = reinterpret_cast<CUpti_BuffersCallbackRequestFunc>(request);
    s.programComplete = reinterpret_cast<CUpti_BuffersCallbackCompleteFunc>(complete);
  }
  if (!s.on.load(std::memory_order_acquire)) return false;  // not ours: the program registers for real
  ReentrancyGuard guard;
  // Everything recorded so far goes to our store before the program's session begins.
  s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.shared = true;
    s.reason = "shared with the program's own CUPTI client (e.g. torch.profiler): both receive every record";
  }
  *result = CUPTI_SUCCESS;
  return true;
}

void Cupti::programDisabled(int kind) {
  State& s = st();
  if (!s.on.load(std::memory_order_acquire)) return;
  ReentrancyGuard guard;
  bool endOfSession = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    endOfSession = s.shared && (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL);
  }
  if (endOfSession) {
    // The program's buffers get everything up to now, then new buffers are ours again.
    s.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.shared = false;
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
