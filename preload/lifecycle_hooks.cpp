// Ends of a process image that skip atexit handlers and destructors: _exit/_Exit (Python's
// os._exit, multiprocessing and DataLoader workers, children after fork) and the exec family
// (launchers, shells). The collector writes the trace first; then the call proceeds as glibc
// would have made it. After exec the new image loads the preload again (LD_PRELOAD is
// inherited) and is traced under its own name. An exec bound to fail (no such file, or not an
// executable file for this process: looked at first, as the kernel and execvp's PATH search
// would) writes nothing and leaves the image traced, for a program that tries commands in turn;
// one that fails past that look (a race, E2BIG, fexecve) leaves this image untraced from then on.
//
// pthread_exit is watched too: where the main thread ends with it, the process ends with its
// last other thread, and cutrace's drain thread must not be that thread.
//
// glibc's execv/execvp/execl* reach execve internally, not through the PLT, so each entry point
// is interposed on its own; the variadic ones gather their arguments into an array first (as
// glibc's do: any number of them).
//
// posix_spawn/posix_spawnp start a new image in a child while this one goes on: only the
// child's environment is looked at, as an exec's is (a relative CUTRACE_OUTPUT). system() and
// popen() reach glibc's spawn internally and hand the child `environ` as it is, whose entry the
// collector made absolute at start (makeOutputDirAbsolute).

#include <alloca.h>
#include <errno.h>
#include <spawn.h>
#include <string.h>

#include <atomic>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/collector.h"
#include "preload/next_symbol.h"

namespace {

#define CUTRACE_NEXT_AS(var, type, name)         \
  static std::atomic<void*> next_##name{nullptr}; \
  const auto var = cutrace::nextSymbol<type>(next_##name, #name)
#define CUTRACE_NEXT(type, name) CUTRACE_NEXT_AS(real, type, name)

// Whether execve(path) may start a program: an executable regular file for this process's
// effective ids (what else the kernel refuses, it refuses after this look). errno kept.
bool mayExec(const char* path) {
  const int err = errno;
  struct stat st;
  const bool may = path != nullptr && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                   faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
  errno = err;
  return may;
}

// The same for execvp(file): `file` itself where it holds a '/', else each entry of PATH
// (glibc's default where it is unset; an empty entry is the current directory). A candidate
// longer than PATH_MAX counts as one that may run.
bool mayExecFromPath(const char* file) {
  if (file == nullptr || file[0] == '\0') return false;
  if (strchr(file, '/') != nullptr) return mayExec(file);
  const char* path = getenv("PATH");
  if (path == nullptr) path = "/bin:/usr/bin";
  const std::size_t fileLen = strlen(file);
  char candidate[PATH_MAX];
  for (const char* dir = path;; ++dir) {
    const char* end = strchrnul(dir, ':');
    const std::size_t dirLen = static_cast<std::size_t>(end - dir);
    if (dirLen + 1 + fileLen + 1 > sizeof(candidate)) return true;
    memcpy(candidate, dir, dirLen);
    std::size_t at = dirLen;
    if (dirLen != 0) candidate[at++] = '/';
    memcpy(candidate + at, file, fileLen + 1);
    if (mayExec(candidate)) return true;
    if (*end == '\0') return false;
    dir = end;
  }
}

// execl* arguments gathered on the stack; a longer list takes pages of its own for the call (no
// malloc in a hook: a child forked from a threaded parent may find malloc's lock held).
constexpr std::size_t kStackListArgs = 1024;

// execl, execlp, execle: `first`, the arguments after it to the NULL (read as glibc reads them:
// at least one, even after a null `first`) and, for execle, the environment after that, handed
// to `exec` as an array. Returns only when the exec failed, with its errno.
template <typename Exec>
int execList(const char* first, va_list ap, bool withEnv, Exec exec) {
  std::size_t argc = 1;
  va_list count;
  va_copy(count, ap);
  while (va_arg(count, char*) != nullptr) ++argc;
  va_end(count);
  char* onStack[kStackListArgs + 1];
  char** argv = onStack;
  std::size_t mappedBytes = 0;
  if (argc > kStackListArgs) {
    mappedBytes = (argc + 1) * sizeof(char*);
    void* p = mmap(nullptr, mappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;  // ENOMEM, as glibc's own array would have failed
    argv = static_cast<char**>(p);
  }
  argv[0] = const_cast<char*>(first);
  for (std::size_t i = 1; i <= argc; ++i) argv[i] = va_arg(ap, char*);  // the NULL too: the environment follows it
  char* const* envp = withEnv ? va_arg(ap, char* const*) : nullptr;
  const int rc = exec(argv, envp);
  if (mappedBytes != 0) {
    const int savedErrno = errno;  // the exec's, not munmap's
    munmap(argv, mappedBytes);
    errno = savedErrno;
  }
  return rc;
}

// An environment with at most this many entries is rewritten, on the hook's stack (a vfork
// child's pages would stay mapped in its parent); a larger one is handed on as it is.
constexpr std::size_t kMostEnvEntries = 1024;

// Where `envp` holds cutrace's relative CUTRACE_OUTPUT entry as the process started with it:
// its place, the entries in all, and the entry naming the directory it resolved to at start
// (Collector::outputEnvEntries), which the exec'd image gets instead.
struct EnvSwap {
  std::size_t count = 0, at = SIZE_MAX;
  const char* absolute = nullptr;
};
bool findEnvSwap(char* const* envp, EnvSwap& swap) {
  const char* relative = nullptr;
  if (envp == nullptr || !cutrace::Collector::outputEnvEntries(relative, swap.absolute)) return false;
  for (; envp[swap.count] != nullptr; ++swap.count) {
    if (swap.count == kMostEnvEntries) return false;
    if (swap.at == SIZE_MAX && strcmp(envp[swap.count], relative) == 0) swap.at = swap.count;
  }
  return swap.at != SIZE_MAX;
}
char* const* swapEnv(char* const* envp, const EnvSwap& swap, char** buffer) {
  for (std::size_t i = 0; i <= swap.count; ++i) buffer[i] = envp[i];
  buffer[swap.at] = const_cast<char*>(swap.absolute);
  return buffer;
}

// `var`: the environment the exec'd image gets, `envp` or a copy sized to it on this hook's
// stack (alloca: it lives until the hook returns, after a failed exec).
#define CUTRACE_CHILD_ENV(var, envp)                                                              \
  EnvSwap swap_##var;                                                                             \
  char* const* var = (envp);                                                                      \
  if (findEnvSwap(var, swap_##var))                                                               \
  var = swapEnv(var, swap_##var, static_cast<char**>(alloca((swap_##var.count + 1) * sizeof(char*))))

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
  cutrace::Collector::finishBeforeExec(mayExec, path);
  CUTRACE_CHILD_ENV(env, envp);
  return real(path, argv, env);
}

// execv and execvp use `environ`: where it changes, the call goes to execve / execvpe with it.
__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  CUTRACE_NEXT(int (*)(const char*, char* const*), execv);
  cutrace::Collector::finishBeforeExec(mayExec, path);
  CUTRACE_CHILD_ENV(env, environ);
  if (env == environ) return real(path, argv);
  CUTRACE_NEXT_AS(withEnv, int (*)(const char*, char* const*, char* const*), execve);
  return withEnv(path, argv, env);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  CUTRACE_NEXT(int (*)(const char*, char* const*), execvp);
  cutrace::Collector::finishBeforeExec(mayExecFromPath, file);
  CUTRACE_CHILD_ENV(env, environ);
  if (env == environ) return real(file, argv);
  CUTRACE_NEXT_AS(withEnv, int (*)(const char*, char* const*, char* const*), execvpe);
  return withEnv(file, argv, env);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  CUTRACE_NEXT(int (*)(const char*, char* const*, char* const*), execvpe);
  cutrace::Collector::finishBeforeExec(mayExecFromPath, file);
  CUTRACE_CHILD_ENV(env, envp);
  return real(file, argv, env);
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[], char* const envp[]) {
  CUTRACE_NEXT(int (*)(int, char* const*, char* const*), fexecve);
  cutrace::Collector::finishBeforeExit();
  CUTRACE_CHILD_ENV(env, envp);
  return real(fd, argv, env);
}

using PosixSpawn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                          char* const*, char* const*);

__attribute__((visibility("default"))) int posix_spawn(pid_t* pid, const char* path,
                                                       const posix_spawn_file_actions_t* actions,
                                                       const posix_spawnattr_t* attr, char* const argv[],
                                                       char* const envp[]) {
  CUTRACE_NEXT(PosixSpawn, posix_spawn);
  CUTRACE_CHILD_ENV(env, envp);
  return real(pid, path, actions, attr, argv, env);
}

__attribute__((visibility("default"))) int posix_spawnp(pid_t* pid, const char* file,
                                                        const posix_spawn_file_actions_t* actions,
                                                        const posix_spawnattr_t* attr, char* const argv[],
                                                        char* const envp[]) {
  CUTRACE_NEXT(PosixSpawn, posix_spawnp);
  CUTRACE_CHILD_ENV(env, envp);
  return real(pid, file, actions, attr, argv, env);
}

// Through the hooks above, so the trace is written once, before the exec.
__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int rc = execList(arg, ap, false, [path](char* const* argv, char* const*) { return execv(path, argv); });
  va_end(ap);
  return rc;
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int rc = execList(arg, ap, false, [file](char* const* argv, char* const*) { return execvp(file, argv); });
  va_end(ap);
  return rc;
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int rc = execList(arg, ap, true, [path](char* const* argv, char* const* envp) { return execve(path, argv, envp); });
  va_end(ap);
  return rc;
}

}  // extern "C"
