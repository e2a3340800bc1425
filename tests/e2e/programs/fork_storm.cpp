// fork while other threads make their first CUDA calls: the main thread forks 100 times while
// eight threads make the first CUDA calls of the process and another loads a plugin whose
// constructor takes 300 ms (the dynamic loader's lock is held meanwhile, so a first call that
// looks up symbols waits behind it). Each child makes a CUDA call and ends with _exit. Nothing
// the tracer holds at a fork may be left locked in a child: every child must exit, within a
// bounded time (children still running after 20 s are killed and counted as hung).
//
// usage: fork_storm PLUGIN
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 8;
constexpr int kForks = 100;

void sleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

double seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  alarm(60);  // the parent itself must not hang either
  std::atomic<bool> go{false};
  std::thread loader([&] {
    while (!go.load()) sched_yield();
    if (dlopen(argv[1], RTLD_NOW) == nullptr) fprintf(stderr, "fork_storm: %s\n", dlerror());
  });
  std::vector<std::thread> workers;
  for (int i = 0; i < kThreads; ++i)
    workers.emplace_back([&, i] {
      while (!go.load()) sched_yield();
      sleepMs(5 + 5 * i);  // the first calls spread over the forks, the plugin's load under way
      cudaDeviceSynchronize();
    });
  go.store(true);
  fflush(stdout);
  std::vector<pid_t> children;
  for (int k = 0; k < kForks; ++k) {
    const pid_t pid = fork();
    if (pid == 0) {
      cudaDeviceSynchronize();
      _exit(0);
    }
    if (pid > 0) children.push_back(pid);
    sleepMs(4);
  }
  for (auto& t : workers) t.join();
  loader.join();
  int exited = 0, failed = 0, hung = 0;
  const double deadline = seconds() + 20.0;
  std::vector<bool> done(children.size(), false);
  for (std::size_t left = children.size(); left > 0 && seconds() < deadline;) {
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (waitpid(children[i], &status, WNOHANG) != children[i]) continue;
      done[i] = true;
      --left;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ++exited;
      } else {
        ++failed;  // how, for whoever reads a failed run
        if (WIFSIGNALED(status)) fprintf(stderr, "fork_storm: child %d killed by signal %d\n", children[i], WTERMSIG(status));
        else fprintf(stderr, "fork_storm: child %d exited with %d\n", children[i], WEXITSTATUS(status));
      }
    }
    sleepMs(10);
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (done[i]) continue;
    kill(children[i], SIGKILL);
    waitpid(children[i], nullptr, 0);
    ++hung;
  }
  printf("fork_storm: %d children exited, %d failed, %d hung\n", exited, failed, hung);
  return hung == 0 && failed == 0 ? 0 : 1;
}
