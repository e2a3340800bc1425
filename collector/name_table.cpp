#include "collector/name_table.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace cutrace {

namespace {

void* reserve(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

uint64_t hashBytes(const void* data, std::size_t length) {
  // FNV-1a folded through a final mix; good enough for names and cheap to inline nowhere hot.
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < length; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return h;
}

bool NameTable::init(std::size_t maxIds, std::size_t arenaBytes) {
  std::size_t slots = 1;
  while (slots < maxIds * 2) slots <<= 1;
  slots_ = static_cast<std::atomic<uint32_t>*>(reserve(slots * sizeof(uint32_t)));
  offsets_ = static_cast<std::atomic<uint64_t>*>(reserve((maxIds + 1) * sizeof(uint64_t)));
  arena_ = static_cast<char*>(reserve(arenaBytes));
  if (!slots_ || !offsets_ || !arena_) {
    slots_ = nullptr;
    return false;
  }
  slotMask_ = slots - 1;
  maxIds_ = maxIds;
  arenaBytes_ = arenaBytes;
  return true;
}

const NameTable::Entry* NameTable::entry(uint32_t id) const {
  if (id == 0 || id > maxIds_) return nullptr;
  const uint64_t off = offsets_[id].load(std::memory_order_acquire);
  if (off == 0) return nullptr;
  return reinterpret_cast<const Entry*>(arena_ + off - 1);
}

std::string_view NameTable::get(uint32_t id) const {
  if (slots_ == nullptr) return {};
  const Entry* e = entry(id);
  if (e == nullptr) return {};
  return {reinterpret_cast<const char*>(e + 1), e->length};
}

uint32_t NameTable::intern(std::string_view text) {
  if (slots_ == nullptr) return 0;
  const uint64_t h = hashBytes(text.data(), text.size());
  uint32_t mine = 0;
  for (std::size_t i = h & slotMask_, probes = 0; probes <= slotMask_; i = (i + 1) & slotMask_, ++probes) {
    uint32_t id = slots_[i].load(std::memory_order_acquire);
    if (id == 0) {
      if (mine == 0) {
        // Write the entry completely before any slot can point at it.
        const std::size_t need = (sizeof(Entry) + text.size() + 1 + 7) & ~std::size_t{7};
        const uint64_t off = arenaUsed_.fetch_add(need, std::memory_order_relaxed);
        if (off + need > arenaBytes_) return 0;
        const uint32_t newId = nextId_.fetch_add(1, std::memory_order_relaxed);
        if (newId > maxIds_) return 0;
        auto* e = reinterpret_cast<Entry*>(arena_ + off);
        e->hash = h;
        e->length = static_cast<uint32_t>(text.size());
        memcpy(e + 1, text.data(), text.size());
        reinterpret_cast<char*>(e + 1)[text.size()] = '\0';
        offsets_[newId].store(off + 1, std::memory_order_release);
        mine = newId;
      }
      uint32_t expected = 0;
      if (slots_[i].compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) return mine;
      id = expected;  // somebody else took the slot: compare against theirs
    }
    const Entry* e = entry(id);
    if (e != nullptr && e->hash == h && e->length == text.size() &&
        memcmp(e + 1, text.data(), text.size()) == 0)
      return id;
  }
  return 0;
}

bool PointerMap::init(std::size_t capacityPow2) {
  if (ready()) return true;
  capacityPow2 = std::max(capacityPow2, kMaxProbes);  // so that no probe comes round again
  auto* fresh = static_cast<Slot*>(reserve(capacityPow2 * sizeof(Slot)));
  if (fresh == nullptr) return false;
  // Every racing initialiser stores its own mask before trying to publish; the slots that win
  // are published after it (release), so a reader that sees them sees a mask of their size.
  // Racing callers pass the same capacity (one call site per map).
  mask_.store(capacityPow2 - 1, std::memory_order_relaxed);
  Slot* expected = nullptr;
  if (!slots_.compare_exchange_strong(expected, fresh, std::memory_order_release, std::memory_order_acquire))
    munmap(fresh, capacityPow2 * sizeof(Slot));  // another thread's table won
  return true;
}

PointerMap::Slot* PointerMap::claim(const void* key) {
  Slot* slots = slots_.load(std::memory_order_acquire);
  if (slots == nullptr || key == nullptr) return nullptr;
  const std::size_t mask = mask_.load(std::memory_order_relaxed);
  const auto k = reinterpret_cast<uintptr_t>(key);
  for (std::size_t i = slotOf(key, mask), probes = 0; probes < kMaxProbes; i = (i + 1) & mask, ++probes) {
    uintptr_t cur = slots[i].key.load(std::memory_order_acquire);
    if (cur == 0) {
      if (slots[i].key.compare_exchange_strong(cur, k, std::memory_order_acq_rel)) cur = k;
    }
    if (cur == k) return &slots[i];
  }
  return nullptr;
}

bool PointerMap::put(const void* key, uint32_t value, uint32_t generation) {
  Slot* slot = claim(key);
  if (slot == nullptr) return false;
  slot->value.store(value | uint64_t{generation} << 32, std::memory_order_release);
  return true;
}

bool PointerMap::adjust(const void* key, int32_t delta, uint32_t generation) {
  Slot* slot = claim(key);
  if (slot == nullptr) return false;
  uint64_t word = slot->value.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t current = word >= generationWord_.load(std::memory_order_acquire) ? static_cast<uint32_t>(word) : 0;
    const int64_t next = static_cast<int64_t>(current) + delta;
    if (next < 0 || next > int64_t{UINT32_MAX}) return false;
    if (slot->value.compare_exchange_weak(word, static_cast<uint64_t>(next) | uint64_t{generation} << 32,
                                          std::memory_order_acq_rel, std::memory_order_acquire))
      return true;
  }
}

void PointerMap::forget() {
  uint64_t word = generationWord_.load(std::memory_order_relaxed);
  while (word >> 32 < kLasting - 1 &&
         !generationWord_.compare_exchange_weak(word, word + (uint64_t{1} << 32), std::memory_order_acq_rel)) {
  }
}

}  // namespace cutrace
