// Process lifecycle and capture control, one scenario per argument:
//   exit-child    a forked child works longer than the drain interval and ends in _exit
//   sigterm       the process is killed by SIGTERM (no handler of its own)
//   sigkill       the process is killed by SIGKILL: its stream is exported afterwards
//   stress        64 threads on tiny rings: drops are counted and match the gaps in seq
//   burst         bursts that fill half a small ring: the drain wakes early and keeps them
//   capture       calls inside and outside cudaProfilerStart/Stop, an NVTX range "focus",
//                 and ten "ProfilerStep#N" steps: which are kept depends on CUTRACE_CAPTURE
//   usr2, timed, timed-window, timed-late   capture by SIGUSR2 and by time
//   exec          execs this program again with "capture" (the new image is traced under
//                 its own name)
//   exec-chdir    as exec, from a directory "elsewhere" it makes and enters first: the new
//                 image's trace goes where this one's does (a relative CUTRACE_OUTPUT)
//   spawn-chdir   as exec-chdir, but the new image is a child started with posix_spawn, which
//                 this one waits for
//   system-chdir, popen-chdir   as spawn-chdir, the new image started by system() / popen() (a
//                 shell that starts it), which this one waits for (popen: copying its output)
//   exec-fails    execs of a file that does not exist, of one that is not executable and of a
//                 command found nowhere on PATH, each between calls: every call is traced
//   quick-exit    ends in quick_exit after calls made since the last drain pass
//   execl-many    execls this program again with 1,500 arguments ("execl-child" and 1,498 more)
//   signal-query  prints the SIGINT/SIGTERM dispositions as each of glibc's calls reads them
//   capture-registered  as capture, its ranges pushed with registered strings
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

extern "C" sighandler_t bsd_signal(int, sighandler_t);  // glibc's; declared for older standards only

namespace {

void calls(int n) {
  for (int i = 0; i < n; ++i) cudaDeviceSynchronize();
}

int exitChild() {
  calls(1);
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    nvtxRangePushA("child");
    calls(2);
    usleep(150 * 1000);  // a timed drain pass or more (every 100 ms by default)
    calls(3);
    nvtxRangePop();
    _exit(5);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

int sigterm() {
  nvtxRangePushA("doomed");
  calls(4);
  fflush(stdout);
  raise(SIGTERM);
  calls(100);  // never reached
  return 0;
}

// SIGKILL: no handler runs; the stream (.pftrace) the drain thread appended is all that is left,
// the ranges still open included (unclosed, to the stream's last timestamp): a named domain's and
// a start/end range too.
int sigkill() {
  nvtxRangePushA("before the kill");
  calls(3);
  nvtxRangePop();
  nvtxRangePushA("open at the kill");
  nvtxEventAttributes_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "open in a domain";
  nvtxDomainRangePushEx(nvtxDomainCreateA("lib"), &attr);
  nvtxRangeStartA("span open at the kill");
  calls(2);
  fflush(stdout);
  usleep(300 * 1000);  // three drain intervals at the default
  raise(SIGKILL);
  return 0;
}

int stress() {
  std::vector<std::thread> threads;
  for (int t = 0; t < 64; ++t) {
    threads.emplace_back([] {
      // Far more than a 16 KiB ring holds between drain passes: some are dropped.
      for (int i = 0; i < 3000; ++i) cudaStreamSynchronize(nullptr);
      // After the ring drained, one last call always fits: no drop hides after the last seq.
      usleep(200 * 1000);
      cudaStreamSynchronize(nullptr);
    });
  }
  for (auto& t : threads) t.join();
  printf("stress done\n");
  return 0;
}

// Bursts of a quarter of a 64 KiB ring with pauses, under a 10 s drain interval: only the
// drain's early wake-up when a ring passes half full keeps most of them (without it, every
// burst after the fourth would be dropped).
int burst() {
  for (int b = 0; b < 100; ++b) {
    for (int i = 0; i < 128; ++i) cudaStreamSynchronize(nullptr);  // 2 records each
    usleep(5 * 1000);
  }
  printf("burst done\n");
  return 0;
}

// A range pushed by its text, or (registered) by a handle to it, as PyTorch and libraries that
// label every step push theirs.
void pushRange(const char* text, bool registered) {
  if (!registered) {
    nvtxRangePushA(text);
    return;
  }
  nvtxEventAttributes_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = nvtxDomainRegisterStringA(nullptr, text);
  nvtxRangePushEx(&attr);
}

int capture(bool registered) {
  calls(1);  // before anything: only "all" keeps it
  cudaProfilerStart();
  calls(2);
  cudaProfilerStop();
  pushRange("focus", registered);
  calls(3);
  nvtxRangePop();
  for (int step = 0; step < 10; ++step) {
    const std::string name = "ProfilerStep#" + std::to_string(step);
    pushRange(name.c_str(), registered);
    calls(1);
    nvtxRangePop();
  }
  printf("capture done\n");
  return 0;
}

// SIGUSR2 toggles recording under CUTRACE_CAPTURE=signal: only the middle calls are kept.
// (Untraced, SIGUSR2 would end the process: the bare run of the e2e harness does not send it.)
int usr2() {
  const bool traced = getenv("LD_PRELOAD") != nullptr;
  calls(1);
  if (traced) raise(SIGUSR2);
  calls(2);
  if (traced) raise(SIGUSR2);
  calls(3);
  printf("usr2 done\n");
  return 0;
}

// Under CUTRACE_CAPTURE=time:0.2 the first call (at once) is not kept, the later two are.
int timed() {
  calls(1);
  usleep(500 * 1000);
  calls(2);
  printf("timed done\n");
  return 0;
}

// Under CUTRACE_CAPTURE=time:0.3,0.4 only the middle calls are kept: the first come before the
// window, the last after it. With CUTRACE_DRAIN_MS=2000 the middle ones come before the drain's
// first timed pass would: the window opens when it says, not at the pass after. The calls are
// placed by the time since main began (cutrace started before it), with 300 ms for the first
// ones, which start everything (slow under ThreadSanitizer: a window opening 20 ms after start,
// as this test had, caught them there once).
int timedWindow() {
  timespec begun{};
  clock_gettime(CLOCK_MONOTONIC, &begun);
  const auto sleepUntilMs = [&](long ms) {
    timespec at = begun;
    at.tv_sec += ms / 1000;
    at.tv_nsec += (ms % 1000) * 1000000;
    if (at.tv_nsec >= 1000000000) at.tv_sec += 1, at.tv_nsec -= 1000000000;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
    }
  };
  calls(1);
  sleepUntilMs(450);
  calls(2);
  sleepUntilMs(1000);
  calls(3);
  printf("timed window done\n");
  return 0;
}

// Under CUTRACE_CAPTURE=time:0.05 a program whose first CUDA calls come after the window opened
// keeps them all. On one core, the drain thread its first call starts runs after that call (a new
// thread does not preempt its creator): the call cannot count on the drain's first pass.
int timedLate() {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  sched_setaffinity(0, sizeof(one), &one);
  usleep(100 * 1000);
  calls(1);
  calls(1);
  printf("timed late done\n");
  return 0;
}

// quick_exit runs the at_quick_exit handlers, then glibc's internal _exit: the trace must be
// written all the same, with the calls made after the last drain pass.
int quickExit() {
  calls(2);
  usleep(150 * 1000);  // a timed drain pass or more
  calls(3);
  printf("quick exit\n");
  fflush(stdout);
  quick_exit(3);
}

// More arguments than the preload's execl gathers on the stack: glibc's execl takes any number.
int execlMany() {
  calls(1);
  fflush(stdout);
#define A10 "a", "a", "a", "a", "a", "a", "a", "a", "a", "a"
#define A100 A10, A10, A10, A10, A10, A10, A10, A10, A10, A10
  execl("/proc/self/exe", "lifecycle", "execl-child", A100, A100, A100, A100, A100, A100, A100, A100, A100, A100, A100,
        A100, A100, A100, A10, A10, A10, A10, A10, A10, A10, A10, A10, "a", "a", "a", "a", "a", "a", "a", "a",
        static_cast<char*>(nullptr));
#undef A100
#undef A10
  perror("execl");
  return 1;
}

// Without cutrace every call reads SIG_DFL; cutrace's own SIGINT/SIGTERM handler must read so.
// Each call reads in a child of its own: setting the disposition back to what one read replaces
// cutrace's handler, and the next call would read that instead.
template <typename Query>
void querySignals(const char* call, Query query) {
  fflush(stdout);
  if (fork() == 0) {
    for (const int sig : {SIGINT, SIGTERM}) {
      const sighandler_t h = query(sig);
      printf("%s %s: %s\n", strsignal(sig), call, h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN" : "a handler");
    }
    fflush(stdout);
    _exit(0);
  }
  wait(nullptr);
}

int signalQuery() {
  calls(1);
  querySignals("sigaction", [](int sig) {
    struct sigaction sa {};
    sigaction(sig, nullptr, &sa);
    return sa.sa_handler;
  });
  querySignals("signal", [](int sig) { return signal(sig, SIG_IGN); });
  querySignals("bsd_signal", [](int sig) { return bsd_signal(sig, SIG_IGN); });
  querySignals("sysv_signal", [](int sig) { return sysv_signal(sig, SIG_IGN); });
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // sigset: deprecated, still in use
  querySignals("sigset", [](int sig) { return sigset(sig, SIG_IGN); });
#pragma GCC diagnostic pop
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "exit-child") return exitChild();
  if (what == "sigterm") return sigterm();
  if (what == "sigkill") return sigkill();
  if (what == "stress") return stress();
  if (what == "burst") return burst();
  if (what == "capture") return capture(false);
  if (what == "capture-registered") return capture(true);
  if (what == "usr2") return usr2();
  if (what == "timed") return timed();
  if (what == "timed-window") return timedWindow();
  if (what == "timed-late") return timedLate();
  if (what == "quick-exit") return quickExit();
  if (what == "execl-many") return execlMany();
  if (what == "signal-query") return signalQuery();
  if (what == "execl-child") {
    calls(1);
    printf("execl child: %d arguments\n", argc);
    return 0;
  }
  if (what == "exec" || what == "exec-chdir" || what == "spawn-chdir") {
    if (what != "exec" && ((mkdir("elsewhere", 0755) != 0 && errno != EEXIST) || chdir("elsewhere") != 0)) {
      perror("elsewhere");
      return 1;
    }
    calls(1);
    fflush(stdout);
    char self[] = "/proc/self/exe";
    char arg[] = "capture";
    char* args[] = {argv[0], arg, nullptr};
    if (what == "spawn-chdir") {
      pid_t child = 0;
      int status = 0;
      if (const int rc = posix_spawn(&child, self, nullptr, nullptr, args, environ); rc != 0) {
        fprintf(stderr, "posix_spawn: %s\n", strerror(rc));
        return 1;
      }
      if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 1;
      return WEXITSTATUS(status);
    }
    execv(self, args);
    perror("execv");
    return 1;
  }
  if (what == "system-chdir" || what == "popen-chdir") {
    // This program by its full path (the shell's /proc/self/exe is the shell).
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return 1;
    self[n] = '\0';
    if ((mkdir("elsewhere", 0755) != 0 && errno != EEXIST) || chdir("elsewhere") != 0) {
      perror("elsewhere");
      return 1;
    }
    calls(1);
    fflush(stdout);
    const std::string command = "'" + std::string(self) + "' capture";
    if (what == "system-chdir") {
      const int status = system(command.c_str());
      return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    FILE* child = popen(command.c_str(), "r");
    if (child == nullptr) return 1;
    char buffer[4096];
    for (std::size_t got; (got = fread(buffer, 1, sizeof(buffer), child)) > 0;) fwrite(buffer, 1, got, stdout);
    const int status = pclose(child);
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  if (what == "exec-fails") {
    char arg[] = "capture";
    char* args[] = {argv[0], arg, nullptr};
    const auto tried = [](const char* how, int rc) { printf("%s: %d %s\n", how, rc, strerror(errno)); };
    calls(1);
    tried("execv of a missing file", execv("/nonexistent/cutrace-lifecycle", args));
    calls(1);
    tried("execv of a file that is not executable", execv("/etc/passwd", args));
    tried("execv of a directory", execv("/", args));
    calls(1);
    tried("execvp of a command on no PATH entry", execvp("cutrace-lifecycle-no-such-command", args));
    tried("execlp of the same", execlp("cutrace-lifecycle-no-such-command", argv[0], nullptr));
    calls(1);
    return 0;
  }
  fprintf(stderr, "usage: lifecycle exit-child|sigterm|stress|capture|exec|exec-chdir|spawn-chdir|exec-fails|quick-exit|execl-many|signal-query\n");
  return 2;
}
