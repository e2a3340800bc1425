#pragma once
// The collector: per-thread rings, the drain thread, the process store and the lifecycle
// (start-up, thread exit, fork, exit). The preload's hooks use only the inline fast path here.
//
// Ordering and concurrency rules
// - A ThreadState is written by its owner thread only (the producer side of its ring plus the
//   owner-private counters) and read by the drain thread only through the ring and the atomics.
// - States are linked into a registry list that only grows; a state whose thread exited is
//   drained, then marked Free and reused by the next new thread, so thread churn does not grow
//   memory.
// - tls::busy > 0 on a thread means "the tracer itself is running here": hooks pass straight
//   through. The drain thread keeps it set for its whole life.

#include <errno.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "collector/clock.h"
#include "collector/config.h"
#include "collector/dwarf_unwind.h"
#include "collector/name_table.h"
#include "collector/record.h"
#include "collector/ring.h"
#include "collector/trace_data.h"

namespace cutrace {

inline constexpr std::size_t kMaxNvtxDomains = 256;

// Active: the owner thread produces. Retired: the owner exited, the drain still has to empty
// it. Free: emptied, reusable. Claimed: being set up for a new owner; the drain ignores it.
enum class Life : uint32_t { Active, Retired, Free, Claimed };

struct ThreadState {
  SpscRing<Record> ring;
  std::atomic<Life> life{Life::Active};
  uint32_t tid = 0;
  uint32_t trackId = 0;        // store track this state currently feeds
  uint32_t pthreadLow = 0;     // low 32 bits of pthread_self(): CUPTI's default thread id
  uint64_t nextSeq = 0;        // owner only
  std::atomic<uint64_t> dropped{0};    // owner stores, drain reads
  std::atomic<uint64_t> lostEnds{0};
  uint16_t launchDepth = 0;    // owner only: launch hooks active on this thread
  uint16_t apiDepth = 0;       // owner only: recorded API calls active (stacks: outermost only)
  uintptr_t stackHi = 0;       // top of the thread's stack, bounds the frame-pointer walk
  dwarf::ThreadMemo unwindMemo{};  // owner only: the .eh_frame walk's rules by depth
  uint16_t nvtxDepth[kMaxNvtxDomains] = {};  // owner only: push/pop level per domain
  char name[16] = {};          // the thread's name at its first event, then at its exit
  ThreadState* next = nullptr; // registry link, set once before publication
  std::size_t mappingBytes = 0;
};

namespace tls {
extern __thread ThreadState* state __attribute__((tls_model("initial-exec")));
extern __thread int busy __attribute__((tls_model("initial-exec")));
}  // namespace tls

// Uninitialized until Collector::initialize() has run (hooks can run before any constructor:
// the preload initialises from its first hook when it sees Uninitialized).
enum class Mode : uint8_t { Uninitialized, On, Off };

namespace detail {
extern std::atomic<Mode> mode;
ThreadState* attachThread();  // slow path: first event of a thread
void nudgeDrain();            // slow path: a ring passed half full; wake the drain thread now
}  // namespace detail

inline Mode currentMode() { return detail::mode.load(std::memory_order_acquire); }

// Recording is on: initialised, enabled, not finished, and not inside the tracer.
inline bool recordingHere() {
  return detail::mode.load(std::memory_order_relaxed) == Mode::On && tls::busy == 0;
}

// The calling thread's state, created on first use; nullptr when it cannot record.
inline ThreadState* currentThread() {
  ThreadState* s = tls::state;
  if (__builtin_expect(s != nullptr, 1)) return s;
  return detail::attachThread();
}

struct ReentrancyGuard {
  ReentrancyGuard() { ++tls::busy; }
  ~ReentrancyGuard() { --tls::busy; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;
};

// Gives the program its errno back when the tracer's own work in an entry point is done: an
// entry point leaves errno as the program (or the real function) left it.
struct ErrnoKeeper {
  int saved = errno;
  ErrnoKeeper() = default;
  ~ErrnoKeeper() { errno = saved; }
  ErrnoKeeper(const ErrnoKeeper&) = delete;
  ErrnoKeeper& operator=(const ErrnoKeeper&) = delete;
};

// Appends one record plus `text` (copied into extra blocks). Never blocks: a full ring drops
// the record and counts it. Returns false on a drop.
inline bool appendRecord(ThreadState* s, const Record& r, const char* text = nullptr, std::size_t textLen = 0) {
  const std::size_t blocks = (textLen + kRecordSize - 1) / kRecordSize;
  const uint64_t at = s->ring.reserve(1 + blocks);
  if (__builtin_expect(at == UINT64_MAX, 0)) return false;
  Record& dst = s->ring.at(at);
  dst = r;
  dst.extra = static_cast<uint8_t>(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t off = b * kRecordSize;
    const std::size_t n = textLen - off < kRecordSize ? textLen - off : kRecordSize;
    memcpy(&s->ring.at(at + 1 + b), text + off, n);
  }
  s->ring.commit(1 + blocks);
  // A burst would fill the ring before the next timed pass: past half full, the drain is woken
  // (once per pass of the drain over this ring).
  if (__builtin_expect(s->ring.crossedHalf(), 0)) detail::nudgeDrain();
  return true;
}

inline void countDrop(ThreadState* s) {
  s->dropped.store(s->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

class Collector {
 public:
  // Reads the configuration, sets up the clock and the exit/fork handlers. Idempotent and
  // safe to call from any thread or hook; the hook table must outlive the process.
  // `writer` turns the collected trace into files at the end (exporters/output_files.h).
  using Writer = void (*)(TraceData& data, const Config& config);
  // The stream (exporters/perfetto_writer.h): fed by the drain thread after every pass, so a
  // killed process leaves its events on disk. `pass` runs under the drain mutex; `forget` in a
  // forked child. The Writer above ends the stream.
  struct Stream {
    void (*pass)(const TraceData& data, const Config& config, uint64_t nowNs);
    void (*forget)();
  };
  static void initialize(const HookDescriptor* hooks, std::size_t hookCount, Writer writer,
                         const Stream* stream = nullptr);
  static bool initialized();
  static const Config& config();
  static NameTable& names();

  // Stops recording, drains every ring and writes the output files. Runs once (atexit, or
  // explicitly); later calls do nothing.
  static void finish();

  // Ends tracing before the process ends without exit handlers (_exit, _Exit): writes the files
  // like finish(), unless this is not the process that initialised (a vfork child shares the
  // parent's memory and must not touch it).
  static void finishBeforeExit();

  // Absolute path of the library that contains the collector (for NVTX_INJECTION64_PATH).
  static const char* libraryPath();

  // Named diagnostic counters copied into the trace metadata (at most 16 names).
  static std::atomic<uint64_t>& counter(const char* name);

  // Warns once per process on stderr (writeDiagnostic: only to the stderr found at start);
  // usable in hooks.
  static void warnOnce(const char* message);
  // Turns recording off for good after an internal failure: one line (once per process, even
  // after a warnOnce line), then no more warnings.
  static void disable(const char* why);
};

}  // namespace cutrace
