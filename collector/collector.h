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

#include "collector/alt_stack.h"
#include "collector/clock.h"
#include "collector/config.h"
#include "collector/dwarf_unwind.h"
#include "collector/name_table.h"
#include "collector/python_frames.h"
#include "collector/record.h"
#include "collector/ring.h"
#include "collector/trace_data.h"

namespace cutrace {

inline constexpr std::size_t kMaxNvtxDomains = 256;

// ThreadState::pending: two 32-bit counts (a section is never interrupted that often).
inline constexpr uint64_t kPendingDrop = 1;                     // an event dropped: its number and a drop
inline constexpr uint64_t kPendingLostEnd = uint64_t{1} << 32;  // a pop or end dropped: add to lostEnds
inline constexpr uint64_t kPendingMask = (uint64_t{1} << 32) - 1;

// Compare-exchange that is atomic against signal handlers on the calling thread, which is all
// an owner-only field needs (see ThreadState): one instruction is never split by a signal. On
// x86-64 it is cmpxchg without the lock prefix: the bus lock cost about as much as the rest of
// an NVTX push (bench nvtx, traced thread). Other CPUs may read the field, never write it.
inline bool signalAtomicCas(uint16_t& field, uint16_t& expected, uint16_t desired) {
#if defined(__x86_64__)
  bool swapped;
  asm volatile("cmpxchgw %3, %1" : "=@ccz"(swapped), "+m"(field), "+a"(expected) : "r"(desired) : "memory");
  return swapped;
#else
  return std::atomic_ref<uint16_t>(field).compare_exchange_weak(expected, desired, std::memory_order_relaxed);
#endif
}

// Active: the owner thread produces. Retired: the owner exited, the drain still has to empty
// it. Free: emptied, reusable. Claimed: being set up for a new owner; the drain ignores it.
enum class Life : uint32_t { Active, Retired, Free, Claimed };

// "Owner" below means the owner thread, including signal handlers that run on it: those
// interrupt the owner at any instruction, so what both change is either written only inside a
// RecordSection (which a handler never enters while the owner is in one) or changed with single
// read-modify-write instructions (nvtxDepth: signalAtomicCas; pending*: atomics, also drained).
struct ThreadState {
  SpscRing<Record> ring;
  std::atomic<Life> life{Life::Active};
  uint32_t tid = 0;
  uint32_t trackId = 0;        // store track this state currently feeds
  uint32_t pthreadLow = 0;     // low 32 bits of pthread_self(): CUPTI's default thread id
  uint64_t nextSeq = 0;        // owner, inside a RecordSection
  // Owner, inside a RecordSection: sequence numbers taken whose events are neither in the ring
  // nor counted as dropped. Between sections that is one per recorded call still running
  // (apiDepth), none else; more when the thread left an event it was recording (a handler's
  // siglongjmp out of a section, or out of a call): counted as dropped by the next section that
  // finds them (countLeftSeqs), so that every number is an event or a drop.
  uint32_t unsettled = 0;
  std::atomic<uint64_t> dropped{0};    // owner stores (inside a RecordSection), drain reads
  std::atomic<uint64_t> lostEnds{0};
  uint16_t launchDepth = 0;    // owner only: launch hooks active on this thread
  uint16_t apiDepth = 0;       // owner only: recorded API calls active (stacks: outermost only)
  // Owner only, set by the outermost recorded call before apiDepth says a call runs: its
  // sequence number, which its shim's frame keeps at callTokenAt while it runs
  // (insideActiveCall).
  const uint64_t* callTokenAt = nullptr;
  uint64_t callToken = 0;
  uintptr_t stackHi = 0;       // top of the thread's stack, bounds the frame-pointer walk
  dwarf::ThreadMemo unwindMemo{};  // owner, inside a RecordSection: the .eh_frame walk's frames by depth
  uint32_t lastStackId = 0;        // owner, inside a RecordSection: the last stack captured
  // Owner, inside a RecordSection: the last stack's Python frames, their number and hash.
  int32_t lastPythonCount = 0;
  uint64_t lastPythonHash = 0;
  // Owner, inside a RecordSection: what the walk of the last stack's Python frames read, for a
  // call whose native frames repeat to tell cheaply whether its Python frames do too.
  python::ChainMemo pythonChain;
  uint16_t nvtxDepth[kMaxNvtxDomains] = {};  // owner, signalAtomicCas only: push/pop level per domain
  // Owner, inside a RecordSection: bit L set while the push open at level L (< 32) of a domain
  // is not in the ring (dropped, or not captured), so its pop is not recorded either.
  uint32_t nvtxPushMissing[kMaxNvtxDomains] = {};
  // Pop credits (owner, inside sections): a push of levels below 32 recorded with a credit keeps
  // one ring slot free for its pop (bit per level in nvtxPopCredited; popCredits in all), so the
  // pop of a recorded push is never lost to a full ring and the drain never has to guess where
  // that range ended. At most a quarter of the ring is held so.
  uint32_t nvtxPopCredited[kMaxNvtxDomains] = {};
  uint32_t popCredits = 0;
  // Owner, inside sections: the text of the last push written to the ring when it was short (its
  // bytes, its NUL and what followed, kShortText in all), and its length; kNoLastPush: the last
  // push's text was not short, or none was written. Reset when a thread attaches.
  static constexpr uint8_t kNoLastPush = 0xff;
  uint8_t lastPushLength = kNoLastPush;
  alignas(16) char lastPushText[kShortText];
  // Signal handlers (RecordSection): while the owner is inside a section, the frame pointer of
  // the function it is for, else 0; what handlers that found it taken dropped, packed
  // (kPending*), for the section to fold in when it closes.
  std::atomic<uintptr_t> section{0};
  std::atomic<uint64_t> pending{0};
  char name[16] = {};          // the thread's name at its first event, then at its exit
  ThreadState* next = nullptr; // registry link, set once before publication
  std::size_t mappingBytes = 0;  // header + ring address space (mapped once, never unmapped)
  uint64_t ringBytes = 0;        // ring bytes this owner holds against the memory cap (0: no ring)
};

// Whether the frame that keeps `token` at `at` still runs for an event whose frame is at `sp`:
// the event is deeper on the stack and the word is still there, or it is on the alternate
// signal stack (a handler, inside whatever ran). A thread that left the frame without returning
// from it (a handler's siglongjmp out of a call that hung, as a timeout does) is back at or
// above it, or has since written over it (a word never written over keeps it taken as running).
// The word, in a frame since left, may lie in an ASan redzone of the frames there now.
inline bool frameRunning(uintptr_t sp, const uint64_t* at, uint64_t token) {
  const auto word = reinterpret_cast<uintptr_t>(at);
  return onAltStack(sp) || (sp < word && dwarf::stackWord(word) == token);
}

// Whether an event whose frame is at `sp`, while the thread has a recorded call active
// (apiDepth != 0), comes from inside that call (from what it called, or from a signal handler).
inline bool insideActiveCall(const ThreadState* s, uintptr_t sp) { return frameRunning(sp, s->callTokenAt, s->callToken); }

namespace tls {
extern __thread ThreadState* state __attribute__((tls_model("initial-exec")));
extern __thread int busy __attribute__((tls_model("initial-exec")));
// While busy != 0: the outermost ReentrancyGuard's number and where its frame keeps it
// (nullptr: busy with no guard, as the drain thread is for its life). guardCount numbers them.
extern __thread const uint64_t* guardAt __attribute__((tls_model("initial-exec")));
extern __thread uint64_t guardToken __attribute__((tls_model("initial-exec")));
extern __thread uint64_t guardCount __attribute__((tls_model("initial-exec")));
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

// The thread is inside the tracer: its hooks do not record. The outermost guard keeps a number
// in its frame, so that a thread that left it without returning (a handler's siglongjmp out of
// a driver call cutrace made, as a timeout around a hung driver does) is found not busy at its
// next event (busyLeftBehind, preload/hook_support.h): left busy, it never recorded again. What
// a guard changes it puts back, so a signal handler's guard leaves the thread's as they were;
// the outermost guard's number is set before busy says the thread is busy.
struct ReentrancyGuard {
  ReentrancyGuard() : busy_(tls::busy), at_(tls::guardAt), token_(tls::guardToken) {
    if (busy_ == 0) {
      mark_ = ++tls::guardCount;
      tls::guardToken = mark_;
      tls::guardAt = &mark_;
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    tls::busy = busy_ + 1;
  }
  ~ReentrancyGuard() {
    tls::busy = busy_;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    tls::guardAt = at_;
    tls::guardToken = token_;
  }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;

 private:
  const int busy_;
  const uint64_t* const at_;
  const uint64_t token_;
  uint64_t mark_ = 0;
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

// Adds to one of the owner's counts the drain reads (ThreadState::dropped, lostEnds): only the
// owner stores, inside a RecordSection, so a load and a store (no locked instruction) are whole.
inline void ownerAdd(std::atomic<uint64_t>& count, uint64_t n) {
  count.store(count.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Counts as dropped the events the thread left while recording them (ThreadState::unsettled):
// the numbers taken beyond one per recorded call still running. Inside a RecordSection, found
// with the depth already put right for calls left (HookCall); out of line: rare.
[[gnu::noinline]] inline void countLeftSeqs(ThreadState* s) {
  if (s->unsettled <= s->apiDepth) return;
  const uint32_t left = s->unsettled - s->apiDepth;
  s->unsettled = s->apiDepth;  // first, as countDrop() does
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ownerAdd(s->dropped, left);
}

// A recording section of the owner thread: taking a sequence number, changing the counters
// and reserve..commit in the ring happen inside one, so that a signal handler running on the
// same thread never writes into slots the interrupted code reserved and has not committed, and
// never takes a sequence number or a count it is in the middle of updating. A handler that
// interrupts an open section cannot open its own (owned() is false): its event is dropped and
// counted through the atomic pending* counters, which the interrupted section folds in before
// it closes, so recorded + dropped stays exactly what was issued. Outside sections a handler
// records like any other code (its records then come whole, between the owner's).
// Async-signal-safe: same-thread flags ordered by signal fences, single-instruction atomics.
// Sections do not nest within one context: code inside a section never opens another.
// A section left without closing it (a handler's siglongjmp out of the code inside it) is taken
// over by the next one opened from a frame at or above the one that opened it (leftBehind): a
// program's next CUDA call from where the jump returned to; until then the thread's events are
// dropped, and counted once the new section closes.
class RecordSection {
 public:
  // `frame`: the frame pointer of the function the section is for (the caller's by default; a
  // hook's shim for its call's sections, wherever they are inlined). Every shim keeps a frame
  // pointer (preload/meson.build), pushed first: two shims called from the same frame have the
  // same one, whichever hooks they are.
  [[gnu::always_inline]] explicit RecordSection(ThreadState* s,
                                                uintptr_t frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0)))
      : s_(s), frame_(frame) {
    // A handler that runs between the load and the store completes its own section first.
    const uintptr_t open = s->section.load(std::memory_order_relaxed);
    if (open != 0 && !leftBehind(open)) return;
    s->section.store(frame_, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    owned_ = true;
    if (__builtin_expect(open != 0, 0)) countLeftSeqs(s);  // the event the left section recorded
  }
  ~RecordSection() {
    if (owned_) close();
  }
  RecordSection(const RecordSection&) = delete;
  RecordSection& operator=(const RecordSection&) = delete;

  bool owned() const { return owned_; }

  // For a context that could not open the section: its event is lost (it took no number).
  void dropEvent() { s_->pending.fetch_add(kPendingDrop, std::memory_order_relaxed); }
  void dropEnd() { s_->pending.fetch_add(kPendingLostEnd, std::memory_order_relaxed); }

 private:
  // Whether the section opened for the frame `open` was left behind: this one is for a frame at
  // or above it on the same stack, so that frame is gone. A handler that interrupts an open
  // section runs below it, or on the alternate signal stack. (A section found taken by a frame
  // above, left behind, stays taken until one opens at or above it.) Out of line: a section is
  // nearly always found closed.
  [[gnu::noinline]] bool leftBehind(uintptr_t open) const { return frame_ >= open && !onAltStack(frame_); }
  // Inline up to the check for what handlers dropped while the section was open (nearly always
  // nothing); folding that in is not.
  [[gnu::always_inline]] void close() {
    if (__builtin_expect(leave(), 1)) return;
    foldPending();
  }
  // Marks the section closed; true when no handler dropped anything while it was open. A handler
  // that comes from here on opens (and folds in) its own section.
  [[gnu::always_inline]] bool leave() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    s_->section.store(0, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return s_->pending.load(std::memory_order_relaxed) == 0;
  }
  // close() found drops: open again, fold them in, close, until none came meanwhile.
  [[gnu::noinline]] void foldPending() {
    do {
      s_->section.store(frame_, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      // One exchange (a single instruction), so no handler's count is lost; inside the section
      // no handler touches nextSeq, dropped or lostEnds.
      const uint64_t p = s_->pending.exchange(0, std::memory_order_relaxed);
      const uint64_t drops = p & kPendingMask, ends = p >> 32;
      s_->nextSeq += drops;
      if (drops != 0) ownerAdd(s_->dropped, drops);
      if (ends != 0) ownerAdd(s_->lostEnds, ends);
    } while (!leave());
  }

  ThreadState* s_;
  uintptr_t frame_;  // the frame pointer of the function the section is for
  bool owned_ = false;
};

// The next sequence number of the thread, for an event written or counted as dropped (countDrop)
// before the section closes, or for a call, when it returns. Inside a RecordSection.
// (Each of these three orders its two stores so that a handler's siglongjmp between them leaves
// an event uncounted, never counted twice or counted while in the ring.)
inline uint64_t takeSeq(ThreadState* s) {
  const uint64_t seq = s->nextSeq++;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ++s->unsettled;
  return seq;
}
// The event of a number takeSeq() gave is in the ring. Inside a RecordSection.
inline void settleSeq(ThreadState* s) { --s->unsettled; }

// Appends one record plus `text` (copied into extra blocks). Never blocks: a full ring drops
// the record and counts it. Returns false on a drop. Inside a RecordSection.
// `keepFree`: ring slots that must stay free after this record (the pop credits of the thread's
// recorded pushes, see ThreadState; one fewer for the pop that uses one, one more for a push that
// takes one).
// In two steps, for a record written in place (NVTX: built whole at once): newRecord() copies
// the text into the blocks after the record's slot and returns the slot, with `extra` set, for
// the caller to fill; nullptr when the ring has no room (nothing taken). commitRecord() then
// publishes it. Building an NVTX record in a local and copying it in took about 30 of a push
// and pop's 470 instructions (callgrind, bench loop included).
[[gnu::always_inline]] inline Record* newRecord(ThreadState* s, const char* text, std::size_t textLen, uint32_t keepFree) {
  const std::size_t blocks = (textLen + kRecordSize - 1) / kRecordSize;
  const uint64_t at = s->ring.reserve(1 + blocks + keepFree);
  if (__builtin_expect(at == UINT64_MAX, 0)) return nullptr;
  Record* dst = &s->ring.at(at);
  dst->extra = static_cast<uint8_t>(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t off = b * kRecordSize;
    const std::size_t n = textLen - off < kRecordSize ? textLen - off : kRecordSize;
    memcpy(&s->ring.at(at + 1 + b), text + off, n);
  }
  return dst;
}
// newRecord() of a text shorter than kShortText held in `head` (kShortText bytes, the text's
// and whatever followed it): one block, filled by a fixed-size copy.
[[gnu::always_inline]] inline Record* newRecordShort(ThreadState* s, const char* head, std::size_t textLen, uint32_t keepFree) {
  const uint64_t at = s->ring.reserve(textLen == 0 ? 1 + keepFree : 2 + keepFree);
  if (__builtin_expect(at == UINT64_MAX, 0)) return nullptr;
  Record* dst = &s->ring.at(at);
  dst->extra = textLen == 0 ? 0 : 1;
  if (textLen != 0) memcpy(&s->ring.at(at + 1), head, kShortText);
  return dst;
}
// `settles`: the record is the event of a number takeSeq() gave (ThreadState::unsettled). Settled
// right before the commit, so that a handler's siglongjmp that leaves the section in between
// (a store apart) leaves the event lost and uncounted, never counted and in the ring.
[[gnu::always_inline]] inline void commitRecord(ThreadState* s, const Record* r, bool settles) {
  if (settles) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    settleSeq(s);
  }
  s->ring.commit(1u + r->extra);
  // A burst would fill the ring before the next timed pass: past half full, the drain is woken
  // (once per pass of the drain over this ring).
  if (__builtin_expect(s->ring.crossedHalf(), 0)) detail::nudgeDrain();
}
[[gnu::always_inline]] inline bool appendRecord(ThreadState* s, const Record& r, const char* text, std::size_t textLen, uint32_t keepFree,
                                                bool settles) {
  Record* dst = newRecord(s, text, textLen, keepFree);
  if (__builtin_expect(dst == nullptr, 0)) return false;
  *dst = r;
  dst->extra = static_cast<uint8_t>((textLen + kRecordSize - 1) / kRecordSize);
  commitRecord(s, dst, settles);
  return true;
}

// A record that is no event (a thread's name).
[[gnu::always_inline]] inline bool appendRecord(ThreadState* s, const Record& r, const char* text = nullptr, std::size_t textLen = 0) {
  return appendRecord(s, r, text, textLen, s->popCredits, false);
}
// The record of an event whose number takeSeq() gave; on false, countDrop() it.
[[gnu::always_inline]] inline bool appendEvent(ThreadState* s, const Record& r) {
  return appendRecord(s, r, nullptr, 0, s->popCredits, true);
}

// The event of a number takeSeq() gave is dropped. Inside a RecordSection.
inline void countDrop(ThreadState* s) {
  settleSeq(s);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ownerAdd(s->dropped, 1);
}

class Collector {
 public:
  // Reads the configuration, sets up the clock and the exit/fork handlers. Idempotent and
  // safe to call from any thread or hook; the hook table must outlive the process.
  // `writer` turns the collected trace into files at the end (exporters/output_files.h).
  using Writer = void (*)(TraceData& data, const Config& config);
  // The stream (exporters/perfetto_writer.h): fed by the drain thread after every pass, so a
  // killed process leaves its events on disk. `pass` runs under the drain mutex and returns
  // whether every event of `data` is encoded (on disk, or at the latest with the pass's last
  // piece): then the collector drops them from memory;
  // `forget` runs in a forked child. The Writer above ends the stream. A pass may feed it in
  // several pieces (a busy thread's records a batch at a time); `passEnd` marks the last one.
  struct Stream {
    bool (*pass)(const TraceData& data, const Config& config, uint64_t nowNs, bool passEnd);
    void (*forget)();
  };
  static void initialize(const HookDescriptor* hooks, std::size_t hookCount, Writer writer,
                         const Stream* stream = nullptr);
  static bool initialized();
  // Initialised, and this process is the one the collector's state belongs to (not a child
  // made by a raw clone system call, which no fork handler saw, nor a vfork child).
  static bool ownsProcess();
  // A fork child whose parent had a thread inside dlopen (adding an object) at the fork: glibc's
  // loader state stays "being changed" there for good, and any dlopen the child makes fails
  // ld.so's consistency assertion (the process exits with 127). Noted by a child handler
  // registered when the library is loaded, from the state the child inherited.
  static bool loaderStuckSinceFork();
  static const Config& config();
  static NameTable& names();

  // Stops recording, drains every ring and writes the output files. Runs once (atexit, or
  // explicitly); later calls do nothing.
  static void finish();

  // Ends tracing before the process ends without exit handlers (_exit, _Exit): writes the files
  // like finish(), unless this is not the process that initialised (a vfork child shares the
  // parent's memory and must not touch it).
  static void finishBeforeExit();
  // finishBeforeExit() before an exec, where `mayStart(what)` (asked only where there is a trace
  // to write: not in a fork child on its way to exec) says the exec may start. One bound to fail
  // writes nothing, and the image stays traced.
  static void finishBeforeExec(bool (*mayStart)(const char*), const char* what);

  // The calling thread is about to end with pthread_exit. Where that is the main thread, the
  // process ends when its last thread does (glibc then calls exit(0)), and the drain thread
  // must not be that last thread forever: it ends once it is the only thread left.
  static void threadExiting();

  // Absolute path of the library that contains the collector (for NVTX_INJECTION64_PATH).
  static const char* libraryPath();

  // Where CUTRACE_OUTPUT was relative: that environment entry as read ("CUTRACE_OUTPUT=dir")
  // and the one naming the directory it resolved to at start, which an exec'd image gets
  // instead (a chdir before the exec would move its trace). False when there is none.
  static bool outputEnvEntries(const char*& relative, const char*& absolute);

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
