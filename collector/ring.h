#pragma once
// Single-producer single-consumer ring of fixed-size slots.
//
// Concurrency: exactly one producer thread calls reserve()/commit(), exactly one consumer
// thread calls readable()/at()/release(). The producer publishes slots with a release store
// of head_; the consumer frees them with a release store of tail_. Neither side ever blocks:
// when the ring lacks room, reserve() fails and the caller counts a drop.
//
// The slot storage is owned by the caller (the collector mmaps it), so the ring itself never
// allocates and can live in a fork child or be placed in shared memory.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cutrace {

template <typename Slot>
class SpscRing {
 public:
  SpscRing() = default;
  SpscRing(Slot* slots, uint64_t capacity) { attach(slots, capacity); }

  // capacity must be a power of two.
  void attach(Slot* slots, uint64_t capacity) {
    slots_ = slots;
    mask_ = capacity - 1;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    cachedTail_ = 0;
    nudgedAt_ = 0;
  }

  uint64_t capacity() const { return mask_ + 1; }

  // Producer: room for n contiguous-in-sequence slots? Returns the first index or UINT64_MAX.
  // The slots are written with at(index + i) and made visible by commit(n).
  // Inlined in every hook (a call and its prologue cost as much as the check); the reload of
  // tail_ is not.
  [[gnu::always_inline]] uint64_t reserve(uint64_t n) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (__builtin_expect(head + n - cachedTail_ > capacity(), 0)) return reserveAfterReload(head, n);
    return head;
  }

  void commit(uint64_t n) {
    head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // Producer, after commit(): true the first time the ring is found more than half full since
  // the consumer last released slots. Costs a compare while the ring looks less than half full
  // (by the producer's possibly stale copy of tail_), a load of tail_ otherwise.
  [[gnu::always_inline]] bool crossedHalf() {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (__builtin_expect(head - cachedTail_ <= capacity() / 2, 1)) return false;
    return crossedHalfAfterReload(head);
  }

  Slot& at(uint64_t index) { return slots_[index & mask_]; }
  const Slot& at(uint64_t index) const { return slots_[index & mask_]; }

  // Consumer: indices [first, last) are readable until release(last).
  uint64_t readBegin() const { return tail_.load(std::memory_order_relaxed); }
  uint64_t readEnd() const { return head_.load(std::memory_order_acquire); }
  void release(uint64_t upTo) { tail_.store(upTo, std::memory_order_release); }

 private:
  [[gnu::noinline]] uint64_t reserveAfterReload(uint64_t head, uint64_t n) {
    cachedTail_ = tail_.load(std::memory_order_acquire);
    return head + n - cachedTail_ > capacity() ? UINT64_MAX : head;
  }
  [[gnu::noinline]] bool crossedHalfAfterReload(uint64_t head) {
    cachedTail_ = tail_.load(std::memory_order_acquire);
    if (head - cachedTail_ <= capacity() / 2 || nudgedAt_ == cachedTail_ + 1) return false;
    nudgedAt_ = cachedTail_ + 1;  // +1: 0 means never
    return true;
  }

  Slot* slots_ = nullptr;
  uint64_t mask_ = 0;
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cachedTail_ = 0;  // producer-private copy of tail_
  uint64_t nudgedAt_ = 0;    // producer-private: tail_ + 1 when crossedHalf() last said true
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace cutrace
