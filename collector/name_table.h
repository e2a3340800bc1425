#pragma once
// Process-wide interning of short, low-cardinality strings: kernel names, NVTX domain names
// and registered strings. Any thread may intern concurrently; nothing here allocates with
// malloc or takes a lock, so it is safe inside hooks.
//
// Ids start at 1; 0 means "none". An id handed to another thread through a release/acquire
// channel (a ring commit) makes its text readable there. Interning the same text twice
// concurrently may burn an extra id; both callers still get one canonical id.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cutrace {

class NameTable {
 public:
  // Reserves address space lazily (pages are touched as text arrives).
  bool init(std::size_t maxIds = 1u << 20, std::size_t arenaBytes = 64u << 20);

  // Returns 0 when the table is full or was never initialised.
  uint32_t intern(std::string_view text);
  std::string_view get(uint32_t id) const;
  uint32_t size() const { return nextId_.load(std::memory_order_acquire) - 1; }

 private:
  struct Entry {  // lives in the arena, followed by the text and a NUL
    uint64_t hash;
    uint32_t length;
  };
  const Entry* entry(uint32_t id) const;

  std::atomic<uint32_t>* slots_ = nullptr;  // open addressing, id or 0
  std::atomic<uint64_t>* offsets_ = nullptr;  // id -> arena offset + 1 (0: not yet written)
  char* arena_ = nullptr;
  std::size_t slotMask_ = 0;
  std::size_t maxIds_ = 0;
  std::size_t arenaBytes_ = 0;
  std::atomic<uint32_t> nextId_{1};
  std::atomic<uint64_t> arenaUsed_{0};
};

// Pointer -> 32-bit value cache (kernel handle -> name id). Same rules as NameTable: lock-free,
// insert or overwrite, never removes; a key whose slot is not within kMaxProbes of its hash's
// is not cached. A table that fills as a long run loads modules again and again (each load
// makes new handles) so costs a launch of an uncached kernel kMaxProbes loads, not a scan of
// the whole table (65,536 slots) on every such launch. Constant-initialisable
// (a process-wide instance needs no guarded static) and initialised by whichever thread comes
// first: init() may race with itself and with find()/put(), and there is no lock a fork could
// leave taken.
//
// forget() ends every value but the lasting ones at once (a module unloaded: the driver hands
// its handles' memory out again, and a new kernel with an old handle must not get the old
// kernel's name): each value is stored with the generation it was put in, in one word with it,
// so a reader never pairs a value with another's generation; values of earlier generations are
// not found (their slots stay taken by their keys, and are found again if those are put again).
class PointerMap {
 public:
  constexpr PointerMap() = default;
  // Reserves the slots once (at least kMaxProbes); later calls (any capacity) return whether
  // that succeeded.
  bool init(std::size_t capacityPow2 = 1u << 16);
  bool ready() const { return slots_.load(std::memory_order_acquire) != nullptr; }
  // Inline: every launch looks up its kernel's name here, on the calling thread.
  [[gnu::always_inline]] uint32_t find(const void* key) const {
    Slot* slots = slots_.load(std::memory_order_acquire);
    if (slots == nullptr || key == nullptr) return 0;
    const std::size_t mask = mask_.load(std::memory_order_relaxed);
    const auto k = reinterpret_cast<uintptr_t>(key);
    for (std::size_t i = slotOf(key, mask), probes = 0; probes < kMaxProbes; i = (i + 1) & mask, ++probes) {
      const uintptr_t cur = slots[i].key.load(std::memory_order_acquire);
      if (cur == k) {
        // Put in this generation or as lasting (a higher one): one compare of the whole word.
        const uint64_t word = slots[i].value.load(std::memory_order_acquire);
        return word >= generationWord_.load(std::memory_order_acquire) ? static_cast<uint32_t>(word) : 0;
      }
      if (cur == 0) return 0;
    }
    return 0;
  }
  // The generation values are put in now; kLasting: forget() leaves them. A caller reads it
  // before it looks up what it puts: a forget() in between leaves the value in the ended
  // generation (looked up again), so a value from before a forget() is never found after it.
  static constexpr uint32_t kLasting = UINT32_MAX;
  uint32_t generation() const { return static_cast<uint32_t>(generationWord_.load(std::memory_order_acquire) >> 32); }
  // Returns whether `key` is cached now.
  bool put(const void* key, uint32_t value, uint32_t generation);
  // Adds `delta` to `key`'s value (0 where it has none, or one put in an ended generation) and
  // stores it in `generation`, atomically against every other adjust() of the key: counts kept
  // by several threads at once lose nothing. False, changing nothing, where the value would go
  // below 0 or past 2^32 - 1, or the key cannot be cached.
  bool adjust(const void* key, int32_t delta, uint32_t generation);
  // Values put in the generations so far, but kLasting, are not found any more (up to 2^32 - 2
  // times: later calls do nothing).
  void forget();

  static constexpr std::size_t kMaxProbes = 64;
  // The first slot looked at for `key` in a table of mask + 1 slots.
  static std::size_t slotOf(const void* key, std::size_t mask) { return mix(reinterpret_cast<uintptr_t>(key)) & mask; }

 private:
  struct Slot {
    std::atomic<uintptr_t> key;
    std::atomic<uint64_t> value;  // the value, its generation in the high half
  };
  // The slot holding `key`, taken for it where it has none; nullptr where the table has no room
  // within kMaxProbes (or is not set up).
  Slot* claim(const void* key);
  static std::size_t mix(uintptr_t p) {
    uint64_t x = p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
  }
  std::atomic<Slot*> slots_{nullptr};  // published with release after mask_
  std::atomic<std::size_t> mask_{0};
  // The current generation in the high half (values put in it and lasting ones are at least this).
  std::atomic<uint64_t> generationWord_{uint64_t{1} << 32};
};

uint64_t hashBytes(const void* data, std::size_t length);

}  // namespace cutrace
