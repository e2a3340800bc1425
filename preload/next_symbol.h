#pragma once
// The next definition of `name` after libtrace.so's own (glibc's, or a sanitizer's interceptor),
// looked up on first use into a constant-initialised slot: a guarded function-local static would
// call __cxa_guard_acquire, which sanitizer runtimes intercept. A race only looks it up twice.
//
// Internal linkage: each object keeps the copy it was compiled with, so that the signal hooks'
// stays uninstrumented in sanitizer builds (preload/meson.build).

#include <dlfcn.h>

#include <atomic>

namespace cutrace {

template <typename F>
static inline F nextSymbol(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_relaxed);
  if (p == nullptr) {
    p = dlsym(RTLD_NEXT, name);
    slot.store(p, std::memory_order_relaxed);
  }
  return reinterpret_cast<F>(p);
}

}  // namespace cutrace
