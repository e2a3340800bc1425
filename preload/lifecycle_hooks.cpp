// Ends of a process image that skip atexit handlers and destructors: _exit/_Exit (Python's
// os._exit, multiprocessing and DataLoader workers, children after fork) and the exec family
// (launchers, shells). The collector writes the trace first; then the call proceeds as glibc
// would have made it. After exec the new image loads the preload again (LD_PRELOAD is
// inherited) and is traced under its own name. A failed exec leaves this image untraced from
// then on.
//
// pthread_exit is watched too: where the main thread ends with it, the process ends with its
// last other thread, and cutrace's drain thread must not be that thread.
//
// glibc's execv/execvp/execl* reach execve internally, not through the PLT, so each entry point
// is interposed on its own; the variadic ones gather their arguments into an array first.

#include <dlfcn.h>
#include <errno.h>

#include <atomic>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/collector.h"

namespace {

// The next definition of `name` (glibc's, or a sanitizer's interceptor), looked up on first use
// into a constant-initialised slot: a guarded function-local static would call
// __cxa_guard_acquire, which sanitizer runtimes intercept. A race only looks it up twice.
template <typename F>
F nextFunction(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_relaxed);
  if (p == nullptr) {
    p = dlsym(RTLD_NEXT, name);
    slot.store(p, std::memory_order_relaxed);
  }
  return reinterpret_cast<F>(p);
}

#define CUTRACE_NEXT(type, name)                 \
  static std::atomic<void*> next_##name{nullptr}; \
  const auto real = nextFunction<type>(next_##name, #name)

constexpr int kMaxListArgs = 1024;  // execl* beyond this fail with E2BIG (the array is on the stack)

}  // namespace

extern "C" {

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  cutrace::Collector::finishBeforeExit();
  for (;;) syscall(SYS_exit_group, status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  cutrace::Collector::finishBeforeExit();
  for (;;) syscall(SYS_exit_group, status);
}

// The main thread's pthread_exit leaves the process to its other threads, the drain thread
// among them, which must then not keep it alive (Collector::threadExiting).
__attribute__((visibility("default"), noreturn)) void pthread_exit(void* value) {
  CUTRACE_NEXT(void (*)(void*), pthread_exit);
  cutrace::Collector::threadExiting();
  real(value);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  CUTRACE_NEXT(int (*)(const char*, char* const*, char* const*), execve);
  cutrace::Collector::finishBeforeExit();
  return real(path, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  CUTRACE_NEXT(int (*)(const char*, char* const*), execv);
  cutrace::Collector::finishBeforeExit();
  return real(path, argv);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  CUTRACE_NEXT(int (*)(const char*, char* const*), execvp);
  cutrace::Collector::finishBeforeExit();
  return real(file, argv);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  CUTRACE_NEXT(int (*)(const char*, char* const*, char* const*), execvpe);
  cutrace::Collector::finishBeforeExit();
  return real(file, argv, envp);
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[], char* const envp[]) {
  CUTRACE_NEXT(int (*)(int, char* const*, char* const*), fexecve);
  cutrace::Collector::finishBeforeExit();
  return real(fd, argv, envp);
}

// execl, execlp, execle: the argument list, NULL-terminated (execle: then the environment).
#define CUTRACE_GATHER_ARGS(first, argv, ap)            \
  char* argv[kMaxListArgs + 1];                         \
  int argc_ = 0;                                        \
  argv[argc_++] = const_cast<char*>(first);             \
  while (argv[argc_ - 1] != nullptr) {                  \
    if (argc_ > kMaxListArgs) {                         \
      va_end(ap);                                       \
      errno = E2BIG;                                    \
      return -1;                                        \
    }                                                   \
    argv[argc_++] = va_arg(ap, char*);                  \
  }

__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  CUTRACE_GATHER_ARGS(arg, argv, ap)
  va_end(ap);
  return execv(path, argv);
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  CUTRACE_GATHER_ARGS(arg, argv, ap)
  va_end(ap);
  return execvp(file, argv);
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  CUTRACE_GATHER_ARGS(arg, argv, ap)
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return execve(path, argv, envp);
}

#undef CUTRACE_GATHER_ARGS

}  // extern "C"
