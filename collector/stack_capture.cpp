#include "collector/stack_capture.h"
#include "collector/symbolizer.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "collector/collector.h"
#include "collector/dwarf_unwind.h"
#include "collector/python_frames.h"

extern "C" void* __libc_stack_end;  // exported by ld.so: top of the main thread's stack

namespace cutrace::stacks {

namespace detail {
bool g_wanted[kApiKindCount] = {};
__thread bool t_inLibunwind __attribute__((tls_model("initial-exec"))) = false;
}

namespace {

using UnwBacktrace = int (*)(void** buffer, int size);

struct State {
  StackTable table;
  bool dwarf = false;  // the .eh_frame walk first; unwBacktrace or frame pointers where it gives up
  bool verify = false;  // CUTRACE_UNWIND=verify: both walks, libunwind's kept, disagreements counted
  std::atomic<uint64_t> fallbacks{0};
  std::atomic<uint64_t> mismatches{0};
  UnwBacktrace unwBacktrace = nullptr;
  uint32_t depth = 0;
  uintptr_t ownBegin = 0;  // the text of the library holding the collector: frames to skip
  uintptr_t ownEnd = 0;
  const char* unwinder = "off";
  bool python = false;
  const char* pythonStatus = "off";
};

constexpr int kMaxPythonFrames = 96;

State g_state;

// unw_backtrace, flagged (inLibunwind) for the pipe it may open on the way.
int libunwindBacktrace(uint64_t* pcs, int max) {
  detail::t_inLibunwind = true;
  const int n = g_state.unwBacktrace(reinterpret_cast<void**>(pcs), max);
  detail::t_inLibunwind = false;
  return n;
}

int findOwnRange(struct dl_phdr_info* info, std::size_t, void* data) {
  const auto self = reinterpret_cast<uintptr_t>(&findOwnRange);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (self >= begin && self < begin + ph.p_memsz) {
      auto* s = static_cast<State*>(data);
      s->ownBegin = begin;
      s->ownEnd = begin + ph.p_memsz;
      return 1;
    }
  }
  return 0;
}

// Frames of this library's own code (shim, HookCall, capture) sit on top of every stack.
inline bool ownFrame(uint64_t pc) { return pc >= g_state.ownBegin && pc < g_state.ownEnd; }

// Whether two walks agree on the callers below this library's own frames (as far as the
// shorter of the two went, within the configured depth).
bool sameCallers(const uint64_t* a, int na, const uint64_t* b, int nb) {
  int i = 0, j = 0;
  while (i < na && ownFrame(a[i])) ++i;
  while (j < nb && ownFrame(b[j])) ++j;
  const int depth = static_cast<int>(g_state.depth);
  const int la = na - i < depth ? na - i : depth, lb = nb - j < depth ? nb - j : depth;
  if (la != lb) return false;
  for (int k = 0; k < la; ++k)
    if (a[i + k] != b[j + k]) return false;
  return true;
}

// Return addresses along the rbp chain, each frame checked to lie inside the thread's stack
// and above the previous one, so a frame without a frame pointer ends the walk instead of
// sending it into unmapped memory.
__attribute__((noinline)) int framePointerWalk(const ThreadState* s, uint64_t* out, int max) {
  auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t lo = fp;  // every caller's frame lies above the walk's own
  int n = 0;
  while (n < max) {
    if (fp < lo || fp + 2 * sizeof(uintptr_t) > s->stackHi || (fp & 7) != 0) break;
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t ret = frame[1];
    const uintptr_t next = frame[0];
    if (ret < 4096) break;
    out[n++] = ret;
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

}  // namespace

void initialize(const Config& config) {
  for (bool& w : detail::g_wanted) w = false;
  if (config.stacks == StackMode::Off) return;
  dl_iterate_phdr(findOwnRange, &g_state);
  if (!g_state.table.reserve(config.maxStacks, uint64_t{config.maxStacks} * 24)) {
    Collector::warnOnce("cutrace: could not reserve memory for call stacks; stacks off\n");
    return;
  }
  g_state.depth = config.stackDepth;
  // Under ThreadSanitizer libunwind crashes at thread exit: its per-thread cache destructor
  // locks a mutex after TSan has torn the thread's state down. Frame pointers only, then.
  const bool tsan = dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr;
  if (config.unwinder == Unwinder::Auto || config.unwinder == Unwinder::Dwarf || config.unwinder == Unwinder::Verify) {
    g_state.dwarf = dwarf::initialize();
    if (!g_state.dwarf && config.unwinder == Unwinder::Dwarf)
      Collector::warnOnce("cutrace: CUTRACE_UNWIND=dwarf needs _dl_find_object (glibc 2.35 or later); using libunwind\n");
  }
  if (tsan && config.unwinder == Unwinder::Libunwind)
    Collector::warnOnce("cutrace: CUTRACE_UNWIND=libunwind is not usable under ThreadSanitizer; using frame pointers\n");
  if (config.unwinder != Unwinder::FramePointer && !tsan) {
    // RTLD_LOCAL keeps libunwind's _Unwind_* out of the global scope (see the header).
    void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) g_state.unwBacktrace = reinterpret_cast<UnwBacktrace>(dlsym(lib, "unw_backtrace"));
    if (g_state.unwBacktrace == nullptr && config.unwinder == Unwinder::Libunwind)
      Collector::warnOnce("cutrace: CUTRACE_UNWIND=libunwind but libunwind.so.8 could not be loaded; using frame pointers\n");
  }
  Symbolizer::prepare();  // here, not in the drain (see there)
  g_state.verify = config.unwinder == Unwinder::Verify && g_state.dwarf && g_state.unwBacktrace != nullptr;
  if (config.unwinder == Unwinder::Verify && !g_state.verify)
    Collector::warnOnce("cutrace: CUTRACE_UNWIND=verify needs both the dwarf walk and libunwind.so.8; not verifying\n");
  if (g_state.verify)
    g_state.unwinder = "dwarf, verified against libunwind";
  else if (g_state.dwarf)
    g_state.unwinder = g_state.unwBacktrace != nullptr ? "dwarf, libunwind fallback" : "dwarf, frame-pointer fallback";
  else
    g_state.unwinder = g_state.unwBacktrace != nullptr ? "libunwind" : "frame-pointer";
  if (config.python) {
    g_state.python = python::initialize();
    g_state.pythonStatus = python::status();
  } else {
    g_state.pythonStatus = "off (CUTRACE_PYTHON=off)";
  }
  // Launches always; every other recorded call under CUTRACE_STACKS=calls.
  const bool calls = config.stacks == StackMode::Calls;
  for (unsigned i = 0; i < kApiKindCount; ++i) {
    const auto k = static_cast<ApiKind>(i);
    detail::g_wanted[i] = isRecorded(k) && (k == ApiKind::Launch || k == ApiKind::Graph || calls);
  }
}

void attachThread(ThreadState* s) {
  // The top of the stack bounds every read of a walk. No allocation here (a hook's first call
  // on a thread): pthread_getattr_np allocates (a CPU set; in a thread that never allocated,
  // glibc then reserves a 64 MB malloc arena for it) and reads /proc/self/maps for the main
  // thread. glibc puts a thread's descriptor, pthread_self(), at the top of the block its stack
  // is carved from (below it only the static TLS, then the stack; the same for a stack the
  // program gave pthread_create), so [sp, pthread_self()) is mapped and holds every frame. The
  // main thread's descriptor lies elsewhere (below its stack, which is above every mapping):
  // __libc_stack_end. A process forked from a non-main thread runs on that thread's stack: its
  // descriptor is the one above sp.
  const auto sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const auto self = static_cast<uintptr_t>(pthread_self());
  constexpr uintptr_t kMaxStack = uintptr_t{1} << 32;
  uintptr_t hi = 0;
  if (self > sp && self - sp < kMaxStack) hi = self;
  else if (syscall(SYS_gettid) == getpid()) hi = reinterpret_cast<uintptr_t>(__libc_stack_end);
  s->stackHi = hi;
  // The memo's frames were checked against the previous owner's stack bounds.
  memset(&s->unwindMemo, 0, sizeof s->unwindMemo);
  s->lastStackId = 0;
  s->lastPythonCount = 0;
  s->pythonChain.steps = -1;
}

// Not inline in the hook: keeps the shim small; the stack buffers live only here.
// A stack is native return addresses (innermost first) followed by the thread's Python frames
// (innermost first). The hash covers the Python frames as captured (code object, instruction,
// entry flag: python::foldPythonFrame); only a stack seen for the first time pays for interning
// its Python frames.
uint32_t capture(ThreadState* s, const dwarf::WalkStart& from) {
  uint64_t raw[kMaxStackDepth + 16 + 2 * kMaxPythonFrames];
  const int max = static_cast<int>(g_state.depth) + 16;  // room for our own frames on top
  int n = -1;
  bool repeated = false;
  if (g_state.dwarf) {
    n = dwarf::backtraceFrom(from, raw, max, s->stackHi, s->unwindMemo, false);
    // The same frames as the thread's last walk: its stack id, when it had no Python frames.
    repeated = s->unwindMemo.repeated && !g_state.verify;
    if (__builtin_expect(n < 0, 0)) g_state.fallbacks.fetch_add(1, std::memory_order_relaxed);
    // Without Python frames to add, the same frames are the same stack.
    if (repeated && !g_state.python && s->lastStackId != 0) return s->lastStackId;
  }
  // The same native frames and the same reads of the interpreter's frames as the thread's last
  // stack (a loop's call): its id, with no frame built or hashed (a compare per Python frame).
  uintptr_t pythonFrame = python::kFrameNotRead;  // read once, by whichever of the two below comes first
  if (repeated && g_state.python && s->lastStackId != 0) {
    pythonFrame = python::innermostFrame();
    if (python::sameChain(s->pythonChain, pythonFrame)) return s->lastStackId;
  }
  // A replayed walk left its frames in the memo (copyReplay false): they are needed from here on.
  if (g_state.dwarf && s->unwindMemo.replayed) memcpy(raw, s->unwindMemo.pcs, static_cast<std::size_t>(n) * sizeof(uint64_t));
  if (__builtin_expect(g_state.verify, 0)) {
    // Both walks from this frame: below the library's own frames they must agree.
    uint64_t theirs[kMaxStackDepth + 16];
    const int m = libunwindBacktrace(theirs, max);
    if (n >= 0 && !sameCallers(raw, n, theirs, m)) g_state.mismatches.fetch_add(1, std::memory_order_relaxed);
    for (int i = 0; i < m; ++i) raw[i] = theirs[i];
    n = m;
  }
  if (n < 0) {
    if (g_state.unwBacktrace != nullptr) {
      n = libunwindBacktrace(raw, max);
      // libunwind's stack ends where the walk gave up on code in no object: so will the walk's.
      const uint64_t stoppedAt = g_state.dwarf ? s->unwindMemo.stoppedAt : 0;
      if (stoppedAt != 0 && n > 0 && n < max && raw[n - 1] == stoppedAt) dwarf::noteDeadEnd(stoppedAt);
    } else {
      n = framePointerWalk(s, raw, max);
    }
  }
  int skip = 0;
  while (skip < n && ownFrame(raw[skip])) ++skip;
  uint32_t depth = n > skip ? static_cast<uint32_t>(n - skip) : 0;
  if (depth > g_state.depth) depth = g_state.depth;
  uint64_t* frames = raw + skip;
  // The Python frames follow the native ones, two words each, hashed as they are read (the
  // verifying walk reads every step afresh: no memo); copied there from the memo only for a
  // stack the table does not know.
  uint64_t pythonHash = python::kFramesHashSeed;
  python::ChainMemo* memo = g_state.verify ? nullptr : &s->pythonChain;
  const int pyCount = g_state.python ? python::captureWords(frames + depth, kMaxPythonFrames, pythonHash, memo, pythonFrame) : 0;
  // The same native frames and the same Python frames (by their hash, as the table knows stacks)
  // as the thread's last stack, read from other frame objects: its id, without hashing the
  // native frames or probing the table.
  if (repeated && s->lastStackId != 0 && pyCount == s->lastPythonCount && pythonHash == s->lastPythonHash)
    return s->lastStackId;
  s->lastPythonCount = pyCount;
  s->lastPythonHash = pythonHash;
  uint32_t id = 0;
  if (depth != 0 || pyCount != 0) {
    const uint64_t hash = hashStack(frames, depth, pythonHash, static_cast<uint32_t>(pyCount));
    id = g_state.table.find(hash);
    if (__builtin_expect(id == 0, 0)) {
      if (memo != nullptr && memo->steps >= 0) python::heldWords(*memo, frames + depth);
      // In place: frame i's words (at 2i, 2i + 1) are read before its id goes to word i.
      for (int i = 0; i < pyCount; ++i) {
        const python::RawFrame f = python::rawFrameOf(frames + depth + 2 * static_cast<uint32_t>(i));
        const uint32_t frameId = python::internFrame(f);
        frames[depth + static_cast<uint32_t>(i)] = kPythonFrameTag | (f.entry ? kPythonEntryBit : 0) | frameId;
      }
      id = g_state.table.insert(hash, frames, depth + static_cast<uint32_t>(pyCount));
    }
  }
  s->lastStackId = id;
  return id;
}

StackTable& table() { return g_state.table; }
const char* unwinderName() { return g_state.unwinder; }
uint64_t unwindFallbacks() { return g_state.fallbacks.load(std::memory_order_relaxed); }
bool verifyingUnwind() { return g_state.verify; }
uint64_t unwindMismatches() { return g_state.mismatches.load(std::memory_order_relaxed); }
const char* pythonStatus() { return g_state.pythonStatus; }

}  // namespace cutrace::stacks
