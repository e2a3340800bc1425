// sigaltstack, interposed to learn where each thread's alternate signal stack lies: a handler
// running there (SA_ONSTACK) has as little as 8 KiB, and a CUDA call it makes must not take a
// stack walk there (collector/stack_capture.h, roomToWalk). Built like signal_hooks.cpp
// (sanitizer runtimes may call it while they initialise): uninstrumented, no calls into the
// collector, only the thread's own variable written.

#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>

#include <atomic>

#include "collector/alt_stack.h"

namespace cutrace::tls {
__thread AltStack altStack __attribute__((tls_model("initial-exec"))) = {0, 0};
}  // namespace cutrace::tls

namespace {
std::atomic<void*> nextSigaltstack{nullptr};
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int sigaltstack(const stack_t* ss, stack_t* old) {
  void* p = nextSigaltstack.load(std::memory_order_relaxed);
  if (p == nullptr) {
    p = dlsym(RTLD_NEXT, "sigaltstack");
    nextSigaltstack.store(p, std::memory_order_relaxed);
  }
  const int rc = reinterpret_cast<int (*)(const stack_t*, stack_t*)>(p)(ss, old);
  if (rc == 0 && ss != nullptr) {
    cutrace::tls::altStack = (ss->ss_flags & SS_DISABLE)
                                 ? cutrace::AltStack{0, 0}
                                 : cutrace::AltStack{reinterpret_cast<uintptr_t>(ss->ss_sp), ss->ss_size};
  }
  return rc;
}

}  // extern "C"
