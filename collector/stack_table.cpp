#include "collector/stack_table.h"

#include <sys/mman.h>

#include <cstring>

namespace cutrace {

namespace {

void* reserveZeroed(std::size_t bytes) {
  // MAP_NORESERVE: most of the table is never touched; anonymous pages read as zero, which is
  // the empty state of every slot and entry.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

bool StackTable::reserve(uint32_t maxStacks, uint64_t maxFrames) {
  uint64_t slots = 1;
  while (slots < uint64_t{maxStacks} * 2) slots <<= 1;  // load factor <= 1/2 keeps probes short
  auto* s = static_cast<Slot*>(reserveZeroed(slots * sizeof(Slot)));
  auto* e = static_cast<Entry*>(reserveZeroed((uint64_t{maxStacks} + 1) * sizeof(Entry)));
  auto* f = static_cast<uint64_t*>(reserveZeroed(maxFrames * sizeof(uint64_t)));
  if (s == nullptr || e == nullptr || f == nullptr) {
    if (s) munmap(s, slots * sizeof(Slot));
    if (e) munmap(e, (uint64_t{maxStacks} + 1) * sizeof(Entry));
    if (f) munmap(f, maxFrames * sizeof(uint64_t));
    return false;
  }
  slots_ = s;
  entries_ = e;
  frames_ = f;
  slotMask_ = slots - 1;
  maxStacks_ = maxStacks;
  maxFrames_ = maxFrames;
  return true;
}

uint32_t StackTable::find(uint64_t hash) const {
  if (slots_ == nullptr) return 0;
  for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    const Slot& slot = slots_[(hash + probe) & slotMask_];
    const uint64_t h = slot.hash.load(std::memory_order_acquire);
    if (h == 0) return 0;
    if (h == hash) {
      const uint32_t id = slot.id.load(std::memory_order_acquire);
      return id == kFullId ? 0 : id;  // 0 also while another thread is still copying it
    }
  }
  return 0;
}

uint32_t StackTable::store(const uint64_t* frames, uint32_t depth) {
  // Read first: a full table is not counted past its end by every later call.
  if (nextId_.load(std::memory_order_relaxed) >= maxStacks_ ||
      nextFrame_.load(std::memory_order_relaxed) + depth > maxFrames_)
    return kFullId;
  const uint32_t id = nextId_.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t at = nextFrame_.fetch_add(depth, std::memory_order_relaxed);
  if (id > maxStacks_ || at + depth > maxFrames_) return kFullId;
  memcpy(frames_ + at, frames, depth * sizeof(uint64_t));
  entries_[id].offset = at;
  entries_[id].depth.store(depth, std::memory_order_release);
  return id;
}

uint32_t StackTable::insert(uint64_t hash, const uint64_t* frames, uint32_t depth) {
  if (slots_ == nullptr || depth == 0) return 0;
  for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    Slot& slot = slots_[(hash + probe) & slotMask_];
    uint64_t h = slot.hash.load(std::memory_order_acquire);
    const bool claimed = h == 0 && slot.hash.compare_exchange_strong(h, hash, std::memory_order_acq_rel);
    if (!claimed && h != hash) continue;
    // Another thread claimed it: its id follows once it has copied the frames (tens of
    // nanoseconds), unless that thread was preempted, or jumped out of the copy (a signal
    // handler's siglongjmp) and never comes back. After a bounded wait this thread stores the
    // frames itself and its id goes in instead: a slot is never left without an id for good.
    for (int spin = 0; !claimed && spin < kMaxSpins; ++spin) {
      const uint32_t id = slot.id.load(std::memory_order_acquire);
      if (id != 0) return id == kFullId ? 0 : id;
      __builtin_ia32_pause();
    }
    const uint32_t mine = store(frames, depth);
    uint32_t id = 0;
    if (slot.id.compare_exchange_strong(id, mine, std::memory_order_acq_rel)) {
      id = mine;
      // kFullId in the slot: later lookups of this stack answer 0 without storing again.
      if (id == kFullId) overflowed_.fetch_add(1, std::memory_order_relaxed);
    }
    // Lost to a waiter that took over: its id, and this thread's stays unnamed by any slot.
    return id == kFullId ? 0 : id;
  }
  overflowed_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

uint32_t StackTable::size() const {
  const uint32_t n = nextId_.load(std::memory_order_acquire);
  return n < maxStacks_ ? n : maxStacks_;
}

StackTable::Frames StackTable::frames(uint32_t id) const {
  if (entries_ == nullptr || id == 0 || id > maxStacks_) return {};
  const uint32_t depth = entries_[id].depth.load(std::memory_order_acquire);
  if (depth == 0) return {};
  return {frames_ + entries_[id].offset, depth};
}

}  // namespace cutrace
