// Stand-in libcuda.so.1 for machines without a GPU: the driver API that a CUDA runtime and
// driver-API programs use, under the real exported names and with the real ABI. Device memory is
// host memory, kernels never run; everything else (argument checks, handles, error codes,
// cuGetProcAddress) behaves like the driver closely enough for a tracer to be tested against it.
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare every exported variant under its own name
// (cuMemAlloc_v2, cuMemcpyHtoD_v2_ptds, the v1 cuStreamDestroy, ...) instead of renaming them
// with macros, so each definition below is checked against NVIDIA's prototype. Everything cuda.h
// declares is default-visible; the rest of this file stays hidden.
#define __CUDA_API_VERSION_INTERNAL 1
#pragma GCC visibility push(default)
#include <cuda.h>
#include <cudaProfiler.h>

#include "gl_interop.h"
#pragma GCC visibility pop

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "array_format.h"

namespace {

// ------------------------------------------------------------------ call log
// STANDIN_DRIVER_LOG=<file> appends the exported name of every call, one line each: the smoke
// tests use it to prove which entry point (default or _ptsz/_ptds) a runtime call ended in.
int logFd() {
  static const int fd = [] {
    const char* path = getenv("STANDIN_DRIVER_LOG");
    return path != nullptr && *path != '\0' ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }();
  return fd;
}

void logCall(const char* name) {
  const int fd = logFd();
  if (fd < 0) return;
  char line[128];
  const size_t n = strnlen(name, sizeof(line) - 1);
  memcpy(line, name, n);
  line[n] = '\n';
  // One write() per line: O_APPEND keeps lines from several threads whole.
  if (write(fd, line, n + 1) < 0) return;
}

#define ENTRY() logCall(__func__)
// An entry point and its _ptsz or _ptds twin (the same parameters, the same work: the stand-in
// has one stream semantics). `call` is the work, an expression of the parameters.
#define STANDIN_ENTRY_TWINS(name, twin, params, call) \
  CUresult name params {                              \
    ENTRY();                                          \
    return call;                                      \
  }                                                   \
  CUresult twin params {                              \
    ENTRY();                                          \
    return call;                                      \
  }
#define STANDIN_ENTRY_PTSZ(name, params, call) STANDIN_ENTRY_TWINS(name, name##_ptsz, params, call)
#define STANDIN_ENTRY_PTDS(name, params, call) STANDIN_ENTRY_TWINS(name, name##_ptds, params, call)

// ------------------------------------------------------------------ handles
// Handles are pointers to these structs. They are never freed, only retired: a destroyed handle
// then fails cleanly with CUDA_ERROR_INVALID_HANDLE instead of touching freed memory, and retired
// handles stay reachable, so leak checkers see nothing lost. As in the real driver, whose
// allocator reuses the memory, the functions and kernels of an unloaded module or library are
// handed out again (newest first) to the next ones made: a tracer that caches names per handle
// must forget them at the unload.
// A launch may take this much dynamic shared memory until its function allows more
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), as on NVIDIA's GPUs.
constexpr unsigned kDefaultSharedBytes = 49152;
struct Function {
  std::string name;
  // What the first launch API (cuLaunch, cuLaunchGrid*) launches with: set by cuFuncSetBlockShape
  // and cuFuncSetSharedSize, a block of none until then (such a launch is refused).
  unsigned blockX = 0, blockY = 0, blockZ = 0;
  unsigned sharedBytes = 0;
  unsigned maxDynamicShared = kDefaultSharedBytes;
};
struct Kernel {
  std::string name;
  Function function;  // what cuKernelGetFunction hands out
};
struct Module {
  std::mutex mutex;
  std::unordered_map<std::string, Function*> functions;
};
struct Library {
  std::mutex mutex;
  std::unordered_map<std::string, Kernel*> kernels;
};
struct Stream {
  unsigned flags;
  int priority;
};
struct Event {
  unsigned flags;
  std::atomic<bool> recorded{false};
  std::atomic<uint64_t> ns{0};
};
struct Context {
  CUdevice device;
};
struct ResourceDesc {  // cuDevResourceGenerateDesc: the SMs a green context is made with
  unsigned smCount;
};
struct Pool {  // cuMemPoolCreate: a memory pool (allocations from it are plain device memory)
  CUmemPoolProps props;
  int exporter = 0;  // imported (cuMemPoolImportFromShareableHandle): the exporting process
};
struct GreenCtx {
  CUdevice device;
  unsigned smCount;
};
struct Physical {  // cuMemCreate: physical memory (mapping it only notes where: cuMemMap)
  size_t bytes;
  unsigned long long handleTypes;  // the OS handles it may be exported to (requestedHandleTypes)
  // cuMemRetainAllocationHandle adds one; each cuMemRelease takes one, the last retires it.
  std::atomic<unsigned> references{1};
  // A multicast object (cuMulticastCreate): the devices it is for (0: plain physical memory) and
  // those added so far; memory is bound to it once all are.
  unsigned multicastDevices = 0;
  std::atomic<unsigned> devicesAdded{0};
};
// Graphs hold nothing: the work captured ran when it was issued (as all
// work does here), and a graph launch accepts any handle.
// A user object (cuUserObjectCreate): a resource whose destructor runs when the last reference,
// the program's or a graph's, goes (here, at once, on the thread that released it).
struct UserObject {
  void* ptr;
  CUhostFn destroy;
  std::atomic<unsigned> references;
};
struct Graph {
  CUstream stream;
  // Added by hand (cuGraphAdd*Node); an exec is updated from a graph with as many (the stand-in's
  // topology: the real driver compares the nodes and their edges).
  std::atomic<unsigned> nodes{0};
  // References the graph holds to user objects, released when it is destroyed (an exec holds none
  // here: the real driver's execs keep their own).
  std::mutex mutex;
  std::vector<std::pair<UserObject*, unsigned>> userObjects;
};
struct GraphExec {
  const Graph* graph;
  unsigned nodes;  // its graph's when instantiated
};
struct GraphNode {  // added one by one (cuGraphAdd*Node): its graph, for the dependencies and edits
  const Graph* graph;
  CUgraphNodeType type;  // what parameters it takes when edited
};
// A JIT link (cuLinkCreate): inputs added, then completed into an image for cuModuleLoadData,
// the link's own until it is destroyed.
struct Link {
  std::mutex mutex;
  unsigned inputs = 0;
  std::string image;
};

// A CUDA array (cuArrayCreate): its elements in device memory (an allocation of the memory map, so
// copies are checked as linear ones are), rows of `rowBytes`, `height` rows a slice.
struct Array {
  uintptr_t base;
  size_t rowBytes, height, bytes, elementBytes;
  CUDA_ARRAY3D_DESCRIPTOR desc;  // as made (cuArray3DGetDescriptor)
  bool level = false;            // a mipmapped array's: destroyed with it, not by cuArrayDestroy
};
// A mipmapped array (cuMipmappedArrayCreate): its levels, each an array half the last's extent.
struct Mipmap {
  std::vector<Array*> levels;
};

// Another API's memory or semaphore (Vulkan's, by an opaque file descriptor: cuImportExternal*),
// the descriptor the driver's from the import on (closed at the destroy).
struct ExternalMemory {
  int fd;
  size_t bytes;
};
struct ExternalSemaphore {
  int fd;
  std::atomic<uint64_t> value{0};  // the last value signalled
};

enum class HandleKind {
  Module, Function, Library, Kernel, Stream, Event, Physical, Graph, GraphExec, GraphNode, Link, Array, ResourceDesc,
  GreenCtx, Pool, ExternalMemory, ExternalSemaphore, Mipmap, UserObject, GraphicsResource
};

class Registry {
 public:
  void add(const void* p, HandleKind kind) {
    std::unique_lock lock(mutex_);
    handles_[p] = Handle{kind, true};
  }
  bool retire(const void* p, HandleKind kind) {
    std::unique_lock lock(mutex_);
    auto it = handles_.find(p);
    if (it == handles_.end() || it->second.kind != kind || !it->second.live) return false;
    it->second.live = false;
    return true;
  }
  bool contains(const void* p, HandleKind kind) const {
    if (p == nullptr) return false;
    std::shared_lock lock(mutex_);
    auto it = handles_.find(p);
    return it != handles_.end() && it->second.kind == kind && it->second.live;
  }

 private:
  struct Handle {
    HandleKind kind;
    bool live;
  };
  mutable std::shared_mutex mutex_;
  std::unordered_map<const void*, Handle> handles_;
};

// Never destroyed: other threads and atexit handlers may still call in while statics die.
Registry& handles() {
  static Registry* registry = new Registry();
  return *registry;
}

// Retired functions and kernels, for the next cuModuleGetFunction / cuLibraryGetKernel.
template <typename T>
class Recycled {
 public:
  void put(T* p) {
    std::lock_guard lock(mutex_);
    free_.push_back(p);
  }
  T* take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return nullptr;
    T* p = free_.back();
    free_.pop_back();
    return p;
  }

 private:
  std::mutex mutex_;
  std::vector<T*> free_;
};
Recycled<Function>& recycledFunctions() {
  static auto* r = new Recycled<Function>();
  return *r;
}
Recycled<Kernel>& recycledKernels() {
  static auto* r = new Recycled<Kernel>();
  return *r;
}

template <typename T>
T* lookup(const void* p, HandleKind kind) {
  return handles().contains(p, kind) ? static_cast<T*>(const_cast<void*>(p)) : nullptr;
}

// ------------------------------------------------------------------ memory
enum class MemoryKind { Device, Managed, Host, Registered };  // Registered: the program's, page-locked

struct Allocation {
  size_t size;
  MemoryKind kind;
};

// Every allocation by base address. Copies and sets that touch a known allocation are
// bounds-checked against it; other addresses are taken as host memory the device can reach
// (unified addressing), which is also what module globals of the runtime stand-in are.
class MemoryMap {
 public:
  void add(uintptr_t base, size_t size, MemoryKind kind) {
    std::unique_lock lock(mutex_);
    allocations_[base] = Allocation{size, kind};
  }
  bool remove(uintptr_t base, bool host) {
    std::unique_lock lock(mutex_);
    auto it = allocations_.find(base);
    if (it == allocations_.end() || (it->second.kind == MemoryKind::Host) != host) return false;
    allocations_.erase(it);
    return true;
  }
  // Host memory of the program's own page-locked (cuMemHostRegister): none of [p, p + n) may be
  // known already.
  CUresult registerHost(uintptr_t p, size_t n) {
    std::unique_lock lock(mutex_);
    auto it = allocations_.lower_bound(p);
    if (it != allocations_.end() && it->first < p + n) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (it != allocations_.begin() && std::prev(it)->first + std::prev(it)->second.size > p)
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    allocations_[p] = Allocation{n, MemoryKind::Registered};
    return CUDA_SUCCESS;
  }
  CUresult unregisterHost(uintptr_t p) {
    std::unique_lock lock(mutex_);
    auto it = allocations_.find(p);
    if (it == allocations_.end() || it->second.kind != MemoryKind::Registered) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    allocations_.erase(it);
    return CUDA_SUCCESS;
  }
  // [p, p + n) lies in one managed allocation.
  bool managed(uintptr_t p, size_t n) const {
    std::shared_lock lock(mutex_);
    const auto* a = startingAtOrBefore(p);
    return a != nullptr && a->second.kind == MemoryKind::Managed && p - a->first <= a->second.size &&
           n <= a->second.size - (p - a->first);
  }
  // The allocation [p] lies in, as base and size; false when none.
  bool containing(uintptr_t p, uintptr_t& base, size_t& size) const {
    std::shared_lock lock(mutex_);
    const auto* a = startingAtOrBefore(p);
    if (a == nullptr || p - a->first >= a->second.size) return false;
    base = a->first;
    size = a->second.size;
    return true;
  }
  // The size of the device allocation starting at `base`; 0 when none does.
  size_t deviceSizeAt(uintptr_t base) const {
    std::shared_lock lock(mutex_);
    auto it = allocations_.find(base);
    return it != allocations_.end() && it->second.kind == MemoryKind::Device ? it->second.size : 0;
  }
  bool fits(uintptr_t p, size_t n) const {
    std::shared_lock lock(mutex_);
    const auto* a = startingAtOrBefore(p);
    if (a == nullptr) return true;
    const uintptr_t end = a->first + a->second.size;
    return p >= end || n <= end - p;
  }

 private:
  // The allocation with the highest base at or below `p` (it may end before `p`); nullptr when
  // none. Under mutex_.
  const std::pair<const uintptr_t, Allocation>* startingAtOrBefore(uintptr_t p) const {
    auto it = allocations_.upper_bound(p);
    return it == allocations_.begin() ? nullptr : &*std::prev(it);
  }

  mutable std::shared_mutex mutex_;
  std::map<uintptr_t, Allocation> allocations_;
};

MemoryMap& memory() {
  static MemoryMap* map = new MemoryMap();
  return *map;
}

// Both made when the library is loaded, not by the first call that needs them: a fork while
// another thread constructs one leaves its guard held in the child for good (see the runtime's
// makeRuntimeAtLoad).
[[gnu::constructor]] void makeTablesAtLoad() {
  handles();
  memory();
}

// ------------------------------------------------------------------ device and contexts
constexpr int kDriverVersion = 13000;
constexpr char kDeviceName[] = "cutrace stand-in GPU";
constexpr unsigned kMaxSharedBytes = 232448;  // H100's opt-in maximum per block

std::atomic<bool> initialized{false};
Context primaryContext{0};
thread_local CUcontext current = nullptr;

CUcontext primary() { return reinterpret_cast<CUcontext>(&primaryContext); }

CUresult needInit() { return initialized.load(std::memory_order_acquire) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

// A destroy or release: the handle retired, or `refused` where it is no live one of `kind`.
CUresult retireHandle(const void* p, HandleKind kind, CUresult refused) {
  if (CUresult r = needInit()) return r;
  return handles().retire(p, kind) ? CUDA_SUCCESS : refused;
}

// Most calls act on the calling thread's current context, as on a GPU. cuCtxSetCurrent takes
// any pointer, as NVIDIA's does (measured on an H100); using one that is no context fails here.
CUresult needContext() {
  if (!initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return current == primary() ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult checkDevice(CUdevice d) {
  if (CUresult r = needInit()) return r;
  return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

bool validStream(CUstream s) {
  return s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || handles().contains(s, HandleKind::Stream);
}

// The stream of a stream-ordered call, after the context check.
CUresult needStream(CUstream s) {
  if (CUresult r = needContext()) return r;
  return validStream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int deviceAttribute(int attribute) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return static_cast<int>(kMaxSharedBytes);
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1755000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK: return CU_MEM_DECOMPRESS_ALGORITHM_LZ4;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    default: return 0;
  }
}

// ------------------------------------------------------------------ errors
struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_PROFILER_DISABLED, "CUDA_ERROR_PROFILER_DISABLED", "profiler disabled while using external profiling tool"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* errorText(CUresult code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

// ------------------------------------------------------------------ modules and launches
// Images are opaque here, but something that is neither a cubin/ELF, a fatbin nor PTX text is
// rejected like the driver would, so a wrong pointer does not pass unnoticed.
bool plausibleImage(const void* image) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  uint32_t magic;
  memcpy(&magic, bytes, sizeof(magic));
  if (magic == 0x464c457fu || magic == 0xba55ed50u) return true;  // "\x7fELF", fatbin header
  while (*bytes == ' ' || *bytes == '\t' || *bytes == '\n' || *bytes == '\r') ++bytes;
  return *bytes == '.' || *bytes == '/';  // PTX starts with directives or comments
}

// The first bytes of an image file, enough for plausibleImage().
struct ImageHead {
  char bytes[64] = {};
};
CUresult readImage(const char* path, ImageHead& head) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return CUDA_ERROR_FILE_NOT_FOUND;
  const size_t n = fread(head.bytes, 1, sizeof(head.bytes) - 1, f);
  fclose(f);
  return n < 4 ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
}
CUresult loadModule(CUmodule* module, const void* image) {
  if (CUresult r = needContext()) return r;
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!plausibleImage(image)) return CUDA_ERROR_INVALID_IMAGE;
  auto* m = new Module();
  handles().add(m, HandleKind::Module);
  *module = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}
CUresult loadLibrary(CUlibrary* library, const void* code, CUjit_option* jitOptions, void** jitOptionsValues,
                     unsigned numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,
                     unsigned numLibraryOptions) {
  if (CUresult r = needInit()) return r;  // libraries belong to no context
  if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((numJitOptions != 0 && (jitOptions == nullptr || jitOptionsValues == nullptr)) ||
      (numLibraryOptions != 0 && (libraryOptions == nullptr || libraryOptionValues == nullptr)))
    return CUDA_ERROR_INVALID_VALUE;
  if (!plausibleImage(code)) return CUDA_ERROR_INVALID_IMAGE;
  auto* l = new Library();
  handles().add(l, HandleKind::Library);
  *library = reinterpret_cast<CUlibrary>(l);
  return CUDA_SUCCESS;
}
CUresult addLinkInput(CUlinkState state, const void* image) {
  auto* l = lookup<Link>(state, HandleKind::Link);
  if (l == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!plausibleImage(image)) return CUDA_ERROR_INVALID_IMAGE;
  std::lock_guard lock(l->mutex);
  ++l->inputs;
  return CUDA_SUCCESS;
}

Function* functionOf(CUfunction f) {
  if (auto* fn = lookup<Function>(f, HandleKind::Function)) return fn;
  // The CUDA 13 runtime launches CUkernels cast to CUfunction.
  if (auto* k = lookup<Kernel>(f, HandleKind::Kernel)) return &k->function;
  return nullptr;
}

// kernelParams and extra are exclusive; extra is a CU_LAUNCH_PARAM_END-terminated key/value list.
bool validLaunchParams(void** params, void** extra) {
  if (extra == nullptr) return true;
  if (params != nullptr) return false;
  for (int i = 0; i < 16; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_END) return true;
    if (extra[i] != CU_LAUNCH_PARAM_BUFFER_POINTER && extra[i] != CU_LAUNCH_PARAM_BUFFER_SIZE) return false;
  }
  return false;
}

CUresult checkLaunch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     unsigned shared, CUstream s, void** params, void** extra) {
  if (CUresult r = needContext()) return r;
  const Function* fn = functionOf(f);
  if (fn == nullptr || !validStream(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || gx > 2147483647u || gy > 65535 || gz > 65535) return CUDA_ERROR_INVALID_VALUE;
  if (bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 ||
      static_cast<uint64_t>(bx) * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (shared > fn->maxDynamicShared || !validLaunchParams(params, extra)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult checkLaunchEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  if (c == nullptr || (c->numAttrs != 0 && c->attrs == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return checkLaunch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                     c->sharedMemBytes, c->hStream, params, extra);
}

// Streams in capture (cuStreamBeginCapture until cuStreamEndCapture).
std::mutex capturingMutex;
// Each with the graph it captures into: one the program made (cuStreamBeginCaptureToGraph), or
// none, for a new graph made when the capture ends.
struct Capture {
  CUstream stream;
  Graph* into;
};
std::vector<Capture>& capturing() {
  static auto* captures = new std::vector<Capture>();
  return *captures;
}
CUresult beginCapture(CUstream s, CUstreamCaptureMode mode, Graph* into = nullptr) {
  if (CUresult r = needStream(s)) return r;
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  if (s == nullptr || s == CU_STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard lock(capturingMutex);
  auto& captures = capturing();
  for (const Capture& c : captures)
    if (c.stream == s) return CUDA_ERROR_ILLEGAL_STATE;
  captures.push_back(Capture{s, into});
  return CUDA_SUCCESS;
}
CUresult beginCaptureToGraph(CUstream s, CUgraph graph, const CUgraphNode* dependencies, const CUgraphEdgeData* edges,
                             size_t count, CUstreamCaptureMode mode) {
  if (CUresult r = needContext()) return r;
  auto* g = lookup<Graph>(graph, HandleKind::Graph);
  if (g == nullptr || (count != 0 && dependencies == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  (void)edges;  // optional, as the dependencies' edge data
  return beginCapture(s, mode, g);
}
CUresult endCapture(CUstream s, CUgraph* graph) {
  if (CUresult r = needStream(s)) return r;
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* g = nullptr;
  {
    std::lock_guard lock(capturingMutex);
    auto& captures = capturing();
    const auto it = std::find_if(captures.begin(), captures.end(), [&](const Capture& c) { return c.stream == s; });
    if (it == captures.end()) return CUDA_ERROR_ILLEGAL_STATE;
    g = it->into;
    captures.erase(it);
  }
  if (g == nullptr) {
    g = new Graph{s};
    handles().add(g, HandleKind::Graph);
  }
  *graph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}
// The nodes a capturing stream's next work depends on, replaced or added to: the stream must be
// capturing (the dependencies are not kept: graphs run nothing here).
CUresult updateCaptureDependencies(CUstream s, const CUgraphNode* dependencies, size_t count, unsigned flags) {
  if (CUresult r = needStream(s)) return r;
  if ((count != 0 && dependencies == nullptr) ||
      (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(capturingMutex);
  const auto& captures = capturing();
  return std::any_of(captures.begin(), captures.end(), [&](const Capture& c) { return c.stream == s; })
             ? CUDA_SUCCESS
             : CUDA_ERROR_ILLEGAL_STATE;
}
CUresult instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  if (CUresult r = needContext()) return r;
  const auto* g = lookup<Graph>(graph, HandleKind::Graph);
  if (exec == nullptr || g == nullptr || (flags & ~0xfull) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new GraphExec{g, g->nodes.load()};
  handles().add(e, HandleKind::GraphExec);
  *exec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}
CUresult instantiateWithParams(CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = instantiate(exec, graph, params->flags);
  params->hErrNode_out = nullptr;
  params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return r;
}

CUresult checkGraphLaunch(CUgraphExec g, CUstream s) {
  if (CUresult r = needStream(s)) return r;
  return g != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // graphs are opaque: any handle runs
}

// ------------------------------------------------------------------ allocation
CUresult allocate(uintptr_t* out, size_t n, MemoryKind kind) {
  if (CUresult r = needContext()) return r;
  if (out == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = aligned_alloc(256, (n + 255) & ~size_t{255});
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(p, 0, n);  // deterministic contents make test output reproducible
  *out = reinterpret_cast<uintptr_t>(p);
  memory().add(*out, n, kind);
  return CUDA_SUCCESS;
}

CUresult allocateDevice(CUdeviceptr* out, size_t n, MemoryKind kind = MemoryKind::Device) {
  uintptr_t p = 0;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = allocate(&p, n, kind);
  if (r == CUDA_SUCCESS) *out = p;
  return r;
}

CUresult allocateHost(void** out, size_t n) {
  uintptr_t p = 0;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = allocate(&p, n, MemoryKind::Host);
  if (r == CUDA_SUCCESS) *out = reinterpret_cast<void*>(p);
  return r;
}

// Interprocess handles (cuIpc*, below): another process's device memory, as CUDA-aware MPI,
// vLLM's all-reduce and PyTorch's shared CUDA tensors open it. The stand-in's device memory is its
// process's own: a handle carries the exporter's pid and base, and the allocation's bytes as they
// were when the handle was made go to a file of $TMPDIR (or /tmp) under that name (removed when the
// allocation is freed), which the process that opens the handle reads into memory of its own. An
// event's handle carries whether it was recorded. Either is refused in the process that made it,
// as the driver refuses it.
constexpr uint32_t kIpcMagic = 0x43505449;  // "ITPC"
struct IpcHandle {
  uint32_t magic;
  int32_t pid;
  uint64_t base;
  uint64_t bytes;
  uint32_t recorded;
};
static_assert(sizeof(IpcHandle) <= sizeof(CUipcMemHandle) && sizeof(IpcHandle) <= sizeof(CUipcEventHandle));

std::string ipcPath(int pid, uint64_t base) {
  const char* dir = getenv("TMPDIR");
  char name[64];
  snprintf(name, sizeof(name), "/cutrace-standin-ipc-%d-%llx", pid, static_cast<unsigned long long>(base));
  return std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + name;
}
std::mutex ipcMutex;
std::vector<uintptr_t>& exportedBases() {  // this process's allocations with a file
  static auto* bases = new std::vector<uintptr_t>();
  return *bases;
}
std::vector<uintptr_t>& openedBases() {  // memory opened from another process's handle
  static auto* bases = new std::vector<uintptr_t>();
  return *bases;
}
// Removes `base` from `bases`; whether it was there. Under ipcMutex.
bool take(std::vector<uintptr_t>& bases, uintptr_t base) {
  auto it = std::find(bases.begin(), bases.end(), base);
  if (it == bases.end()) return false;
  bases.erase(it);
  return true;
}
bool writeAll(int fd, const void* data, size_t n) {
  for (size_t done = 0; done < n;) {
    const ssize_t w = write(fd, static_cast<const char*>(data) + done, n - done);
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

// An allocation freed: the file its handle was opened from goes.
void forgetExported(uintptr_t base) {
  std::lock_guard lock(ipcMutex);
  if (take(exportedBases(), base)) unlink(ipcPath(getpid(), base).c_str());
}

CUresult release(uintptr_t p, bool host) {
  if (CUresult r = needContext()) return r;
  if (p == 0 || !memory().remove(p, host)) return CUDA_ERROR_INVALID_VALUE;
  if (!host) forgetExported(p);
  free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------ copies and sets
uintptr_t addr(CUdeviceptr p) { return static_cast<uintptr_t>(p); }
uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// NULL plus an offset, which the driver rejects; the stand-in would fault on it instead. Nothing
// is ever mapped this low (vm.mmap_min_addr).
bool lowAddress(uintptr_t p) { return p < 65536; }

CUresult copyLinear(uintptr_t dst, uintptr_t src, size_t n, CUstream s = nullptr) {
  if (CUresult r = needStream(s)) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (lowAddress(dst) || lowAddress(src) || !memory().fits(dst, n) || !memory().fits(src, n)) return CUDA_ERROR_INVALID_VALUE;
  memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

// cuMemcpyBatchAsync: copies in stream order, the attributes checked as the driver documents them
// (the first applies from copy 0); the legacy stream is refused. Copies run at once, in order, up
// to the first refused, whose index CUDA 12.8's first version returns in `failIdx` (SIZE_MAX: the
// batch as a whole was refused).
CUresult copyBatch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                   size_t* attrsIdxs, size_t numAttrs, CUstream s, size_t* failIdx = nullptr) {
  if (failIdx != nullptr) *failIdx = SIZE_MAX;
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr || attrs == nullptr || attrsIdxs == nullptr ||
      numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0 || s == nullptr || s == CU_STREAM_LEGACY)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (CUresult r = copyLinear(dsts[i], srcs[i], sizes[i], s)) {
      if (failIdx != nullptr) *failIdx = i;
      return r;
    }
  return CUDA_SUCCESS;
}

// cuMemPrefetchAsync: the range must lie in one managed allocation, the destination be the device
// or the host (CU_DEVICE_CPU, or a host location), and flags 0. Pages need not move: memory is
// the host's for both sides here.
CUresult prefetch(CUdeviceptr p, size_t n, bool toHost, int device, unsigned flags, CUstream s) {
  if (CUresult r = needStream(s)) return r;
  if (flags != 0 || n == 0 || !memory().managed(addr(p), n)) return CUDA_ERROR_INVALID_VALUE;
  if (!toHost && device != 0) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}
// A location as the first versions take one: the host, or a device's ordinal; false for another type.
bool hostOrDevice(CUmemLocation location, bool& toHost, int& device) {
  toHost = location.type == CU_MEM_LOCATION_TYPE_HOST;
  device = toHost ? 0 : location.id;
  return toHost || location.type == CU_MEM_LOCATION_TYPE_DEVICE;
}
CUresult prefetchTo(CUdeviceptr p, size_t n, CUmemLocation location, unsigned flags, CUstream s) {
  bool toHost = false;
  int device = 0;
  return hostOrDevice(location, toHost, device) ? prefetch(p, n, toHost, device, flags, s) : CUDA_ERROR_INVALID_VALUE;
}

// cuMemAdvise: a range of one managed allocation, a known advice, the device or the host (a
// location, or CU_DEVICE_CPU for the first version). Advice changes nothing here: the host's
// memory is every side's.
CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, bool toHost, int device) {
  if (CUresult r = needContext()) return r;
  if (n == 0 || !memory().managed(addr(p), n) || advice < CU_MEM_ADVISE_SET_READ_MOSTLY ||
      advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return CUDA_ERROR_INVALID_VALUE;
  if (!toHost && device != 0) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}
CUresult adviseTo(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation location) {
  bool toHost = false;
  int device = 0;
  return hostOrDevice(location, toHost, device) ? advise(p, n, advice, toHost, device) : CUDA_ERROR_INVALID_VALUE;
}
// cuStreamAttachMemAsync: a managed range (length 0: its whole allocation) attached to a stream,
// to every stream, or to the host.
CUresult attachMemory(CUstream s, CUdeviceptr p, size_t n, unsigned flags) {
  if (CUresult r = needStream(s)) return r;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  return memory().managed(addr(p), n != 0 ? n : 1) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// CUDA 13's batches: every range managed (prefetchTo's checks, each with the location whose index
// run it falls in: the first index 0, each later one greater, the last below `count`), flags 0,
// never the legacy stream. `locations` null: discards only.
CUresult prefetchBatch(CUdeviceptr* ptrs, size_t* sizes, size_t count, CUmemLocation* locations, size_t* locationIdxs,
                       size_t numLocations, unsigned long long flags, CUstream s) {
  if (count == 0 || ptrs == nullptr || sizes == nullptr || flags != 0 || s == nullptr || s == CU_STREAM_LEGACY)
    return CUDA_ERROR_INVALID_VALUE;
  const bool prefetching = locations != nullptr || locationIdxs != nullptr || numLocations != 0;
  if (prefetching) {
    if (locations == nullptr || locationIdxs == nullptr || numLocations == 0 || numLocations > count ||
        locationIdxs[0] != 0)
      return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 1; k < numLocations; ++k)
      if (locationIdxs[k] <= locationIdxs[k - 1] || locationIdxs[k] >= count) return CUDA_ERROR_INVALID_VALUE;
  }
  size_t at = 0;  // the location of range i
  for (size_t i = 0; i < count; ++i) {
    if (!prefetching) {
      if (CUresult r = prefetch(ptrs[i], sizes[i], true, 0, 0, s)) return r;
      continue;
    }
    if (at + 1 < numLocations && locationIdxs[at + 1] == i) ++at;
    if (CUresult r = prefetchTo(ptrs[i], sizes[i], locations[at], 0, s)) return r;
  }
  return CUDA_SUCCESS;
}

// One side of a 2D/3D copy: its base address by memory type; an array's rows and slices are its
// own (`pitch` and `rows` replaced).
bool side(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, size_t& pitch, size_t& rows,
          uintptr_t& out) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: out = addr(host); return true;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: out = addr(device); return true;
    case CU_MEMORYTYPE_ARRAY:
      if (const auto* a = lookup<Array>(array, HandleKind::Array)) {
        out = a->base, pitch = a->rowBytes, rows = a->height;
        return true;
      }
      return false;
    default: return false;
  }
}

// `n` bytes at `offset` into an array's elements.
CUresult arrayAt(CUarray array, size_t offset, size_t n, uintptr_t& out) {
  const auto* a = lookup<Array>(array, HandleKind::Array);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (offset > a->bytes || n > a->bytes - offset) return CUDA_ERROR_INVALID_VALUE;
  out = a->base + offset;
  return CUDA_SUCCESS;
}

// Rows of `width` bytes, `pitch` apart, `slicePitch` between `depth` slices, on both sides.
struct Strided {
  uintptr_t dst, src;
  size_t dstPitch, srcPitch, dstSlice, srcSlice, width, height, depth;
};

CUresult copyStrided(const Strided& c, CUstream s) {
  if (CUresult r = needStream(s)) return r;
  if (c.width == 0 || c.height == 0 || c.depth == 0) return CUDA_SUCCESS;
  if (lowAddress(c.dst) || lowAddress(c.src)) return CUDA_ERROR_INVALID_VALUE;
  if ((c.height > 1 || c.depth > 1) && (c.dstPitch < c.width || c.srcPitch < c.width)) return CUDA_ERROR_INVALID_VALUE;
  if ((c.depth > 1) && (c.dstSlice < c.dstPitch * c.height || c.srcSlice < c.srcPitch * c.height))
    return CUDA_ERROR_INVALID_VALUE;
  // Whole extent checked first, so a failing copy changes nothing.
  const size_t dstSpan = (c.depth - 1) * c.dstSlice + (c.height - 1) * c.dstPitch + c.width;
  const size_t srcSpan = (c.depth - 1) * c.srcSlice + (c.height - 1) * c.srcPitch + c.width;
  if (!memory().fits(c.dst, dstSpan) || !memory().fits(c.src, srcSpan)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t z = 0; z < c.depth; ++z)
    for (size_t y = 0; y < c.height; ++y)
      memmove(reinterpret_cast<void*>(c.dst + z * c.dstSlice + y * c.dstPitch),
              reinterpret_cast<const void*>(c.src + z * c.srcSlice + y * c.srcPitch), c.width);
  return CUDA_SUCCESS;
}

CUresult copy2D(const CUDA_MEMCPY2D* p, CUstream s = nullptr) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Strided c{};
  c.dstPitch = p->dstPitch, c.srcPitch = p->srcPitch;
  size_t rows = 0;  // a 2D copy has one slice
  if (!side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, c.dstPitch, rows, c.dst) ||
      !side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, c.srcPitch, rows, c.src))
    return CUDA_ERROR_INVALID_VALUE;
  if (c.dst != 0) c.dst += p->dstY * c.dstPitch + p->dstXInBytes;
  if (c.src != 0) c.src += p->srcY * c.srcPitch + p->srcXInBytes;
  c.width = p->WidthInBytes, c.height = p->Height, c.depth = 1;
  return copyStrided(c, s);
}

CUresult copy3D(const CUDA_MEMCPY3D* p, CUstream s = nullptr) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Strided c{};
  c.dstPitch = p->dstPitch, c.srcPitch = p->srcPitch;
  size_t dstRows = p->dstHeight, srcRows = p->srcHeight;
  if (!side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, c.dstPitch, dstRows, c.dst) ||
      !side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, c.srcPitch, srcRows, c.src))
    return CUDA_ERROR_INVALID_VALUE;
  c.dstSlice = c.dstPitch * dstRows, c.srcSlice = c.srcPitch * srcRows;
  if (c.dst != 0) c.dst += p->dstZ * c.dstSlice + p->dstY * c.dstPitch + p->dstXInBytes;
  if (c.src != 0) c.src += p->srcZ * c.srcSlice + p->srcY * c.srcPitch + p->srcXInBytes;
  c.width = p->WidthInBytes, c.height = p->Height, c.depth = p->Depth;
  return copyStrided(c, s);
}

// One operand of a 3D batch copy as a side of cuMemcpy3D: a pointer whose rows are `rowLength`
// elements apart and layers `layerHeight` rows (0: the extent's), or an array at an element offset.
struct BatchSide {
  CUmemorytype type;
  CUdeviceptr device;
  CUarray array;
  size_t pitch, height, xBytes, y, z;
};
bool batchSide(const CUmemcpy3DOperand& o, const CUextent3D& e, size_t element, BatchSide& out) {
  out = BatchSide{};
  switch (o.type) {
    case CU_MEMCPY_OPERAND_TYPE_POINTER:
      out.type = CU_MEMORYTYPE_UNIFIED, out.device = o.op.ptr.ptr;
      out.pitch = (o.op.ptr.rowLength != 0 ? o.op.ptr.rowLength : e.width) * element;
      out.height = o.op.ptr.layerHeight != 0 ? o.op.ptr.layerHeight : e.height;
      return true;
    case CU_MEMCPY_OPERAND_TYPE_ARRAY:
      out.type = CU_MEMORYTYPE_ARRAY, out.array = o.op.array.array;
      out.xBytes = o.op.array.offset.x * element, out.y = o.op.array.offset.y, out.z = o.op.array.offset.z;
      return true;
    default: return false;
  }
}
// The bytes of the operation's elements: an array's (either side's), else bytes between pointers.
size_t batchElement(const CUDA_MEMCPY3D_BATCH_OP& op) {
  for (const CUmemcpy3DOperand* o : {&op.src, &op.dst})
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
      const auto* a = lookup<Array>(o->op.array.array, HandleKind::Array);
      return a != nullptr ? a->elementBytes : 0;
    }
  return 1;
}
CUresult copy3DOp(const CUDA_MEMCPY3D_BATCH_OP& op, CUstream s) {
  const size_t element = batchElement(op);
  BatchSide src, dst;
  if (element == 0 || op.extent.width == 0 || op.extent.height == 0 || op.extent.depth == 0 ||
      !batchSide(op.src, op.extent, element, src) || !batchSide(op.dst, op.extent, element, dst))
    return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = src.type, c.srcDevice = src.device, c.srcArray = src.array;
  c.srcPitch = src.pitch, c.srcHeight = src.height, c.srcXInBytes = src.xBytes, c.srcY = src.y, c.srcZ = src.z;
  c.dstMemoryType = dst.type, c.dstDevice = dst.device, c.dstArray = dst.array;
  c.dstPitch = dst.pitch, c.dstHeight = dst.height, c.dstXInBytes = dst.xBytes, c.dstY = dst.y, c.dstZ = dst.z;
  c.WidthInBytes = op.extent.width * element, c.Height = op.extent.height, c.Depth = op.extent.depth;
  return copy3D(&c, s);
}
// cuMemcpy3DBatchAsync: each operation as cuMemcpy3D, in order, up to the first refused (its index
// in `failIdx` where given, as by cuMemcpyBatchAsync's first version); flags 0, never the legacy stream.
CUresult copy3DBatch(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream s,
                     size_t* failIdx = nullptr) {
  if (failIdx != nullptr) *failIdx = SIZE_MAX;
  if (count == 0 || ops == nullptr || flags != 0 || s == nullptr || s == CU_STREAM_LEGACY) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (CUresult r = copy3DOp(ops[i], s)) {
      if (failIdx != nullptr) *failIdx = i;
      return r;
    }
  return CUDA_SUCCESS;
}

CUresult peerContexts(CUcontext a, CUcontext b) {
  return a == primary() && b == primary() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// A 3D copy between contexts: both must be the one context here; then as cuMemcpy3D.
CUresult copy3DPeer(const CUDA_MEMCPY3D_PEER* p, CUstream s = nullptr) {
  if (CUresult r = needContext()) return r;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = peerContexts(p->dstContext, p->srcContext)) return r;
  CUDA_MEMCPY3D c{};
  c.srcXInBytes = p->srcXInBytes, c.srcY = p->srcY, c.srcZ = p->srcZ, c.srcLOD = p->srcLOD;
  c.srcMemoryType = p->srcMemoryType, c.srcHost = p->srcHost, c.srcDevice = p->srcDevice, c.srcArray = p->srcArray;
  c.srcPitch = p->srcPitch, c.srcHeight = p->srcHeight;
  c.dstXInBytes = p->dstXInBytes, c.dstY = p->dstY, c.dstZ = p->dstZ, c.dstLOD = p->dstLOD;
  c.dstMemoryType = p->dstMemoryType, c.dstHost = p->dstHost, c.dstDevice = p->dstDevice, c.dstArray = p->dstArray;
  c.dstPitch = p->dstPitch, c.dstHeight = p->dstHeight;
  c.WidthInBytes = p->WidthInBytes, c.Height = p->Height, c.Depth = p->Depth;
  return copy3D(&c, s);
}

template <typename T>
CUresult fill2D(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height, CUstream s = nullptr) {
  if (CUresult r = needStream(s)) return r;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  const size_t rowBytes = width * sizeof(T);
  if (lowAddress(addr(dst)) || dst % sizeof(T) != 0 || (height > 1 && (pitch < rowBytes || pitch % sizeof(T) != 0)))
    return CUDA_ERROR_INVALID_VALUE;
  if (!memory().fits(addr(dst), (height - 1) * pitch + rowBytes)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t row = 0; row < height; ++row) {
    T* p = reinterpret_cast<T*>(dst + row * pitch);
    for (size_t i = 0; i < width; ++i) p[i] = value;
  }
  return CUDA_SUCCESS;
}

template <typename T>
CUresult fill(CUdeviceptr dst, T value, size_t count, CUstream s = nullptr) {
  return fill2D<T>(dst, count * sizeof(T), value, count, 1, s);
}

// ------------------------------------------------------------------ events
CUresult recordEvent(CUevent e, CUstream s) {
  if (CUresult r = needStream(s)) return r;
  auto* event = lookup<Event>(e, HandleKind::Event);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  event->ns.store(nowNs(), std::memory_order_relaxed);
  event->recorded.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}
// Work completes when it is issued: a wait has nothing to wait for once its arguments are good.
CUresult waitEvent(CUstream s, CUevent e, unsigned flags) {
  if (CUresult r = needStream(s)) return r;
  if ((flags & ~unsigned{CU_EVENT_WAIT_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  return handles().contains(e, HandleKind::Event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
// Stream memory operations, done when issued: a write stores its value now; a wait has nothing
// to wait for (no other work is pending), its arguments checked.
CUresult valueAt(uintptr_t addr, size_t bytes) {
  if (lowAddress(addr) || addr % bytes != 0 || !memory().fits(addr, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult waitValue(CUstream s, CUdeviceptr addr, size_t bytes, unsigned flags) {
  if (CUresult r = needStream(s)) return r;
  if ((flags & ~unsigned{CU_STREAM_WAIT_VALUE_FLUSH}) > CU_STREAM_WAIT_VALUE_NOR) return CUDA_ERROR_INVALID_VALUE;
  return valueAt(addr, bytes);
}
template <typename T>
CUresult writeValue(CUstream s, CUdeviceptr addr, T value, unsigned flags) {
  if (CUresult r = needStream(s)) return r;
  if ((flags & ~unsigned{CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER}) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = valueAt(addr, sizeof(T))) return r;
  memcpy(reinterpret_cast<void*>(addr), &value, sizeof(T));
  return CUDA_SUCCESS;
}
CUresult batchMemOp(CUstream s, unsigned count, CUstreamBatchMemOpParams* ops, unsigned flags) {
  if (CUresult r = needStream(s)) return r;
  if (flags != 0 || count == 0 || ops == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& op = ops[i];
    CUresult r = CUDA_SUCCESS;
    switch (op.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32: r = waitValue(s, op.waitValue.address, 4, op.waitValue.flags); break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64: r = waitValue(s, op.waitValue.address, 8, op.waitValue.flags); break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        r = writeValue<cuuint32_t>(s, op.writeValue.address, op.writeValue.value, op.writeValue.flags);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        r = writeValue<cuuint64_t>(s, op.writeValue.address, op.writeValue.value64, op.writeValue.flags);
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES: case CU_STREAM_MEM_OP_BARRIER: break;
      default: r = CUDA_ERROR_INVALID_VALUE;
    }
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// The stream's work is done when it is issued: the host function runs now, on the caller's thread.
CUresult runHostFunction(CUstream s, CUhostFn fn, void* userData) {
  if (CUresult r = needStream(s)) return r;
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  fn(userData);
  return CUDA_SUCCESS;
}
// The same for a stream callback, told the stream and that its work succeeded; flags are reserved.
CUresult runCallback(CUstream s, CUstreamCallback fn, void* userData, unsigned flags) {
  if (CUresult r = needStream(s)) return r;
  if (fn == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  fn(s, CUDA_SUCCESS, userData);
  return CUDA_SUCCESS;
}
CUresult checkEvent(CUevent e) {
  if (CUresult r = needInit()) return r;
  return handles().contains(e, HandleKind::Event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult elapsed(float* ms, CUevent start, CUevent end) {
  if (CUresult r = needInit()) return r;
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* a = lookup<Event>(start, HandleKind::Event);
  auto* b = lookup<Event>(end, HandleKind::Event);
  // Never recorded, or created without timing: the driver answers INVALID_HANDLE for both.
  if (a == nullptr || b == nullptr || !a->recorded.load(std::memory_order_acquire) ||
      !b->recorded.load(std::memory_order_acquire) || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) != 0)
    return CUDA_ERROR_INVALID_HANDLE;
  const auto delta = static_cast<double>(static_cast<int64_t>(b->ns.load() - a->ns.load()));
  *ms = static_cast<float>(delta / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ initialisation and devices
CUresult cuInit(unsigned flags) {
  ENTRY();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}
CUresult cuDriverGetVersion(int* version) {
  ENTRY();
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = kDriverVersion;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* count) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, static_cast<size_t>(len), "%s", kDeviceName);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice dev) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (value == nullptr || attribute <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *value = deviceAttribute(attribute);
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------ contexts
// One primary context; it lives for the whole process (reset and release keep it usable).
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = primary();
  return CUDA_SUCCESS;
}
// A context created is the device's one context here (destroying it leaves it usable), made current.
static CUresult createContext(CUcontext* ctx, unsigned flags, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (ctx == nullptr || (flags & ~unsigned{CU_CTX_FLAGS_MASK}) != 0) return CUDA_ERROR_INVALID_VALUE;
  current = *ctx = primary();
  return CUDA_SUCCESS;
}
CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned flags, CUdevice dev) {
  ENTRY();
  return createContext(ctx, flags, dev);
}
CUresult cuCtxCreate_v3(CUcontext* ctx, CUexecAffinityParam* affinities, int count, unsigned flags, CUdevice dev) {
  ENTRY();
  if (count < 0 || (count > 0 && affinities == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return createContext(ctx, flags, dev);
}
#undef cuCtxCreate
CUresult cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams* params, unsigned flags, CUdevice dev) {
  ENTRY();
  (void)params;  // optional: affinities or a CIG context, neither modelled
  return createContext(ctx, flags, dev);
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  ENTRY();
  return checkDevice(dev);
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  ENTRY();
  return checkDevice(dev);
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  ENTRY();
  return checkDevice(dev);
}
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  ENTRY();
  return checkDevice(dev);
}
CUresult cuCtxGetCurrent(CUcontext* ctx) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = current;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  current = ctx;  // unchecked, as in the driver: see needContext()
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice* device) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = primaryContext.device;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  ENTRY();
  if (ctx == nullptr) {
    if (CUresult r = needContext()) return r;
    ctx = current;
  }
  if (CUresult r = needInit()) return r;
  if (ctx != primary()) return CUDA_ERROR_INVALID_CONTEXT;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = primaryContext.device;
  return CUDA_SUCCESS;
}
CUresult cuCtxDestroy(CUcontext ctx) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  return ctx == primary() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult cuCtxDestroy_v2(CUcontext ctx) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  return ctx == primary() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult cuCtxSynchronize() {
  ENTRY();
  return needContext();  // nothing is ever pending
}
// Peer access between contexts of two devices: the stand-in has one device, so there is never a
// peer (its own context is refused as the driver refuses it).
CUresult cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (CUresult r = checkDevice(peer)) return r;
  if (can == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *can = 0;
  return CUDA_SUCCESS;
}
CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  (void)peer;  // the current context, or none
  return CUDA_ERROR_INVALID_CONTEXT;
}
CUresult cuCtxDisablePeerAccess(CUcontext peer) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  return peer == primary() ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}
// Work of a context recorded into an event, and a context made to wait for one (CUDA 12.5): the
// event of the same primary context to record; one of any context to wait for.
CUresult cuCtxRecordEvent(CUcontext ctx, CUevent e) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (ctx != primary()) return CUDA_ERROR_INVALID_CONTEXT;
  return recordEvent(e, nullptr);  // the context's work is done when issued: the event is complete
}
CUresult cuCtxWaitEvent(CUcontext ctx, CUevent e) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (ctx != primary()) return CUDA_ERROR_INVALID_CONTEXT;
  return checkEvent(e);
}
CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  ENTRY();
  if (ctx == nullptr) return needContext();
  if (CUresult r = needInit()) return r;
  return ctx == primary() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// ------------------------------------------------------------------ errors, export tables
CUresult cuGetErrorName(CUresult error, const char** name) {
  ENTRY();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = errorText(error);
  *name = e != nullptr ? e->name : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGetErrorString(CUresult error, const char** text) {
  ENTRY();
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = errorText(error);
  *text = e != nullptr ? e->text : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  ENTRY();
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;  // the private runtime<->driver tables have no stand-in
}

// ------------------------------------------------------------------ modules, libraries, functions
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  ENTRY();
  return loadModule(module, image);
}
CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned numOptions, CUjit_option* options,
                            void** optionValues) {
  ENTRY();
  if (numOptions != 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return loadModule(module, image);
}
CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  ENTRY();
  return loadModule(module, fatCubin);
}
CUresult cuModuleLoad(CUmodule* module, const char* path) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ImageHead head;
  if (CUresult r = readImage(path, head)) return r;
  return loadModule(module, head.bytes);
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* m = lookup<Module>(module, HandleKind::Module);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(m->mutex);
  Function*& fn = m->functions[name];  // the image is opaque: every name resolves
  if (fn == nullptr) {
    fn = recycledFunctions().take();
    if (fn != nullptr) *fn = Function{name};
    else fn = new Function{name};
    handles().add(fn, HandleKind::Function);
  }
  *function = reinterpret_cast<CUfunction>(fn);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule module) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  auto* m = lookup<Module>(module, HandleKind::Module);
  if (m == nullptr || !handles().retire(m, HandleKind::Module)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(m->mutex);
  for (auto& [name, fn] : m->functions)
    if (handles().retire(fn, HandleKind::Function)) recycledFunctions().put(fn);
  m->functions.clear();
  return CUDA_SUCCESS;
}
CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions, void** jitOptionsValues,
                           unsigned numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,
                           unsigned numLibraryOptions) {
  ENTRY();
  return loadLibrary(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues,
                     numLibraryOptions);
}
CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* path, CUjit_option* jitOptions, void** jitOptionsValues,
                               unsigned numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,
                               unsigned numLibraryOptions) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ImageHead head;
  if (CUresult r = readImage(path, head)) return r;
  return loadLibrary(library, head.bytes, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                     libraryOptionValues, numLibraryOptions);
}
CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (kernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* l = lookup<Library>(library, HandleKind::Library);
  if (l == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(l->mutex);
  Kernel*& k = l->kernels[name];
  if (k == nullptr) {
    k = recycledKernels().take();
    if (k != nullptr) *k = Kernel{name, Function{name}};
    else k = new Kernel{name, Function{name}};
    handles().add(k, HandleKind::Kernel);
    handles().add(&k->function, HandleKind::Function);
  }
  *kernel = reinterpret_cast<CUkernel>(k);
  return CUDA_SUCCESS;
}
CUresult cuLibraryUnload(CUlibrary library) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  auto* l = lookup<Library>(library, HandleKind::Library);
  if (l == nullptr || !handles().retire(l, HandleKind::Library)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(l->mutex);
  for (auto& [name, k] : l->kernels) {
    handles().retire(&k->function, HandleKind::Function);
    if (handles().retire(k, HandleKind::Kernel)) recycledKernels().put(k);
  }
  l->kernels.clear();
  return CUDA_SUCCESS;
}
CUresult cuKernelGetFunction(CUfunction* function, CUkernel kernel) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* k = lookup<Kernel>(kernel, HandleKind::Kernel);
  if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *function = reinterpret_cast<CUfunction>(&k->function);
  return CUDA_SUCCESS;
}
CUresult cuFuncGetName(const char** name, CUfunction function) {
  ENTRY();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Function* fn = functionOf(function);
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = fn->name.c_str();
  return CUDA_SUCCESS;
}
CUresult cuKernelGetName(const char** name, CUkernel kernel) {
  ENTRY();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* k = lookup<Kernel>(kernel, HandleKind::Kernel);
  if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = k->name.c_str();
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------ launches
// _ptsz/_ptds twins are separate functions with their own addresses, as in the real driver:
// a tracer tells them apart by pointer identity.
#define STANDIN_LAUNCH(name)                                                                                         \
  CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,          \
                unsigned shared, CUstream s, void** params, void** extra) {                                          \
    ENTRY();                                                                                                         \
    return checkLaunch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);                                         \
  }
STANDIN_LAUNCH(cuLaunchKernel)
STANDIN_LAUNCH(cuLaunchKernel_ptsz)
#undef STANDIN_LAUNCH
#define STANDIN_LAUNCH_COOPERATIVE(name)                                                                             \
  CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,          \
                unsigned shared, CUstream s, void** params) {                                                        \
    ENTRY();                                                                                                         \
    return checkLaunch(f, gx, gy, gz, bx, by, bz, shared, s, params, nullptr);                                       \
  }
STANDIN_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel)
STANDIN_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz)
#undef STANDIN_LAUNCH_COOPERATIVE
// The first launch API (deprecated since CUDA 3.2, still exported): the block shape and shared
// bytes set on the function beforehand, a grid of width x height, its parameters set one by one
// (cuParamSet*: the stand-in's kernels read none, so they are checked and dropped).
static CUresult legacyLaunch(CUfunction f, int width, int height, CUstream s) {
  if (CUresult r = needContext()) return r;
  const Function* fn = functionOf(f);
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return checkLaunch(f, static_cast<unsigned>(width), static_cast<unsigned>(height), 1, fn->blockX, fn->blockY,
                     fn->blockZ, fn->sharedBytes, s, nullptr, nullptr);
}
CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  Function* fn = functionOf(f);
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (x <= 0 || y <= 0 || z <= 0) return CUDA_ERROR_INVALID_VALUE;
  fn->blockX = static_cast<unsigned>(x);
  fn->blockY = static_cast<unsigned>(y);
  fn->blockZ = static_cast<unsigned>(z);
  return CUDA_SUCCESS;
}
CUresult cuFuncSetSharedSize(CUfunction f, unsigned bytes) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  Function* fn = functionOf(f);
  if (fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  fn->sharedBytes = bytes;
  return CUDA_SUCCESS;
}
// A function's settings (FlashAttention's and CUTLASS's kernels raise their dynamic shared memory
// before each launch): the dynamic shared memory it may take, up to the device's opt-in maximum;
// its carveout and cluster preferences, taken; the attributes that are only read, refused. A
// kernel's (cuKernelSetAttribute) are its function's.
static CUresult setFunctionAttribute(Function& fn, CUfunction_attribute attrib, int value) {
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || static_cast<unsigned>(value) > kMaxSharedBytes) return CUDA_ERROR_INVALID_VALUE;
      fn.maxDynamicShared = static_cast<unsigned>(value);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      return value >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attrib, int value) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  Function* fn = functionOf(f);
  return fn == nullptr ? CUDA_ERROR_INVALID_HANDLE : setFunctionAttribute(*fn, attrib, value);
}
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int value, CUkernel kernel, CUdevice dev) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  auto* k = lookup<Kernel>(kernel, HandleKind::Kernel);
  return k == nullptr ? CUDA_ERROR_INVALID_HANDLE : setFunctionAttribute(k->function, attrib, value);
}
// The split of on-chip memory a function, a kernel or a context prefers between L1 and shared
// memory: taken, where it is one of the four.
static CUresult takeCacheConfig(CUfunc_cache config) {
  return config <= CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (functionOf(f) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return takeCacheConfig(config);
}
CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (lookup<Kernel>(kernel, HandleKind::Kernel) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return takeCacheConfig(config);
}
// A parameter at `offset` of `bytes`, within the 4 KiB a launch takes.
static CUresult legacyParam(CUfunction f, int offset, size_t bytes) {
  if (CUresult r = needContext()) return r;
  if (functionOf(f) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return offset < 0 || static_cast<size_t>(offset) + bytes > 4096 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult cuParamSetSize(CUfunction f, unsigned bytes) {
  ENTRY();
  return legacyParam(f, 0, bytes);
}
CUresult cuParamSeti(CUfunction f, int offset, unsigned) {
  ENTRY();
  return legacyParam(f, offset, sizeof(unsigned));
}
CUresult cuParamSetf(CUfunction f, int offset, float) {
  ENTRY();
  return legacyParam(f, offset, sizeof(float));
}
CUresult cuParamSetv(CUfunction f, int offset, void* value, unsigned bytes) {
  ENTRY();
  return value == nullptr ? CUDA_ERROR_INVALID_VALUE : legacyParam(f, offset, bytes);
}
CUresult cuLaunch(CUfunction f) {
  ENTRY();
  return legacyLaunch(f, 1, 1, nullptr);
}
CUresult cuLaunchGrid(CUfunction f, int width, int height) {
  ENTRY();
  return legacyLaunch(f, width, height, nullptr);
}
CUresult cuLaunchGridAsync(CUfunction f, int width, int height, CUstream s) {
  ENTRY();
  return legacyLaunch(f, width, height, s);
}
// One cooperative launch on each of `count` devices (deprecated since CUDA 11.3): each entry
// checked as a launch; the stand-in's one device takes one entry.
CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list, unsigned count, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  constexpr unsigned kKnownFlags =
      CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC | CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC;
  if (list == nullptr || count == 0 || (flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (count > 1) return CUDA_ERROR_INVALID_DEVICE;
  for (unsigned i = 0; i < count; ++i) {
    const CUDA_LAUNCH_PARAMS& p = list[i];
    if (CUresult r = checkLaunch(p.function, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                                 p.blockDimZ, p.sharedMemBytes, p.hStream, p.kernelParams, nullptr))
      return r;
  }
  return CUDA_SUCCESS;
}
STANDIN_ENTRY_PTSZ(cuLaunchKernelEx, (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),
                   checkLaunchEx(config, f, params, extra))
STANDIN_ENTRY_PTSZ(cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode mode), beginCapture(s, mode))
// CUDA 10.0's, without a mode: the global one.
STANDIN_ENTRY_PTSZ(cuStreamBeginCapture, (CUstream s), beginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL))
STANDIN_ENTRY_PTSZ(cuStreamEndCapture, (CUstream s, CUgraph* graph), endCapture(s, graph))
// CUDA 11.3's, and 12.3's with each dependency's edge data (optional here).
STANDIN_ENTRY_PTSZ(cuStreamUpdateCaptureDependencies, (CUstream s, CUgraphNode* dependencies, size_t count, unsigned flags),
                   updateCaptureDependencies(s, dependencies, count, flags))
STANDIN_ENTRY_PTSZ(cuStreamUpdateCaptureDependencies_v2,
                   (CUstream s, CUgraphNode* dependencies, const CUgraphEdgeData*, size_t count, unsigned flags),
                   updateCaptureDependencies(s, dependencies, count, flags))
STANDIN_ENTRY_PTSZ(cuStreamBeginCaptureToGraph,
                   (CUstream s, CUgraph graph, const CUgraphNode* dependencies, const CUgraphEdgeData* edges,
                    size_t count, CUstreamCaptureMode mode),
                   beginCaptureToGraph(s, graph, dependencies, edges, count, mode))
// A node added to a graph by hand: the graph live, every dependency a node of it, the node's
// parameters present (`valid`).
static CUresult addNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                        CUgraphNodeType type, bool valid) {
  if (CUresult r = needContext()) return r;
  auto* g = lookup<Graph>(graph, HandleKind::Graph);
  if (node == nullptr || g == nullptr || !valid || (count != 0 && dependencies == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const auto* d = lookup<GraphNode>(dependencies[i], HandleKind::GraphNode);
    if (d == nullptr || d->graph != g) return CUDA_ERROR_INVALID_VALUE;
  }
  auto* made = new GraphNode{g, type};
  handles().add(made, HandleKind::GraphNode);
  g->nodes.fetch_add(1);
  *node = reinterpret_cast<CUgraphNode>(made);
  return CUDA_SUCCESS;
}
// A node's parameters set (`valid`: present) in its graph (`exec` null) or in an exec instantiated
// from its graph: a node of the type the call sets.
static CUresult setNode(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type, bool valid) {
  if (CUresult r = needContext()) return r;
  const auto* n = lookup<GraphNode>(node, HandleKind::GraphNode);
  if (n == nullptr || n->type != type || !valid) return CUDA_ERROR_INVALID_VALUE;
  if (exec == nullptr) return CUDA_SUCCESS;
  const auto* e = lookup<GraphExec>(exec, HandleKind::GraphExec);
  return e != nullptr && e->graph == n->graph ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult updateExec(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResult* result) {
  if (CUresult r = needContext()) return r;
  const auto* e = lookup<GraphExec>(exec, HandleKind::GraphExec);
  const auto* g = lookup<Graph>(graph, HandleKind::Graph);
  if (e == nullptr || g == nullptr || result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (g->nodes.load() != e->nodes) {
    *result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  *result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  return CUDA_SUCCESS;
}
// What each kind of node's parameters must hold, when added and when set.
extern "C++" {
template <typename P>
static bool hasFunction(const P* p) {
  return p != nullptr && p->func != nullptr;
}
static bool hasHostFunction(const CUDA_HOST_NODE_PARAMS* p) { return p != nullptr && p->fn != nullptr; }
static bool isEvent(CUevent e) { return handles().contains(e, HandleKind::Event); }
static bool isGraph(CUgraph g) { return handles().contains(g, HandleKind::Graph); }
static CUgraphNodeType typeOf(const CUgraphNodeParams* p) { return p != nullptr ? p->type : CU_GRAPH_NODE_TYPE_EMPTY; }
static bool liveSemaphores(const CUexternalSemaphore* semaphores, unsigned count) {
  if (semaphores == nullptr || count == 0) return false;
  for (unsigned i = 0; i < count; ++i)
    if (!handles().contains(semaphores[i], HandleKind::ExternalSemaphore)) return false;
  return true;
}
template <typename P>  // a signal's or a wait's node parameters
static bool hasSemaphores(const P* p) {
  return p != nullptr && p->paramsArray != nullptr && liveSemaphores(p->extSemArray, p->numExtSems);
}
}
#define STANDIN_ADD_NODE(name, extra, type, valid)                                                         \
  CUresult name(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies, size_t count extra) { \
    ENTRY();                                                                                             \
    return addNode(node, graph, dependencies, count, type, valid);                                       \
  }
#define STANDIN_SET_NODE(name, params, type, valid) \
  CUresult name(CUgraphNode node, params) {         \
    ENTRY();                                        \
    return setNode(nullptr, node, type, valid);     \
  }
#define STANDIN_SET_EXEC_NODE(name, params, type, valid)        \
  CUresult name(CUgraphExec exec, CUgraphNode node, params) {   \
    ENTRY();                                                    \
    return setNode(exec, node, type, valid);                    \
  }
#define STANDIN_COMMA ,
// The first versions of names cuda.h gives to later ones: programs built before them call these.
#undef cuGraphAddKernelNode
#undef cuGraphAddNode
#undef cuGraphKernelNodeSetParams
#undef cuGraphExecKernelNodeSetParams
#undef cuGraphExecUpdate
STANDIN_ADD_NODE(cuGraphAddKernelNode, STANDIN_COMMA const CUDA_KERNEL_NODE_PARAMS_v1* p, CU_GRAPH_NODE_TYPE_KERNEL,
                 hasFunction(p))
STANDIN_ADD_NODE(cuGraphAddKernelNode_v2, STANDIN_COMMA const CUDA_KERNEL_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_KERNEL,
                 hasFunction(p))
STANDIN_ADD_NODE(cuGraphAddMemcpyNode, STANDIN_COMMA const CUDA_MEMCPY3D* p STANDIN_COMMA CUcontext,
                 CU_GRAPH_NODE_TYPE_MEMCPY, p != nullptr)
STANDIN_ADD_NODE(cuGraphAddMemsetNode, STANDIN_COMMA const CUDA_MEMSET_NODE_PARAMS* p STANDIN_COMMA CUcontext,
                 CU_GRAPH_NODE_TYPE_MEMSET, p != nullptr)
STANDIN_ADD_NODE(cuGraphAddHostNode, STANDIN_COMMA const CUDA_HOST_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_HOST,
                 hasHostFunction(p))
STANDIN_ADD_NODE(cuGraphAddChildGraphNode, STANDIN_COMMA CUgraph child, CU_GRAPH_NODE_TYPE_GRAPH, isGraph(child))
STANDIN_ADD_NODE(cuGraphAddEmptyNode, , CU_GRAPH_NODE_TYPE_EMPTY, true)
STANDIN_ADD_NODE(cuGraphAddEventRecordNode, STANDIN_COMMA CUevent e, CU_GRAPH_NODE_TYPE_EVENT_RECORD, isEvent(e))
STANDIN_ADD_NODE(cuGraphAddEventWaitNode, STANDIN_COMMA CUevent e, CU_GRAPH_NODE_TYPE_WAIT_EVENT, isEvent(e))
STANDIN_ADD_NODE(cuGraphAddNode, STANDIN_COMMA CUgraphNodeParams* p, typeOf(p), p != nullptr)
CUresult cuGraphAddNode_v2(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies, const CUgraphEdgeData*,
                           size_t count, CUgraphNodeParams* params) {
  ENTRY();
  return addNode(node, graph, dependencies, count, typeOf(params),
                 params != nullptr);
}
STANDIN_ADD_NODE(cuGraphAddExternalSemaphoresSignalNode, STANDIN_COMMA const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* p,
                 CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL, hasSemaphores(p))
STANDIN_ADD_NODE(cuGraphAddExternalSemaphoresWaitNode, STANDIN_COMMA const CUDA_EXT_SEM_WAIT_NODE_PARAMS* p,
                 CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT, hasSemaphores(p))
STANDIN_ADD_NODE(cuGraphAddMemFreeNode, STANDIN_COMMA CUdeviceptr p, CU_GRAPH_NODE_TYPE_MEM_FREE, p != 0)
STANDIN_ADD_NODE(cuGraphAddBatchMemOpNode, STANDIN_COMMA const CUDA_BATCH_MEM_OP_NODE_PARAMS* p,
                 CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, p != nullptr && p->count != 0 && p->paramArray != nullptr)
// Graph memory: device memory of a pool on the device; the address is the graph's for its runs,
// which never come here (graphs run nothing): a range of its own that nothing reads, not memory.
CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                                CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  ENTRY();
  const bool valid = p != nullptr && p->bytesize != 0 && p->poolProps.allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
                     p->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE && p->poolProps.location.id == 0;
  if (CUresult r = addNode(node, graph, dependencies, count, CU_GRAPH_NODE_TYPE_MEM_ALLOC, valid)) return r;
  constexpr uint64_t kGranule = uint64_t{2} << 20;
  static std::atomic<uint64_t> next{uint64_t{1} << 44};
  p->dptr = next.fetch_add((p->bytesize + kGranule - 1) / kGranule * kGranule);
  return CUDA_SUCCESS;
}
STANDIN_SET_NODE(cuGraphKernelNodeSetParams, const CUDA_KERNEL_NODE_PARAMS_v1* p, CU_GRAPH_NODE_TYPE_KERNEL,
                 hasFunction(p))
STANDIN_SET_NODE(cuGraphKernelNodeSetParams_v2, const CUDA_KERNEL_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_KERNEL,
                 hasFunction(p))
STANDIN_SET_NODE(cuGraphMemcpyNodeSetParams, const CUDA_MEMCPY3D* p, CU_GRAPH_NODE_TYPE_MEMCPY, p != nullptr)
STANDIN_SET_NODE(cuGraphMemsetNodeSetParams, const CUDA_MEMSET_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_MEMSET, p != nullptr)
STANDIN_SET_NODE(cuGraphHostNodeSetParams, const CUDA_HOST_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_HOST, hasHostFunction(p))
STANDIN_SET_NODE(cuGraphEventRecordNodeSetEvent, CUevent e, CU_GRAPH_NODE_TYPE_EVENT_RECORD, isEvent(e))
STANDIN_SET_NODE(cuGraphEventWaitNodeSetEvent, CUevent e, CU_GRAPH_NODE_TYPE_WAIT_EVENT, isEvent(e))
STANDIN_SET_NODE(cuGraphNodeSetParams, CUgraphNodeParams* p, typeOf(p), p != nullptr)
STANDIN_SET_NODE(cuGraphBatchMemOpNodeSetParams, const CUDA_BATCH_MEM_OP_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
                 p != nullptr && p->count != 0 && p->paramArray != nullptr)
STANDIN_SET_NODE(cuGraphKernelNodeSetAttribute, CUkernelNodeAttrID STANDIN_COMMA const CUkernelNodeAttrValue* value,
                 CU_GRAPH_NODE_TYPE_KERNEL, value != nullptr)
STANDIN_SET_NODE(cuGraphExternalSemaphoresSignalNodeSetParams, const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* p,
                 CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL, hasSemaphores(p))
STANDIN_SET_NODE(cuGraphExternalSemaphoresWaitNodeSetParams, const CUDA_EXT_SEM_WAIT_NODE_PARAMS* p,
                 CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT, hasSemaphores(p))
STANDIN_SET_EXEC_NODE(cuGraphExecKernelNodeSetParams, const CUDA_KERNEL_NODE_PARAMS_v1* p, CU_GRAPH_NODE_TYPE_KERNEL,
                      hasFunction(p))
STANDIN_SET_EXEC_NODE(cuGraphExecKernelNodeSetParams_v2, const CUDA_KERNEL_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_KERNEL,
                      hasFunction(p))
STANDIN_SET_EXEC_NODE(cuGraphExecMemcpyNodeSetParams, const CUDA_MEMCPY3D* p STANDIN_COMMA CUcontext,
                      CU_GRAPH_NODE_TYPE_MEMCPY, p != nullptr)
STANDIN_SET_EXEC_NODE(cuGraphExecMemsetNodeSetParams, const CUDA_MEMSET_NODE_PARAMS* p STANDIN_COMMA CUcontext,
                      CU_GRAPH_NODE_TYPE_MEMSET, p != nullptr)
STANDIN_SET_EXEC_NODE(cuGraphExecHostNodeSetParams, const CUDA_HOST_NODE_PARAMS* p, CU_GRAPH_NODE_TYPE_HOST,
                      hasHostFunction(p))
STANDIN_SET_EXEC_NODE(cuGraphExecChildGraphNodeSetParams, CUgraph child, CU_GRAPH_NODE_TYPE_GRAPH, isGraph(child))
STANDIN_SET_EXEC_NODE(cuGraphExecEventRecordNodeSetEvent, CUevent e, CU_GRAPH_NODE_TYPE_EVENT_RECORD, isEvent(e))
STANDIN_SET_EXEC_NODE(cuGraphExecEventWaitNodeSetEvent, CUevent e, CU_GRAPH_NODE_TYPE_WAIT_EVENT, isEvent(e))
STANDIN_SET_EXEC_NODE(cuGraphExecNodeSetParams, CUgraphNodeParams* p, typeOf(p), p != nullptr)
STANDIN_SET_EXEC_NODE(cuGraphExecBatchMemOpNodeSetParams, const CUDA_BATCH_MEM_OP_NODE_PARAMS* p,
                      CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, p != nullptr && p->count != 0 && p->paramArray != nullptr)
STANDIN_SET_EXEC_NODE(cuGraphExecExternalSemaphoresSignalNodeSetParams, const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* p,
                      CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL, hasSemaphores(p))
STANDIN_SET_EXEC_NODE(cuGraphExecExternalSemaphoresWaitNodeSetParams, const CUDA_EXT_SEM_WAIT_NODE_PARAMS* p,
                      CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT, hasSemaphores(p))
CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode* errorNode, CUgraphExecUpdateResult* result) {
  ENTRY();
  if (errorNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *errorNode = nullptr;
  return updateExec(exec, graph, result);
}
CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  ENTRY();
  if (info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  info->errorNode = info->errorFromNode = nullptr;
  return updateExec(exec, graph, &info->result);
}
#undef STANDIN_ADD_NODE
#undef STANDIN_SET_NODE
#undef STANDIN_SET_EXEC_NODE
#undef STANDIN_COMMA
// A kernel node's attributes copied to another kernel node of the same graph.
CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* to = lookup<GraphNode>(dst, HandleKind::GraphNode);
  const auto* from = lookup<GraphNode>(src, HandleKind::GraphNode);
  if (to == nullptr || from == nullptr || to->type != CU_GRAPH_NODE_TYPE_KERNEL || from->type != CU_GRAPH_NODE_TYPE_KERNEL ||
      to->graph != from->graph)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
// A node of an exec's graph enabled or disabled in the exec (its parameters stay).
CUresult cuGraphNodeSetEnabled(CUgraphExec exec, CUgraphNode node, unsigned enabled) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* n = lookup<GraphNode>(node, HandleKind::GraphNode);
  const auto* e = lookup<GraphExec>(exec, HandleKind::GraphExec);
  if (n == nullptr || e == nullptr || e->graph != n->graph || enabled > 1) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
// A conditional node's handle made in a graph (its value set by kernels as the graph runs).
CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* handle, CUgraph graph, CUcontext ctx,
                                        unsigned defaultValue, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  (void)defaultValue;
  if (handle == nullptr || !handles().contains(graph, HandleKind::Graph) || ctx == nullptr ||
      (flags & ~unsigned{CU_GRAPH_COND_ASSIGN_DEFAULT}) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  static std::atomic<CUgraphConditionalHandle> next{1};
  *handle = next.fetch_add(1);
  return CUDA_SUCCESS;
}
// Graph memory the device keeps for graphs' allocations given back: it keeps none here.
CUresult cuDeviceGraphMemTrim(CUdevice dev) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  return checkDevice(dev);
}
// User objects: made with a reference or more, retained and released by the program and by graphs
// (a graph's moved from the program's with CU_GRAPH_USER_OBJECT_MOVE); more released than held is
// refused.
static CUresult releaseUserObject(UserObject* o, unsigned count) {
  unsigned held = o->references.load();
  do {
    if (count == 0 || count > held) return CUDA_ERROR_INVALID_VALUE;
  } while (!o->references.compare_exchange_weak(held, held - count));
  if (held == count) {
    handles().retire(o, HandleKind::UserObject);
    o->destroy(o->ptr);
  }
  return CUDA_SUCCESS;
}
CUresult cuUserObjectCreate(CUuserObject* out, void* ptr, CUhostFn destroy, unsigned references, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (out == nullptr || destroy == nullptr || references == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
    return CUDA_ERROR_INVALID_VALUE;
  auto* made = new UserObject{ptr, destroy, {references}};
  handles().add(made, HandleKind::UserObject);
  *out = reinterpret_cast<CUuserObject>(made);
  return CUDA_SUCCESS;
}
CUresult cuUserObjectRetain(CUuserObject object, unsigned count) {
  ENTRY();
  auto* o = lookup<UserObject>(object, HandleKind::UserObject);
  if (o == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  o->references.fetch_add(count);
  return CUDA_SUCCESS;
}
CUresult cuUserObjectRelease(CUuserObject object, unsigned count) {
  ENTRY();
  auto* o = lookup<UserObject>(object, HandleKind::UserObject);
  return o != nullptr ? releaseUserObject(o, count) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned count, unsigned flags) {
  ENTRY();
  auto* g = lookup<Graph>(graph, HandleKind::Graph);
  auto* o = lookup<UserObject>(object, HandleKind::UserObject);
  if (g == nullptr || o == nullptr || count == 0 || (flags & ~unsigned{CU_GRAPH_USER_OBJECT_MOVE}) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) o->references.fetch_add(count);
  std::lock_guard lock(g->mutex);
  for (auto& [held, n] : g->userObjects)
    if (held == o) return n += count, CUDA_SUCCESS;
  g->userObjects.emplace_back(o, count);
  return CUDA_SUCCESS;
}
CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned count) {
  ENTRY();
  auto* g = lookup<Graph>(graph, HandleKind::Graph);
  auto* o = lookup<UserObject>(object, HandleKind::UserObject);
  if (g == nullptr || o == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(g->mutex);
    auto it = std::find_if(g->userObjects.begin(), g->userObjects.end(), [o](const auto& h) { return h.first == o; });
    if (it == g->userObjects.end() || it->second < count) return CUDA_ERROR_INVALID_VALUE;
    if ((it->second -= count) == 0) g->userObjects.erase(it);
  }
  return releaseUserObject(o, count);
}
CUresult cuGraphCreate(CUgraph* graph, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (graph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* g = new Graph{nullptr};
  handles().add(g, HandleKind::Graph);
  *graph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  ENTRY();
  return instantiate(exec, graph, flags);
}
// CUDA 10's and 11's: the node that failed and a log, neither written to here but to say none.
static CUresult instantiateWithLog(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode, char* log, size_t logBytes) {
  if (errorNode != nullptr) *errorNode = nullptr;
  if (log != nullptr && logBytes != 0) log[0] = '\0';
  return instantiate(exec, graph, 0);
}
CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode, char* log, size_t logBytes) {
  ENTRY();
  return instantiateWithLog(exec, graph, errorNode, log, logBytes);
}
CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode, char* log, size_t logBytes) {
  ENTRY();
  return instantiateWithLog(exec, graph, errorNode, log, logBytes);
}
// ------------------------------------------------------------------ JIT links
// CUDA 5.5's first versions (the same parameters, still exported) do what 6.5's do.
static CUresult createLink(unsigned numOptions, CUjit_option* options, void** optionValues, CUlinkState* state) {
  if (CUresult r = needContext()) return r;
  if (state == nullptr || (numOptions != 0 && (options == nullptr || optionValues == nullptr)))
    return CUDA_ERROR_INVALID_VALUE;
  auto* l = new Link();
  handles().add(l, HandleKind::Link);
  *state = reinterpret_cast<CUlinkState>(l);
  return CUDA_SUCCESS;
}
static CUresult addLinkData(CUlinkState state, void* data, size_t size, unsigned numOptions, CUjit_option* options,
                           void** optionValues) {
  if (CUresult r = needInit()) return r;
  if (data == nullptr || size == 0 || (numOptions != 0 && (options == nullptr || optionValues == nullptr)))
    return CUDA_ERROR_INVALID_VALUE;
  return addLinkInput(state, data);
}
static CUresult addLinkFile(CUlinkState state, const char* path, unsigned numOptions, CUjit_option* options,
                           void** optionValues) {
  if (CUresult r = needInit()) return r;
  if (numOptions != 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  ImageHead head;
  if (CUresult r = readImage(path, head)) return r;
  return addLinkInput(state, head.bytes);
}
#define STANDIN_LINK_VERSIONS(create, addData, addFile)                                                              \
  CUresult create(unsigned numOptions, CUjit_option* options, void** optionValues, CUlinkState* state) {            \
    ENTRY();                                                                                                       \
    return createLink(numOptions, options, optionValues, state);                                                   \
  }                                                                                                                \
  CUresult addData(CUlinkState state, CUjitInputType, void* data, size_t size, const char*, unsigned numOptions,     \
                   CUjit_option* options, void** optionValues) {                                                   \
    ENTRY();                                                                                                       \
    return addLinkData(state, data, size, numOptions, options, optionValues);                                      \
  }                                                                                                                \
  CUresult addFile(CUlinkState state, CUjitInputType, const char* path, unsigned numOptions, CUjit_option* options, \
                   void** optionValues) {                                                                          \
    ENTRY();                                                                                                       \
    return addLinkFile(state, path, numOptions, options, optionValues);                                            \
  }
#undef cuLinkCreate
#undef cuLinkAddData
#undef cuLinkAddFile
STANDIN_LINK_VERSIONS(cuLinkCreate, cuLinkAddData, cuLinkAddFile)
STANDIN_LINK_VERSIONS(cuLinkCreate_v2, cuLinkAddData_v2, cuLinkAddFile_v2)
#undef STANDIN_LINK_VERSIONS
CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  auto* l = lookup<Link>(state, HandleKind::Link);
  if (l == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr || sizeOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(l->mutex);
  if (l->inputs == 0) return CUDA_ERROR_INVALID_VALUE;  // nothing to link
  l->image = "\x7f" "ELF linked image";
  *cubinOut = l->image.data();
  *sizeOut = l->image.size();
  return CUDA_SUCCESS;
}
CUresult cuLinkDestroy(CUlinkState state) {
  ENTRY();
  return retireHandle(state, HandleKind::Link, CUDA_ERROR_INVALID_HANDLE);
}

CUresult cuGraphDestroy(CUgraph graph) {
  ENTRY();
  auto* g = lookup<Graph>(graph, HandleKind::Graph);
  if (CUresult r = retireHandle(graph, HandleKind::Graph, CUDA_ERROR_INVALID_VALUE)) return r;
  std::vector<std::pair<UserObject*, unsigned>> held;
  {
    std::lock_guard lock(g->mutex);
    held.swap(g->userObjects);
  }
  for (const auto& [o, count] : held) releaseUserObject(o, count);
  return CUDA_SUCCESS;
}
// Edges between two nodes of one graph, added or removed (the same check: twins below): checked,
// not kept (the stand-in runs no graph's work, in any order). The second versions take each edge's
// data, optional here.
static CUresult checkEdges(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to, size_t count) {
  if (CUresult r = needContext()) return r;
  const auto* g = lookup<Graph>(graph, HandleKind::Graph);
  if (g == nullptr || (count != 0 && (from == nullptr || to == nullptr))) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const auto* a = lookup<GraphNode>(from[i], HandleKind::GraphNode);
    const auto* b = lookup<GraphNode>(to[i], HandleKind::GraphNode);
    if (a == nullptr || b == nullptr || a == b || a->graph != g || b->graph != g) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
STANDIN_ENTRY_TWINS(cuGraphAddDependencies, cuGraphRemoveDependencies,
                    (CUgraph graph, const CUgraphNode* from, const CUgraphNode* to, size_t count),
                    checkEdges(graph, from, to, count))
STANDIN_ENTRY_TWINS(cuGraphAddDependencies_v2, cuGraphRemoveDependencies_v2,
                    (CUgraph graph, const CUgraphNode* from, const CUgraphNode* to, const CUgraphEdgeData*,
                     size_t count),
                    checkEdges(graph, from, to, count))
// A node taken out of its graph (one node fewer: the stand-in's topology).
CUresult cuGraphDestroyNode(CUgraphNode node) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* n = lookup<GraphNode>(node, HandleKind::GraphNode);
  auto* g = n != nullptr ? lookup<Graph>(n->graph, HandleKind::Graph) : nullptr;
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  g->nodes.fetch_sub(1);
  return retireHandle(node, HandleKind::GraphNode, CUDA_ERROR_INVALID_VALUE);
}
// A copy of a graph: as many nodes (whose handles in the copy the stand-in does not hand out).
CUresult cuGraphClone(CUgraph* clone, CUgraph original) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* g = lookup<Graph>(original, HandleKind::Graph);
  if (clone == nullptr || g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* copy = new Graph{g->stream};
  copy->nodes.store(g->nodes.load());
  handles().add(copy, HandleKind::Graph);
  *clone = reinterpret_cast<CUgraph>(copy);
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  ENTRY();
  return retireHandle(exec, HandleKind::GraphExec, CUDA_ERROR_INVALID_VALUE);
}
STANDIN_ENTRY_PTSZ(cuGraphInstantiateWithParams, (CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params),
                   instantiateWithParams(exec, graph, params))
STANDIN_ENTRY_PTSZ(cuGraphUpload, (CUgraphExec graph, CUstream s), checkGraphLaunch(graph, s))
STANDIN_ENTRY_PTSZ(cuGraphLaunch, (CUgraphExec graph, CUstream s), checkGraphLaunch(graph, s))

// ------------------------------------------------------------------ memory
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  ENTRY();
  return allocateDevice(p, n);
}
CUresult cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t width, size_t height, unsigned elementBytes) {
  ENTRY();
  if (pitch == nullptr || width == 0 || height == 0 || (elementBytes != 4 && elementBytes != 8 && elementBytes != 16))
    return CUDA_ERROR_INVALID_VALUE;
  const size_t rowBytes = (width + 511) & ~size_t{511};  // rows start on the texture alignment
  const CUresult r = allocateDevice(p, rowBytes * height);
  if (r == CUDA_SUCCESS) *pitch = rowBytes;
  return r;
}
CUresult cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned flags) {
  ENTRY();
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return allocateDevice(p, n, MemoryKind::Managed);
}
CUresult cuMemAllocHost_v2(void** p, size_t n) {
  ENTRY();
  return allocateHost(p, n);
}
CUresult cuMemHostAlloc(void** p, size_t n, unsigned flags) {
  ENTRY();
  if ((flags & ~unsigned{CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED}) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return allocateHost(p, n);
}
CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  uintptr_t b = 0;
  size_t n = 0;
  if (!memory().containing(addr(p), b, n)) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = b;
  if (size != nullptr) *size = n;
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------ interprocess handles
// (How the stand-in shares memory: above IpcHandle.)
// The allocation at `p` written to its file, its handle in `out` (a CUipcMemHandle's or a pool
// pointer's export data, both larger than an IpcHandle).
extern "C++" {
template <typename Out>
static CUresult exportSnapshot(Out* out, CUdeviceptr p) {
  static_assert(sizeof(IpcHandle) <= sizeof(Out));
  if (CUresult r = needContext()) return r;
  const size_t bytes = memory().deviceSizeAt(addr(p));
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const std::string path = ipcPath(getpid(), p);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  const bool written = writeAll(fd, reinterpret_cast<const void*>(p), bytes);
  close(fd);
  if (!written) return CUDA_ERROR_OPERATING_SYSTEM;
  {
    std::lock_guard lock(ipcMutex);
    if (std::find(exportedBases().begin(), exportedBases().end(), addr(p)) == exportedBases().end())
      exportedBases().push_back(addr(p));
  }
  IpcHandle h{kIpcMagic, getpid(), p, bytes, 0};
  memset(out, 0, sizeof(*out));
  memcpy(out, &h, sizeof(h));
  return CUDA_SUCCESS;
}
}  // extern "C++"
CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr p) {
  ENTRY();
  return exportSnapshot(handle, p);
}
// Another process's allocation, as its handle `h` says, read into memory of this process's own.
static CUresult openSnapshot(CUdeviceptr* p, const IpcHandle& h) {
  if (p == nullptr || h.magic != kIpcMagic || h.bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (h.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  const int fd = open(ipcPath(h.pid, h.base).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  CUdeviceptr mine = 0;
  CUresult r = allocateDevice(&mine, h.bytes);
  for (size_t done = 0; r == CUDA_SUCCESS && done < h.bytes;) {
    const ssize_t n = read(fd, reinterpret_cast<char*>(mine) + done, h.bytes - done);
    if (n <= 0) r = CUDA_ERROR_MAP_FAILED;
    else done += static_cast<size_t>(n);
  }
  close(fd);
  if (r != CUDA_SUCCESS) {
    if (mine != 0) release(mine, false);
    return r;
  }
  *p = mine;
  return CUDA_SUCCESS;
}
static CUresult openMemHandle(CUdeviceptr* p, const CUipcMemHandle& handle, unsigned flags) {
  if (CUresult r = needContext()) return r;
  IpcHandle h;
  memcpy(&h, &handle, sizeof(h));
  if (flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = openSnapshot(p, h)) return r;
  std::lock_guard lock(ipcMutex);
  openedBases().push_back(*p);
  return CUDA_SUCCESS;
}
// The first version and the second (CUDA 11) take the same parameters.
STANDIN_ENTRY_TWINS(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2, (CUdeviceptr* p, CUipcMemHandle handle, unsigned flags),
                    openMemHandle(p, handle, flags))
CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  {
    std::lock_guard lock(ipcMutex);
    if (!take(openedBases(), addr(p))) return CUDA_ERROR_INVALID_VALUE;
  }
  return release(addr(p), false);
}
CUresult cuIpcGetEventHandle(CUipcEventHandle* handle, CUevent e) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* event = lookup<Event>(e, HandleKind::Event);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  constexpr unsigned kShareable = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
  if (handle == nullptr || (event->flags & kShareable) != kShareable) return CUDA_ERROR_INVALID_VALUE;
  IpcHandle h{kIpcMagic, getpid(), reinterpret_cast<uintptr_t>(e), 0,
              event->recorded.load(std::memory_order_acquire) ? 1u : 0u};
  memset(handle, 0, sizeof(*handle));
  memcpy(handle, &h, sizeof(h));
  return CUDA_SUCCESS;
}
CUresult cuIpcOpenEventHandle(CUevent* e, CUipcEventHandle handle) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  IpcHandle h;
  memcpy(&h, &handle, sizeof(h));
  if (e == nullptr || h.magic != kIpcMagic) return CUDA_ERROR_INVALID_VALUE;
  if (h.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  auto* event = new Event();
  event->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
  event->recorded.store(h.recorded != 0, std::memory_order_release);
  handles().add(event, HandleKind::Event);
  *e = reinterpret_cast<CUevent>(event);
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  ENTRY();
  return release(addr(p), false);
}
// ------------------------------------------------------------------ arrays
// Width elements of 1, 2 or 4 channels, a height of 0 for a 1D array, a depth of 0 for a 2D one.
static CUresult createArray(CUarray* out, size_t width, size_t height, size_t depth, CUarray_format format,
                            unsigned channels) {
  if (CUresult r = needContext()) return r;
  const size_t element = standin::formatBytes(format) * channels;
  if (out == nullptr || width == 0 || element == 0 || (channels != 1 && channels != 2 && channels != 4) ||
      (depth != 0 && height == 0))
    return CUDA_ERROR_INVALID_VALUE;
  auto* a = new Array{0, width * element, height ? height : 1, 0, element, {width, height, depth, format, channels, 0}};
  a->bytes = a->rowBytes * a->height * (depth ? depth : 1);
  if (CUresult r = allocate(&a->base, a->bytes, MemoryKind::Device)) {
    delete a;
    return r;
  }
  handles().add(a, HandleKind::Array);
  *out = reinterpret_cast<CUarray>(a);
  return CUDA_SUCCESS;
}
CUresult cuArrayCreate_v2(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d) {
  ENTRY();
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return createArray(out, d->Width, d->Height, 0, d->Format, d->NumChannels);
}
CUresult cuArray3DCreate_v2(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  ENTRY();
  if (d == nullptr || d->Flags != 0) return CUDA_ERROR_INVALID_VALUE;  // layered, surface, ... not modelled
  return createArray(out, d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
}
CUresult cuArrayDestroy(CUarray array) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* a = lookup<Array>(array, HandleKind::Array);
  if (a == nullptr || a->level) return CUDA_ERROR_INVALID_HANDLE;
  const uintptr_t base = a->base;
  if (!handles().retire(array, HandleKind::Array)) return CUDA_ERROR_INVALID_HANDLE;
  return release(base, false);
}
CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* desc, CUarray array) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* a = lookup<Array>(array, HandleKind::Array);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *desc = a->desc;
  return CUDA_SUCCESS;
}
// Mipmapped arrays: `levels` arrays (at most those down to 1 x 1 x 1), each half the last's
// extent, at least 1.
// A mipmapped array's levels retired, their memory freed (the mipmapped array destroyed, or one
// being made that failed).
static void releaseLevels(const Mipmap& m) {
  for (Array* level : m.levels) {
    handles().retire(level, HandleKind::Array);
    release(level->base, false);
  }
}
static CUresult createMipmap(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels) {
  if (CUresult r = needContext()) return r;
  if (out == nullptr || d == nullptr || d->Flags != 0 || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned possible = 1;
  for (size_t longest = std::max({d->Width, d->Height, d->Depth}); longest > 1; longest >>= 1) ++possible;
  if (levels > possible) return CUDA_ERROR_INVALID_VALUE;
  auto* m = new Mipmap();
  const auto halved = [](size_t extent, unsigned l) { return extent == 0 ? 0 : std::max<size_t>(extent >> l, 1); };
  for (unsigned l = 0; l < levels; ++l) {
    CUarray level = nullptr;
    if (CUresult r = createArray(&level, halved(d->Width, l), halved(d->Height, l), halved(d->Depth, l), d->Format,
                                 d->NumChannels)) {
      releaseLevels(*m);
      delete m;
      return r;
    }
    m->levels.push_back(reinterpret_cast<Array*>(level));
    m->levels.back()->level = true;
  }
  handles().add(m, HandleKind::Mipmap);
  *out = reinterpret_cast<CUmipmappedArray>(m);
  return CUDA_SUCCESS;
}
CUresult cuMipmappedArrayCreate(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels) {
  ENTRY();
  return createMipmap(out, d, levels);
}
CUresult cuMipmappedArrayGetLevel(CUarray* out, CUmipmappedArray mipmap, unsigned level) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* m = lookup<Mipmap>(mipmap, HandleKind::Mipmap);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (out == nullptr || level >= m->levels.size()) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUarray>(m->levels[level]);
  return CUDA_SUCCESS;
}
static CUresult destroyMipmap(CUmipmappedArray mipmap) {
  if (CUresult r = needContext()) return r;
  const auto* m = lookup<Mipmap>(mipmap, HandleKind::Mipmap);
  if (m == nullptr || !handles().retire(mipmap, HandleKind::Mipmap)) return CUDA_ERROR_INVALID_HANDLE;
  releaseLevels(*m);
  return CUDA_SUCCESS;
}
CUresult cuMipmappedArrayDestroy(CUmipmappedArray mipmap) {
  ENTRY();
  return destroyMipmap(mipmap);
}
// Linear copies into and out of an array's elements, at a byte offset.
static CUresult toArray(CUarray dst, size_t offset, uintptr_t src, size_t n, CUstream s = nullptr) {
  if (CUresult r = needContext()) return r;
  uintptr_t at = 0;
  if (CUresult r = arrayAt(dst, offset, n, at)) return r;
  return copyLinear(at, src, n, s);
}
static CUresult fromArray(uintptr_t dst, CUarray src, size_t offset, size_t n, CUstream s = nullptr) {
  if (CUresult r = needContext()) return r;
  uintptr_t at = 0;
  if (CUresult r = arrayAt(src, offset, n, at)) return r;
  return copyLinear(dst, at, n, s);
}
STANDIN_ENTRY_PTDS(cuMemcpyHtoA_v2, (CUarray dst, size_t offset, const void* src, size_t n),
                   toArray(dst, offset, addr(src), n))
STANDIN_ENTRY_PTDS(cuMemcpyDtoA_v2, (CUarray dst, size_t offset, CUdeviceptr src, size_t n),
                   toArray(dst, offset, addr(src), n))
STANDIN_ENTRY_PTDS(cuMemcpyAtoH_v2, (void* dst, CUarray src, size_t offset, size_t n),
                   fromArray(addr(dst), src, offset, n))
STANDIN_ENTRY_PTDS(cuMemcpyAtoD_v2, (CUdeviceptr dst, CUarray src, size_t offset, size_t n),
                   fromArray(addr(dst), src, offset, n))
static CUresult arrayToArray(CUarray dst, size_t dstOffset, CUarray src, size_t srcOffset, size_t n) {
  if (CUresult r = needContext()) return r;
  uintptr_t from = 0;
  if (CUresult r = arrayAt(src, srcOffset, n, from)) return r;
  return toArray(dst, dstOffset, from, n);
}
STANDIN_ENTRY_PTDS(cuMemcpyAtoA_v2, (CUarray dst, size_t dstOffset, CUarray src, size_t srcOffset, size_t n),
                   arrayToArray(dst, dstOffset, src, srcOffset, n))
STANDIN_ENTRY_PTSZ(cuMemcpyHtoAAsync_v2, (CUarray dst, size_t offset, const void* src, size_t n, CUstream s),
                   toArray(dst, offset, addr(src), n, s))
STANDIN_ENTRY_PTSZ(cuMemcpyAtoHAsync_v2, (void* dst, CUarray src, size_t offset, size_t n, CUstream s),
                   fromArray(addr(dst), src, offset, n, s))
CUresult cuMemFreeHost(void* p) {
  ENTRY();
  return release(addr(p), true);
}
CUresult cuMemHostRegister_v2(void* p, size_t n, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                              CU_MEMHOSTREGISTER_READ_ONLY;
  if (p == nullptr || n == 0 || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  return memory().registerHost(addr(p), n);
}
CUresult cuMemHostUnregister(void* p) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return memory().unregisterHost(addr(p));
}
// Virtual memory management (PyTorch's expandable segments): physical allocations by handle.
constexpr size_t kGranularity = size_t{2} << 20;
// The granularity of physical allocations and of multicast objects alike, for either option
// (minimum or recommended, the last of each enum: `known`).
static CUresult answerGranularity(size_t* granularity, const void* prop, unsigned option, unsigned known) {
  if (CUresult r = needInit()) return r;
  if (granularity == nullptr || prop == nullptr || option > known) return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}
CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  ENTRY();
  return answerGranularity(granularity, prop, option, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
}
CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (handle == nullptr || prop == nullptr || size == 0 || size % kGranularity != 0 || flags != 0 ||
      prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
  auto* p = new Physical{size, prop->requestedHandleTypes};
  handles().add(p, HandleKind::Physical);
  *handle = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  auto* p = lookup<Physical>(reinterpret_cast<const void*>(handle), HandleKind::Physical);
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (p->references.fetch_sub(1) == 1) handles().retire(p, HandleKind::Physical);
  return CUDA_SUCCESS;
}
// Physical memory shared with other processes by OS handle (a file descriptor here): exported to
// a file of its size (the stand-in's physical memory holds no bytes), imported as new physical
// memory of the file's size.
CUresult cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType type, unsigned long long flags) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  const auto* p = lookup<Physical>(reinterpret_cast<const void*>(handle), HandleKind::Physical);
  if (p == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (shareable == nullptr || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      (p->handleTypes & type) == 0)
    return CUDA_ERROR_INVALID_VALUE;
  const int fd = memfd_create("cutrace-standin-physical", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  if (ftruncate(fd, static_cast<off_t>(p->bytes)) != 0) {
    close(fd);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType type) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (handle == nullptr || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  struct stat st;
  if (fstat(static_cast<int>(reinterpret_cast<intptr_t>(osHandle)), &st) != 0 || st.st_size <= 0 ||
      st.st_size % kGranularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto* p = new Physical{static_cast<size_t>(st.st_size), type};
  handles().add(p, HandleKind::Physical);
  *handle = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}
namespace {
// Reserved address ranges are address space of the process's own (PROT_NONE), so no other
// pointer can fall in one; what is mapped into them is only noted, never made readable.
struct Reservation {
  size_t bytes;
  std::vector<std::pair<uintptr_t, size_t>> mapped;  // [start, start + bytes) of each mapping
  std::map<uintptr_t, CUmemGenericAllocationHandle> handleAt;  // each mapping's physical memory
};
std::mutex reservationsMutex;
std::map<uintptr_t, Reservation>& reservations() {
  static auto* r = new std::map<uintptr_t, Reservation>();
  return *r;
}
// The reservation [ptr, ptr + size) lies in, with reservationsMutex held; nullptr if none, or if
// the range is empty or not on the granularity.
Reservation* reservationOf(uintptr_t ptr, size_t size) {
  if (size == 0 || ptr % kGranularity != 0 || size % kGranularity != 0) return nullptr;
  auto& all = reservations();
  auto it = all.upper_bound(ptr);
  if (it == all.begin()) return nullptr;
  --it;
  return ptr + size <= it->first + it->second.bytes ? &it->second : nullptr;
}
bool overlaps(const std::pair<uintptr_t, size_t>& m, uintptr_t ptr, size_t size) {
  return m.first < ptr + size && ptr < m.first + m.second;
}
}  // namespace
CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (ptr == nullptr || size == 0 || size % kGranularity != 0 || (alignment & (alignment - 1)) != 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  (void)addr;  // a hint, as on a GPU
  // On the granularity: over-reserve by one granule and give back the ends.
  const size_t span = size + kGranularity;
  void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = (raw + kGranularity - 1) & ~(kGranularity - 1);
  if (base != raw) munmap(p, base - raw);
  if (raw + span != base + size) munmap(reinterpret_cast<void*>(base + size), raw + span - (base + size));
  std::lock_guard lock(reservationsMutex);
  reservations()[base] = Reservation{size, {}};
  *ptr = base;
  return CUDA_SUCCESS;
}
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  std::lock_guard lock(reservationsMutex);
  auto it = reservations().find(ptr);
  if (it == reservations().end() || it->second.bytes != size || !it->second.mapped.empty()) return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(ptr), size);
  reservations().erase(it);
  return CUDA_SUCCESS;
}
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* physical = lookup<Physical>(reinterpret_cast<const void*>(handle), HandleKind::Physical);
  if (physical == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 || offset % kGranularity != 0 || offset + size > physical->bytes) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(reservationsMutex);
  Reservation* r = reservationOf(ptr, size);
  if (r == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& m : r->mapped)
    if (overlaps(m, ptr, size)) return CUDA_ERROR_ALREADY_MAPPED;
  r->mapped.emplace_back(ptr, size);
  r->handleAt[ptr] = handle;
  return CUDA_SUCCESS;
}
// ------------------------------------------------------------------ multicast objects (CUDA 12.1)
// Memory of several devices bound to one object whose stores reach them all (NVLink SHARP): the
// stand-in's one device takes part; binding checks the object and the memory, and notes nothing.
CUresult cuMulticastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                   CUmulticastGranularity_flags option) {
  ENTRY();
  return answerGranularity(granularity, prop, option, CU_MULTICAST_GRANULARITY_RECOMMENDED);
}
CUresult cuMulticastCreate(CUmemGenericAllocationHandle* handle, const CUmulticastObjectProp* prop) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (handle == nullptr || prop == nullptr || prop->numDevices == 0 || prop->size == 0 ||
      prop->size % kGranularity != 0 || prop->flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto* p = new Physical{prop->size, prop->handleTypes};
  p->multicastDevices = prop->numDevices;
  handles().add(p, HandleKind::Physical);
  *handle = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}
static Physical* multicastOf(CUmemGenericAllocationHandle handle) {
  auto* p = lookup<Physical>(reinterpret_cast<const void*>(handle), HandleKind::Physical);
  return p != nullptr && p->multicastDevices != 0 ? p : nullptr;
}
CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle handle, CUdevice dev) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  Physical* mc = multicastOf(handle);
  if (mc == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  unsigned added = mc->devicesAdded.load();
  do {
    if (added == mc->multicastDevices) return CUDA_ERROR_INVALID_VALUE;
  } while (!mc->devicesAdded.compare_exchange_weak(added, added + 1));
  return CUDA_SUCCESS;
}
// [offset, offset + size) of the object, on the granularity, with every device added.
static CUresult multicastRange(CUmemGenericAllocationHandle handle, size_t offset, size_t size) {
  const Physical* mc = multicastOf(handle);
  if (mc == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (size == 0 || offset % kGranularity != 0 || size % kGranularity != 0 || offset > mc->bytes ||
      size > mc->bytes - offset)
    return CUDA_ERROR_INVALID_VALUE;
  return mc->devicesAdded.load() == mc->multicastDevices ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_STATE;
}
CUresult cuMulticastBindMem(CUmemGenericAllocationHandle handle, size_t offset, CUmemGenericAllocationHandle memory,
                            size_t memoryOffset, size_t size, unsigned long long flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (CUresult r = multicastRange(handle, offset, size)) return r;
  const auto* p = lookup<Physical>(reinterpret_cast<const void*>(memory), HandleKind::Physical);
  if (p == nullptr || p->multicastDevices != 0) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 || memoryOffset % kGranularity != 0 || memoryOffset > p->bytes || size > p->bytes - memoryOffset)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult cuMulticastBindAddr(CUmemGenericAllocationHandle handle, size_t offset, CUdeviceptr address, size_t size,
                             unsigned long long flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (CUresult r = multicastRange(handle, offset, size)) return r;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(reservationsMutex);
  const uintptr_t at = addr(address);
  Reservation* r = reservationOf(at, size);
  if (r == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t mapped = 0;
  for (const auto& m : r->mapped)
    if (overlaps(m, at, size)) mapped += std::min(m.first + m.second, at + size) - std::max(m.first, at);
  return mapped == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMulticastUnbind(CUmemGenericAllocationHandle handle, CUdevice dev, size_t offset, size_t size) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  return multicastRange(handle, offset, size);
}

// The physical memory mapped at `addr`, one more reference to it.
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto at = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard lock(reservationsMutex);
  Reservation* r = reservationOf(at - at % kGranularity, kGranularity);
  if (r == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& m : r->mapped) {
    if (!overlaps(m, at, 1)) continue;
    auto* p = lookup<Physical>(reinterpret_cast<const void*>(r->handleAt[m.first]), HandleKind::Physical);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    p->references.fetch_add(1);
    *handle = r->handleAt[m.first];
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}
// Every byte of [ptr, ptr + size) mapped: access is set on mappings only.
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(reservationsMutex);
  Reservation* r = reservationOf(ptr, size);
  if (r == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t start = ptr, end = ptr + size;
  size_t covered = 0;
  for (const auto& m : r->mapped)
    if (overlaps(m, start, size)) covered += std::min(m.first + m.second, end) - std::max(m.first, start);
  return covered == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
// Unmaps whole mappings: the range must cover each one it touches.
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  std::lock_guard lock(reservationsMutex);
  Reservation* r = reservationOf(ptr, size);
  if (r == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t removed = 0;
  for (const auto& m : r->mapped) {
    if (!overlaps(m, ptr, size)) continue;
    if (m.first < ptr || m.first + m.second > ptr + size) return CUDA_ERROR_INVALID_VALUE;
    ++removed;
  }
  if (removed == 0) return CUDA_ERROR_INVALID_VALUE;
  std::erase_if(r->mapped, [&](const auto& m) { return overlaps(m, ptr, size); });
  std::erase_if(r->handleAt, [&](const auto& m) { return m.first >= ptr && m.first < ptr + size; });
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------ memory pools
// The device's default pool, and pools made: each checked and held; what is allocated from one is
// plain device memory (cuMemAllocFromPoolAsync takes any pool).
Pool defaultPoolOfDevice{};
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  handles().add(&defaultPoolOfDevice, HandleKind::Pool);
  *pool = reinterpret_cast<CUmemoryPool>(&defaultPoolOfDevice);
  return CUDA_SUCCESS;
}
CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (pool == nullptr || props == nullptr || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (props->location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
  auto* made = new Pool{*props};
  handles().add(made, HandleKind::Pool);
  *pool = reinterpret_cast<CUmemoryPool>(made);
  return CUDA_SUCCESS;
}
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  ENTRY();
  if (reinterpret_cast<Pool*>(pool) == &defaultPoolOfDevice) return CUDA_ERROR_INVALID_VALUE;
  return retireHandle(pool, HandleKind::Pool, CUDA_ERROR_INVALID_VALUE);
}
// A pool's settings: how it reuses and keeps memory (the high watermarks only reset, to 0; the
// current figures are read-only); which devices may access its memory (the device it is on
// always reads and writes); the pool a device allocates from by default.
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (!handles().contains(pool, HandleKind::Pool) || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      return *static_cast<const cuuint64_t*>(value) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (!handles().contains(pool, HandleKind::Pool) || (count != 0 && map == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = checkDevice(map[i].location.id)) return r;
    if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return CUDA_ERROR_INVALID_VALUE;  // its own device's
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (CUresult r = checkDevice(dev)) return r;
  return handles().contains(pool, HandleKind::Pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
// CUDA 13's form of the same: a device location, for pinned allocations (the stand-in has no
// host pools).
CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE || type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(location->id)) return r;
  return handles().contains(pool, HandleKind::Pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
// Memory the pool holds beyond `keep` bytes goes back: it holds none here.
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t /*keep*/) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  return handles().contains(pool, HandleKind::Pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
// Pools shared between processes (RAPIDS' and UCX's stream-ordered IPC): a pool made exportable
// to file descriptors goes out as a descriptor of a memory file holding the exporter's pid; the
// importer's pool is a pool of its own that remembers that pid. An allocation's export data is
// an IPC handle's (cuIpcGetMemHandle, above), opened through a pool imported from its exporter
// into memory of the importer's own, which it frees as its own (cuMemFreeAsync).
constexpr uint32_t kPoolMagic = 0x4c4f4f50;  // "POOL"
struct PoolExport {
  uint32_t magic;
  int32_t pid;
};
CUresult cuMemPoolExportToShareableHandle(void* out, CUmemoryPool pool, CUmemAllocationHandleType type,
                                          unsigned long long flags) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  const auto* p = lookup<Pool>(pool, HandleKind::Pool);
  if (out == nullptr || p == nullptr || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      (p->props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0 || p->exporter != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const int fd = memfd_create("cutrace-standin-pool", MFD_CLOEXEC);
  const PoolExport e{kPoolMagic, getpid()};
  if (fd < 0 || !writeAll(fd, &e, sizeof(e))) {
    if (fd >= 0) close(fd);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *static_cast<int*>(out) = fd;
  return CUDA_SUCCESS;
}
CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* out, void* handle, CUmemAllocationHandleType type,
                                            unsigned long long flags) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (out == nullptr || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  PoolExport e{};
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(handle));
  if (pread(fd, &e, sizeof(e), 0) != static_cast<ssize_t>(sizeof(e)) || e.magic != kPoolMagic)
    return CUDA_ERROR_INVALID_VALUE;
  if (e.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  auto* made = new Pool{defaultPoolOfDevice.props, e.pid};
  handles().add(made, HandleKind::Pool);
  *out = reinterpret_cast<CUmemoryPool>(made);
  return CUDA_SUCCESS;
}
CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* out, CUdeviceptr p) {
  ENTRY();
  return exportSnapshot(out, p);
}
CUresult cuMemPoolImportPointer(CUdeviceptr* out, CUmemoryPool pool, CUmemPoolPtrExportData* data) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* p = lookup<Pool>(pool, HandleKind::Pool);
  if (p == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  IpcHandle h;
  memcpy(&h, data, sizeof(h));
  if (p->exporter == 0 || h.pid != p->exporter) return CUDA_ERROR_INVALID_VALUE;  // not that process's pool
  return openSnapshot(out, h);
}

// ------------------------------------------------------------------ external memory and semaphores
// Imported from an opaque file descriptor (as Vulkan exports them), which the driver owns once
// the import succeeds. A buffer mapped from external memory is device memory of its own holding
// the descriptor's bytes at its offset (the stand-in's device memory is its process's), freed with
// cuMemFree as the driver's are. A semaphore's signal and wait are ordered on their stream; the
// wait finds the work before it done, as all work is here.
CUresult cuImportExternalMemory(CUexternalMemory* out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  struct stat st{};
  if (out == nullptr || desc == nullptr || desc->size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (desc->type != CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) return CUDA_ERROR_NOT_SUPPORTED;
  if (fstat(desc->handle.fd, &st) != 0 || static_cast<unsigned long long>(st.st_size) < desc->size)
    return CUDA_ERROR_INVALID_VALUE;
  auto* made = new ExternalMemory{desc->handle.fd, static_cast<size_t>(desc->size)};
  handles().add(made, HandleKind::ExternalMemory);
  *out = reinterpret_cast<CUexternalMemory>(made);
  return CUDA_SUCCESS;
}
CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr* p, CUexternalMemory memory,
                                         const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* desc) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* m = lookup<ExternalMemory>(memory, HandleKind::ExternalMemory);
  if (p == nullptr || m == nullptr || desc == nullptr || desc->size == 0 || desc->flags != 0 ||
      desc->offset > m->bytes || desc->size > m->bytes - desc->offset)
    return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr buffer = 0;
  if (CUresult r = allocateDevice(&buffer, desc->size)) return r;
  if (pread(m->fd, reinterpret_cast<void*>(buffer), desc->size, static_cast<off_t>(desc->offset)) < 0) {
    release(buffer, false);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *p = buffer;
  return CUDA_SUCCESS;
}
// A mipmapped array over external memory: its levels must fit in the memory from the offset (the
// stand-in's levels are memory of their own, not read from the descriptor).
CUresult cuExternalMemoryGetMappedMipmappedArray(CUmipmappedArray* out, CUexternalMemory memory,
                                                 const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* desc) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* m = lookup<ExternalMemory>(memory, HandleKind::ExternalMemory);
  if (m == nullptr || desc == nullptr || desc->offset > m->bytes) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = createMipmap(out, &desc->arrayDesc, desc->numLevels)) return r;
  size_t bytes = 0;
  for (const Array* level : reinterpret_cast<const Mipmap*>(*out)->levels) bytes += level->bytes;
  if (bytes <= m->bytes - desc->offset) return CUDA_SUCCESS;
  destroyMipmap(*out);
  return CUDA_ERROR_INVALID_VALUE;
}
// An imported handle destroyed: retired, and the descriptor the driver owns since the import
// (`fd`, read only once the handle is found live) closed.
static CUresult destroyImported(const void* handle, HandleKind kind, const int* fd) {
  if (CUresult r = retireHandle(handle, kind, CUDA_ERROR_INVALID_HANDLE)) return r;
  close(*fd);
  return CUDA_SUCCESS;
}
CUresult cuDestroyExternalMemory(CUexternalMemory memory) {
  ENTRY();
  const auto* m = lookup<ExternalMemory>(memory, HandleKind::ExternalMemory);
  return destroyImported(memory, HandleKind::ExternalMemory, m != nullptr ? &m->fd : nullptr);
}
CUresult cuImportExternalSemaphore(CUexternalSemaphore* out, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* desc) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (out == nullptr || desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (desc->type != CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD &&
      desc->type != CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (fcntl(desc->handle.fd, F_GETFD) < 0) return CUDA_ERROR_INVALID_VALUE;
  auto* made = new ExternalSemaphore{desc->handle.fd};
  handles().add(made, HandleKind::ExternalSemaphore);
  *out = reinterpret_cast<CUexternalSemaphore>(made);
  return CUDA_SUCCESS;
}
CUresult cuDestroyExternalSemaphore(CUexternalSemaphore semaphore) {
  ENTRY();
  const auto* s = lookup<ExternalSemaphore>(semaphore, HandleKind::ExternalSemaphore);
  return destroyImported(semaphore, HandleKind::ExternalSemaphore, s != nullptr ? &s->fd : nullptr);
}
// `count` live semaphores with their parameters (a signal's or a wait's) on a live stream.
static CUresult semaphoresReady(const CUexternalSemaphore* semaphores, const void* params, unsigned count, CUstream s) {
  if (CUresult r = needContext()) return r;
  if (CUresult r = needStream(s)) return r;
  if (semaphores == nullptr || params == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  return liveSemaphores(semaphores, count) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
static CUresult signalSemaphores(const CUexternalSemaphore* semaphores, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params,
                                 unsigned count, CUstream s) {
  if (CUresult r = semaphoresReady(semaphores, params, count, s)) return r;
  for (unsigned i = 0; i < count; ++i)
    reinterpret_cast<ExternalSemaphore*>(semaphores[i])->value.store(params[i].params.fence.value);
  return CUDA_SUCCESS;
}
STANDIN_ENTRY_PTSZ(cuSignalExternalSemaphoresAsync,
                   (const CUexternalSemaphore* semaphores, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params,
                    unsigned count, CUstream s),
                   signalSemaphores(semaphores, params, count, s))
STANDIN_ENTRY_PTSZ(cuWaitExternalSemaphoresAsync,
                   (const CUexternalSemaphore* semaphores, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* params,
                    unsigned count, CUstream s),
                   semaphoresReady(semaphores, params, count, s))

// ------------------------------------------------------------------ context and stream settings
// A context's limits (a thread's stack, the device heap, printf's buffer, the L2 set aside for
// persisting accesses), each within what an H100 takes; the persisting lines reset; a stream's
// attributes (an access policy window's hit ratio is a fraction).
CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  switch (limit) {
    case CU_LIMIT_STACK_SIZE:
    case CU_LIMIT_PRINTF_FIFO_SIZE:
    case CU_LIMIT_MALLOC_HEAP_SIZE:
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: return CUDA_SUCCESS;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY: return value <= 128 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_LIMIT_PERSISTING_L2_CACHE_SIZE: return value <= (size_t{50} << 20) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
  }
}
CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  return takeCacheConfig(config);
}
CUresult cuCtxResetPersistingL2Cache() {
  ENTRY();
  return needContext();
}
static CUresult setStreamAttribute(CUstream s, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  if (CUresult r = needStream(s)) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
      const float hit = value->accessPolicyWindow.hitRatio;
      return hit >= 0 && hit <= 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
STANDIN_ENTRY_PTSZ(cuStreamSetAttribute, (CUstream s, CUstreamAttrID attr, const CUstreamAttrValue* value),
                   setStreamAttribute(s, attr, value))

// ------------------------------------------------------------------ graphics interop (OpenGL)
// There is no OpenGL here: a registered buffer or image (any object but 0, GL's "none") is device
// memory of its own, kGraphicsBytes of it, which the program reaches while the resource is mapped
// (mapping a mapped one, or unmapping one that is not, is refused as NVIDIA's driver refuses it).
constexpr size_t kGraphicsBytes = 4096;
struct GraphicsResource {
  CUdeviceptr memory;
  bool buffer;
  std::atomic<bool> mapped{false};
};
static CUresult registerGraphics(CUgraphicsResource* out, unsigned object, bool buffer) {
  if (CUresult r = needContext()) return r;
  if (out == nullptr || object == 0) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr memory = 0;
  if (CUresult r = allocateDevice(&memory, kGraphicsBytes)) return r;
  auto* made = new GraphicsResource{memory, buffer};
  handles().add(made, HandleKind::GraphicsResource);
  *out = reinterpret_cast<CUgraphicsResource>(made);
  return CUDA_SUCCESS;
}
CUresult cuGraphicsGLRegisterBuffer(CUgraphicsResource* out, unsigned buffer, unsigned flags) {
  ENTRY();
  if (flags > CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD) return CUDA_ERROR_INVALID_VALUE;
  return registerGraphics(out, buffer, true);
}
CUresult cuGraphicsGLRegisterImage(CUgraphicsResource* out, unsigned image, unsigned target, unsigned flags) {
  ENTRY();
  if (target == 0 || flags > CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER) return CUDA_ERROR_INVALID_VALUE;
  return registerGraphics(out, image, false);
}
CUresult cuGraphicsUnregisterResource(CUgraphicsResource resource) {
  ENTRY();
  auto* g = lookup<GraphicsResource>(resource, HandleKind::GraphicsResource);
  if (CUresult r = retireHandle(resource, HandleKind::GraphicsResource, CUDA_ERROR_INVALID_HANDLE)) return r;
  return release(g->memory, false);
}
// Every resource of the list live and not (mapping) or (unmapping) mapped, else nothing changes.
static CUresult mapGraphics(unsigned count, CUgraphicsResource* resources, CUstream s, bool map) {
  if (CUresult r = needStream(s)) return r;
  if (count == 0 || resources == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    const auto* g = lookup<GraphicsResource>(resources[i], HandleKind::GraphicsResource);
    if (g == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (g->mapped.load() == map) return map ? CUDA_ERROR_ALREADY_MAPPED : CUDA_ERROR_NOT_MAPPED;
  }
  for (unsigned i = 0; i < count; ++i) reinterpret_cast<GraphicsResource*>(resources[i])->mapped.store(map);
  return CUDA_SUCCESS;
}
STANDIN_ENTRY_PTSZ(cuGraphicsMapResources, (unsigned count, CUgraphicsResource* resources, CUstream s),
                   mapGraphics(count, resources, s, true))
STANDIN_ENTRY_PTSZ(cuGraphicsUnmapResources, (unsigned count, CUgraphicsResource* resources, CUstream s),
                   mapGraphics(count, resources, s, false))
// A mapped buffer's memory and its size.
CUresult cuGraphicsResourceGetMappedPointer_v2(CUdeviceptr* p, size_t* bytes, CUgraphicsResource resource) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  const auto* g = lookup<GraphicsResource>(resource, HandleKind::GraphicsResource);
  if (g == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!g->mapped.load()) return CUDA_ERROR_NOT_MAPPED;
  if (!g->buffer) return CUDA_ERROR_NOT_MAPPED_AS_POINTER;
  if (p != nullptr) *p = g->memory;
  if (bytes != nullptr) *bytes = kGraphicsBytes;
  return CUDA_SUCCESS;
}

// Stream-ordered allocation completes at once: there is no queue to order it in.
#define STANDIN_ALLOC_ASYNC(name)                                   \
  CUresult name(CUdeviceptr* p, size_t n, CUstream s) {             \
    ENTRY();                                                        \
    if (CUresult r = needStream(s)) return r;                       \
    return allocateDevice(p, n);                                    \
  }
STANDIN_ALLOC_ASYNC(cuMemAllocAsync)
STANDIN_ALLOC_ASYNC(cuMemAllocAsync_ptsz)
#undef STANDIN_ALLOC_ASYNC
#define STANDIN_ALLOC_POOL(name)                                                                     \
  CUresult name(CUdeviceptr* p, size_t n, CUmemoryPool /* pools are opaque: any one serves */, CUstream s) { \
    ENTRY();                                                                                         \
    if (CUresult r = needStream(s)) return r;                                                        \
    return allocateDevice(p, n);                                                                     \
  }
STANDIN_ALLOC_POOL(cuMemAllocFromPoolAsync)
STANDIN_ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz)
#undef STANDIN_ALLOC_POOL
#define STANDIN_FREE_ASYNC(name)                   \
  CUresult name(CUdeviceptr p, CUstream s) {       \
    ENTRY();                                       \
    if (CUresult r = needStream(s)) return r;      \
    return release(addr(p), false);                \
  }
STANDIN_FREE_ASYNC(cuMemFreeAsync)
STANDIN_FREE_ASYNC(cuMemFreeAsync_ptsz)
#undef STANDIN_FREE_ASYNC

// ------------------------------------------------------------------ copies
#define STANDIN_COPY(name, DstT, SrcT)                                                                         \
  CUresult name(DstT dst, SrcT src, size_t n) {                                                                \
    ENTRY();                                                                                                   \
    return copyLinear(addr(dst), addr(src), n);                                                                \
  }
#define STANDIN_COPY_ASYNC(name, DstT, SrcT)                                                                   \
  CUresult name(DstT dst, SrcT src, size_t n, CUstream s) {                                                    \
    ENTRY();                                                                                                   \
    return copyLinear(addr(dst), addr(src), n, s);                                                             \
  }
STANDIN_COPY(cuMemcpy, CUdeviceptr, CUdeviceptr)
STANDIN_COPY(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr)
STANDIN_COPY(cuMemcpyHtoD_v2, CUdeviceptr, const void*)
STANDIN_COPY(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void*)
STANDIN_COPY(cuMemcpyDtoH_v2, void*, CUdeviceptr)
STANDIN_COPY(cuMemcpyDtoH_v2_ptds, void*, CUdeviceptr)
STANDIN_COPY(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr)
STANDIN_COPY(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr)
STANDIN_COPY_ASYNC(cuMemcpyAsync, CUdeviceptr, CUdeviceptr)
STANDIN_COPY_ASYNC(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr)
STANDIN_ENTRY_PTSZ(cuMemcpyBatchAsync_v2,
                   (CUdeviceptr * dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                    size_t* attrsIdxs, size_t numAttrs, CUstream s),
                   copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, s))
// CUDA 12.8's first versions, still exported: the index of a copy that failed, out.
STANDIN_ENTRY_PTSZ(cuMemcpyBatchAsync,
                   (CUdeviceptr * dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                    size_t* attrsIdxs, size_t numAttrs, size_t* failIdx, CUstream s),
                   failIdx == nullptr ? CUDA_ERROR_INVALID_VALUE
                                      : copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, s, failIdx))
// Batch decompression (CUDA 12.8; Blackwell's engine): the stand-in's engine takes LZ4 blocks
// (the device attribute says so), decompressed at once; each buffer's decompressed bytes are
// written to its dstActBytes. A block that does not decode into its buffer is refused, its index
// out.
static bool lz4Length(const unsigned char*& in, const unsigned char* end, size_t& length) {
  if (length != 15) return true;
  for (unsigned char more = 255; more == 255;) {
    if (in == end) return false;
    length += more = *in++;
  }
  return true;
}
static bool decodeLz4(const unsigned char* in, size_t inBytes, unsigned char* out, size_t outBytes, size_t& written) {
  const unsigned char* const end = in + inBytes;
  size_t at = 0;
  while (in < end) {
    const unsigned token = *in++;
    size_t literals = token >> 4;
    if (!lz4Length(in, end, literals) || literals > size_t(end - in) || literals > outBytes - at) return false;
    memcpy(out + at, in, literals);
    in += literals, at += literals;
    if (in == end) break;  // the last sequence: literals only
    if (end - in < 2) return false;
    const size_t offset = in[0] | size_t{in[1]} << 8;
    in += 2;
    size_t match = token & 15;
    if (!lz4Length(in, end, match)) return false;
    match += 4;
    if (offset == 0 || offset > at || match > outBytes - at) return false;
    for (size_t i = 0; i < match; ++i, ++at) out[at] = out[at - offset];  // may overlap itself
  }
  written = at;
  return true;
}
static CUresult decompressBatch(CUmemDecompressParams* params, size_t count, unsigned flags, size_t* errorIndex,
                                CUstream s) {
  if (CUresult r = needStream(s)) return r;
  if (params == nullptr || count == 0 || flags != 0 || errorIndex == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemDecompressParams& p = params[i];
    size_t written = 0;
    if (p.algo != CU_MEM_DECOMPRESS_ALGORITHM_LZ4) return *errorIndex = i, CUDA_ERROR_NOT_SUPPORTED;
    if (p.src == nullptr || p.dst == nullptr || p.dstActBytes == nullptr ||
        !memory().fits(addr(p.src), p.srcNumBytes) || !memory().fits(addr(p.dst), p.dstNumBytes) ||
        !decodeLz4(static_cast<const unsigned char*>(p.src), p.srcNumBytes, static_cast<unsigned char*>(p.dst),
                   p.dstNumBytes, written))
      return *errorIndex = i, CUDA_ERROR_INVALID_VALUE;
    *p.dstActBytes = static_cast<cuuint32_t>(written);
  }
  return CUDA_SUCCESS;
}
STANDIN_ENTRY_PTSZ(cuMemBatchDecompressAsync,
                   (CUmemDecompressParams * params, size_t count, unsigned flags, size_t* errorIndex, CUstream s),
                   decompressBatch(params, count, flags, errorIndex, s))
STANDIN_ENTRY_PTSZ(cuMemcpy3DBatchAsync_v2,
                   (size_t count, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream s),
                   copy3DBatch(count, ops, flags, s))
STANDIN_ENTRY_PTSZ(cuMemcpy3DBatchAsync,
                   (size_t count, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* failIdx, unsigned long long flags, CUstream s),
                   failIdx == nullptr ? CUDA_ERROR_INVALID_VALUE : copy3DBatch(count, ops, flags, s, failIdx))
// The first version (a device ordinal) is still exported for programs built before CUDA 13, whose
// header names CUDA 12.2's location version cuMemPrefetchAsync.
#undef cuMemPrefetchAsync
STANDIN_ENTRY_PTSZ(cuMemPrefetchAsync, (CUdeviceptr p, size_t n, CUdevice device, CUstream s),
                   prefetch(p, n, device == CU_DEVICE_CPU, device, 0, s))
STANDIN_ENTRY_PTSZ(cuMemPrefetchAsync_v2, (CUdeviceptr p, size_t n, CUmemLocation location, unsigned flags, CUstream s),
                   prefetchTo(p, n, location, flags, s))
// As with prefetches, the first version takes a device ordinal.
#undef cuMemAdvise
CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice device) {
  ENTRY();
  return advise(p, n, advice, device == CU_DEVICE_CPU, device);
}
CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation location) {
  ENTRY();
  return adviseTo(p, n, advice, location);
}
STANDIN_ENTRY_PTSZ(cuStreamAttachMemAsync, (CUstream s, CUdeviceptr p, size_t n, unsigned flags),
                   attachMemory(s, p, n, flags))
STANDIN_ENTRY_PTSZ(cuMemPrefetchBatchAsync,
                   (CUdeviceptr * ptrs, size_t* sizes, size_t count, CUmemLocation* locations, size_t* locationIdxs,
                    size_t numLocations, unsigned long long flags, CUstream s),
                   prefetchBatch(ptrs, sizes, count, locations, locationIdxs, numLocations, flags, s))
STANDIN_ENTRY_PTSZ(cuMemDiscardBatchAsync,
                   (CUdeviceptr * ptrs, size_t* sizes, size_t count, unsigned long long flags, CUstream s),
                   prefetchBatch(ptrs, sizes, count, nullptr, nullptr, 0, flags, s))
STANDIN_ENTRY_PTSZ(cuMemDiscardAndPrefetchBatchAsync,
                   (CUdeviceptr * ptrs, size_t* sizes, size_t count, CUmemLocation* locations, size_t* locationIdxs,
                    size_t numLocations, unsigned long long flags, CUstream s),
                   prefetchBatch(ptrs, sizes, count, locations, locationIdxs, numLocations, flags, s))
STANDIN_COPY_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void*)
STANDIN_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void*)
STANDIN_COPY_ASYNC(cuMemcpyDtoHAsync_v2, void*, CUdeviceptr)
STANDIN_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void*, CUdeviceptr)
STANDIN_COPY_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr)
STANDIN_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr)
#undef STANDIN_COPY
#undef STANDIN_COPY_ASYNC

#define STANDIN_COPY_STRUCT(name, T, impl) \
  CUresult name(const T* p) {              \
    ENTRY();                               \
    return impl(p);                        \
  }
#define STANDIN_COPY_STRUCT_ASYNC(name, T, impl) \
  CUresult name(const T* p, CUstream s) {        \
    ENTRY();                                     \
    return impl(p, s);                           \
  }
STANDIN_COPY_STRUCT(cuMemcpy2D_v2, CUDA_MEMCPY2D, copy2D)
STANDIN_COPY_STRUCT(cuMemcpy2D_v2_ptds, CUDA_MEMCPY2D, copy2D)
STANDIN_COPY_STRUCT(cuMemcpy2DUnaligned_v2, CUDA_MEMCPY2D, copy2D)
STANDIN_COPY_STRUCT(cuMemcpy2DUnaligned_v2_ptds, CUDA_MEMCPY2D, copy2D)
STANDIN_COPY_STRUCT(cuMemcpy3D_v2, CUDA_MEMCPY3D, copy3D)
STANDIN_COPY_STRUCT(cuMemcpy3D_v2_ptds, CUDA_MEMCPY3D, copy3D)
STANDIN_COPY_STRUCT_ASYNC(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D, copy2D)
STANDIN_COPY_STRUCT_ASYNC(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D, copy2D)
STANDIN_COPY_STRUCT_ASYNC(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D, copy3D)
STANDIN_COPY_STRUCT_ASYNC(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D, copy3D)
STANDIN_COPY_STRUCT(cuMemcpy3DPeer, CUDA_MEMCPY3D_PEER, copy3DPeer)
STANDIN_COPY_STRUCT(cuMemcpy3DPeer_ptds, CUDA_MEMCPY3D_PEER, copy3DPeer)
STANDIN_COPY_STRUCT_ASYNC(cuMemcpy3DPeerAsync, CUDA_MEMCPY3D_PEER, copy3DPeer)
STANDIN_COPY_STRUCT_ASYNC(cuMemcpy3DPeerAsync_ptsz, CUDA_MEMCPY3D_PEER, copy3DPeer)
#undef STANDIN_COPY_STRUCT
#undef STANDIN_COPY_STRUCT_ASYNC

#define STANDIN_COPY_PEER(name)                                                               \
  CUresult name(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n) { \
    ENTRY();                                                                                  \
    if (CUresult r = needContext()) return r;                                                 \
    if (CUresult r = peerContexts(dstCtx, srcCtx)) return r;                                  \
    return copyLinear(addr(dst), addr(src), n);                                               \
  }
#define STANDIN_COPY_PEER_ASYNC(name)                                                                         \
  CUresult name(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n, CUstream s) { \
    ENTRY();                                                                                                  \
    if (CUresult r = needContext()) return r;                                                                 \
    if (CUresult r = peerContexts(dstCtx, srcCtx)) return r;                                                  \
    return copyLinear(addr(dst), addr(src), n, s);                                                            \
  }
STANDIN_COPY_PEER(cuMemcpyPeer)
STANDIN_COPY_PEER(cuMemcpyPeer_ptds)
STANDIN_COPY_PEER_ASYNC(cuMemcpyPeerAsync)
STANDIN_COPY_PEER_ASYNC(cuMemcpyPeerAsync_ptsz)
#undef STANDIN_COPY_PEER
#undef STANDIN_COPY_PEER_ASYNC

// ------------------------------------------------------------------ sets
#define STANDIN_SET(name, T)                             \
  CUresult name(CUdeviceptr dst, T value, size_t n) {    \
    ENTRY();                                             \
    return fill<T>(dst, value, n);                       \
  }
#define STANDIN_SET_ASYNC(name, T)                                   \
  CUresult name(CUdeviceptr dst, T value, size_t n, CUstream s) {    \
    ENTRY();                                                         \
    return fill<T>(dst, value, n, s);                                \
  }
#define STANDIN_SET_2D(name, T)                                                          \
  CUresult name(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height) {   \
    ENTRY();                                                                             \
    return fill2D<T>(dst, pitch, value, width, height);                                  \
  }
#define STANDIN_SET_2D_ASYNC(name, T)                                                                \
  CUresult name(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height, CUstream s) {   \
    ENTRY();                                                                                         \
    return fill2D<T>(dst, pitch, value, width, height, s);                                           \
  }
STANDIN_SET(cuMemsetD8_v2, unsigned char)
STANDIN_SET(cuMemsetD8_v2_ptds, unsigned char)
STANDIN_SET(cuMemsetD16_v2, unsigned short)
STANDIN_SET(cuMemsetD16_v2_ptds, unsigned short)
STANDIN_SET(cuMemsetD32_v2, unsigned int)
STANDIN_SET(cuMemsetD32_v2_ptds, unsigned int)
STANDIN_SET_ASYNC(cuMemsetD8Async, unsigned char)
STANDIN_SET_ASYNC(cuMemsetD8Async_ptsz, unsigned char)
STANDIN_SET_ASYNC(cuMemsetD16Async, unsigned short)
STANDIN_SET_ASYNC(cuMemsetD16Async_ptsz, unsigned short)
STANDIN_SET_ASYNC(cuMemsetD32Async, unsigned int)
STANDIN_SET_ASYNC(cuMemsetD32Async_ptsz, unsigned int)
STANDIN_SET_2D(cuMemsetD2D8_v2, unsigned char)
STANDIN_SET_2D(cuMemsetD2D8_v2_ptds, unsigned char)
STANDIN_SET_2D(cuMemsetD2D16_v2, unsigned short)
STANDIN_SET_2D(cuMemsetD2D16_v2_ptds, unsigned short)
STANDIN_SET_2D(cuMemsetD2D32_v2, unsigned int)
STANDIN_SET_2D(cuMemsetD2D32_v2_ptds, unsigned int)
STANDIN_SET_2D_ASYNC(cuMemsetD2D8Async, unsigned char)
STANDIN_SET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char)
STANDIN_SET_2D_ASYNC(cuMemsetD2D16Async, unsigned short)
STANDIN_SET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short)
STANDIN_SET_2D_ASYNC(cuMemsetD2D32Async, unsigned int)
STANDIN_SET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int)
#undef STANDIN_SET
#undef STANDIN_SET_ASYNC
#undef STANDIN_SET_2D
#undef STANDIN_SET_2D_ASYNC

// ------------------------------------------------------------------ streams
CUresult cuStreamCreateWithPriority(CUstream* s, unsigned flags, int priority) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (s == nullptr || (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new Stream{flags, priority > 0 ? 0 : (priority < -5 ? -5 : priority)};  // clamped like the driver
  handles().add(stream, HandleKind::Stream);
  *s = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}
// ------------------------------------------------------------------ green contexts (CUDA 12.4)
// A device's SMs as one resource, described, and a green context made of them, with streams of
// its own; the stand-in runs everything at once, so a green context only checks and holds.
CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource* resource, CUdevResourceType type) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (resource == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  memset(resource, 0, sizeof(*resource));
  resource->type = CU_DEV_RESOURCE_TYPE_SM;
  resource->sm.smCount = static_cast<unsigned>(deviceAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  return CUDA_SUCCESS;
}
CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* desc, CUdevResource* resources, unsigned count) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (desc == nullptr || resources == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned sms = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    sms += resources[i].sm.smCount;
  }
  if (sms == 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  auto* d = new ResourceDesc{sms};
  handles().add(d, HandleKind::ResourceDesc);
  *desc = reinterpret_cast<CUdevResourceDesc>(d);
  return CUDA_SUCCESS;
}
CUresult cuGreenCtxCreate(CUgreenCtx* green, CUdevResourceDesc desc, CUdevice dev, unsigned flags) {
  ENTRY();
  if (CUresult r = checkDevice(dev)) return r;
  if (green == nullptr || flags != CU_GREEN_CTX_DEFAULT_STREAM) return CUDA_ERROR_INVALID_VALUE;
  const auto* d = lookup<ResourceDesc>(desc, HandleKind::ResourceDesc);
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* g = new GreenCtx{dev, d->smCount};
  handles().add(g, HandleKind::GreenCtx);
  *green = reinterpret_cast<CUgreenCtx>(g);
  return CUDA_SUCCESS;
}
CUresult cuGreenCtxDestroy(CUgreenCtx green) {
  ENTRY();
  return retireHandle(green, HandleKind::GreenCtx, CUDA_ERROR_INVALID_HANDLE);
}
CUresult cuGreenCtxStreamCreate(CUstream* s, CUgreenCtx green, unsigned flags, int priority) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (!handles().contains(green, HandleKind::GreenCtx)) return CUDA_ERROR_INVALID_HANDLE;
  if (s == nullptr || flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new Stream{flags, priority > 0 ? 0 : (priority < -5 ? -5 : priority)};
  handles().add(stream, HandleKind::Stream);
  *s = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}
CUresult cuGreenCtxRecordEvent(CUgreenCtx green, CUevent e) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (!handles().contains(green, HandleKind::GreenCtx)) return CUDA_ERROR_INVALID_HANDLE;
  return recordEvent(e, nullptr);  // the context's work is done when issued: the event is complete
}
CUresult cuGreenCtxWaitEvent(CUgreenCtx green, CUevent e) {
  ENTRY();
  if (CUresult r = needInit()) return r;
  if (!handles().contains(green, HandleKind::GreenCtx)) return CUDA_ERROR_INVALID_HANDLE;
  return checkEvent(e);
}
CUresult cuStreamCreate(CUstream* s, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  if (s == nullptr || (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new Stream{flags, 0};
  handles().add(stream, HandleKind::Stream);
  *s = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream s) {
  ENTRY();
  return retireHandle(s, HandleKind::Stream, CUDA_ERROR_INVALID_HANDLE);
}
CUresult cuStreamDestroy_v2(CUstream s) {
  ENTRY();
  return retireHandle(s, HandleKind::Stream, CUDA_ERROR_INVALID_HANDLE);
}
// Work completes when it is issued, so every stream is always idle.
STANDIN_ENTRY_PTSZ(cuStreamSynchronize, (CUstream s), needStream(s))
STANDIN_ENTRY_PTSZ(cuStreamQuery, (CUstream s), needStream(s))

// ------------------------------------------------------------------ events

CUresult cuEventCreate(CUevent* e, unsigned flags) {
  ENTRY();
  if (CUresult r = needContext()) return r;
  constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (e == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* event = new Event();
  event->flags = flags;
  handles().add(event, HandleKind::Event);
  *e = reinterpret_cast<CUevent>(event);
  return CUDA_SUCCESS;
}
STANDIN_ENTRY_PTSZ(cuEventRecord, (CUevent e, CUstream s), recordEvent(e, s))
STANDIN_ENTRY_PTSZ(cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned flags),
                   (flags & ~unsigned{CU_EVENT_RECORD_EXTERNAL}) != 0 ? CUDA_ERROR_INVALID_VALUE : recordEvent(e, s))
STANDIN_ENTRY_PTSZ(cuLaunchHostFunc, (CUstream s, CUhostFn fn, void* userData), runHostFunction(s, fn, userData))
STANDIN_ENTRY_PTSZ(cuStreamAddCallback, (CUstream s, CUstreamCallback fn, void* userData, unsigned flags),
                   runCallback(s, fn, userData, flags))
#define STANDIN_STREAM_MEMOPS(version)                                                                                 \
  STANDIN_ENTRY_PTSZ(cuStreamWaitValue32##version, (CUstream s, CUdeviceptr addr, cuuint32_t, unsigned flags),      \
                     waitValue(s, addr, 4, flags))                                                                     \
  STANDIN_ENTRY_PTSZ(cuStreamWaitValue64##version, (CUstream s, CUdeviceptr addr, cuuint64_t, unsigned flags),      \
                     waitValue(s, addr, 8, flags))                                                                     \
  STANDIN_ENTRY_PTSZ(cuStreamWriteValue32##version, (CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags), \
                     writeValue<cuuint32_t>(s, addr, value, flags))                                                    \
  STANDIN_ENTRY_PTSZ(cuStreamWriteValue64##version, (CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags), \
                     writeValue<cuuint64_t>(s, addr, value, flags))                                                    \
  STANDIN_ENTRY_PTSZ(cuStreamBatchMemOp##version,                                                                    \
                     (CUstream s, unsigned count, CUstreamBatchMemOpParams* ops, unsigned flags),                    \
                     batchMemOp(s, count, ops, flags))
STANDIN_STREAM_MEMOPS()
STANDIN_STREAM_MEMOPS(_v2)
#undef STANDIN_STREAM_MEMOPS
CUresult cuEventQuery(CUevent e) {
  ENTRY();
  return checkEvent(e);
}
STANDIN_ENTRY_PTSZ(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned flags), waitEvent(s, e, flags))
CUresult cuEventSynchronize(CUevent e) {
  ENTRY();
  return checkEvent(e);
}
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  ENTRY();
  return elapsed(ms, start, end);
}
CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  ENTRY();
  return elapsed(ms, start, end);
}
CUresult cuEventDestroy(CUevent e) {
  ENTRY();
  return retireHandle(e, HandleKind::Event, CUDA_ERROR_INVALID_HANDLE);
}
CUresult cuEventDestroy_v2(CUevent e) {
  ENTRY();
  return retireHandle(e, HandleKind::Event, CUDA_ERROR_INVALID_HANDLE);
}

// ------------------------------------------------------------------ profiler control
CUresult cuProfilerStart() {
  ENTRY();
  return needContext();
}
CUresult cuProfilerStop() {
  ENTRY();
  return needContext();
}

}  // extern "C"

// ------------------------------------------------------------------ cuGetProcAddress
namespace {

// One row per exported function: the name a caller asks for, the first CUDA version that
// returns this entry point, the function, and whether it is the per-thread-default-stream twin.
// Versions are those of NVIDIA's PFN_<name>_v<version> typedefs in cudaTypedefs.h.
struct ProcEntry {
  const char* name;
  int version;
  void* function;
  bool perThread;
};

#define E(name, version, fn) {#name, version, reinterpret_cast<void*>(&fn), false}
#define PT(name, version, fn) {#name, version, reinterpret_cast<void*>(&fn), true}
const ProcEntry kProcTable[] = {
    E(cuInit, 2000, cuInit),
    E(cuDriverGetVersion, 2020, cuDriverGetVersion),
    E(cuDeviceGetCount, 2000, cuDeviceGetCount),
    E(cuDeviceGet, 2000, cuDeviceGet),
    E(cuDeviceGetName, 2000, cuDeviceGetName),
    E(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
    E(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    E(cuCtxCreate, 3020, cuCtxCreate_v2),
    E(cuCtxCreate, 11040, cuCtxCreate_v3),
    E(cuCtxCreate, 12050, cuCtxCreate_v4),
    E(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease),
    E(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    E(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset),
    E(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2),
    E(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
    E(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    E(cuCtxGetDevice, 2000, cuCtxGetDevice),
    E(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
    E(cuCtxDestroy, 2000, cuCtxDestroy),
    E(cuCtxDestroy, 4000, cuCtxDestroy_v2),
    E(cuCtxSynchronize, 2000, cuCtxSynchronize),
    E(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),
    E(cuGetErrorName, 6000, cuGetErrorName),
    E(cuGetErrorString, 6000, cuGetErrorString),
    E(cuGetExportTable, 3000, cuGetExportTable),
    E(cuModuleLoadData, 2000, cuModuleLoadData),
    E(cuModuleLoad, 2000, cuModuleLoad),
    E(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx),
    E(cuModuleLoadFatBinary, 2000, cuModuleLoadFatBinary),
    E(cuModuleGetFunction, 2000, cuModuleGetFunction),
    E(cuModuleUnload, 2000, cuModuleUnload),
    E(cuLibraryLoadData, 12000, cuLibraryLoadData),
    E(cuLibraryLoadFromFile, 12000, cuLibraryLoadFromFile),
    E(cuLibraryGetKernel, 12000, cuLibraryGetKernel),
    E(cuLibraryUnload, 12000, cuLibraryUnload),
    E(cuKernelGetFunction, 12000, cuKernelGetFunction),
    E(cuFuncGetName, 12030, cuFuncGetName),
    E(cuKernelGetName, 12030, cuKernelGetName),
    E(cuLaunchKernel, 4000, cuLaunchKernel),
    PT(cuLaunchKernel, 7000, cuLaunchKernel_ptsz),
    E(cuLaunchKernelEx, 11060, cuLaunchKernelEx),
    PT(cuLaunchKernelEx, 11060, cuLaunchKernelEx_ptsz),
    E(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel),
    PT(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel_ptsz),
    E(cuLaunchCooperativeKernelMultiDevice, 9000, cuLaunchCooperativeKernelMultiDevice),
    E(cuFuncSetBlockShape, 2000, cuFuncSetBlockShape),
    E(cuFuncSetSharedSize, 2000, cuFuncSetSharedSize),
    E(cuParamSetSize, 2000, cuParamSetSize),
    E(cuParamSeti, 2000, cuParamSeti),
    E(cuParamSetf, 2000, cuParamSetf),
    E(cuParamSetv, 2000, cuParamSetv),
    E(cuLaunch, 2000, cuLaunch),
    E(cuLaunchGrid, 2000, cuLaunchGrid),
    E(cuLaunchGridAsync, 2000, cuLaunchGridAsync),
    E(cuStreamBeginCapture, 10000, cuStreamBeginCapture),
    PT(cuStreamBeginCapture, 10000, cuStreamBeginCapture_ptsz),
    E(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2),
    PT(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2_ptsz),
    E(cuStreamEndCapture, 10000, cuStreamEndCapture),
    PT(cuStreamEndCapture, 10000, cuStreamEndCapture_ptsz),
    E(cuGraphInstantiate, 10000, cuGraphInstantiate),
    E(cuGraphInstantiate, 11000, cuGraphInstantiate_v2),
    E(cuGraphInstantiate, 12000, cuGraphInstantiateWithFlags),
    E(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags),
    E(cuGraphInstantiateWithParams, 12000, cuGraphInstantiateWithParams),
    PT(cuGraphInstantiateWithParams, 12000, cuGraphInstantiateWithParams_ptsz),
    E(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph),
    PT(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph_ptsz),
    E(cuLinkCreate, 5050, cuLinkCreate),
    E(cuLinkAddData, 5050, cuLinkAddData),
    E(cuLinkAddFile, 5050, cuLinkAddFile),
    E(cuLinkCreate, 6050, cuLinkCreate_v2),
    E(cuLinkAddData, 6050, cuLinkAddData_v2),
    E(cuLinkAddFile, 6050, cuLinkAddFile_v2),
    E(cuLinkComplete, 5050, cuLinkComplete),
    E(cuLinkDestroy, 5050, cuLinkDestroy),
    E(cuGraphCreate, 10000, cuGraphCreate),
    E(cuGraphAddKernelNode, 10000, cuGraphAddKernelNode),
    E(cuGraphAddKernelNode, 12000, cuGraphAddKernelNode_v2),
    E(cuGraphAddMemcpyNode, 10000, cuGraphAddMemcpyNode),
    E(cuGraphAddMemsetNode, 10000, cuGraphAddMemsetNode),
    E(cuGraphAddHostNode, 10000, cuGraphAddHostNode),
    E(cuGraphAddChildGraphNode, 10000, cuGraphAddChildGraphNode),
    E(cuGraphAddEmptyNode, 10000, cuGraphAddEmptyNode),
    E(cuGraphAddEventRecordNode, 11010, cuGraphAddEventRecordNode),
    E(cuGraphAddEventWaitNode, 11010, cuGraphAddEventWaitNode),
    E(cuGraphAddNode, 12020, cuGraphAddNode),
    E(cuGraphAddNode, 12030, cuGraphAddNode_v2),
    E(cuGraphAddMemAllocNode, 11040, cuGraphAddMemAllocNode),
    E(cuGraphAddMemFreeNode, 11040, cuGraphAddMemFreeNode),
    E(cuGraphAddBatchMemOpNode, 11070, cuGraphAddBatchMemOpNode),
    E(cuGraphKernelNodeSetParams, 10000, cuGraphKernelNodeSetParams),
    E(cuGraphKernelNodeSetParams, 12000, cuGraphKernelNodeSetParams_v2),
    E(cuGraphMemcpyNodeSetParams, 10000, cuGraphMemcpyNodeSetParams),
    E(cuGraphMemsetNodeSetParams, 10000, cuGraphMemsetNodeSetParams),
    E(cuGraphHostNodeSetParams, 10000, cuGraphHostNodeSetParams),
    E(cuGraphEventRecordNodeSetEvent, 11010, cuGraphEventRecordNodeSetEvent),
    E(cuGraphEventWaitNodeSetEvent, 11010, cuGraphEventWaitNodeSetEvent),
    E(cuGraphNodeSetParams, 12020, cuGraphNodeSetParams),
    E(cuGraphExecKernelNodeSetParams, 10010, cuGraphExecKernelNodeSetParams),
    E(cuGraphExecKernelNodeSetParams, 12000, cuGraphExecKernelNodeSetParams_v2),
    E(cuGraphExecMemcpyNodeSetParams, 10020, cuGraphExecMemcpyNodeSetParams),
    E(cuGraphExecMemsetNodeSetParams, 10020, cuGraphExecMemsetNodeSetParams),
    E(cuGraphExecHostNodeSetParams, 10020, cuGraphExecHostNodeSetParams),
    E(cuGraphExecChildGraphNodeSetParams, 11010, cuGraphExecChildGraphNodeSetParams),
    E(cuGraphExecEventRecordNodeSetEvent, 11010, cuGraphExecEventRecordNodeSetEvent),
    E(cuGraphExecEventWaitNodeSetEvent, 11010, cuGraphExecEventWaitNodeSetEvent),
    E(cuGraphAddExternalSemaphoresSignalNode, 11020, cuGraphAddExternalSemaphoresSignalNode),
    E(cuGraphAddExternalSemaphoresWaitNode, 11020, cuGraphAddExternalSemaphoresWaitNode),
    E(cuGraphExternalSemaphoresSignalNodeSetParams, 11020, cuGraphExternalSemaphoresSignalNodeSetParams),
    E(cuGraphExternalSemaphoresWaitNodeSetParams, 11020, cuGraphExternalSemaphoresWaitNodeSetParams),
    E(cuGraphExecExternalSemaphoresSignalNodeSetParams, 11020, cuGraphExecExternalSemaphoresSignalNodeSetParams),
    E(cuGraphExecExternalSemaphoresWaitNodeSetParams, 11020, cuGraphExecExternalSemaphoresWaitNodeSetParams),
    E(cuGraphExecNodeSetParams, 12020, cuGraphExecNodeSetParams),
    E(cuGraphExecUpdate, 10020, cuGraphExecUpdate),
    E(cuGraphExecUpdate, 12000, cuGraphExecUpdate_v2),
    E(cuGraphDestroy, 10000, cuGraphDestroy),
    E(cuStreamUpdateCaptureDependencies, 11030, cuStreamUpdateCaptureDependencies),
    PT(cuStreamUpdateCaptureDependencies, 11030, cuStreamUpdateCaptureDependencies_ptsz),
    E(cuStreamUpdateCaptureDependencies, 12030, cuStreamUpdateCaptureDependencies_v2),
    PT(cuStreamUpdateCaptureDependencies, 12030, cuStreamUpdateCaptureDependencies_v2_ptsz),
    E(cuGraphBatchMemOpNodeSetParams, 11070, cuGraphBatchMemOpNodeSetParams),
    E(cuGraphExecBatchMemOpNodeSetParams, 11070, cuGraphExecBatchMemOpNodeSetParams),
    E(cuGraphKernelNodeSetAttribute, 11000, cuGraphKernelNodeSetAttribute),
    E(cuGraphKernelNodeCopyAttributes, 11000, cuGraphKernelNodeCopyAttributes),
    E(cuGraphNodeSetEnabled, 11060, cuGraphNodeSetEnabled),
    E(cuGraphConditionalHandleCreate, 12030, cuGraphConditionalHandleCreate),
    E(cuDeviceGraphMemTrim, 11040, cuDeviceGraphMemTrim),
    E(cuUserObjectCreate, 11030, cuUserObjectCreate),
    E(cuUserObjectRetain, 11030, cuUserObjectRetain),
    E(cuUserObjectRelease, 11030, cuUserObjectRelease),
    E(cuGraphRetainUserObject, 11030, cuGraphRetainUserObject),
    E(cuGraphReleaseUserObject, 11030, cuGraphReleaseUserObject),
    E(cuGraphAddDependencies, 10000, cuGraphAddDependencies),
    E(cuGraphAddDependencies, 12030, cuGraphAddDependencies_v2),
    E(cuGraphRemoveDependencies, 10000, cuGraphRemoveDependencies),
    E(cuGraphRemoveDependencies, 12030, cuGraphRemoveDependencies_v2),
    E(cuGraphDestroyNode, 10000, cuGraphDestroyNode),
    E(cuGraphClone, 10000, cuGraphClone),
    E(cuGraphExecDestroy, 10000, cuGraphExecDestroy),
    E(cuGraphUpload, 11010, cuGraphUpload),
    PT(cuGraphUpload, 11010, cuGraphUpload_ptsz),
    E(cuGraphLaunch, 10000, cuGraphLaunch),
    PT(cuGraphLaunch, 10000, cuGraphLaunch_ptsz),
    E(cuMemAlloc, 3020, cuMemAlloc_v2),
    E(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
    E(cuArrayCreate, 3020, cuArrayCreate_v2),
    E(cuArray3DCreate, 3020, cuArray3DCreate_v2),
    E(cuArrayDestroy, 2000, cuArrayDestroy),
    E(cuArray3DGetDescriptor, 3020, cuArray3DGetDescriptor_v2),
    E(cuMipmappedArrayCreate, 5000, cuMipmappedArrayCreate),
    E(cuMipmappedArrayGetLevel, 5000, cuMipmappedArrayGetLevel),
    E(cuMipmappedArrayDestroy, 5000, cuMipmappedArrayDestroy),
    E(cuExternalMemoryGetMappedMipmappedArray, 10000, cuExternalMemoryGetMappedMipmappedArray),
    E(cuMemcpyHtoA, 3020, cuMemcpyHtoA_v2),
    PT(cuMemcpyHtoA, 7000, cuMemcpyHtoA_v2_ptds),
    E(cuMemcpyAtoH, 3020, cuMemcpyAtoH_v2),
    PT(cuMemcpyAtoH, 7000, cuMemcpyAtoH_v2_ptds),
    E(cuMemcpyDtoA, 3020, cuMemcpyDtoA_v2),
    PT(cuMemcpyDtoA, 7000, cuMemcpyDtoA_v2_ptds),
    E(cuMemcpyAtoD, 3020, cuMemcpyAtoD_v2),
    PT(cuMemcpyAtoD, 7000, cuMemcpyAtoD_v2_ptds),
    E(cuMemcpyAtoA, 3020, cuMemcpyAtoA_v2),
    PT(cuMemcpyAtoA, 7000, cuMemcpyAtoA_v2_ptds),
    E(cuMemcpyHtoAAsync, 3020, cuMemcpyHtoAAsync_v2),
    PT(cuMemcpyHtoAAsync, 7000, cuMemcpyHtoAAsync_v2_ptsz),
    E(cuMemcpyAtoHAsync, 3020, cuMemcpyAtoHAsync_v2),
    PT(cuMemcpyAtoHAsync, 7000, cuMemcpyAtoHAsync_v2_ptsz),
    E(cuMemAllocManaged, 6000, cuMemAllocManaged),
    E(cuMemAllocHost, 3020, cuMemAllocHost_v2),
    E(cuMemHostAlloc, 2020, cuMemHostAlloc),
    E(cuMemFree, 3020, cuMemFree_v2),
    E(cuMemFreeHost, 2000, cuMemFreeHost),
    E(cuMemHostRegister, 6050, cuMemHostRegister_v2),
    E(cuMemHostUnregister, 4000, cuMemHostUnregister),
    E(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity),
    E(cuMemCreate, 10020, cuMemCreate),
    E(cuMemRelease, 10020, cuMemRelease),
    E(cuMemExportToShareableHandle, 10020, cuMemExportToShareableHandle),
    E(cuMemImportFromShareableHandle, 10020, cuMemImportFromShareableHandle),
    E(cuMemRetainAllocationHandle, 11000, cuMemRetainAllocationHandle),
    E(cuMulticastGetGranularity, 12010, cuMulticastGetGranularity),
    E(cuMulticastCreate, 12010, cuMulticastCreate),
    E(cuMulticastAddDevice, 12010, cuMulticastAddDevice),
    E(cuMulticastBindMem, 12010, cuMulticastBindMem),
    E(cuMulticastBindAddr, 12010, cuMulticastBindAddr),
    E(cuMulticastUnbind, 12010, cuMulticastUnbind),
    E(cuMemAddressReserve, 10020, cuMemAddressReserve),
    E(cuMemAddressFree, 10020, cuMemAddressFree),
    E(cuMemMap, 10020, cuMemMap),
    E(cuMemSetAccess, 10020, cuMemSetAccess),
    E(cuMemUnmap, 10020, cuMemUnmap),
    E(cuMemAllocAsync, 11020, cuMemAllocAsync),
    PT(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz),
    E(cuDeviceGetDefaultMemPool, 11020, cuDeviceGetDefaultMemPool),
    E(cuMemPoolCreate, 11020, cuMemPoolCreate),
    E(cuMemPoolDestroy, 11020, cuMemPoolDestroy),
    E(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo),
    E(cuMemPoolSetAttribute, 11020, cuMemPoolSetAttribute),
    E(cuMemPoolSetAccess, 11020, cuMemPoolSetAccess),
    E(cuDeviceSetMemPool, 11020, cuDeviceSetMemPool),
    E(cuMemSetMemPool, 13000, cuMemSetMemPool),
    E(cuFuncSetAttribute, 9000, cuFuncSetAttribute),
    E(cuKernelSetAttribute, 12000, cuKernelSetAttribute),
    E(cuFuncSetCacheConfig, 3000, cuFuncSetCacheConfig),
    E(cuKernelSetCacheConfig, 12000, cuKernelSetCacheConfig),
    E(cuCtxSetLimit, 3010, cuCtxSetLimit),
    E(cuCtxSetCacheConfig, 3020, cuCtxSetCacheConfig),
    E(cuCtxResetPersistingL2Cache, 11000, cuCtxResetPersistingL2Cache),
    E(cuStreamSetAttribute, 11000, cuStreamSetAttribute),
    PT(cuStreamSetAttribute, 11000, cuStreamSetAttribute_ptsz),
    E(cuMemPoolExportToShareableHandle, 11020, cuMemPoolExportToShareableHandle),
    E(cuMemPoolImportFromShareableHandle, 11020, cuMemPoolImportFromShareableHandle),
    E(cuMemPoolExportPointer, 11020, cuMemPoolExportPointer),
    E(cuMemPoolImportPointer, 11020, cuMemPoolImportPointer),
    E(cuGraphicsGLRegisterBuffer, 3000, cuGraphicsGLRegisterBuffer),
    E(cuGraphicsGLRegisterImage, 3000, cuGraphicsGLRegisterImage),
    E(cuGraphicsUnregisterResource, 3000, cuGraphicsUnregisterResource),
    E(cuGraphicsMapResources, 3000, cuGraphicsMapResources),
    PT(cuGraphicsMapResources, 7000, cuGraphicsMapResources_ptsz),
    E(cuGraphicsUnmapResources, 3000, cuGraphicsUnmapResources),
    PT(cuGraphicsUnmapResources, 7000, cuGraphicsUnmapResources_ptsz),
    E(cuGraphicsResourceGetMappedPointer, 3020, cuGraphicsResourceGetMappedPointer_v2),
    E(cuImportExternalMemory, 10000, cuImportExternalMemory),
    E(cuExternalMemoryGetMappedBuffer, 10000, cuExternalMemoryGetMappedBuffer),
    E(cuDestroyExternalMemory, 10000, cuDestroyExternalMemory),
    E(cuImportExternalSemaphore, 10000, cuImportExternalSemaphore),
    E(cuSignalExternalSemaphoresAsync, 10000, cuSignalExternalSemaphoresAsync),
    PT(cuSignalExternalSemaphoresAsync, 10000, cuSignalExternalSemaphoresAsync_ptsz),
    E(cuWaitExternalSemaphoresAsync, 10000, cuWaitExternalSemaphoresAsync),
    PT(cuWaitExternalSemaphoresAsync, 10000, cuWaitExternalSemaphoresAsync_ptsz),
    E(cuDestroyExternalSemaphore, 10000, cuDestroyExternalSemaphore),
    E(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync),
    PT(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync_ptsz),
    E(cuMemFreeAsync, 11020, cuMemFreeAsync),
    PT(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz),
    E(cuMemcpy, 4000, cuMemcpy),
    PT(cuMemcpy, 7000, cuMemcpy_ptds),
    E(cuMemcpyAsync, 4000, cuMemcpyAsync),
    PT(cuMemcpyAsync, 7000, cuMemcpyAsync_ptsz),
    E(cuMemcpyBatchAsync, 12080, cuMemcpyBatchAsync),
    PT(cuMemcpyBatchAsync, 12080, cuMemcpyBatchAsync_ptsz),
    E(cuMemcpyBatchAsync, 13000, cuMemcpyBatchAsync_v2),
    PT(cuMemcpyBatchAsync, 13000, cuMemcpyBatchAsync_v2_ptsz),
    E(cuMemBatchDecompressAsync, 12060, cuMemBatchDecompressAsync),
    PT(cuMemBatchDecompressAsync, 12060, cuMemBatchDecompressAsync_ptsz),
    E(cuMemcpy3DBatchAsync, 12080, cuMemcpy3DBatchAsync),
    PT(cuMemcpy3DBatchAsync, 12080, cuMemcpy3DBatchAsync_ptsz),
    E(cuMemcpy3DBatchAsync, 13000, cuMemcpy3DBatchAsync_v2),
    PT(cuMemcpy3DBatchAsync, 13000, cuMemcpy3DBatchAsync_v2_ptsz),
    E(cuMemPrefetchAsync, 8000, cuMemPrefetchAsync),
    PT(cuMemPrefetchAsync, 8000, cuMemPrefetchAsync_ptsz),
    E(cuMemPrefetchAsync, 12020, cuMemPrefetchAsync_v2),
    E(cuMemAdvise, 8000, cuMemAdvise),
    E(cuMemAdvise, 12020, cuMemAdvise_v2),
    E(cuStreamAttachMemAsync, 6000, cuStreamAttachMemAsync),
    PT(cuStreamAttachMemAsync, 7000, cuStreamAttachMemAsync_ptsz),
    PT(cuMemPrefetchAsync, 12020, cuMemPrefetchAsync_v2_ptsz),
    E(cuMemPrefetchBatchAsync, 13000, cuMemPrefetchBatchAsync),
    PT(cuMemPrefetchBatchAsync, 13000, cuMemPrefetchBatchAsync_ptsz),
    E(cuMemDiscardBatchAsync, 13000, cuMemDiscardBatchAsync),
    PT(cuMemDiscardBatchAsync, 13000, cuMemDiscardBatchAsync_ptsz),
    E(cuMemDiscardAndPrefetchBatchAsync, 13000, cuMemDiscardAndPrefetchBatchAsync),
    PT(cuMemDiscardAndPrefetchBatchAsync, 13000, cuMemDiscardAndPrefetchBatchAsync_ptsz),
    E(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2),
    PT(cuMemcpyHtoD, 7000, cuMemcpyHtoD_v2_ptds),
    E(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2),
    PT(cuMemcpyDtoH, 7000, cuMemcpyDtoH_v2_ptds),
    E(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2),
    PT(cuMemcpyDtoD, 7000, cuMemcpyDtoD_v2_ptds),
    E(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2),
    PT(cuMemcpyHtoDAsync, 7000, cuMemcpyHtoDAsync_v2_ptsz),
    E(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2),
    PT(cuMemcpyDtoHAsync, 7000, cuMemcpyDtoHAsync_v2_ptsz),
    E(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2),
    PT(cuMemcpyDtoDAsync, 7000, cuMemcpyDtoDAsync_v2_ptsz),
    E(cuMemcpy2D, 3020, cuMemcpy2D_v2),
    PT(cuMemcpy2D, 7000, cuMemcpy2D_v2_ptds),
    E(cuMemcpy2DUnaligned, 3020, cuMemcpy2DUnaligned_v2),
    PT(cuMemcpy2DUnaligned, 7000, cuMemcpy2DUnaligned_v2_ptds),
    E(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2),
    PT(cuMemcpy2DAsync, 7000, cuMemcpy2DAsync_v2_ptsz),
    E(cuMemcpy3D, 3020, cuMemcpy3D_v2),
    PT(cuMemcpy3D, 7000, cuMemcpy3D_v2_ptds),
    E(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync_v2),
    PT(cuMemcpy3DAsync, 7000, cuMemcpy3DAsync_v2_ptsz),
    E(cuMemcpy3DPeer, 4000, cuMemcpy3DPeer),
    PT(cuMemcpy3DPeer, 7000, cuMemcpy3DPeer_ptds),
    E(cuMemcpy3DPeerAsync, 4000, cuMemcpy3DPeerAsync),
    PT(cuMemcpy3DPeerAsync, 7000, cuMemcpy3DPeerAsync_ptsz),
    E(cuMemcpyPeer, 4000, cuMemcpyPeer),
    PT(cuMemcpyPeer, 7000, cuMemcpyPeer_ptds),
    E(cuMemcpyPeerAsync, 4000, cuMemcpyPeerAsync),
    PT(cuMemcpyPeerAsync, 7000, cuMemcpyPeerAsync_ptsz),
    E(cuMemsetD8, 3020, cuMemsetD8_v2),
    PT(cuMemsetD8, 7000, cuMemsetD8_v2_ptds),
    E(cuMemsetD16, 3020, cuMemsetD16_v2),
    PT(cuMemsetD16, 7000, cuMemsetD16_v2_ptds),
    E(cuMemsetD32, 3020, cuMemsetD32_v2),
    PT(cuMemsetD32, 7000, cuMemsetD32_v2_ptds),
    E(cuMemsetD8Async, 3020, cuMemsetD8Async),
    PT(cuMemsetD8Async, 7000, cuMemsetD8Async_ptsz),
    E(cuMemsetD16Async, 3020, cuMemsetD16Async),
    PT(cuMemsetD16Async, 7000, cuMemsetD16Async_ptsz),
    E(cuMemsetD32Async, 3020, cuMemsetD32Async),
    PT(cuMemsetD32Async, 7000, cuMemsetD32Async_ptsz),
    E(cuMemsetD2D8, 3020, cuMemsetD2D8_v2),
    PT(cuMemsetD2D8, 7000, cuMemsetD2D8_v2_ptds),
    E(cuMemsetD2D16, 3020, cuMemsetD2D16_v2),
    PT(cuMemsetD2D16, 7000, cuMemsetD2D16_v2_ptds),
    E(cuMemsetD2D32, 3020, cuMemsetD2D32_v2),
    PT(cuMemsetD2D32, 7000, cuMemsetD2D32_v2_ptds),
    E(cuMemsetD2D8Async, 3020, cuMemsetD2D8Async),
    PT(cuMemsetD2D8Async, 7000, cuMemsetD2D8Async_ptsz),
    E(cuMemsetD2D16Async, 3020, cuMemsetD2D16Async),
    PT(cuMemsetD2D16Async, 7000, cuMemsetD2D16Async_ptsz),
    E(cuMemsetD2D32Async, 3020, cuMemsetD2D32Async),
    PT(cuMemsetD2D32Async, 7000, cuMemsetD2D32Async_ptsz),
    E(cuStreamCreate, 2000, cuStreamCreate),
    E(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority),
    E(cuDeviceGetDevResource, 12040, cuDeviceGetDevResource),
    E(cuDevResourceGenerateDesc, 12040, cuDevResourceGenerateDesc),
    E(cuGreenCtxCreate, 12040, cuGreenCtxCreate),
    E(cuGreenCtxDestroy, 12040, cuGreenCtxDestroy),
    E(cuGreenCtxStreamCreate, 12050, cuGreenCtxStreamCreate),
    E(cuGreenCtxRecordEvent, 12040, cuGreenCtxRecordEvent),
    E(cuGreenCtxWaitEvent, 12040, cuGreenCtxWaitEvent),
    E(cuCtxRecordEvent, 12050, cuCtxRecordEvent),
    E(cuDeviceCanAccessPeer, 4000, cuDeviceCanAccessPeer),
    E(cuCtxEnablePeerAccess, 4000, cuCtxEnablePeerAccess),
    E(cuCtxDisablePeerAccess, 4000, cuCtxDisablePeerAccess),
    E(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2),
    E(cuIpcGetMemHandle, 4010, cuIpcGetMemHandle),
    E(cuIpcOpenMemHandle, 4010, cuIpcOpenMemHandle),
    E(cuIpcOpenMemHandle, 11000, cuIpcOpenMemHandle_v2),
    E(cuIpcCloseMemHandle, 4010, cuIpcCloseMemHandle),
    E(cuIpcGetEventHandle, 4010, cuIpcGetEventHandle),
    E(cuIpcOpenEventHandle, 4010, cuIpcOpenEventHandle),
    E(cuCtxWaitEvent, 12050, cuCtxWaitEvent),
    E(cuStreamDestroy, 2000, cuStreamDestroy),
    E(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    E(cuStreamSynchronize, 2000, cuStreamSynchronize),
    PT(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz),
    E(cuStreamQuery, 2000, cuStreamQuery),
    PT(cuStreamQuery, 7000, cuStreamQuery_ptsz),
    E(cuEventCreate, 2000, cuEventCreate),
    E(cuEventRecord, 2000, cuEventRecord),
    PT(cuEventRecord, 7000, cuEventRecord_ptsz),
    E(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags),
    PT(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags_ptsz),
    E(cuStreamWaitValue32, 8000, cuStreamWaitValue32),
    PT(cuStreamWaitValue32, 8000, cuStreamWaitValue32_ptsz),
    E(cuStreamWaitValue32, 11070, cuStreamWaitValue32_v2),
    PT(cuStreamWaitValue32, 11070, cuStreamWaitValue32_v2_ptsz),
    E(cuStreamWaitValue64, 8000, cuStreamWaitValue64),
    PT(cuStreamWaitValue64, 8000, cuStreamWaitValue64_ptsz),
    E(cuStreamWaitValue64, 11070, cuStreamWaitValue64_v2),
    PT(cuStreamWaitValue64, 11070, cuStreamWaitValue64_v2_ptsz),
    E(cuStreamWriteValue32, 8000, cuStreamWriteValue32),
    PT(cuStreamWriteValue32, 8000, cuStreamWriteValue32_ptsz),
    E(cuStreamWriteValue32, 11070, cuStreamWriteValue32_v2),
    PT(cuStreamWriteValue32, 11070, cuStreamWriteValue32_v2_ptsz),
    E(cuStreamWriteValue64, 8000, cuStreamWriteValue64),
    PT(cuStreamWriteValue64, 8000, cuStreamWriteValue64_ptsz),
    E(cuStreamWriteValue64, 11070, cuStreamWriteValue64_v2),
    PT(cuStreamWriteValue64, 11070, cuStreamWriteValue64_v2_ptsz),
    E(cuStreamBatchMemOp, 8000, cuStreamBatchMemOp),
    PT(cuStreamBatchMemOp, 8000, cuStreamBatchMemOp_ptsz),
    E(cuStreamBatchMemOp, 11070, cuStreamBatchMemOp_v2),
    PT(cuStreamBatchMemOp, 11070, cuStreamBatchMemOp_v2_ptsz),
    E(cuLaunchHostFunc, 10000, cuLaunchHostFunc),
    PT(cuLaunchHostFunc, 10000, cuLaunchHostFunc_ptsz),
    E(cuStreamAddCallback, 5000, cuStreamAddCallback),
    PT(cuStreamAddCallback, 7000, cuStreamAddCallback_ptsz),
    E(cuEventQuery, 2000, cuEventQuery),
    E(cuStreamWaitEvent, 2000, cuStreamWaitEvent),
    PT(cuStreamWaitEvent, 7000, cuStreamWaitEvent_ptsz),
    E(cuEventSynchronize, 2000, cuEventSynchronize),
    E(cuEventElapsedTime, 2000, cuEventElapsedTime),
    E(cuEventElapsedTime, 12080, cuEventElapsedTime_v2),
    E(cuEventDestroy, 2000, cuEventDestroy),
    E(cuEventDestroy, 4000, cuEventDestroy_v2),
    E(cuProfilerStart, 4000, cuProfilerStart),
    E(cuProfilerStop, 4000, cuProfilerStop),
    E(cuGetProcAddress, 11030, cuGetProcAddress),
    E(cuGetProcAddress, 12000, cuGetProcAddress_v2),
};
#undef E
#undef PT

CUresult getProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult* status) {
  constexpr cuuint64_t kKnownFlags = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if (symbol == nullptr || pfn == nullptr || (flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const bool perThread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const ProcEntry* best = nullptr;
  const ProcEntry* bestPerThread = nullptr;
  bool known = false;
  for (const ProcEntry& e : kProcTable) {
    if (strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version > version) continue;
    const ProcEntry*& slot = e.perThread ? bestPerThread : best;
    if (slot == nullptr || e.version > slot->version) slot = &e;
  }
  if (perThread && bestPerThread != nullptr) best = bestPerThread;
  if (best == nullptr) {
    if (status != nullptr)
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = best->function;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  ENTRY();
  return getProcAddress(symbol, pfn, cudaVersion, flags, nullptr);
}
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  ENTRY();
  return getProcAddress(symbol, pfn, cudaVersion, flags, symbolStatus);
}

}  // extern "C"
