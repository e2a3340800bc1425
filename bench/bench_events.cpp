// CPU cost per recorded event: the same loops of CUDA and NVTX calls run bare and under
// LD_PRELOAD=libtrace.so, on the stand-in CUDA libraries, alternating, several times; the
// figure is (median traced - median bare) / events per call.
//
//   bench_events --libtrace PATH [--runs N] [--calls N]      (driver: spawns the workers)
//   bench_events --worker LOOP --calls N [--depth D]         (one timed loop; prints ns/call)
//   bench_events --libtrace PATH --idle-after-threads N
//                                  (N short threads one after another, a CUDA call each, then the
//                                   drain thread's CPU per second while the process idles: what
//                                   a pass costs for threads that ended)
//   bench_events --libtrace PATH --sustained N [--pace-ns P | --find-rate] [--ring SIZE] [--sync]
//                                  (N launches back to back at a pace (0, the default: none,
//                                   not even a clock read between calls), default settings but for
//                                   CUTRACE_RING_SIZE=SIZE: drops, peak RSS, bytes/event, exit time;
//                                   --find-rate: rising paces until a run drops nothing; --sync:
//                                   N cuCtxSynchronize calls instead, 1 event each)
//
// Cases: driver-sync (cuCtxSynchronize: 1 event), runtime-sync (cudaStreamSynchronize: the
// runtime call and the driver call it makes, 2 events), launch (a kernel launch through the
// runtime: 2 events, kernel name looked up), nvtx (push+pop: 1 range), nvtx-ops (the same with a
// text that differs every time, as PyTorch's emit_nvtx names its ops); the d20-* cases make the
// driver call 20 frames below main, traced without stacks and with each unwinder.
// Calls come in bursts with pauses in between, so the default ring is emptied in time and never
// drops (checked: the bench fails if a traced run reports a drop); the drain thread runs as in a
// real process, at its default interval. Columns, per event, traced minus bare: "wall ns" (the
// calling thread's time in the bursts), "cpu ns" (the whole process: the goal's figure), and its
// parts by thread CPU clock: "thread ns" (the calling thread: the hooks), "drain ns" (the drain
// thread: decode, encode, fold), "files ns" (the helper that writes the stream: the write calls)
// and "other ns" (what is left: the kernel's work for the process not charged to those threads,
// and the noise of the whole-process figure).

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <spawn.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collector/config.h"

extern char** environ;

namespace {

// Sleeps until a drain pass has begun after the caller's last event and had time to take every
// event still in the ring (the timed passes come every CUTRACE_DRAIN_MS): CPU time read after it
// counts the drain's and the files helper's work for every event of the loop. Read before it, the
// work of the last interval's events was left out: at the 100 ms default, most of a short loop's.
void waitForDrainPass() {
  const char* ms = getenv("CUTRACE_DRAIN_MS");
  const long interval = ms != nullptr ? atol(ms) : static_cast<long>(cutrace::Config{}.drainIntervalMs);
  usleep(static_cast<useconds_t>((interval + 50) * 1000));
}

struct Case {
  const char* name;
  const char* loop;  // the worker's loop
  int eventsPerCall;
  int depth;              // frames of this program between main and the CUDA call
  const char* tracedEnv;  // extra setting for the traced run, or nullptr
};
// The depth-20 cases isolate the cost of a 20-frame stack, interned (every call after the first
// has the same stack): the same loop traced with and without stacks, per unwinder.
constexpr Case kCases[] = {
    {"driver-sync", "driver-sync", 1, 0, nullptr},
    {"runtime-sync", "runtime-sync", 2, 0, nullptr},
    {"launch", "launch", 2, 0, nullptr},
    {"nvtx", "nvtx", 1, 0, nullptr},
    {"nvtx-ops", "nvtx-ops", 1, 0, nullptr},
    {"d20-nostack", "driver-sync", 1, 20, "CUTRACE_STACKS=off"},
    {"d20-dwarf", "driver-sync", 1, 20, "CUTRACE_UNWIND=dwarf"},
    {"d20-libunwind", "driver-sync", 1, 20, "CUTRACE_UNWIND=libunwind"},
    {"d20-fp", "driver-sync", 1, 20, "CUTRACE_UNWIND=fp"},
};

// Calls `f` under `depth` more frames of this program.
template <typename F>
__attribute__((noinline)) void nested(int depth, F& f) {
  if (depth <= 0) {
    f();
  } else {
    nested(depth - 1, f);
  }
  asm volatile("");  // no tail call: each level keeps its frame
}

extern "C" void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*,
                                       int*);
extern "C" void** __cudaRegisterFatBinary(void*);
extern "C" void __cudaRegisterFatBinaryEnd(void**);

void benchKernelStub() {}

// CPU time of the traced process's thread named `comm` (cutrace-drain: the drain thread;
// cutrace-files: the helper that writes the stream), in seconds; 0 untraced or where it never
// started. A thread's CPU clock id from its tid is the kernel's MAKE_THREAD_CPUCLOCK(tid,
// CPUCLOCK_SCHED).
double namedThreadCpuSeconds(const char* name) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return 0;
  double seconds = 0;
  while (dirent* d = readdir(dir)) {
    char path[300], comm[64] = {};
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
    FILE* f = fopen(path, "r");
    if (f == nullptr) continue;
    const bool named = fgets(comm, sizeof(comm), f) != nullptr && strncmp(comm, name, strlen(name)) == 0;
    fclose(f);
    if (!named) continue;
    const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(atoi(d->d_name)) << 3) | 6);
    timespec ts{};
    if (clock_gettime(clock, &ts) == 0) seconds = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  closedir(dir);
  return seconds;
}
double drainCpuSeconds() { return namedThreadCpuSeconds("cutrace-drain"); }

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

int worker(const std::string& which, long calls, int depth) {
  // Registration as nvcc-generated code does it (a fat binary wrapper around a fatbin header,
  // which is all the stand-in looks at), so launches resolve a kernel name.
  static const unsigned long long fatbinHeader[2] = {0xba55ed50ull, 0};
  static struct {
    int magic;
    int version;
    const unsigned long long* data;
    void* filename;
  } wrapper = {0x466243b1, 1, fatbinHeader, nullptr};
  void** module = __cudaRegisterFatBinary(&wrapper);
  __cudaRegisterFunction(module, reinterpret_cast<const char*>(&benchKernelStub), const_cast<char*>("bench_kernel"),
                         "bench_kernel", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(module);
  cudaFree(nullptr);  // initialise the runtime and the driver outside the timed loop
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  // Calls come in bursts of kBurst, each followed by a pause: the default ring (16 MiB) holds the
  // bursts of a 20 ms drain interval with room to spare, so nothing is ever dropped, as in a real
  // program, whose CUDA calls are microseconds apart. Only the bursts are timed; CPU time
  // is counted over the whole loop, so it includes the drain thread's work.
  constexpr long kBurst = 2000;
  auto burst = [&](long n) {
    if (which == "driver-sync") {
      for (long i = 0; i < n; ++i) cuCtxSynchronize();
    } else if (which == "runtime-sync") {
      for (long i = 0; i < n; ++i) cudaStreamSynchronize(stream);
    } else if (which == "launch") {
      for (long i = 0; i < n; ++i)
        cudaLaunchKernel(reinterpret_cast<const void*>(&benchKernelStub), dim3(1), dim3(32), nullptr, 0, stream);
    } else if (which == "nvtx") {
      for (long i = 0; i < n; ++i) {
        nvtxRangePushA("bench");
        nvtxRangePop();
      }
    } else {
      // Ranges named as PyTorch's emit_nvtx names its ops: every text differs (seq, op_id).
      static long op = 0;
      char text[160];
      for (long i = 0; i < n; ++i, ++op) {
        snprintf(text, sizeof(text), "aten::addmm, seq = %ld, op_id = %ld, sizes = [[256], [2048, 256], [256, 2048]], input_op_ids = [(%ld, 0)]",
                 op, 3 * op + 1, 3 * op);
        nvtxRangePushA(text);
        nvtxRangePop();
      }
    }
  };
  if (which == "threads-idle") {
    // `calls` short threads, then 2 s of idling: prints "0 0 <drain ms of CPU per second> 0 0".
    for (long i = 0; i < calls; ++i) {
      pthread_t t;
      if (pthread_create(&t, nullptr, [](void*) -> void* { cuCtxSynchronize(); return nullptr; }, nullptr) != 0) return 1;
      pthread_join(t, nullptr);
    }
    usleep(300000);  // the passes that take the last threads' records
    const double d0 = drainCpuSeconds();
    usleep(2000000);
    printf("0 0 %.3f 0 0\n", (drainCpuSeconds() - d0) * 1000 / 2);
    return 0;
  }
  if (which == "sustained" || which == "sustained-sync") {
    // A launch-bound training loop: launches back to back, each at least `depth` ns apart (the
    // argument is reused as the pace), with no pause for the drain. Prints when the loop began
    // and ended (CLOCK_MONOTONIC ns), so the driver can time the loop and the exit, and the drain
    // thread's CPU seconds.
    const auto pace = std::chrono::nanoseconds(depth);
    timespec begin{};
    clock_gettime(CLOCK_MONOTONIC, &begin);
    auto next = std::chrono::steady_clock::now();
    const bool sync = which == "sustained-sync";
    for (long i = 0; i < calls; ++i) {
      if (sync) cuCtxSynchronize();
      else cudaLaunchKernel(reinterpret_cast<const void*>(&benchKernelStub), dim3(1), dim3(32), nullptr, 0, stream);
      // Paced by groups of 64 calls, so that a clock read per call does not bound the rate
      // offered; pace 0: back to back, no clock read at all.
      if (depth == 0 || (i & 63) != 63) continue;
      next += 64 * pace;
      while (std::chrono::steady_clock::now() < next) {
      }
    }
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("%lld %lld %.6f\n", static_cast<long long>(begin.tv_sec) * 1000000000ll + begin.tv_nsec,
           static_cast<long long>(ts.tv_sec) * 1000000000ll + ts.tv_nsec, drainCpuSeconds());
    fflush(stdout);
    return 0;
  }
  if (which != "driver-sync" && which != "runtime-sync" && which != "launch" && which != "nvtx" && which != "nvtx-ops") {
    fprintf(stderr, "unknown case %s\n", which.c_str());
    return 2;
  }
  auto timedBurst = [&] { burst(kBurst); };
  nested(depth, timedBurst);  // first-call costs: thread ring, kernel name lookup, the stack
  usleep(5000);
  // The ring's first lap, untimed: a thread takes its ring's pages as it first writes them (a
  // 16 MiB ring, 262,144 records: ~4,100 page faults, a few ms once per busy thread; the
  // --sustained runs count it), which is no part of the cost per event measured here.
  constexpr long kFirstLapCalls = 270000;
  for (long done = 0; done < kFirstLapCalls; done += kBurst) {
    nested(depth, timedBurst);
    usleep(3000);
  }
  double wallNs = 0;
  const double c0 = cpuSeconds(), d0 = drainCpuSeconds(), f0 = namedThreadCpuSeconds("cutrace-files"),
               self0 = threadCpuSeconds();
  for (long done = 0; done < calls; done += kBurst) {
    const auto t0 = std::chrono::steady_clock::now();
    nested(depth, timedBurst);
    wallNs += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    usleep(3000);
  }
  waitForDrainPass();
  const double self1 = threadCpuSeconds(), c1 = cpuSeconds(), d1 = drainCpuSeconds(),
               f1 = namedThreadCpuSeconds("cutrace-files");
  const double timed = static_cast<double>((calls + kBurst - 1) / kBurst * kBurst);
  printf("%.3f %.3f %.3f %.3f %.3f\n", wallNs / timed, (c1 - c0) * 1e9 / timed, (d1 - d0) * 1e9 / timed,
         (f1 - f0) * 1e9 / timed, (self1 - self0) * 1e9 / timed);
  return 0;
}

// What one worker run measured, per call: the loop's wall time, the process's CPU and that of
// the calling thread, the drain thread and the files helper alone; traced, the Chrome trace's
// and the .pftrace's bytes per event (its files are removed afterwards).
struct WorkerResult {
  double wall = 0, cpu = 0, drain = 0, files = 0, thread = 0;
  double traceBytesPerEvent = 0, streamBytesPerEvent = 0;
};
bool runWorker(const char* self, const Case& c, long calls, const std::string& preload, WorkerResult& result) {
  std::string callsArg = std::to_string(calls);
  std::string depthArg = std::to_string(c.depth);
  const char* argv[] = {self, "--worker", c.loop, "--calls", callsArg.c_str(), "--depth", depthArg.c_str(), nullptr};
  std::vector<std::string> envStore;
  for (char** e = environ; *e; ++e) {
    if (strncmp(*e, "LD_PRELOAD=", 11) == 0 || strncmp(*e, "CUTRACE_", 8) == 0) continue;
    envStore.emplace_back(*e);
  }
  if (!preload.empty()) {
    envStore.push_back("LD_PRELOAD=" + preload);
    envStore.push_back("CUTRACE_OUTPUT=" + std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") +
                       "/cutrace-bench-out");
    envStore.push_back("CUTRACE_LOG=info");  // the summary line says how many were dropped
    if (c.tracedEnv != nullptr) envStore.push_back(c.tracedEnv);
  }
  std::vector<char*> env;
  for (auto& s : envStore) env.push_back(s.data());
  env.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const std::string errPath = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/cutrace-bench-stderr";
  posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  const int rc = posix_spawn(&pid, self, &actions, nullptr, const_cast<char**>(argv), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) return false;
  char buf[128] = {};
  const ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!preload.empty()) {
    // A dropped record would make the traced run cheaper than a fully recorded one.
    FILE* err = fopen(errPath.c_str(), "r");
    char line[1024];
    bool clean = false;
    while (err != nullptr && fgets(line, sizeof(line), err) != nullptr) {
      if (strstr(line, "cutrace: wrote") == nullptr || strstr(line, ", 0 dropped") == nullptr) continue;
      clean = true;
      // "cutrace: wrote DIR/STEM.pftrace, DIR/STEM.trace.json and DIR/STEM.folded, N events, 0 dropped"
      char stream[512] = {}, trace[512] = {};
      unsigned long events = 0;
      const char* count = strstr(line, ".folded, ");
      struct stat st, sst;
      if (count != nullptr && sscanf(line, "cutrace: wrote %511[^,], %511s", stream, trace) == 2 &&
          sscanf(count, ".folded, %lu events", &events) == 1 && events > 0 && stat(trace, &st) == 0 &&
          stat(stream, &sst) == 0) {
        result.traceBytesPerEvent = static_cast<double>(st.st_size) / static_cast<double>(events);
        result.streamBytesPerEvent = static_cast<double>(sst.st_size) / static_cast<double>(events);
        const std::string stem(trace, strlen(trace) - strlen(".trace.json"));
        for (const char* suffix : {".pftrace", ".trace.json", ".folded", ".calls.folded", ".gpu.folded"})
          unlink((stem + suffix).c_str());
      }
    }
    if (err != nullptr) fclose(err);
    if (!clean) {
      fprintf(stderr, "bench_events: the traced %s run dropped records or wrote no trace (see %s)\n", c.name, errPath.c_str());
      return false;
    }
  }
  return n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && sscanf(buf, "%lf %lf %lf %lf %lf", &result.wall, &result.cpu, &result.drain, &result.files, &result.thread) == 5;
}

// --sustained: one traced run of the launch loop at a pace, default settings. Reports what was
// recorded and dropped, the peak RSS above a bare run, the .pftrace's and the Chrome trace's
// bytes per event, and the time from the loop's end to the process's exit.
struct SustainedResult {
  unsigned long events = 0, dropped = 0;
  double offeredPerSecond = 0;
};

// One traced run (and one bare, for the RSS) of the launch loop; prints its figures unless quiet.
// `sync`: the loop calls cuCtxSynchronize (1 event a call, the fastest call there is) instead
// of launching (2 events: the runtime call and the driver call it makes).
bool sustained(const char* self, const std::string& libtrace, long launches, long paceNs, const std::string& ring, bool sync,
               SustainedResult& result, bool quiet) {
  const std::string out = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/cutrace-bench-sustained";
  const std::string errPath = out + ".stderr";
  std::string callsArg = std::to_string(launches), paceArg = std::to_string(paceNs);
  const char* argv[] = {self, "--worker", sync ? "sustained-sync" : "sustained", "--calls", callsArg.c_str(), "--depth", paceArg.c_str(), nullptr};
  long rssKb[2] = {0, 0};
  double exitSeconds = 0, loopSeconds = 0, drainSeconds = 0;
  for (int traced = 0; traced < 2; ++traced) {
    std::vector<std::string> envStore;
    for (char** e = environ; *e; ++e)
      if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "CUTRACE_", 8) != 0) envStore.emplace_back(*e);
    if (traced) {
      envStore.push_back("LD_PRELOAD=" + libtrace);
      envStore.push_back("CUTRACE_OUTPUT=" + out);
      if (!ring.empty()) envStore.push_back("CUTRACE_RING_SIZE=" + ring);
    }
    std::vector<char*> env;
    for (auto& e : envStore) env.push_back(e.data());
    env.push_back(nullptr);
    int fds[2];
    if (pipe(fds) != 0) return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    timespec t0{};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid;
    if (posix_spawn(&pid, self, &actions, nullptr, const_cast<char**>(argv), env.data()) != 0) return false;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    char buf[64] = {};
    const ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    timespec t1{};
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
    rssKb[traced] = ru.ru_maxrss;
    if (traced) {
      // The loop's own times: the process's start-up (loading, the preload's set-up) is no part
      // of the rate offered (it was counted once, and understated the rate by a third).
      double beginNs = 0, endNs = 0;
      if (sscanf(buf, "%lf %lf %lf", &beginNs, &endNs, &drainSeconds) < 2) return false;
      const double end = endNs * 1e-9;
      exitSeconds = static_cast<double>(t1.tv_sec) + static_cast<double>(t1.tv_nsec) * 1e-9 - end;
      loopSeconds = (endNs - beginNs) * 1e-9;
    }
  }
  FILE* err = fopen(errPath.c_str(), "r");
  char line[2048];
  unsigned long events = 0, dropped = 0;
  char stream[512] = {}, trace[512] = {};
  // "cutrace: wrote S.pftrace, T.trace.json and F.folded, N events, M dropped" (no T when the
  // Chrome trace passed the JSON limit).
  bool jsonSkipped = false;
  while (err != nullptr && fgets(line, sizeof(line), err) != nullptr) {
    const char* count = strstr(line, ".folded, ");
    if (strstr(line, "cutrace: wrote") != nullptr && count != nullptr) {
      sscanf(line, "cutrace: wrote %511[^, ]", stream);
      if (const char* json = strstr(line, ".trace.json")) {
        const char* begin = json;
        while (begin > line && begin[-1] != ' ') --begin;
        snprintf(trace, sizeof(trace), "%.*s", static_cast<int>(json + 11 - begin), begin);
      }
      sscanf(count, ".folded, %lu events, %lu dropped", &events, &dropped);
      jsonSkipped = strstr(line, "no Chrome trace") != nullptr;
    }
  }
  if (err != nullptr) fclose(err);
  struct stat ss {}, ts {};
  stat(stream, &ss);
  stat(trace, &ts);
  const double recorded = static_cast<double>(events);
  result.events = events;
  result.dropped = dropped;
  result.offeredPerSecond = (recorded + static_cast<double>(dropped)) / loopSeconds;
  const std::string stem(stream, strlen(stream) > 8 ? strlen(stream) - 8 : 0);
  for (const char* suffix : {".pftrace", ".trace.json", ".folded", ".calls.folded", ".gpu.folded"}) unlink((stem + suffix).c_str());
  if (quiet) return true;
  printf("sustained %s loop: %ld calls, %ld ns pace, %s%s\n", sync ? "cuCtxSynchronize" : "launch", launches, paceNs,
         ring.empty() ? "default settings" : "CUTRACE_RING_SIZE=", ring.c_str());
  printf("  events recorded %lu, dropped %lu (%.1f%%), %.2f M events/s offered\n", events, dropped,
         100.0 * static_cast<double>(dropped) / std::max(1.0, recorded + static_cast<double>(dropped)),
         (recorded + static_cast<double>(dropped)) / loopSeconds * 1e-6);
  printf("  drain thread %.1f ns of CPU per event during the loop\n", drainSeconds * 1e9 / std::max(1.0, recorded));
  printf("  peak RSS %ld MB traced, %ld MB bare (+%ld MB)\n", rssKb[1] >> 10, rssKb[0] >> 10, (rssKb[1] - rssKb[0]) >> 10);
  char json[64];
  if (jsonSkipped) snprintf(json, sizeof(json), "no Chrome trace (past CUTRACE_JSON_LIMIT)");
  else snprintf(json, sizeof(json), "Chrome trace %.1f B/event", static_cast<double>(ts.st_size) / std::max(1.0, recorded));
  printf("  .pftrace %.1f B/event, %s, exit %.2f s after the loop\n", static_cast<double>(ss.st_size) / std::max(1.0, recorded),
         json, exitSeconds);
  return true;
}

// --find-rate: the launch loop at rising paces (falling rates), one traced run each, until one
// keeps every event: the highest rate with no drop on this machine, this time.
int findRate(const char* self, const std::string& libtrace, long launches, const std::string& ring, bool sync) {
  printf("highest sustained rate with no drop: %ld %s per run, %s%s\n", launches,
         sync ? "cuCtxSynchronize calls (1 event each)" : "launches (2 events each)",
         ring.empty() ? "default settings" : "CUTRACE_RING_SIZE=", ring.c_str());
  const std::vector<long> paces = {25L, 40L, 50L, 67L, 100L, 125L, 167L, 200L, 250L, 333L, 400L, 500L, 667L, 1000L, 2000L};
  for (long pace : paces) {
    if (!sync && pace < 100) continue;  // a traced launch takes longer: these would all run flat out
    SustainedResult r;
    if (!sustained(self, libtrace, launches, pace, ring, sync, r, true)) return 1;
    const double all = static_cast<double>(r.events + r.dropped);
    printf("  pace %4ld ns: %6.2f M events/s offered, %.2f%% dropped\n", pace, r.offeredPerSecond * 1e-6,
           100.0 * static_cast<double>(r.dropped) / std::max(1.0, all));
    if (r.dropped == 0) {
      printf("  no drop at %.2f M events/s\n", r.offeredPerSecond * 1e-6);
      return 0;
    }
  }
  printf("  dropped at every pace tried\n");
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string libtrace, workerCase;
  long calls = 100000;
  long sustainedLaunches = 0, paceNs = 0, idleThreads = 0;
  bool findRateMode = false, syncLoop = false;
  std::string ring;
  int runs = 7;
  int depth = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--libtrace" && i + 1 < argc) libtrace = argv[++i];
    else if (a == "--worker" && i + 1 < argc) workerCase = argv[++i];
    else if (a == "--calls" && i + 1 < argc) calls = atol(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = atoi(argv[++i]);
    else if (a == "--depth" && i + 1 < argc) depth = atoi(argv[++i]);
    else if (a == "--sustained" && i + 1 < argc) sustainedLaunches = atol(argv[++i]);
    else if (a == "--pace-ns" && i + 1 < argc) paceNs = atol(argv[++i]);
    else if (a == "--ring" && i + 1 < argc) ring = argv[++i];
    else if (a == "--find-rate") findRateMode = true;
    else if (a == "--sync") syncLoop = true;
    else if (a == "--idle-after-threads" && i + 1 < argc) idleThreads = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_events --libtrace PATH [--runs N] [--calls N] | [--sustained CALLS [--pace-ns NS | --find-rate] [--ring SIZE] [--sync]] | [--idle-after-threads N]\n");
      return 2;
    }
  }
  if (!workerCase.empty()) return worker(workerCase, calls, depth);
  if (libtrace.empty()) {
    fprintf(stderr, "bench_events: --libtrace PATH is required\n");
    return 2;
  }
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  if (idleThreads > 0) {
    // Medians of 3 runs, each against 100 threads first: the cost of a pass that grows with the
    // threads a process had.
    const Case idle{"threads-idle", "threads-idle", 1, 0, "CUTRACE_JSON_LIMIT=1"};
    for (long n : {100L, idleThreads}) {
      std::vector<double> ms;
      for (int run = 0; run < 3; ++run) {
        WorkerResult r;
        if (!runWorker(self, idle, n, libtrace, r)) return 1;
        ms.push_back(r.drain);
      }
      std::sort(ms.begin(), ms.end());
      printf("after %ld short threads, each with a CUDA call: the idle drain takes %.1f ms of CPU per second\n", n, ms[1]);
    }
    return 0;
  }
  if (sustainedLaunches > 0 && findRateMode) return findRate(self, libtrace, sustainedLaunches, ring, syncLoop);
  if (sustainedLaunches > 0) {
    SustainedResult r;
    return sustained(self, libtrace, sustainedLaunches, paceNs, ring, syncLoop, r, false) ? 0 : 1;
  }

  printf("cutrace bench_events: %d runs x %ld calls per case, medians, stand-in CUDA libraries\n", runs, calls);
  printf("%-14s %6s %8s %9s %7s %9s %9s %9s %9s %9s %9s %6s %7s\n", "case", "events", "bare ns", "traced ns", "ratio",
         "wall ns", "cpu ns", "thread ns", "drain ns", "files ns", "other ns", "json B", "pftr. B");
  std::vector<double> tracedWallByCase, tracedCpuByCase;
  for (const Case& c : kCases) {
    std::vector<double> bareWall, bareCpu, bareThread, tracedWall, tracedCpu, tracedThread, tracedDrain, tracedFiles,
        tracedBytes, streamBytes;
    for (int r = 0; r < runs; ++r) {  // interleaved so drift hits both alike
      WorkerResult bare, traced;
      if (!runWorker(self, c, calls, "", bare)) return 1;
      bareWall.push_back(bare.wall);
      bareCpu.push_back(bare.cpu);
      bareThread.push_back(bare.thread);
      if (!runWorker(self, c, calls, libtrace, traced)) return 1;
      tracedWall.push_back(traced.wall);
      tracedCpu.push_back(traced.cpu);
      tracedThread.push_back(traced.thread);
      tracedDrain.push_back(traced.drain);
      tracedFiles.push_back(traced.files);
      tracedBytes.push_back(traced.traceBytesPerEvent);
      streamBytes.push_back(traced.streamBytesPerEvent);
    }
    const double bw = median(bareWall), tw = median(tracedWall);
    const double bc = median(bareCpu), tc = median(tracedCpu);
    const double n = c.eventsPerCall;
    const double cpu = (tc - bc) / n, thread = (median(tracedThread) - median(bareThread)) / n;
    const double drain = median(tracedDrain) / n, files = median(tracedFiles) / n;
    printf("%-14s %6d %8.1f %9.1f %7.2f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %6.0f %7.1f\n", c.name, c.eventsPerCall, bw, tw,
           tw / bw, (tw - bw) / n, cpu, thread, drain, files, cpu - thread - drain - files, median(tracedBytes),
           median(streamBytes));
    tracedWallByCase.push_back(tw);
    tracedCpuByCase.push_back(tc);
  }
  std::size_t noStack = 0;  // the d20-nostack case: the others after it differ from it only in the unwinder
  while (std::string_view(kCases[noStack].name) != "d20-nostack") ++noStack;
  for (std::size_t i = noStack + 1; i < tracedWallByCase.size(); ++i)
    printf("stack of 20 frames, interned, %s: %.1f ns/event on the traced thread (%.1f ns cpu)\n",
           kCases[i].tracedEnv, tracedWallByCase[i] - tracedWallByCase[noStack], tracedCpuByCase[i] - tracedCpuByCase[noStack]);
  return 0;
}
