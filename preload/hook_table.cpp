// The tables generated from hooks.def and the machinery that maps real CUDA entry points to
// cutrace's shims: finding the real functions, answering dlsym and cuGetProcAddress with
// shims by pointer identity, and the kernel-name caches.
//
// Concurrency: real pointers are resolved under resolveMutex and published with a release
// store per entry; the identity map of a layer is built under the same mutex and published
// with its `ready` flag. Readers never lock.
//
// fork(): nothing here may be found locked or half-initialised in a child. The two mutexes
// guard work that a child can redo (a layer whose `ready` flag is not set is resolved again
// from scratch), so the child rebuilds them (rebuildLocksInChild); the parent never waits for
// them, which matters because their holders may be waiting for the dynamic loader's lock. Every
// other piece of state is constant-initialised or published with a single atomic store: no
// function-local static with a dynamic initialiser (its guard could be held by a thread the
// child lacks) and no once flag.

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <string_view>

#include <cupti.h>

#include "collector/cupti_session.h"
#include "preload/dlsym_hook.h"
#include "preload/hook_support.h"

namespace cutrace {

// ---------------------------------------------------------------------------- generated tables

namespace {

struct DisplayName {
  char text[64];
};

// Runtime names that CUDA 11.2-12.9's cuda_runtime_api.h gives calls written without the "_v2"
// (its #defines), and that 13's runtime exports no more.
constexpr std::string_view kHeaderRenamed[] = {"cudaSignalExternalSemaphoresAsync_v2",
                                               "cudaWaitExternalSemaphoresAsync_v2"};

// Runtime entry points are shown as users call them: "__cudaLaunchKernel_ptsz" is the
// triple-chevron path of cudaLaunchKernel, "cudaSignalExternalSemaphoresAsync_v2" what 12's
// headers make of cudaSignalExternalSemaphoresAsync. Driver names stay exact (cuMemcpyHtoD_v2),
// as in Nsight Systems, except the per-thread-stream suffix.
constexpr DisplayName displayNameOf(std::string_view symbol, ApiLayer layer) {
  DisplayName out{};
  if (layer == ApiLayer::Runtime && symbol.starts_with("__")) symbol.remove_prefix(2);
  if (symbol.ends_with("_ptsz") || symbol.ends_with("_ptds")) symbol.remove_suffix(5);
  if (layer == ApiLayer::Runtime && std::find(std::begin(kHeaderRenamed), std::end(kHeaderRenamed), symbol) !=
                                        std::end(kHeaderRenamed))
    symbol.remove_suffix(3);
  for (std::size_t i = 0; i < symbol.size() && i + 1 < sizeof(out.text); ++i) out.text[i] = symbol[i];
  return out;
}

constexpr DisplayName kDisplayNames[kHookCount] = {
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) displayNameOf(#name, ApiLayer::layer),
#include "preload/hooks.def"
#undef CUTRACE_HOOK
};

}  // namespace

const HookDescriptor kHookDescriptors[kHookCount] = {
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) \
  {kDisplayNames[static_cast<std::size_t>(HookId::k##name)].text, ApiLayer::layer, ApiKind::kind},
#include "preload/hooks.def"
#undef CUTRACE_HOOK
};

const char* const kHookSymbols[kHookCount] = {
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) #name,
#include "preload/hooks.def"
#undef CUTRACE_HOOK
};

std::atomic<void*> g_realFunctions[kHookCount];

// ---------------------------------------------------------------------------- resolution

namespace {

std::mutex resolveMutex;
std::mutex unmappedMutex;  // noteUnmapped's names

// In a fork child, only the forking thread exists; a lock another thread held is rebuilt (what
// it guarded is redone as needed, see above).
void rebuildLocksInChild() {
  new (&resolveMutex) std::mutex();
  new (&unmappedMutex) std::mutex();
}
// Registered when the library is loaded, before the program can fork from a thread.
[[maybe_unused]] const int kForkHandlerRegistered = pthread_atfork(nullptr, nullptr, rebuildLocksInChild);

struct IdentityMap {
  std::array<std::pair<uintptr_t, uint16_t>, kHookCount> entries{};
  std::size_t size = 0;
  std::atomic<bool> ready{false};
  const void* handle = nullptr;  // the library the layer was resolved from (see symbolIn)
};
IdentityMap identity[2];  // by ApiLayer

IdentityMap& mapOf(ApiLayer layer) { return identity[static_cast<int>(layer)]; }

// Hook ids sorted by symbol, for name lookups from dlsym; computed at compile time.
constexpr std::string_view kSymbolViews[kHookCount] = {
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) #name,
#include "preload/hooks.def"
#undef CUTRACE_HOOK
};

constexpr std::array<uint16_t, kHookCount> sortedBySymbol() {
  std::array<uint16_t, kHookCount> ids{};
  for (std::size_t i = 0; i < kHookCount; ++i) ids[i] = static_cast<uint16_t>(i);
  std::sort(ids.begin(), ids.end(), [](uint16_t a, uint16_t b) { return kSymbolViews[a] < kSymbolViews[b]; });
  return ids;
}
constexpr std::array<uint16_t, kHookCount> kBySymbol = sortedBySymbol();

int hookBySymbol(const char* name) {
  const std::string_view key(name);
  auto it = std::lower_bound(kBySymbol.begin(), kBySymbol.end(), key,
                             [](uint16_t id, std::string_view n) { return kSymbolViews[id] < n; });
  if (it != kBySymbol.end() && kSymbolViews[*it] == key) return *it;
  return -1;
}

// A named diagnostic counter, looked up once into a constant-initialised slot (a race only
// looks it up twice: Collector::counter answers the same counter for the same name).
std::atomic<uint64_t>& cachedCounter(std::atomic<std::atomic<uint64_t>*>& slot, const char* name) {
  std::atomic<uint64_t>* c = slot.load(std::memory_order_acquire);
  if (c == nullptr) {
    c = &Collector::counter(name);
    slot.store(c, std::memory_order_release);
  }
  return *c;
}

bool isOwnWrapper(const void* p) {
  for (void* w : kHookWrappers)
    if (w == p) return true;
  return false;
}

// A function of the layer's library.
void* symbolOf(const IdentityMap& map, const char* symbol) { return symbolIn(const_cast<void*>(map.handle), symbol); }

// Fills the layer's real pointers from `handle` (a dlopen handle, or in a child whose loader is
// stuck a link map: see loadedLibrary) and builds its identity map. Caller holds resolveMutex.
void resolveLayerFrom(ApiLayer layer, void* handle) {
  IdentityMap& map = mapOf(layer);
  map.handle = handle;
  map.size = 0;
  for (std::size_t i = 0; i < kHookCount; ++i) {
    if (kHookDescriptors[i].layer != layer) continue;
    void* p = symbolOf(map, kHookSymbols[i]);
    if (p == nullptr || isOwnWrapper(p)) continue;
    g_realFunctions[i].store(p, std::memory_order_release);
    map.entries[map.size++] = {reinterpret_cast<uintptr_t>(p), static_cast<uint16_t>(i)};
  }
  dlerror();  // symbols missing from older libraries are expected; leave no error behind
  std::sort(map.entries.begin(), map.entries.begin() + static_cast<std::ptrdiff_t>(map.size));
  map.ready.store(true, std::memory_order_release);
}

constexpr const char* kDriverNames[] = {"libcuda.so.1", "libcuda.so"};
constexpr const char* kRuntimeNames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};

// A loaded library by name: dlopen(RTLD_NOLOAD), which also keeps it loaded for the functions
// taken from it. Where no dlopen may be made (Collector::loaderStuckSinceFork), the loaded
// objects are searched by file name instead, and the object's link map stands for the handle
// (symbolIn looks its functions up then).
void* loadedLibrary(const char* const* names, std::size_t count) {
  if (Collector::loaderStuckSinceFork()) {
    for (std::size_t i = 0; i < count; ++i) {
      for (struct link_map* lm = _r_debug.r_map; lm != nullptr; lm = lm->l_next) {
        const char* slash = lm->l_name != nullptr ? strrchr(lm->l_name, '/') : nullptr;
        const char* base = slash != nullptr ? slash + 1 : lm->l_name;
        if (base != nullptr && strcmp(base, names[i]) == 0) return lm;
      }
    }
    return nullptr;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (void* h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD)) return h;
  }
  dlerror();
  return nullptr;
}


bool resolveLayer(ApiLayer layer, const void* caller) {
  if (mapOf(layer).ready.load(std::memory_order_acquire)) return true;
  ReentrancyGuard guard;
  const int savedErrno = errno;
  std::lock_guard<std::mutex> lock(resolveMutex);
  if (!mapOf(layer).ready.load(std::memory_order_acquire)) {
    void* handle = nullptr;
    if (layer == ApiLayer::Driver) {
      handle = loadedLibrary(kDriverNames, std::size(kDriverNames));
    } else {
      // The runtime the program bound to in the global scope, else one loaded by name, else
      // the one visible from the calling object's own scope (a runtime under an RTLD_LOCAL
      // extension, possibly renamed by auditwheel).
      handle = libraryHandleOf(realDlsym(RTLD_NEXT, "cudaGetDeviceCount"));
      if (handle == nullptr) handle = loadedLibrary(kRuntimeNames, std::size(kRuntimeNames));
      if (handle == nullptr && caller != nullptr) {
        if (void* callerObject = libraryHandleOf(caller)) {
          void* p = symbolIn(callerObject, "cudaGetDeviceCount");
          if (p != nullptr && !isOwnWrapper(p)) handle = libraryHandleOf(p);
        }
      }
      dlerror();
    }
    if (handle != nullptr) resolveLayerFrom(layer, handle);
  }
  errno = savedErrno;
  return mapOf(layer).ready.load(std::memory_order_acquire);
}

int identityLookup(ApiLayer layer, const void* p) {
  const IdentityMap& map = mapOf(layer);
  if (!map.ready.load(std::memory_order_acquire)) return -1;
  const auto key = reinterpret_cast<uintptr_t>(p);
  auto end = map.entries.begin() + static_cast<std::ptrdiff_t>(map.size);
  auto it = std::lower_bound(map.entries.begin(), end, std::make_pair(key, uint16_t{0}));
  if (it != end && it->first == key) return it->second;
  return -1;
}

// The base of a driver symbol as cuGetProcAddress is asked for it: no _vN, _ptsz or _ptds.
std::string_view procBaseName(std::string_view s) {
  for (bool changed = true; changed;) {
    changed = false;
    if (s.ends_with("_ptsz") || s.ends_with("_ptds")) {
      s.remove_suffix(5);
      changed = true;
    }
    const std::size_t v = s.rfind("_v");
    if (v != std::string_view::npos && v + 2 < s.size() &&
        s.find_first_not_of("0123456789", v + 2) == std::string_view::npos) {
      s = s.substr(0, v);
      changed = true;
    }
  }
  return s;
}

bool isHookedDriverBase(std::string_view base) {
  for (std::size_t i = 0; i < kHookCount; ++i) {
    if (kHookDescriptors[i].layer == ApiLayer::Driver && kHookDescriptors[i].kind != ApiKind::Lookup &&
        procBaseName(kHookSymbols[i]) == base)
      return true;
  }
  return false;
}

// The driver answered with one of its exported functions that cutrace does not hook (e.g. the
// legacy cuDevicePrimaryCtxRelease for an old version): a different ABI, rightly untraced.
bool isOtherExport(void* p) {
  Dl_info info{};
  return dladdr(p, &info) != 0 && info.dli_saddr == p && info.dli_sname != nullptr && hookBySymbol(info.dli_sname) < 0;
}

// The first few names that came back unmapped get a counter of their own, so a trace says which
// entry points were missed. Names are copied into fixed storage (counters keep the pointer).
void noteUnmapped(const char* symbol) {
  static char names[8][64];
  static std::atomic<int> used{0};
  std::lock_guard<std::mutex> lock(unmappedMutex);
  const int n = used.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i)
    if (strcmp(names[i] + sizeof("unmapped:") - 1, symbol) == 0) {
      Collector::counter(names[i]).fetch_add(1, std::memory_order_relaxed);
      return;
    }
  if (n >= 8) return;
  snprintf(names[n], sizeof(names[n]), "unmapped:%s", symbol);
  used.store(n + 1, std::memory_order_relaxed);
  Collector::counter(names[n]).fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void* resolveRealFunction(HookId id, const void* caller) {
  const auto i = static_cast<std::size_t>(id);
  if (!resolveLayer(kHookDescriptors[i].layer, caller)) return nullptr;
  return g_realFunctions[i].load(std::memory_order_acquire);
}

void redirectProcAddress(const char* symbol, void** pfn) {
  if (pfn == nullptr || *pfn == nullptr) return;
  static std::atomic<std::atomic<uint64_t>*> lookupsSlot{nullptr}, wrappedSlot{nullptr}, unmappedSlot{nullptr};
  std::atomic<uint64_t>& lookups = cachedCounter(lookupsSlot, "getproc_lookups");
  std::atomic<uint64_t>& wrapped = cachedCounter(wrappedSlot, "getproc_wrapped");
  std::atomic<uint64_t>& unmapped = cachedCounter(unmappedSlot, "getproc_hooked_but_unmapped");
  lookups.fetch_add(1, std::memory_order_relaxed);
  resolveLayer(ApiLayer::Driver, nullptr);
  const int id = identityLookup(ApiLayer::Driver, *pfn);
  if (id >= 0) {
    *pfn = kHookWrappers[id];
    wrapped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A hooked function answered with a pointer that is not one of the driver's exports: we
  // cannot know its ABI, so it passes through untraced. Counted so a trace shows the gap.
  if (symbol != nullptr && isHookedDriverBase(procBaseName(symbol)) && !isOtherExport(*pfn)) {
    unmapped.fetch_add(1, std::memory_order_relaxed);
    noteUnmapped(symbol);
  }
}

bool isHookedSymbol(const char* name) { return hookBySymbol(name) >= 0; }

void* redirectDlsymResult(const char* name, void* result) {
  if (result == nullptr) return nullptr;
  const int id = hookBySymbol(name);
  if (id < 0) return result;
  const ApiLayer layer = kHookDescriptors[id].layer;
  if (result == kHookWrappers[id]) {
    // The lookup found cutrace's own export (RTLD_DEFAULT with libtrace.so first in the global
    // scope). Only hand it out when the real function exists, so "is CUDA loaded?" probes
    // answer as they would without the preload.
    if (!resolveLayer(layer, nullptr) || g_realFunctions[id].load(std::memory_order_acquire) == nullptr) {
      (void)realDlsym(RTLD_DEFAULT, "cutrace: symbol not loaded");  // sets dlerror() for the caller
      return nullptr;
    }
    return result;
  }
  resolveLayer(layer, nullptr);
  const int mapped = identityLookup(layer, result);
  if (mapped < 0) return result;  // another copy of the library: pass through untouched
  static std::atomic<std::atomic<uint64_t>*> wrappedSlot{nullptr};
  cachedCounter(wrappedSlot, "dlsym_wrapped").fetch_add(1, std::memory_order_relaxed);
  return kHookWrappers[mapped];
}

// ---------------------------------------------------------------------------- device tracing

namespace {

// CUPTI API records are enabled only for the driver functions whose device work is linked to
// the host: launches, graph launches, copies and sets, named by the same list as the shims.
#define CUTRACE_CBID_Driver(name) CUPTI_DRIVER_TRACE_CBID_##name
#define CUTRACE_CBID_Runtime(name) 0
constexpr uint32_t cbidIf(ApiKind kind, uint32_t cbid) { return makesDeviceWork(kind) ? cbid : 0; }
constexpr uint32_t kAllCbids[kHookCount] = {
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) cbidIf(ApiKind::kind, CUTRACE_CBID_##layer(name)),
#include "preload/hooks.def"
#undef CUTRACE_HOOK
};
#undef CUTRACE_CBID_Driver
#undef CUTRACE_CBID_Runtime

}  // namespace

std::atomic<bool> g_deviceTracingStarted{false};

void startDeviceTracing() {
  if (g_deviceTracingStarted.exchange(true)) return;
  static uint32_t cbids[kHookCount];
  std::size_t n = 0;
  for (uint32_t c : kAllCbids)
    if (c != 0) cbids[n++] = c;
  Cupti::start(static_cast<CuptiMode>(Collector::config().cupti), CuptiApiFilter{cbids, n});
}

void flushDeviceActivity() { Cupti::flush(); }

int currentDeviceOrdinal() {
  using CtxGetDevice = CUresult (*)(CUdevice*);
  static std::atomic<void*> fn{nullptr};
  void* p = fn.load(std::memory_order_acquire);
  if (p == nullptr) {
    const IdentityMap& map = mapOf(ApiLayer::Driver);
    if (!map.ready.load(std::memory_order_acquire)) return -1;
    ReentrancyGuard guard;
    p = symbolOf(map, "cuCtxGetDevice");
    dlerror();
    if (p == nullptr) return -1;
    fn.store(p, std::memory_order_release);
  }
  CUdevice dev = -1;
  ReentrancyGuard guard;
  return reinterpret_cast<CtxGetDevice>(p)(&dev) == CUDA_SUCCESS ? dev : -1;
}

bool busyLeftBehind(uintptr_t sp) {
  // No guard: the drain thread, busy for its life.
  const uint64_t* at = tls::guardAt;
  if (at == nullptr || frameRunning(sp, at, tls::guardToken)) return false;
  tls::busy = 0;
  tls::guardAt = nullptr;
  return true;
}

// ---------------------------------------------------------------------------- kernel names

constinit PointerMap g_kernelNames;

namespace {

// `map`'s slots, reserved at its first value (the kernel names' at the first name); false where
// they cannot be.
bool setUp(PointerMap& map, std::size_t capacityPow2) { return map.ready() || map.init(capacityPow2); }

// `value` for `key` in `map`, lasting (forget() leaves it). False where it could not be stored (no
// key, no room).
bool putLasting(PointerMap& map, std::size_t capacityPow2, const void* key, uint32_t value) {
  return key != nullptr && setUp(map, capacityPow2) && map.put(key, value, PointerMap::kLasting);
}

// Set up by the first name stored; a lookup before it finds nothing (cachedKernelName).
PointerMap& kernelNames() {
  setUp(g_kernelNames, 1u << 16);
  return g_kernelNames;
}

// A function of a resolved layer's library, looked up once into `slot` (a race only looks it
// up twice). kMissing records "looked, not there"; nullptr is returned for it and for a layer
// not resolved yet (looked up again next time).
char missingMarker;
constexpr void* kMissing = &missingMarker;
void* resolvedOnce(std::atomic<void*>& slot, ApiLayer layer, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (p == nullptr) {
    const IdentityMap& map = mapOf(layer);
    if (!map.ready.load(std::memory_order_acquire)) return nullptr;
    p = symbolOf(map, name);
    dlerror();
    if (p == nullptr) p = kMissing;
    slot.store(p, std::memory_order_release);
  }
  return p == kMissing ? nullptr : p;
}

// `cache`: the name stays for `key` (this generation); else it is asked again next time.
uint32_t unknownKernelName(const void* key, uint32_t generation, bool cache = true) {
  char text[48];
  snprintf(text, sizeof(text), "kernel@%p", key);
  const uint32_t id = Collector::names().intern(text);
  if (cache) kernelNames().put(key, id, generation);
  return id;
}

}  // namespace

void registerKernelName(const void* hostFun, const char* deviceName) {
  if (currentMode() == Mode::Uninitialized) initializePreload();
  if (!Collector::config().enabled || deviceName == nullptr) return;
  ReentrancyGuard guard;
  const uint32_t id = Collector::names().intern(deviceName);
  // A host stub's name lasts: its address is the program's (or a library's, registered again
  // when loaded again), not the driver's.
  if (id != 0) kernelNames().put(hostFun, id, PointerMap::kLasting);
}

void aliasKernelName(const void* alias, const void* hostFun) {
  if (!Collector::config().enabled) return;
  // Lasting, as the stub's name: the runtime's launches of a stub come after it maps the stub to
  // its handle here, each time a handle's memory has a new owner too, and the runtime may not be
  // able to name the handle itself (cudaFuncGetName takes an entry function), so an unload of
  // another module must not make every launch of the program ask for it.
  const uint32_t id = cachedKernelName(hostFun);
  if (id != 0) kernelNames().put(alias, id, PointerMap::kLasting);
}

namespace {

// The name the driver gives a function or kernel handle, asked both ways (the runtime launches a
// CUkernel cast to CUfunction); nullptr when it gives none.
const char* driverNameOf(const void* handle) {
  using FuncGetName = CUresult (*)(const char**, CUfunction);
  using KernelGetName = CUresult (*)(const char**, CUkernel);
  static std::atomic<void*> funcGetNameSlot{nullptr}, kernelGetNameSlot{nullptr};
  void* funcGetName = resolvedOnce(funcGetNameSlot, ApiLayer::Driver, "cuFuncGetName");
  void* kernelGetName = resolvedOnce(kernelGetNameSlot, ApiLayer::Driver, "cuKernelGetName");
  const char* name = nullptr;
  if (funcGetName != nullptr &&
      reinterpret_cast<FuncGetName>(funcGetName)(&name, static_cast<CUfunction>(const_cast<void*>(handle))) ==
          CUDA_SUCCESS &&
      name != nullptr)
    return name;
  if (kernelGetName != nullptr &&
      reinterpret_cast<KernelGetName>(kernelGetName)(&name, static_cast<CUkernel>(const_cast<void*>(handle))) ==
          CUDA_SUCCESS)
    return name;
  return nullptr;
}

// The name of `key` cached (this generation) and returned; an unknown kernel's where none.
uint32_t cachedName(const void* key, const char* name, uint32_t generation) {
  const uint32_t id = name != nullptr ? Collector::names().intern(name) : 0;
  if (id == 0) return unknownKernelName(key, generation);
  kernelNames().put(key, id, generation);
  return id;
}

}  // namespace

uint32_t runtimeKernelNameSlow(const void* func) {
  ReentrancyGuard guard;
  const uint32_t generation = kernelNames().generation();
  using FuncGetName = cudaError_t (*)(const char**, const void*);
  using LastError = cudaError_t (*)();
  static std::atomic<void*> getNameSlot{nullptr}, peekSlot{nullptr}, takeSlot{nullptr};
  void* getName = resolvedOnce(getNameSlot, ApiLayer::Runtime, "cudaFuncGetName");
  void* peek = resolvedOnce(peekSlot, ApiLayer::Runtime, "cudaPeekAtLastError");
  void* take = resolvedOnce(takeSlot, ApiLayer::Runtime, "cudaGetLastError");
  // A runtime call that fails leaves its error for the program's next cudaGetLastError (PyTorch
  // checks it after every launch): the runtime is asked only when no error of the program's is
  // pending, and the error a failed question leaves is taken back. Anything else (a kernel of a
  // library, cudaLibraryGetKernel's: the runtime hands such handles to the driver) is the driver's
  // to name.
  // An unknown name found while the runtime could not be asked is not kept: the next launch asks.
  const char* name = nullptr;
  const bool asked = getName != nullptr && peek != nullptr && take != nullptr &&
                     reinterpret_cast<LastError>(peek)() == cudaSuccess;
  if (asked && reinterpret_cast<FuncGetName>(getName)(&name, func) != cudaSuccess) {
    reinterpret_cast<LastError>(take)();
    name = nullptr;
  }
  if (name == nullptr) name = driverNameOf(func);
  if (name == nullptr && !asked) return unknownKernelName(func, generation, false);
  return cachedName(func, name, generation);
}

uint32_t driverKernelNameSlow(CUfunction f) {
  ReentrancyGuard guard;
  const uint32_t generation = kernelNames().generation();
  return cachedName(f, driverNameOf(f), generation);
}

// Function -> block shape (packed), and -> shared bytes + 1 (0 is a value set). A function's values
// stay while its module is loaded, whatever else is unloaded; the driver hands an unloaded
// function's handle out again, to a function that starts with nothing set: cuModuleGetFunction
// tells the two apart by the function's owner (its module, and how many times that module handle
// was unloaded before), and a handle with a new owner starts over.
constinit PointerMap g_legacyBlocks;
constinit PointerMap g_legacyShared;
constinit PointerMap g_functionOwners;  // function -> owner (ownerOf), for every function issued
constinit PointerMap g_moduleUnloads;   // module -> the number of its latest unload
std::atomic<uint32_t> g_unloads{0};

namespace {
uint32_t ownerOf(CUmodule module) {
  uint64_t x = reinterpret_cast<uintptr_t>(module) ^ (uint64_t{g_moduleUnloads.find(module)} << 32);
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(x >> 32) | 1;  // never 0 (none)
}
}  // namespace

void noteLegacyBlock(CUfunction f, int x, int y, int z) {
  if (x > 0 && y > 0 && z > 0) putLasting(g_legacyBlocks, 1u << 10, f, LaunchPayload::packBlock(x, y, z));
}
void noteLegacyShared(CUfunction f, unsigned bytes) {
  putLasting(g_legacyShared, 1u << 10, f, bytes == UINT32_MAX ? bytes : bytes + 1);
}
uint32_t legacyBlock(CUfunction f) { return g_legacyBlocks.find(f); }
uint32_t legacyShared(CUfunction f) {
  const uint32_t v = g_legacyShared.find(f);
  return v != 0 ? v - 1 : 0;
}

void functionIssued(CUfunction f, CUmodule module) {
  const uint32_t owner = ownerOf(module);
  const uint32_t before = g_functionOwners.find(f);
  if (before == owner || !putLasting(g_functionOwners, 1u << 16, f, owner)) return;
  if (before == 0) return;  // first seen: what was noted for it is its own
  if (g_legacyBlocks.ready()) g_legacyBlocks.put(f, 0, PointerMap::kLasting);
  if (g_legacyShared.ready()) g_legacyShared.put(f, 0, PointerMap::kLasting);
}

void moduleUnloaded(CUmodule module) {
  putLasting(g_moduleUnloads, 1u << 10, module, g_unloads.fetch_add(1, std::memory_order_relaxed) + 1);
}

void forgetKernelHandles() { g_kernelNames.forget(); }

// Array -> element bytes (PointerMap::kLasting: arrays are never forgotten; a handle the driver
// hands out again is put again when made). Slots reserved at the first array made.
constinit PointerMap g_arrayElements;

void noteArrayElements(const void* array, std::size_t bytes) {
  if (bytes != 0 && bytes <= UINT32_MAX) putLasting(g_arrayElements, 1u << 12, array, static_cast<uint32_t>(bytes));
}

std::size_t arrayElementBytes(const void* array) {
  const uint32_t bytes = g_arrayElements.find(array);
  return bytes != 0 ? bytes : 1;
}

// Physical memory handle -> references retained and not yet released (0: none). Counted with
// adjust(): threads retaining and releasing one allocation at once (NCCL's) lose no count.
constinit PointerMap g_retainedReferences;

void retainedReference(CUmemGenericAllocationHandle handle) {
  if (setUp(g_retainedReferences, 1u << 10))
    g_retainedReferences.adjust(reinterpret_cast<const void*>(handle), 1, PointerMap::kLasting);
}

bool releaseRetained(CUmemGenericAllocationHandle handle) {
  return g_retainedReferences.adjust(reinterpret_cast<const void*>(handle), -1, PointerMap::kLasting);
}

std::size_t deviceAllocationBytes(uint64_t ptr) {
  using AddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static std::atomic<void*> slot{nullptr};
  ReentrancyGuard guard;
  void* query = resolvedOnce(slot, ApiLayer::Driver, "cuMemGetAddressRange_v2");
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  if (query == nullptr || reinterpret_cast<AddressRange>(query)(&base, &bytes, ptr) != CUDA_SUCCESS) return 0;
  return bytes;
}

const void* runtimeStream(uint64_t before13, uint64_t since13) {
  // The major version of the runtime the hooks resolved (0: it has no cudaRuntimeGetVersion).
  // Asked once; two threads asking at once both get the same answer.
  static std::atomic<int> major{-1};
  int m = major.load(std::memory_order_relaxed);
  if (m < 0) {
    ReentrancyGuard guard;
    static std::atomic<void*> versionSlot{nullptr};
    using RuntimeGetVersion = cudaError_t (*)(int*);
    void* getVersion = resolvedOnce(versionSlot, ApiLayer::Runtime, "cudaRuntimeGetVersion");
    int version = 0;
    if (getVersion == nullptr || reinterpret_cast<RuntimeGetVersion>(getVersion)(&version) != cudaSuccess) version = 0;
    m = version / 1000;
    major.store(m, std::memory_order_relaxed);
  }
  return reinterpret_cast<const void*>(m >= 13 ? since13 : m > 0 ? before13 : 0);
}

}  // namespace cutrace
