#include "collector/private_files.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <new>

#include "collector/own_file.h"

namespace cutrace::privateFiles {

namespace {

enum class State : uint8_t { NotStarted, Ready, Unavailable, Stopped };

// Posting a job and waiting for it happen under `calls`; the helper reads `job`/`arg`/`quit`
// after its acquire of `posted` and the caller reads `held` after its acquire of `answered`.
struct Helper {
  std::mutex calls;
  std::atomic<uint32_t> posted{0};    // futex word: bumped for each job and for the stop
  std::atomic<uint32_t> answered{0};  // futex word: bumped once the helper started, and per job
  std::atomic<State> state{State::NotStarted};
  bool usable = false;  // the helper's own table is in place (written before its first answer)
  bool quit = false;
  void (*job)(void*) = nullptr;
  void* arg = nullptr;
  std::exception_ptr error;  // what the job threw, thrown again by the caller
  pthread_t thread{};
  HeldDiagnostics held;
};

// Never destroyed: jobs run at exit, after static destructors may have begun.
Helper& helper() {
  static Helper* h = new Helper();
  return *h;
}

constexpr std::size_t kStackBytes = std::size_t{256} << 10;

__thread bool t_onHelper __attribute__((tls_model("initial-exec"))) = false;

void bump(std::atomic<uint32_t>& word) {
  word.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void waitWhile(const std::atomic<uint32_t>& word, uint32_t value) {
  while (word.load(std::memory_order_acquire) == value)
    syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0);
}

// A descriptor table of this thread's own, with none of the program's descriptors in it: a copy
// of a pipe's write end kept here would keep the reader from ever seeing its end.
bool ownEmptyTable() {
  if (unshare(CLONE_FILES) != 0) return false;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer's report on this thread goes to fd 2: kept, in the builds the tests run only.
  return syscall(SYS_close_range, 0u, 1u, 0u) == 0 && syscall(SYS_close_range, 3u, ~0u, 0u) == 0;
#else
  return syscall(SYS_close_range, 0u, ~0u, 0u) == 0;
#endif
}

// The helper's life once started: its table, then jobs until told to quit.
void serve(Helper& h) {
  // Failing, the thread ends and its table with it, the copies of the program's descriptors too.
  h.usable = ownEmptyTable();
  uint32_t seen = h.posted.load(std::memory_order_acquire);
  const bool usable = h.usable;
  bump(h.answered);
  if (!usable) return;
  holdDiagnostics(&h.held);
  for (;;) {
    waitWhile(h.posted, seen);
    seen = h.posted.load(std::memory_order_acquire);
    if (h.quit) return;
    // Nothing may leave this thread's start routine: std::bad_alloc from a job is the caller's.
    try {
      h.job(h.arg);
    } catch (...) {
      h.error = std::current_exception();
    }
    bump(h.answered);
  }
}

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

void* helperMain(void*) {
  // Jobs call nothing cutrace records (no CUDA, no NVTX): no reentrancy guard is needed here.
  t_onHelper = true;
  prctl(PR_SET_NAME, "cutrace-files", 0, 0, 0);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer models descriptors by number, one table per process: this thread's open(3)
  // "races" with the program's write(3) to another file. Its accesses are not checked (every
  // variable a job shares with its caller is handed over through `posted`/`answered`).
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
  serve(helper());
#if defined(__SANITIZE_THREAD__)
  AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
  return nullptr;
}

// Caller holds `calls`.
void start(Helper& h) {
  const uint32_t before = h.answered.load(std::memory_order_acquire);
  // The helper must never take the program's signals.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  // Jobs are a few system calls deep: a small stack, little address space.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  const int rc = pthread_create(&h.thread, &attr, helperMain, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    h.state.store(State::Unavailable);
    return;
  }
  waitWhile(h.answered, before);
  if (h.usable) {
    h.state.store(State::Ready);
  } else {
    pthread_join(h.thread, nullptr);
    h.state.store(State::Unavailable);
  }
}

}  // namespace

void runJob(void (*job)(void*), void* arg) {
  // A job that runs jobs: already where they belong.
  if (t_onHelper) return job(arg);
  Helper& h = helper();
  std::unique_lock<std::mutex> lock(h.calls);
  if (h.state.load() == State::NotStarted) start(h);
  if (h.state.load() != State::Ready) {
    lock.unlock();
    return job(arg);
  }
  h.job = job;
  h.arg = arg;
  const uint32_t before = h.answered.load(std::memory_order_acquire);
  bump(h.posted);
  waitWhile(h.answered, before);
  if (h.held.size != 0) {
    char text[sizeof(h.held.text) + 1];
    memcpy(text, h.held.text, h.held.size);
    text[h.held.size] = '\0';
    h.held.size = 0;
    writeDiagnostic(text);
  }
  if (h.error) {
    std::exception_ptr error = std::move(h.error);
    h.error = nullptr;
    lock.unlock();
    std::rethrow_exception(error);
  }
}

ssize_t readFile(const char* path, void* buf, std::size_t size, off_t offset) {
  ssize_t n = -1;
  int err = 0;
  run([&] {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      n = pread(fd, buf, size, offset);
      err = errno;
      close(fd);
    } else {
      err = errno;
    }
  });
  if (n < 0) errno = err;
  return n;
}

int helperThreads() { return helper().state.load() == State::Ready ? 1 : 0; }

void stop() {
  Helper& h = helper();
  std::lock_guard<std::mutex> lock(h.calls);
  if (h.state.load() == State::Ready) {
    h.quit = true;
    bump(h.posted);
    pthread_join(h.thread, nullptr);
  }
  h.state.store(State::Stopped);
}

void forgetAfterFork() {
  Helper& h = helper();
  // The parent's helper is not here, and a thread of the parent may have held the lock.
  new (&h.calls) std::mutex();
  h.posted.store(0);
  h.answered.store(0);
  h.state.store(State::NotStarted);
  h.usable = false;
  h.quit = false;
  h.held.size = 0;
}

}  // namespace cutrace::privateFiles
