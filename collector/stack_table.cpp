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

uint32_t StackTable::insert(uint64_t hash, const uint64_t* frames, uint32_t depth) {
  if (slots_ == nullptr || depth == 0) return 0;
  for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    Slot& slot = slots_[(hash + probe) & slotMask_];
    uint64_t h = slot.hash.load(std::memory_order_acquire);
    if (h == 0 && slot.hash.compare_exchange_strong(h, hash, std::memory_order_acq_rel)) {
      const uint32_t id = nextId_.fetch_add(1, std::memory_order_relaxed) + 1;
      const uint64_t at = nextFrame_.fetch_add(depth, std::memory_order_relaxed);
      if (id > maxStacks_ || at + depth > maxFrames_) {
        overflowed_.fetch_add(1, std::memory_order_relaxed);
        slot.id.store(kFullId, std::memory_order_release);
        return 0;
      }
      memcpy(frames_ + at, frames, depth * sizeof(uint64_t));
      entries_[id].offset = at;
      entries_[id].depth.store(depth, std::memory_order_release);
      slot.id.store(id, std::memory_order_release);
      return id;
    }
    if (h == hash) {
      // Another thread claimed this stack: its copy takes a few hundred nanoseconds at most,
      // but a preempted writer must not stall a hook, so give up after a bounded wait.
      for (int spin = 0; spin < 4096; ++spin) {
        const uint32_t id = slot.id.load(std::memory_order_acquire);
        if (id != 0) return id == kFullId ? 0 : id;
        __builtin_ia32_pause();
      }
      return 0;
    }
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
