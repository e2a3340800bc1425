// sigaction, and signal with glibc's other names for it (bsd_signal, sysv_signal, sigset),
// interposed so the program never sees cutrace's SIGINT/SIGTERM handler: a disposition read back
// that is cutrace's reads as SIG_DFL, which is what the program would have seen (Python, for
// one, installs its KeyboardInterrupt handler only over SIG_DFL). Each name is its own: glibc's
// entry points do not reach one another through the PLT.
//
// sigaltstack too, to learn where each thread's alternate signal stack lies: a handler running
// there (SA_ONSTACK) has as little as 8 KiB, and a CUDA call it makes must not take a stack walk
// there (collector/alt_stack.h, roomToWalk). Only the thread's own variable is written.
//
// Built without sanitizer instrumentation and linked as an object of libtrace.so (an archive
// member would lose its export to --exclude-libs): sanitizer runtimes call sigaction while they
// initialise, before instrumented code can run. Hence also no function-local statics (their
// guards are intercepted) and no calls into the collector: the handler to hide is published in
// a plain pointer.

#include <signal.h>

#include <atomic>

#include "collector/alt_stack.h"
#include "preload/next_symbol.h"

extern "C" {

// Set by the collector when it installs its handler (collector.cpp).
__attribute__((visibility("hidden"))) void (*cutraceOwnSignalHandler)(int) = nullptr;

}  // extern "C"

namespace {

std::atomic<void*> nextSigaction{nullptr};
std::atomic<void*> nextSignal{nullptr};
std::atomic<void*> nextBsdSignal{nullptr};
std::atomic<void*> nextSysvSignal{nullptr};
std::atomic<void*> nextSigset{nullptr};
std::atomic<void*> nextSigaltstack{nullptr};

bool own(void (*handler)(int)) { return handler != nullptr && handler == cutraceOwnSignalHandler; }

// signal() and its kin: glibc's `name`, with cutrace's handler in what it returns read as SIG_DFL.
sighandler_t hiddenSignal(std::atomic<void*>& slot, const char* name, int sig, sighandler_t handler) {
  auto real = cutrace::nextSymbol<sighandler_t (*)(int, sighandler_t)>(slot, name);
  const sighandler_t old = real(sig, handler);
  return own(old) ? SIG_DFL : old;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  auto real = cutrace::nextSymbol<int (*)(int, const struct sigaction*, struct sigaction*)>(nextSigaction, "sigaction");
  const int rc = real(sig, act, old);
  if (rc == 0 && old != nullptr && !(old->sa_flags & SA_SIGINFO) && own(old->sa_handler)) {
    old->sa_handler = SIG_DFL;
    old->sa_flags = 0;
    sigemptyset(&old->sa_mask);
  }
  return rc;
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  return hiddenSignal(nextSignal, "signal", sig, handler);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t handler) {
  return hiddenSignal(nextBsdSignal, "bsd_signal", sig, handler);
}

__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig, sighandler_t handler) {
  return hiddenSignal(nextSysvSignal, "sysv_signal", sig, handler);
}

// SIG_HOLD (the signal was blocked) passes through as glibc returns it.
__attribute__((visibility("default"))) sighandler_t sigset(int sig, sighandler_t handler) {
  return hiddenSignal(nextSigset, "sigset", sig, handler);
}

__attribute__((visibility("default"))) int sigaltstack(const stack_t* ss, stack_t* old) {
  const int rc = cutrace::nextSymbol<int (*)(const stack_t*, stack_t*)>(nextSigaltstack, "sigaltstack")(ss, old);
  if (rc == 0 && ss != nullptr) {
    cutrace::tls::altStack = (ss->ss_flags & SS_DISABLE)
                                 ? cutrace::AltStack{0, 0}
                                 : cutrace::AltStack{reinterpret_cast<uintptr_t>(ss->ss_sp), ss->ss_size};
  }
  return rc;
}

}  // extern "C"
