#include "collector/collector.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <new>

#include "collector/capture.h"
#include "collector/cupti_session.h"
#include "collector/graph_capture.h"
#include "collector/own_file.h"
#include "collector/private_files.h"
#include "collector/stack_capture.h"
#include "collector/store.h"
#include "collector/symbolizer.h"

extern char** environ;
// Defined by the preload (preload/signal_hooks.cpp); a unit test binary has its own definition.
extern "C" __attribute__((weak)) void (*cutraceOwnSignalHandler)(int);

namespace cutrace {

namespace tls {
__thread ThreadState* state __attribute__((tls_model("initial-exec"))) = nullptr;
__thread int busy __attribute__((tls_model("initial-exec"))) = 0;
__thread const uint64_t* guardAt __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint64_t guardToken __attribute__((tls_model("initial-exec"))) = 0;
__thread uint64_t guardCount __attribute__((tls_model("initial-exec"))) = 0;
// Set by the sigaltstack hook (preload/signal_hooks.cpp).
__thread AltStack altStack __attribute__((tls_model("initial-exec"))) = {0, 0};
}  // namespace tls

namespace detail {
std::atomic<Mode> mode{Mode::Uninitialized};
}

namespace {

enum class InitState : int { NotStarted, Running, Done };

struct Globals {
  std::atomic<InitState> init{InitState::NotStarted};
  std::atomic<bool> finished{false};
  std::atomic<bool> warned{false};
  std::atomic<bool> disabled{false};  // Collector::disable has warned
  Config config;
  NameTable names;
  const HookDescriptor* hooks = nullptr;
  std::size_t hookCount = 0;
  Collector::Writer writer = nullptr;
  const Collector::Stream* stream = nullptr;
  bool streamMeta = false;  // the store's metadata is filled for the stream (drain mutex)
  struct Counter {
    std::atomic<const char*> name{nullptr};
    std::atomic<uint64_t> value{0};
  };
  Counter counters[16];
  std::atomic<ThreadState*> registry{nullptr};
  std::atomic<uint32_t> nextTrackId{1};
  // Ring bytes held by current owners, counted against config.maxMemory (newState/attachThread
  // reserve, releaseState returns).
  std::atomic<uint64_t> ringBytesInUse{0};
  std::atomic<pid_t> initPid{0};  // the process in which initialize() ran (or runs)
  pthread_key_t exitKey{};
  char libraryPath[PATH_MAX] = {};
  // CUTRACE_OUTPUT as read, when relative, and as resolved at start: the entries an exec'd
  // image's environment swaps (Collector::outputEnvEntries). Empty: nothing to swap.
  char outputEnvRelative[PATH_MAX + 16] = {};
  char outputEnvAbsolute[PATH_MAX + 16] = {};

  // Drain thread. drainMutex serialises every use of `store` (drain passes, fork, finish).
  std::mutex drainMutex;
  // The drain thread sleeps on this futex word between passes. Whoever wants a pass sooner
  // (stop, a terminating signal, a ring past half full) increments it and wakes the futex; an
  // increment between the drain's load and its wait makes the wait return at once, so no wake
  // is lost. Incrementing and waking are async-signal-safe and take no lock.
  std::atomic<uint32_t> wakeWord{0};
  // Threads that exited: their states (a ring's first pages, its header) wait for a pass to be
  // freed or reused. A program that starts and ends threads quickly (30,000 in a second) piled
  // up hundreds per interval, more when the drain thread waited for a core: every
  // kExitsPerWake-th exit asks for a pass.
  std::atomic<uint32_t> exitedThreads{0};
  // States of exited threads not yet released by a pass (Retired). Past kMaxRetiredWaiting an
  // exiting thread waits a little for a pass (threadExit): with the drain thread kept from a
  // core (a loaded machine), 30,000 exits a second piled up a thousand and more, 30 MiB.
  std::atomic<uint32_t> retiredWaiting{0};
  // Incremented after every pass; threads waiting in threadExit (exitWaiters of them) sleep on it.
  std::atomic<uint32_t> passWord{0};
  std::atomic<uint32_t> exitWaiters{0};
  std::atomic<bool> stopDrain{false};
  std::atomic<bool> drainStarted{false};
  pthread_t drainThread{};
  Store* store = nullptr;
  pid_t pid = 0;  // the process these globals belong to (set at start and in a fork child)
  // A terminating signal asks the drain thread to write the trace (signal handlers may not).
  std::atomic<bool> finishRequested{false};
  std::atomic<bool> finishDone{false};
  // The main thread ended with pthread_exit (Collector::threadExiting).
  std::atomic<bool> mainThreadExited{false};
  // The store ran out of memory (drain mutex): its contents are not trustworthy and never
  // written; tracing is off.
  bool storeFailed = false;
  Symbolizer* symbolizer = nullptr;  // drain mutex
  ClockAnchor lastAnchor{};
};

// Constant-initialised (no guard variable a fork could leave taken in a child, no constructor
// order) and never destroyed: hooks can run during and after static destruction of the program.
union GlobalsStorage {
  Globals value;
  constexpr GlobalsStorage() : value() {}
  ~GlobalsStorage() {}
};
constinit GlobalsStorage g_globals;

Globals& g() { return g_globals.value; }

pid_t realPid() { return static_cast<pid_t>(syscall(SYS_getpid)); }

// Whether this process is the one the collector's state belongs to. Not so in a child made
// without glibc's fork (a raw clone system call with fork semantics, no CLONE_VM): no fork
// handler ran there, so the state is a copy of the parent's, with its drain thread, store and
// stream, none of them this process's. Such a child (and whatever it forks)
// records nothing: its hooks pass through or fill rings no drain reads, and nothing of the
// parent's is written, joined or locked (its copies of the parent's locks may be held by
// threads that do not exist here). A vfork child also fails the check, and must not touch the
// state it shares with its parent. The pid comes from the system call, never from a cache.
bool ownProcess() { return realPid() == g().pid; }

// Whether the forking thread took the locks in atforkPrepare (it does not in a process that
// is not ownProcess()), for the parent and child handlers of the same fork.
__thread bool t_forkLocked __attribute__((tls_model("initial-exec"))) = false;

pid_t currentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void wakeDrain();
void waitForPass();

// Exited threads whose states may wait for a pass before their exits wait (about 16 KiB each:
// the state's header, its ring's first pages).
constexpr uint32_t kMaxRetiredWaiting = 256;

void threadExit(void* p) {
  auto* s = static_cast<ThreadState*>(p);
  // Threads often rename themselves after their first CUDA call and are gone from /proc by the
  // time the trace is written: keep the last name they had.
  prctl(PR_GET_NAME, s->name, 0, 0, 0);
  // Everything this thread committed happens-before Retired; the drain frees the state after
  // consuming it.
  s->life.store(Life::Retired, std::memory_order_release);
  if (tls::state == s) tls::state = nullptr;
  constexpr uint32_t kExitsPerWake = 64;
  Globals& gl = g();
  const uint32_t waiting = gl.retiredWaiting.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!gl.drainStarted.load(std::memory_order_relaxed)) return;
  const int savedErrno = errno;  // the program's other thread-exit destructors see it unchanged
  if (waiting > kMaxRetiredWaiting && ownProcess()) {  // a raw-clone child has no drain thread to wait for
    waitForPass();
  } else if (gl.exitedThreads.fetch_add(1, std::memory_order_relaxed) % kExitsPerWake == kExitsPerWake - 1) {
    wakeDrain();
  }
  errno = savedErrno;
}

// An exiting thread (its state retired) waits for the drain to release the states that wait,
// at most kExitWaits times kExitWaitNs: the pile is bounded, and no exit is held up for long
// whatever the drain thread is doing (stopped, held up by a fork, starved).
void waitForPass() {
  constexpr int kExitWaits = 4;
  constexpr long kExitWaitNs = 5000000;
  Globals& gl = g();
  gl.exitWaiters.fetch_add(1, std::memory_order_acq_rel);
  for (int i = 0; i < kExitWaits && gl.retiredWaiting.load(std::memory_order_relaxed) > kMaxRetiredWaiting &&
                  gl.drainStarted.load() && !gl.stopDrain.load();
       ++i) {
    const uint32_t seen = gl.passWord.load(std::memory_order_acquire);
    wakeDrain();
    const timespec wait{0, kExitWaitNs};
    syscall(SYS_futex, &gl.passWord, FUTEX_WAIT_PRIVATE, seen, &wait, nullptr, 0);
  }
  gl.exitWaiters.fetch_sub(1, std::memory_order_acq_rel);
}

ThreadState* claimFreeState() {
  for (ThreadState* s = g().registry.load(std::memory_order_acquire); s; s = s->next) {
    Life expected = Life::Free;
    if (s->life.load(std::memory_order_relaxed) == Life::Free &&
        s->life.compare_exchange_strong(expected, Life::Claimed, std::memory_order_acquire))
      return s;
  }
  return nullptr;
}

constexpr std::size_t kPage = 4096;
constexpr std::size_t kHeaderBytes = (sizeof(ThreadState) + kPage - 1) & ~(kPage - 1);

char* ringMemory(ThreadState* s) { return reinterpret_cast<char*>(s) + kHeaderBytes; }

// The ring size for a new owner when rings already hold `used` bytes: the configured one, or the
// default tiers (config.h): kAutoRingLargeBytes up to a quarter of the memory cap, kAutoRingBytes
// up to half, then kAutoRingSmallBytes.
uint64_t ringBytesFor(uint64_t used) {
  const Globals& gl = g();
  if (gl.config.ringBytes != 0) return gl.config.ringBytes;
  const uint64_t cap = gl.config.maxMemory;
  if (cap == 0 || used + kAutoRingLargeBytes <= cap / 4) return kAutoRingLargeBytes;
  return used + kAutoRingBytes <= cap / 2 ? kAutoRingBytes : kAutoRingSmallBytes;
}

// The mapping size of a new state: a hint only, since the ring's size is chosen when its bytes
// are charged (reserveRing).
uint64_t wantedRingBytes() { return ringBytesFor(g().ringBytesInUse.load(std::memory_order_relaxed)); }

// A ring for a new owner whose mapping holds `mappedBytes` of ring, counted against the memory
// cap (config.maxMemory counts ring bytes too). The size is chosen from the total the
// compare-exchange charges against: threads attaching at one moment must not all see room for a
// large ring and together pass the cap. Past the cap the owner gets none: every event of the
// thread is dropped and counted (its state still carries the counters), with one warning for
// the process.
uint64_t reserveRing(uint64_t mappedBytes) {
  Globals& gl = g();
  const uint64_t cap = gl.config.maxMemory;
  uint64_t used = gl.ringBytesInUse.load(std::memory_order_relaxed);
  uint64_t bytes;
  do {
    bytes = ringBytesFor(used);
    bytes = bytes < mappedBytes ? bytes : mappedBytes;
    if (cap != 0 && used + bytes > cap) {
      Collector::warnOnce("cutrace: the memory cap (CUTRACE_MAX_MEMORY) is reached by per-thread rings; threads "
                          "that start now record nothing (their events are counted as dropped)\n");
      return 0;
    }
  } while (!gl.ringBytesInUse.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return bytes;
}

// The owner is gone and the drain has emptied the ring: its pages go back to the system (the
// next owner touches them afresh, as zero pages) and its bytes back to the cap. Drain thread,
// or the only thread of a fork child.
void releaseState(ThreadState* s) {
  if (s->ringBytes != 0) {
    madvise(ringMemory(s), s->ringBytes, MADV_DONTNEED);
    g().ringBytesInUse.fetch_sub(s->ringBytes, std::memory_order_relaxed);
    s->ringBytes = 0;
  }
  s->life.store(Life::Free, std::memory_order_release);
}

// The first ring pages are touched here, in the thread's first event, so that a thread with a
// few events takes no page fault in a hook; a busy thread takes one fault per 64 records
// (4 KiB) in its first lap around the ring, afterwards none. Populating the whole ring up front
// cost 1 MiB of resident memory per thread whether it recorded 1 event or a million (1 GB for
// 1,000 threads), so the commitment follows use instead.
constexpr std::size_t kPrefaultBytes = 2 * kPage;

void resetState(ThreadState* s) {
  s->ringBytes = reserveRing(s->mappingBytes - kHeaderBytes);
  const uint64_t records = s->ringBytes / kRecordSize;
  auto* ring = ringMemory(s);
  for (std::size_t at = 0; at < kPrefaultBytes && at < s->ringBytes; at += kPage)
    reinterpret_cast<volatile char*>(ring)[at] = 0;
  // No ring: capacity 0, every reserve() fails and the event is counted as dropped.
  s->ring.attach(reinterpret_cast<Record*>(ring), records);
  s->tid = static_cast<uint32_t>(currentTid());
  s->pthreadLow = static_cast<uint32_t>(pthread_self());
  s->trackId = g().nextTrackId.fetch_add(1, std::memory_order_relaxed);
  s->nextSeq = 0;
  s->unsettled = 0;
  s->dropped.store(0, std::memory_order_relaxed);
  s->lostEnds.store(0, std::memory_order_relaxed);
  s->section.store(0, std::memory_order_relaxed);
  s->pending.store(0, std::memory_order_relaxed);
  s->launchDepth = 0;
  s->apiDepth = 0;
  stacks::attachThread(s);
  memset(s->nvtxDepth, 0, sizeof(s->nvtxDepth));
  memset(s->nvtxPushMissing, 0, sizeof(s->nvtxPushMissing));
  memset(s->nvtxPopCredited, 0, sizeof(s->nvtxPopCredited));
  s->popCredits = 0;
  s->lastPushLength = ThreadState::kNoLastPush;
  memset(s->name, 0, sizeof(s->name));
  prctl(PR_GET_NAME, s->name, 0, 0, 0);
}

ThreadState* newState(uint64_t ringBytes) {
  // Header and ring address space, pages touched on use (resetState).
  const std::size_t bytes = kHeaderBytes + ringBytes;
  if (!addressSpaceAllows(bytes)) return nullptr;  // a smaller ring, or tracing turns off (attachThread)
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto* s = new (mem) ThreadState();
  s->mappingBytes = bytes;
  s->life.store(Life::Claimed, std::memory_order_relaxed);  // invisible to the drain until reset
  ThreadState* head = g().registry.load(std::memory_order_relaxed);
  do {
    s->next = head;
  } while (!g().registry.compare_exchange_weak(head, s, std::memory_order_release, std::memory_order_relaxed));
  return s;
}

// A new state whose mapping the address space allows: under RLIMIT_AS an automatic ring steps
// down the tiers (config.h) before tracing turns off, so that a process that had room for the
// 4 MiB or 1 MiB rings of the lower tiers is not left untraced by the 16 MiB one. A configured
// size (CUTRACE_RING_SIZE) is taken as it is.
//
// The address space in use is read from /proc/self/statm, which also counts another thread's
// passing mappings: glibc maps 128 MB to carve an aligned 64 MB malloc arena out of it and trims
// the rest right after, and a thread preempted in between (a loaded machine) leaves that reading
// 64 MB high for a while. A refusal is taken as final only after three pauses (1, 2 and 4 ms:
// once per thread, only where the address space is nearly used up).
ThreadState* newStateInAddressSpace() {
  for (long pauseMs = 1;; pauseMs *= 2) {
    for (uint64_t bytes = wantedRingBytes();; bytes = bytes > kAutoRingBytes ? kAutoRingBytes : kAutoRingSmallBytes) {
      if (ThreadState* s = newState(bytes)) return s;
      if (g().config.ringBytes != 0 || bytes <= kAutoRingSmallBytes) break;
    }
    if (pauseMs > 4) return nullptr;
    const timespec pause{0, pauseMs * 1000000L};
    nanosleep(&pause, nullptr);
  }
}

void fillProcessMeta(TraceMeta& meta);

// What the store decoded since the last call goes to the stream; the stream then holds it and
// memory lets it go. `passEnd`: the pass's last piece (device work, memory counters).
void streamOut(bool passEnd) {
  Globals& gl = g();
  if (stacks::table().reserved()) {
    if (gl.symbolizer == nullptr) gl.symbolizer = new Symbolizer(gl.config.debugDirs);
    gl.store->resolveStacks(stacks::table(), *gl.symbolizer);
  }
  // Device work CUPTI has delivered so far goes into the stream with this pass, so memory holds
  // it for one pass, not for the run (lock order: the drain mutex, then CUPTI's).
  if (passEnd) Cupti::collect(gl.store->data(), gl.names);
  // Nothing is written for a process that recorded nothing (a shell, a helper process).
  if (gl.stream != nullptr && gl.store->recordedAny()) {
    TraceMeta& meta = gl.store->data().meta;
    if (!gl.streamMeta) {
      fillProcessMeta(meta);
      gl.streamMeta = true;
    }
    // Memory holds one piece of a pass while the stream takes it. Once the stream has failed
    // (no room on disk) events stay in memory, up to the memory cap, for the files at exit.
    if (gl.stream->pass(gl.store->data(), gl.config, gl.lastAnchor.monotonicNs, passEnd)) gl.store->releaseEvents();
  }
}

// A busy thread's records are decoded and streamed this many at a time: what a pass holds in
// memory (events, the writer's nesting, packets) stays the same size however full the rings
// are, in cache, its pages touched once. A 4 MiB ring passes half full with 32K records: at
// 20 M events/s the first such pass took 5.5-10 ms (0.6 ms later on), most of it faulting in
// ~6 MB of fresh memory, while the ring filled in 1.6 ms. A batch is one block of events.
constexpr uint64_t kBatchRecords = 8192;

// `final`: the last pass (exit, fork): every record is taken, also those past the anchor.
void drainPass(bool final) {
  Globals& gl = g();
  if (gl.store == nullptr) {
    gl.store = new Store(gl.names);
    gl.store->setClock(TickTimeline(Clock::startAnchor(), !Clock::usesTsc()));
    gl.store->setMemoryCap(gl.config.maxMemory);
    gl.store->data().hooks.assign(gl.hooks, gl.hooks + gl.hookCount);
  }
  // The anchor is taken before the rings are read: every record consumed below is older.
  gl.lastAnchor = Clock::sampleAnchor();
  gl.store->addClockAnchor(gl.lastAnchor);
  for (ThreadState* s = gl.registry.load(std::memory_order_acquire); s; s = s->next) {
    const Life life = s->life.load(std::memory_order_acquire);
    if (life != Life::Active && life != Life::Retired) continue;
    // A thread that ended is emptied whole: its state is freed below.
    const bool whole = final || life == Life::Retired;
    // What the thread committed by now: what it adds while the batches are streamed waits for
    // the next pass (taken now it would all be past the anchor, carried: copied, decoded later).
    const uint64_t upTo = s->ring.readEnd();
    while (gl.store->consume(*s, life == Life::Retired, whole ? UINT64_MAX : gl.lastAnchor.ticks, kBatchRecords, upTo))
      streamOut(false);
    if (life == Life::Retired) {
      releaseState(s);
      gl.retiredWaiting.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  streamOut(true);
}

// Allocation failure in a drain pass (std::bad_alloc from a container, an event block that
// could not be mapped) turns tracing off with one warning; the program runs on. The boundary
// is here because the drain thread's start routine must not let an exception escape. Caller
// holds the drain mutex. False when tracing had to stop.
bool drainPassSafely(bool final) {
  Globals& gl = g();
  if (gl.storeFailed) return false;
  try {
    drainPass(final);
    if (!gl.store->outOfMemory()) return true;
  } catch (const std::exception&) {
  }
  gl.storeFailed = true;
  Collector::disable("cutrace: out of memory while collecting events");
  return false;
}

void wakeDrain() {
  Globals& gl = g();
  gl.wakeWord.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &gl.wakeWord, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Whether the process's threads are the drain thread and the main thread, ended (a zombie until
// the process ends, still counted in /proc/self/status), and the files helper if it runs.
bool onlyDrainThreadLeft() {
  char buf[4096];
  const ssize_t n = privateFiles::readFile("/proc/self/status", buf, sizeof(buf) - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* at = strstr(buf, "\nThreads:");
  return at != nullptr && strtol(at + 10, nullptr, 10) == 2 + privateFiles::helperThreads();
}

void* drainMain(void*) {
  tls::busy = 1;  // the drain thread never records itself
  prctl(PR_SET_NAME, "cutrace-drain", 0, 0, 0);
  Globals& gl = g();
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the futex word is the atomic itself");
  uint32_t seen = 0;
  uint32_t untilCaptureEdge = UINT32_MAX;
  // The first pass comes at once, with no wait: a ring that passed half full before this thread
  // first ran (it starts with the process's first event, and may wait for a core) made its one
  // wake then, and a wait on the word as it was when this thread began would sleep the whole
  // interval while the ring overflowed (13.7 % of a 20 M events/s loop lost so in 3 runs of 6).
  for (bool first = true;; first = false) {
    if (gl.stopDrain.load()) break;
    // Once the main thread has ended with pthread_exit, the process ends when its last thread
    // does, on the first pass that sees it (below): passes come often enough that the end is not
    // held up by a whole interval.
    constexpr uint32_t kAfterMainExitMs = 10;
    const uint32_t ms = std::min({gl.config.drainIntervalMs, untilCaptureEdge,
                                  gl.mainThreadExited.load() ? kAfterMainExitMs : UINT32_MAX});
    timespec interval{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
    if (!first) syscall(SYS_futex, &gl.wakeWord, FUTEX_WAIT_PRIVATE, seen, &interval, nullptr, 0);
    // Taken before the pass: a ring that passes half full while the pass runs (a slow first
    // pass, a burst) wakes the next wait at once. Taken after it, that nudge was lost and the
    // ring waited out a whole interval: 1.7 % of a 6 M events/s loop was dropped so, in the
    // first 60 ms.
    seen = gl.wakeWord.load(std::memory_order_acquire);
    if (gl.stopDrain.load()) break;
    // The main thread ended with pthread_exit and every other thread since: this thread returns,
    // so that glibc ends the process as it would have (exit(0) from the last thread, whose exit
    // handlers write the trace: finish() on this thread joins nothing).
    if (gl.mainThreadExited.load() && onlyDrainThreadLeft()) {
      privateFiles::stop();  // else the helper would be the last thread, and the process would not end
      break;
    }
    if (gl.finishRequested.load()) {
      Collector::finish();
      gl.finishDone.store(true);
      break;
    }
    untilCaptureEdge = capture::onTick();
    std::lock_guard<std::mutex> lock(gl.drainMutex);
    if (!drainPassSafely(false)) {
      gl.finishDone.store(true);  // nothing will be written: a terminating signal need not wait
      break;
    }
    gl.passWord.fetch_add(1, std::memory_order_release);
    if (gl.exitWaiters.load(std::memory_order_acquire) != 0)
      syscall(SYS_futex, &gl.passWord, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
  return nullptr;
}

void startDrainThread() {
  Globals& gl = g();
  bool expected = false;
  if (!gl.drainStarted.compare_exchange_strong(expected, true)) return;
  // A time capture turns on at its passes: the process's first event, whose thread starts it,
  // is checked against the window now (a program idle until after the window opened would
  // otherwise lose its first CUDA calls, made before the new thread's first pass).
  capture::onTick();
  // The drain thread must never take the program's signals.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&gl.drainThread, nullptr, drainMain, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    gl.drainStarted.store(false);
    Collector::warnOnce("cutrace: could not start the drain thread; events are kept until the ring is full\n");
  }
}

void stopDrainThread() {
  Globals& gl = g();
  if (!gl.drainStarted.load()) return;
  gl.stopDrain.store(true);
  wakeDrain();
  if (!pthread_equal(pthread_self(), gl.drainThread)) pthread_join(gl.drainThread, nullptr);
  gl.drainStarted.store(false);
}

// Every lock the collector and CUPTI's state hold is taken here, in their nesting order
// (drainMutex, then CUPTI's), so a fork never leaves one held by a thread the child lacks. The
// preload's own locks (the symbol-resolution mutex) are rebuilt in the child instead
// (preload/hook_table.cpp). Everything else is lock-free or constant-initialised.
void atforkPrepare() {
  t_forkLocked = false;
  if (g().init.load() != InitState::Done || !ownProcess()) return;
  g().drainMutex.lock();
  Cupti::lockForFork();
  t_forkLocked = true;
}

void atforkParent() {
  if (!t_forkLocked) return;
  t_forkLocked = false;
  Cupti::unlockAfterFork();
  g().drainMutex.unlock();
}

void atforkChild() {
  Globals& gl = g();
  privateFiles::forgetAfterFork();
  graph_capture::reset();  // the parent's captures; CUDA does not carry over a fork either
  if (!t_forkLocked) return;  // the parent was not ownProcess(): neither is this child
  t_forkLocked = false;
  Cupti::forgetAfterFork();  // releases CUPTI's lock too
  gl.drainMutex.unlock();
  // Only the forking thread exists here. The parent writes its own events; the child starts
  // empty: no inherited store, no inherited ring contents, a drain thread of its own.
  gl.wakeWord.store(0);
  gl.stopDrain.store(false);
  gl.drainStarted.store(false);
  gl.pid = realPid();
  gl.finishRequested.store(false);
  gl.finishDone.store(false);
  gl.mainThreadExited.store(false);
  delete gl.store;
  gl.store = nullptr;
  gl.streamMeta = false;
  if (gl.stream != nullptr) gl.stream->forget();
  // Every inherited state is released, the forking thread's too: its next event attaches
  // afresh, which also starts the child's drain thread. Nothing starts a thread here, so a child
  // that records nothing (a shell running a command) never gets one.
  for (ThreadState* s = gl.registry.load(); s; s = s->next) releaseState(s);
  gl.retiredWaiting.store(0, std::memory_order_relaxed);
  gl.exitWaiters.store(0, std::memory_order_relaxed);
  gl.ringBytesInUse.store(0, std::memory_order_relaxed);  // also what a state set up at the fork had reserved
  tls::state = nullptr;
  pthread_setspecific(gl.exitKey, nullptr);  // its exit must not retire a state another thread took
}

void atExit() { Collector::finish(); }

// SIGINT/SIGTERM with no handler of the program: the drain thread writes the trace (it can
// allocate and lock; a handler cannot), the handler waits for it at most a few seconds, then
// the signal is delivered again with its default action, so the process ends exactly as it
// would have. Async-signal-safe: atomics, nanosleep, raise.
void onTerminatingSignal(int sig) {
  const int savedErrno = errno;
  Globals& gl = g();
  if (gl.drainStarted.load() && !gl.finished.load() && ownProcess()) {
    gl.finishRequested.store(true);
    wakeDrain();
    for (int i = 0; i < 3000 && !gl.finishDone.load(); ++i) {
      timespec ts{0, 1000000};
      nanosleep(&ts, nullptr);
    }
  }
  // SA_RESETHAND restored the default action; the signal is blocked while this runs, so it is
  // delivered again as soon as the handler returns.
  raise(sig);
  errno = savedErrno;
}

void installSignalHandlers() {
  // The preload's sigaction/signal report this handler as SIG_DFL (preload/signal_hooks.cpp).
  if (&cutraceOwnSignalHandler != nullptr) cutraceOwnSignalHandler = onTerminatingSignal;
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = onTerminatingSignal;
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

// What the stream and the final trace both record about the process and its clock.
void fillProcessMeta(TraceMeta& meta) {
  meta.pid = static_cast<uint32_t>(getpid());
  meta.capture = capture::describe();
  meta.clockSource = Clock::sourceName();
  meta.originMonotonicNs = Clock::startAnchor().monotonicNs;
  meta.realtimeMinusMonotonicNs = Clock::realtimeMinusMonotonicNs();
  meta.exe = program_invocation_short_name;
  meta.commandLine.clear();
  // Read in pieces into memory allocated here: a private-files job allocates nothing.
  std::string text(4096, '\0');
  std::size_t size = 0;
  for (ssize_t n = 1; n > 0; size += static_cast<std::size_t>(n)) {
    if (size == text.size()) text.resize(2 * size);
    n = std::max<ssize_t>(0, privateFiles::readFile("/proc/self/cmdline", text.data() + size, text.size() - size,
                                                    static_cast<off_t>(size)));
  }
  for (std::size_t at = 0; at < size;) {
    const std::size_t end = std::min(size, text.find('\0', at));
    meta.commandLine.emplace_back(text, at, end - at);
    at = end + 1;
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) meta.hostname = host;
  // The launcher's rank, for file names and merging: the first of these that is a number.
  meta.rank = -1;
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = getenv(name);
    if (v == nullptr || *v < '0' || *v > '9' || strlen(v) > 9) continue;
    char* end = nullptr;
    const long r = strtol(v, &end, 10);
    if (*end != '\0') continue;
    meta.rank = static_cast<int>(r);
    break;
  }
}

void resolveLibraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&resolveLibraryPath), &info) == 0 || info.dli_fname == nullptr) return;
  if (realpath(info.dli_fname, g().libraryPath) == nullptr) g().libraryPath[0] = '\0';
}

void makeOutputDirAbsolute(Config& config) {
  if (config.outputDir[0] == '/') return;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return;
  char joined[PATH_MAX];
  const int n = snprintf(joined, sizeof(joined), "%s/%s", cwd, config.outputDir);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof(joined)) return;
  // A relative CUTRACE_OUTPUT would be resolved again by each image the process starts, from its
  // working directory then: the process's own entry names this directory instead from now on, so
  // that every child gets it however it is started (system() and popen() hand glibc's spawn
  // `environ` internally, past any hook), and the exec hooks swap it into environments copied
  // before (Python's os.environ is made after this, in main). The entry's pointer is replaced in
  // place, one aligned store: a thread reading the environment sees the old or the new string,
  // both kept for the process's life.
  Globals& gl = g();
  const char* set = getenv("CUTRACE_OUTPUT");
  if (set != nullptr && strcmp(set, config.outputDir) == 0) {
    snprintf(gl.outputEnvRelative, sizeof(gl.outputEnvRelative), "CUTRACE_OUTPUT=%s", set);
    snprintf(gl.outputEnvAbsolute, sizeof(gl.outputEnvAbsolute), "CUTRACE_OUTPUT=%s", joined);
    // The entry getenv() read: `set` is its value.
    const char* const entryOfSet = set - (sizeof("CUTRACE_OUTPUT=") - 1);
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
      if (*entry == entryOfSet) {
        __atomic_store_n(entry, static_cast<char*>(gl.outputEnvAbsolute), __ATOMIC_RELEASE);
        break;
      }
  }
  memcpy(config.outputDir, joined, static_cast<std::size_t>(n) + 1);
}

}  // namespace

namespace detail {

ThreadState* attachThread() {
  if (!recordingHere()) return nullptr;
  ReentrancyGuard guard;
  // A signal handler that ran between the check above and the guard attached this thread.
  if (tls::state != nullptr) return tls::state;
  const int savedErrno = errno;
  if (!ownProcess()) {  // a raw-clone child: records nothing (see ownProcess)
    errno = savedErrno;
    return nullptr;
  }
  // A state left by a thread that ended keeps its mapping: its owner may get a smaller ring in
  // it than a new mapping would hold (never a larger one).
  ThreadState* s = claimFreeState();
  if (s == nullptr) s = newStateInAddressSpace();
  if (s == nullptr) {
    errno = savedErrno;
    Collector::disable("cutrace: out of memory for a thread ring");
    return nullptr;
  }
  resetState(s);
  s->life.store(Life::Active, std::memory_order_release);
  tls::state = s;
  pthread_setspecific(g().exitKey, s);
  startDrainThread();
  errno = savedErrno;
  return s;
}

void nudgeDrain() {
  // A hook's errno must come back unchanged (the futex call may set it).
  const int savedErrno = errno;
  if (g().drainStarted.load(std::memory_order_relaxed)) wakeDrain();
  errno = savedErrno;
}

}  // namespace detail

void Collector::initialize(const HookDescriptor* hooks, std::size_t hookCount, Writer writer, const Stream* stream) {
  Globals& gl = g();
  // Before the claim below, so that whoever runs the initialisation has set it: every thread
  // of a process stores the same value, and a fork child keeps its parent's.
  if (gl.initPid.load() == 0) gl.initPid.store(realPid());
  InitState expected = InitState::NotStarted;
  if (!gl.init.compare_exchange_strong(expected, InitState::Running)) {
    // Another thread is initialising: wait for it unless that thread is us (re-entry), or
    // it was a thread of the parent and this is a child forked meanwhile, where it will never
    // finish: this process is not traced then.
    if (tls::busy == 0)
      while (gl.init.load() == InitState::Running) {
        if (gl.initPid.load() != realPid()) {
          detail::mode.store(Mode::Off, std::memory_order_release);
          return;
        }
        sched_yield();
      }
    return;
  }
  ReentrancyGuard guard;
  const int savedErrno = errno;
  gl.hooks = hooks;
  gl.hookCount = hookCount;
  gl.writer = writer;
  gl.stream = stream;
  rememberStderr();  // cutrace's lines go to this file only, whatever the program does with fd 2
  resolveLibraryPath();
  ConfigError error;
  gl.config = parseConfig(environ, error);
  if (error.failed()) {
    char line[sizeof(error.message) + 2];
    snprintf(line, sizeof(line), "%s\n", error.message);
    gl.warned.store(true);
    writeDiagnostic(line);
  }
  Clock::init(gl.config.clock);
  gl.lastAnchor = Clock::startAnchor();
  makeOutputDirAbsolute(gl.config);
  // What tracing takes from the address space before the first event: the name and stack
  // tables, the drain thread's stack and malloc arena, CUPTI (187 MB measured with all of them,
  // 2026-11-24). Under an RLIMIT_AS without that room, the program keeps its address space.
  constexpr std::size_t kStartupBytes = std::size_t{256} << 20;
  if (gl.config.enabled && !addressSpaceAllows(kStartupBytes)) {
    gl.config.enabled = false;
    warnOnce("cutrace: the address-space limit (RLIMIT_AS) leaves too little room for tracing; tracing disabled\n");
  }
  if (gl.config.enabled && !gl.names.init()) {
    gl.config.enabled = false;
    warnOnce("cutrace: could not reserve memory for names; tracing disabled\n");
  }
  if (gl.config.enabled) stacks::initialize(gl.config);
  if (gl.config.enabled) capture::initialize(gl.config.capture, hooks, hookCount);
  if (gl.config.enabled) {
    pthread_key_create(&gl.exitKey, threadExit);
    pthread_atfork(atforkPrepare, atforkParent, atforkChild);
    atexit(atExit);
    // quick_exit runs only these handlers, then glibc's internal _exit (not the preload's
    // _exit, which a call from inside libc never reaches): without one the trace is not written.
    at_quick_exit(atExit);
    gl.pid = realPid();
    installSignalHandlers();
  }
  detail::mode.store(gl.config.enabled ? Mode::On : Mode::Off, std::memory_order_release);
  gl.init.store(InitState::Done);
  errno = savedErrno;
}

std::atomic<uint64_t>& Collector::counter(const char* name) {
  Globals& gl = g();
  for (auto& c : gl.counters) {
    const char* cur = c.name.load(std::memory_order_acquire);
    if (cur == nullptr) {
      if (c.name.compare_exchange_strong(cur, name, std::memory_order_acq_rel)) return c.value;
    }
    if (cur != nullptr && strcmp(cur, name) == 0) return c.value;
  }
  return gl.counters[15].value;  // full: the last slot absorbs the rest
}

bool Collector::initialized() { return g().init.load() == InitState::Done; }
bool Collector::ownsProcess() { return g().init.load() == InitState::Done && ownProcess(); }

namespace {
bool g_loaderStuck = false;
void noteLoaderState() { g_loaderStuck = _r_debug.r_state != r_debug::RT_CONSISTENT; }
// Registered when the library is loaded, before the program can fork from a thread.
[[maybe_unused]] const int kLoaderForkHandler = pthread_atfork(nullptr, nullptr, noteLoaderState);
}  // namespace

bool Collector::loaderStuckSinceFork() { return g_loaderStuck; }
const Config& Collector::config() { return g().config; }
NameTable& Collector::names() { return g().names; }
const char* Collector::libraryPath() { return g().libraryPath; }

bool Collector::outputEnvEntries(const char*& relative, const char*& absolute) {
  const Globals& gl = g();
  if (gl.outputEnvRelative[0] == '\0') return false;
  relative = gl.outputEnvRelative;
  absolute = gl.outputEnvAbsolute;
  return true;
}

void Collector::warnOnce(const char* message) {
  if (g().warned.exchange(true)) return;
  if (g().config.log == LogLevel::Off) return;
  writeDiagnostic(message);
}

void Collector::disable(const char* why) {
  detail::mode.store(Mode::Off, std::memory_order_relaxed);
  // Its own line even after a degradation was reported (stacks off, no CUPTI): a user must
  // learn that no trace is coming. Warnings after it would only be consequences: none.
  Globals& gl = g();
  gl.warned.store(true);
  if (gl.disabled.exchange(true) || gl.config.log == LogLevel::Off) return;
  char line[256];
  snprintf(line, sizeof(line), "%s; tracing disabled\n", why);
  writeDiagnostic(line);
}

namespace {
// Whether finishBeforeExit() has anything to write. Nothing recorded in this image (a forked
// child on its way to exec, a shell): nothing, and nothing should run between a fork and an exec
// that does not have to.
bool traceToWriteBeforeExit() {
  Globals& gl = g();
  return gl.init.load() == InitState::Done && ownProcess() && gl.drainStarted.load();
}
}  // namespace

void Collector::finishBeforeExit() {
  if (traceToWriteBeforeExit()) finish();
}

void Collector::finishBeforeExec(bool (*mayStart)(const char*), const char* what) {
  if (traceToWriteBeforeExit() && mayStart(what)) finish();
}

void Collector::threadExiting() {
  Globals& gl = g();
  if (gl.init.load() != InitState::Done || !ownProcess() || syscall(SYS_gettid) != gl.pid) return;
  gl.mainThreadExited.store(true);
  if (gl.drainStarted.load()) wakeDrain();
}

void Collector::finish() {
  Globals& gl = g();
  // Checked before anything is written: a raw-clone or vfork child must not join the parent's
  // drain thread (it does not exist here), lock its copies of the parent's locks, or write.
  if (gl.init.load() != InitState::Done || !gl.config.enabled || !ownProcess()) return;
  if (gl.finished.exchange(true)) return;
  detail::mode.store(Mode::Off, std::memory_order_release);
  ReentrancyGuard guard;
  const int savedErrno = errno;
  Cupti::flush();  // device records still in CUPTI's buffers
  stopDrainThread();
  // What is written from here is written in the program's descriptor table (private_files.h):
  // the process is ending, and no thread of cutrace's is left running into its exit, or started
  // there by a process that recorded nothing.
  privateFiles::stop();
  std::lock_guard<std::mutex> lock(gl.drainMutex);
  if (!drainPassSafely(true)) {
    errno = savedErrno;
    return;
  }
  // Out of memory while assembling or writing the trace: nothing is written (files are named
  // only once complete), one warning, the process ends as it would have.
  try {
    Cupti::collect(gl.store->data(), gl.names);
    const ClockAnchor end = gl.lastAnchor;
    gl.store->finalize(end.ticks);
    TraceData& data = gl.store->data();
    TraceMeta& meta = data.meta;
    fillProcessMeta(meta);
    meta.endMonotonicNs = end.monotonicNs;
    data.stackInfo.unwinder = stacks::unwinderName();
    data.stackInfo.fallbacks = stacks::unwindFallbacks();
    data.stackInfo.verified = stacks::verifyingUnwind();
    data.stackInfo.mismatches = stacks::unwindMismatches();
    data.stackInfo.python = stacks::pythonStatus();
    data.stackInfo.depth = gl.config.stacks == StackMode::Off ? 0 : gl.config.stackDepth;
    data.stackInfo.overflowed = stacks::table().overflowed();
    meta.counters.clear();
    for (auto& c : gl.counters) {
      const char* name = c.name.load(std::memory_order_acquire);
      if (name != nullptr) meta.counters.emplace_back(name, c.value.load(std::memory_order_relaxed));
    }
    if (gl.writer != nullptr && data.eventCount() + data.droppedEvents() + data.device.size() > 0) gl.writer(data, gl.config);
  } catch (const std::exception&) {
    gl.storeFailed = true;
    disable("cutrace: out of memory while writing the trace, nothing written");
  }
  errno = savedErrno;
}

}  // namespace cutrace
