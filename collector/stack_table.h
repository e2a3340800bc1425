#pragma once
// Call stacks interned once per process: a hook hashes the frames it captured and gets a 32-bit
// id; a stack seen before costs its hash and one probe (no lock, no allocation). Only the first
// sight of a stack copies its frames.
//
// Concurrency: any thread may find() or insert() at any time; ids are published with release
// order after their frames are written, so frames(id) is complete for every id a reader got
// from find()/insert(), and for every id frames() reports a non-zero depth for. The memory is
// reserved once by reserve() (before recording starts) and never moves or shrinks; a full table
// answers 0 ("no stack") and counts the overflow.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cutrace {

// A frame is a native return address, or a Python frame interned by collector/python_frames.h
// tagged with the top bit (user-space addresses never have it set).
inline constexpr uint64_t kPythonFrameTag = uint64_t{1} << 63;
inline constexpr uint64_t kPythonEntryBit = uint64_t{1} << 62;
inline constexpr uint32_t kMaxStackDepth = 128;

// The 128-bit product of a and b, its halves folded (wyhash's "mum"): every bit of each input
// reaches most bits of the result.
__extension__ typedef unsigned __int128 Uint128;  // GCC and Clang's, one mul instruction on x86-64
inline uint64_t foldedProduct(uint64_t a, uint64_t b) {
  const Uint128 r = static_cast<Uint128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// A stack's id is found by this hash alone: two words a multiply, the running state in one
// factor, so that order matters. A stack with Python frames has ~50 words: half the chained
// multiplies of one a word (callgrind: 86 fewer instructions for such a stack).
inline uint64_t hashFrames(const uint64_t* frames, uint32_t depth) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
  uint32_t i = 0;
  for (; i + 2 <= depth; i += 2) h = foldedProduct(frames[i] ^ 0xa0761d6478bd642full, frames[i + 1] ^ h);
  if (i < depth) h = foldedProduct(frames[i] ^ 0xe7037ed1a0b428dbull, h ^ 0x8ebc6af09c88c6e3ull);
  h = foldedProduct(h ^ 0x589965cc75374cc3ull, depth ^ 0x1d8e4e27c47d124full);
  return h != 0 ? h : 1;  // 0 marks an empty slot
}

// A stack's hash: its native frames' (hashFrames), with its Python frames' hash
// (python::foldPythonFrame, from the outermost in) folded in when it has any.
inline uint64_t hashStack(const uint64_t* native, uint32_t depth, uint64_t pythonHash, uint32_t pythonFrames) {
  const uint64_t h = hashFrames(native, depth);
  if (pythonFrames == 0) return h;
  const uint64_t both = foldedProduct(h ^ 0x4f1bbcdcbfa53e0bull, pythonHash ^ (uint64_t{pythonFrames} << 32));
  return both != 0 ? both : 1;  // 0 marks an empty slot
}

class StackTable {
 public:
  struct Frames {
    const uint64_t* frames = nullptr;  // innermost first
    uint32_t depth = 0;
  };

  // Reserves address space for `maxStacks` stacks and `maxFrames` frames in all. Pages are
  // touched as stacks arrive. Call once, before any other member.
  bool reserve(uint32_t maxStacks, uint64_t maxFrames);
  bool reserved() const { return slots_ != nullptr; }

  // The id of the stack with this hash, 0 when it was never inserted.
  uint32_t find(uint64_t hash) const;
  // Inserts a stack (frames innermost first); returns its id, the existing id when another
  // thread inserted the same hash first, 0 when the table is full. An id no slot names may be
  // handed out when a thread inserting a stack stalls and another one stores it meanwhile: its
  // frames are readable all the same.
  uint32_t insert(uint64_t hash, const uint64_t* frames, uint32_t depth);

  // Highest id handed out so far; ids are 1..size(). An id whose insertion is still running
  // has depth 0 here.
  uint32_t size() const;
  Frames frames(uint32_t id) const;
  uint64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> hash;
    std::atomic<uint32_t> id;  // 0 while the inserting thread copies the frames
    uint32_t pad;
  };
  struct Entry {
    uint64_t offset;
    std::atomic<uint32_t> depth;  // written last (release)
    uint32_t pad;
  };
  static constexpr uint32_t kFullId = UINT32_MAX;  // slot claimed but nothing could be stored
  static constexpr uint32_t kMaxProbes = 64;
  // Pauses a thread waits for another thread's copy of the same stack before it stores its own.
  static constexpr int kMaxSpins = 256;

  // Copies the frames under a new id; kFullId when the table has no room.
  uint32_t store(const uint64_t* frames, uint32_t depth);

  Slot* slots_ = nullptr;
  Entry* entries_ = nullptr;
  uint64_t* frames_ = nullptr;
  uint64_t slotMask_ = 0;
  uint32_t maxStacks_ = 0;
  uint64_t maxFrames_ = 0;
  std::atomic<uint32_t> nextId_{0};
  std::atomic<uint64_t> nextFrame_{0};
  std::atomic<uint64_t> overflowed_{0};
};

}  // namespace cutrace
