#include "heap_meter.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

namespace {

// Relaxed: the peak is read by the thread that made the allocations it measures.
std::atomic<std::size_t> held{0};
std::atomic<std::size_t> peak{0};

void count(void* p) {
  const std::size_t size = malloc_usable_size(p);
  const std::size_t now = held.fetch_add(size, std::memory_order_relaxed) + size;
  std::size_t high = peak.load(std::memory_order_relaxed);
  while (now > high && !peak.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
  }
}

void* take(std::size_t size, std::size_t alignment = 0) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  void* p = alignment == 0 ? malloc(size == 0 ? 1 : size)
                           : aligned_alloc(alignment, (std::max<std::size_t>(size, 1) + alignment - 1) / alignment * alignment);
  if (p != nullptr) count(p);
  return p;
}

void* takeOrThrow(std::size_t size, std::size_t alignment = 0) {
  void* p = take(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void give(void* p) {
  if (p == nullptr) return;
  held.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  free(p);
}

}  // namespace

// Every form, so that no block is taken by one allocator and given back to another.
void* operator new(std::size_t size) { return takeOrThrow(size); }
void* operator new[](std::size_t size) { return takeOrThrow(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return take(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return take(size); }
void* operator new(std::size_t size, std::align_val_t a) { return takeOrThrow(size, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t size, std::align_val_t a) { return takeOrThrow(size, static_cast<std::size_t>(a)); }
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return take(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return take(size, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { give(p); }
void operator delete[](void* p) noexcept { give(p); }
void operator delete(void* p, std::size_t) noexcept { give(p); }
void operator delete[](void* p, std::size_t) noexcept { give(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { give(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { give(p); }
void operator delete(void* p, std::align_val_t) noexcept { give(p); }
void operator delete[](void* p, std::align_val_t) noexcept { give(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { give(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { give(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { give(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { give(p); }

namespace cutrace::test {

HeapPeak::HeapPeak() : start_(held.load(std::memory_order_relaxed)) { peak.store(start_, std::memory_order_relaxed); }

std::size_t HeapPeak::rise() const {
  const std::size_t high = peak.load(std::memory_order_relaxed);
  return high > start_ ? high - start_ : 0;
}

}  // namespace cutrace::test
