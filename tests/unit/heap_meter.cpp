#include "heap_meter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

// Relaxed: the peak is read by the thread that made the allocations it measures.
std::atomic<std::size_t> held{0};
std::atomic<std::size_t> peak{0};

void* take(std::size_t size) {
  void* p = malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  const std::size_t now = held.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) + malloc_usable_size(p);
  std::size_t high = peak.load(std::memory_order_relaxed);
  while (now > high && !peak.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
  }
  return p;
}

void give(void* p) {
  if (p == nullptr) return;
  held.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  free(p);
}

}  // namespace

void* operator new(std::size_t size) { return take(size); }
void* operator new[](std::size_t size) { return take(size); }
void operator delete(void* p) noexcept { give(p); }
void operator delete[](void* p) noexcept { give(p); }
void operator delete(void* p, std::size_t) noexcept { give(p); }
void operator delete[](void* p, std::size_t) noexcept { give(p); }

namespace cutrace::test {

HeapPeak::HeapPeak() : start_(held.load(std::memory_order_relaxed)) { peak.store(start_, std::memory_order_relaxed); }

std::size_t HeapPeak::rise() const {
  const std::size_t high = peak.load(std::memory_order_relaxed);
  return high > start_ ? high - start_ : 0;
}

}  // namespace cutrace::test
