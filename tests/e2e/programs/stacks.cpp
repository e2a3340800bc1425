// Known call chains for the stack tests: each CUDA call is reached through noinline functions
// (namespaced, templated, extern "C"), from the main thread, from a second thread, and from a
// plugin loaded with dlopen. The program also throws and catches C++ exceptions across frames
// that made CUDA calls, and prints what it caught: a preloaded unwinder must not change any of it.

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

// Work after each call keeps the compiler from turning it into a tail call (a jump leaves no
// frame to unwind).
#define KEEP_FRAME(x) \
  do {                \
    asm volatile(""); \
  } while (0)

namespace app {

struct Noisy {
  const char* name;
  ~Noisy() { std::printf("unwound %s\n", name); }
};

__attribute__((noinline)) int allocate(int n) {
  void* p = nullptr;
  const int rc = cudaMalloc(&p, static_cast<size_t>(n) * 4);
  KEEP_FRAME();
  cudaFree(p);
  KEEP_FRAME();
  return rc + 1;
}

template <typename T>
__attribute__((noinline)) int middle(T n) {
  const int r = allocate(static_cast<int>(n));
  KEEP_FRAME();
  return r + 1;
}

__attribute__((noinline)) int failing(int depth) {
  Noisy guard{"failing"};
  cudaDeviceSynchronize();
  KEEP_FRAME();
  if (depth > 0) throw std::runtime_error("bad step " + std::to_string(depth));
  return 0;
}

__attribute__((noinline)) int catcher() {
  int caught = 0;
  for (int i = 1; i <= 3; ++i) {
    try {
      Noisy guard{"try"};
      failing(i);
    } catch (const std::runtime_error& e) {
      std::printf("caught %s\n", e.what());
      ++caught;
    }
  }
  // Rethrow through a second level, and an exception crossing threads.
  try {
    try {
      failing(9);
    } catch (...) {
      std::printf("rethrowing\n");
      throw;
    }
  } catch (const std::exception& e) {
    std::printf("caught again %s\n", e.what());
  }
  std::exception_ptr fromThread;
  std::thread t([&] {
    try {
      failing(7);
    } catch (...) {
      fromThread = std::current_exception();
    }
  });
  t.join();
  try {
    std::rethrow_exception(fromThread);
  } catch (const std::runtime_error& e) {
    std::printf("from thread %s\n", e.what());
  }
  return caught;
}

}  // namespace app

extern "C" __attribute__((noinline)) int worker_entry(int n) {
  const int r = app::middle<long>(n);
  KEEP_FRAME();
  return r;
}

int main(int argc, char** argv) {
  int total = app::middle<int>(256);
  std::thread worker([&] { total += worker_entry(64); });
  worker.join();
  std::printf("caught %d\n", app::catcher());
  if (argc > 1) {
    void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (plugin == nullptr) {
      std::printf("cannot load plugin: %s\n", dlerror());
      return 1;
    }
    auto run = reinterpret_cast<int (*)(int)>(dlsym(plugin, "plugin_run"));
    total += run != nullptr ? run(3) : -100;
  }
  std::printf("total %d\n", total);
  return 0;
}
