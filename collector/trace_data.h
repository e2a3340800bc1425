#pragma once
// What the exporters see: decoded events per thread, their strings, and the process metadata.
// Built by the drain (collector/store.cpp) in a traced process, or by hand in unit tests.
// Exporters only read it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <string>
#include <string_view>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collector/clock.h"
#include "collector/record.h"
#include "collector/torch_text.h"

namespace cutrace {

enum class ApiLayer : uint8_t { Runtime, Driver };

enum class ApiKind : uint8_t {
  Launch, Graph, Memcpy, Memset,
  Alloc, Free,          // device memory (feeds the per-device memory counters)
  HostAlloc, HostFree,  // page-locked host memory
  Sync, Profiler,
  Teardown,  // contexts, streams and events destroyed
  Init,      // the driver initialised; contexts, streams and events made
  // After the others: files store a hook's kind by number.
  Order,       // stream and event ordering that never blocks: event records, stream waits, queries
  GraphSetup,  // stream capture and graph instantiation: host work that makes graphs, no device work
  Map,         // virtual address ranges reserved, mapped, given access, unmapped, freed: no memory made
  Module,      // modules and libraries loaded (PTX compiled, Triton's kernels, the runtime's lazy loads) and unloaded
  Lookup, Register,     // bookkeeping only, never recorded
};
inline constexpr unsigned kApiKindCount = static_cast<unsigned>(ApiKind::Register) + 1;
// The kinds of calls that become events (all but the bookkeeping ones).
constexpr bool isRecorded(ApiKind k) { return k < ApiKind::Lookup; }
// The calls that can make device work (a launch, graph launch, copy or set): CUPTI's records of
// that work name them.
constexpr bool makesDeviceWork(ApiKind k) { return k <= ApiKind::Memset; }
// The calls whose record carries a MemPayload (bytes, direction, address, stream, device); the
// others but launches carry a HandlePayload.
constexpr bool carriesMemory(ApiKind k) { return (k >= ApiKind::Memcpy && k <= ApiKind::HostFree) || k == ApiKind::Map; }

struct HookDescriptor {
  const char* displayName;  // as users know it: runtime names without __ and _ptsz/_ptds
  ApiLayer layer;
  ApiKind kind;
};

// cudaMemcpyKind values 0..4, then what only the driver distinguishes.
enum class CopyKind : uint8_t {
  HostToHost = 0, HostToDevice = 1, DeviceToHost = 2, DeviceToDevice = 3, Default = 4,
  Peer = 5, Unknown = 0xff,
};
const char* copyKindName(uint8_t kind);

enum class EventKind : uint8_t {
  Api,        // a CUDA call on this thread
  NvtxRange,  // push/pop range, properly nested on this thread
  NvtxMark,   // instant
  NvtxSpan,   // start/end range, may end on another thread
};

enum EventFlags : uint8_t {
  kEventUnclosed = 1,       // still open when the trace ended; end = end of trace
  kEventEndLost = 2,        // its end record was dropped; closed by an enclosing range's end
  kEventTextTruncated = 4,  // message longer than kMaxTextBytes
  // Recorded while a CUDA call of its thread ran (before that call's own record): for folding
  // as the run goes only; not written to the outputs.
  kEventInsideCall = 8,
  // A launch, copy or set made into a stream its thread was capturing into a CUDA graph (from a
  // stream capture's begin to its end): its work runs in the graph's replays, not at this call.
  kEventCaptured = 16,
};

struct Event {
  uint64_t start = 0;  // CLOCK_MONOTONIC ns
  uint64_t end = 0;
  uint64_t seq = 0;
  uint32_t name = 0;      // NVTX: message in TraceData::strings
  uint32_t domain = 0;    // NVTX: domain name in strings, 0 = default domain
  uint32_t category = 0;  // NVTX category number
  uint16_t hook = 0;      // Api: index into TraceData::hooks
  EventKind kind = EventKind::Api;
  uint8_t flags = 0;
  int32_t result = 0;
  union {
    LaunchPayload launch;   // kernelName is an id in TraceData::strings here
    MemPayload mem;
    HandlePayload handle;
    uint64_t rangeId;
    TorchPayload torch;     // NvtxRange
    unsigned char raw[32] = {};
  };
};
static_assert(sizeof(TorchPayload) <= sizeof(Event::raw));

// The interned call stack of an Api event (same offset in every Api payload), 0 = none.
inline uint32_t stackIdOf(const Event& e) {
  uint32_t id;
  memcpy(&id, e.raw + kStackIdOffset, sizeof(id));
  return e.kind == EventKind::Api ? id : 0;
}

// Work the GPU did, from CUPTI activity records. Times are CLOCK_MONOTONIC nanoseconds (CUPTI's
// timestamp callback is the collector's clock).
enum class DeviceKind : uint8_t { Kernel, Memcpy, Memset };

struct DeviceEvent {
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t correlation = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t name = 0;  // kernel name in TraceData::strings
  DeviceKind kind = DeviceKind::Kernel;
  uint8_t copyKind = 0;  // CUPTI memcpy kind
  uint16_t registers = 0;
  int32_t grid[3] = {};
  int32_t block[3] = {};
  int32_t staticShared = 0;
  int32_t dynamicShared = 0;
  uint64_t bytes = 0;
  // Read back from a stream (perfetto_reader.cpp): what it says of the call that made this work,
  // for a trace that holds the work but not that call (an export window that starts after it):
  // linked to a call, and the op around the call (0: none; an id in TraceData::strings).
  bool streamLinked = false;
  bool streamHasOpId = false;
  uint32_t streamOp = 0;
  uint64_t streamOpId = 0;
};

// A CUDA API call as CUPTI saw it: which host thread, when, and the correlation id its kernels
// and copies carry. Used only to find the host launch event of each device event.
struct ApiActivity {
  uint64_t start = 0;  // CLOCK_MONOTONIC ns
  uint64_t end = 0;
  uint32_t tid = 0;
  uint32_t correlation = 0;
};

struct CuptiInfo {
  std::string state = "off";  // "on", "off", "host-only"
  std::string reason;         // why it is not "on", or how it shares CUPTI with the program
  uint64_t droppedRecords = 0;
  uint64_t kernels = 0;
  uint64_t outsideCapture = 0;  // device records left out: their CUDA call was made outside the capture
};

// Under an address-space limit (RLIMIT_AS) cutrace leaves the last quarter of it to the program:
// memory that grows with the program (a ring per thread, event blocks) is refused past that
// point, like a failed mmap, so tracing turns off before it takes what the program needs next.
// No allocation (usable where a thread attaches, inside a hook).
inline bool addressSpaceAllows(std::size_t bytes) {
  struct rlimit rl {};
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return true;
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char text[64];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return true;
  text[n] = '\0';
  const uint64_t used = strtoull(text, nullptr, 10) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t limit = static_cast<uint64_t>(rl.rlim_cur);
  return used + bytes <= limit - limit / 4;
}

// Append-only storage in fixed blocks: growing never copies and never frees (a reallocating
// vector unmapped old buffers during the run, whose TLB shootdowns interrupted the traced
// threads). A block's pages are touched as it fills, once: a list emptied pass by pass keeps its
// blocks (clearKeepingBlocks). Not populated up front: every thread has a list, and 30,000 short
// threads would each have held a whole block. The first kFirst elements live in a small heap
// block, copied once into a whole block when the list outgrows it: a thread with a few events
// (most threads of a program that starts them by the thousand) held a mapping of 640 KB of
// address space and a touched page of it for them (`cutrace export` of 30,000 such threads: 20
// GB of address space, 204 MB resident, 5 s; now 92 MB, 1.3 s). T must be trivially copyable.
// A block that cannot be mapped (out of memory, RLIMIT_AS) makes push_back return false: the
// caller decides (the store drops the event and turns tracing off), the process never aborts.
template <typename T, std::size_t BlockSize = 8192>
class BlockList {
  static_assert(std::is_trivially_destructible_v<T> && std::is_trivially_copyable_v<T>);

 public:
  BlockList() = default;
  BlockList(const BlockList&) = delete;
  BlockList& operator=(const BlockList&) = delete;
  BlockList(BlockList&& o) noexcept
      : blocks_(std::exchange(o.blocks_, {})), size_(o.size_), next_(o.next_), blockEnd_(o.blockEnd_),
        firstSmall_(std::exchange(o.firstSmall_, false)) {
    o.forget();
  }
  BlockList& operator=(BlockList&& o) noexcept {
    release();
    blocks_ = std::exchange(o.blocks_, {});  // the blocks are this list's alone now
    size_ = o.size_;
    next_ = o.next_;
    blockEnd_ = o.blockEnd_;
    firstSmall_ = std::exchange(o.firstSmall_, false);
    o.forget();
    return *this;
  }
  ~BlockList() { release(); }

  // False when a new block was needed and could not be mapped (the list is unchanged). The
  // block table is a std::vector: growing it may throw std::bad_alloc (before any mapping).
  [[nodiscard]] bool push_back(const T& v) {
    T* slot = appendUninitialized();
    if (slot == nullptr) return false;
    new (slot) T(v);
    return true;
  }
  // The next element's storage, counted in size(), for the caller to fill before anything reads
  // it (the drain decodes a record straight into it: no copy through the stack); nullptr as
  // push_back's false.
  // The drain takes one per event: within a block, two increments and a compare.
  [[nodiscard]] [[gnu::always_inline]] T* appendUninitialized() {
    if (__builtin_expect(next_ == blockEnd_, 0)) return appendInNextBlock();
    ++size_;
    return next_++;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Empties the list and keeps its blocks for the elements pushed next: a list refilled and
  // emptied over and over (the drain's events of one pass) maps its memory once.
  void clearKeepingBlocks() {
    size_ = 0;
    next_ = blockEnd_ = nullptr;  // the next append starts at block 0 again
  }
  // Empties the list and unmaps its blocks (a list that will not be refilled).
  void clearReleasingBlocks() {
    release();
    std::vector<T*>().swap(blocks_);
  }
  T& operator[](std::size_t i) { return blocks_[i / BlockSize][i % BlockSize]; }
  const T& operator[](std::size_t i) const { return blocks_[i / BlockSize][i % BlockSize]; }
  // Element i and how many follow it in memory (to the end of its block or of the list): loops
  // over a run index a plain array.
  struct Run {
    const T* at;
    std::size_t count;
  };
  Run run(std::size_t i) const {
    const std::size_t inBlock = BlockSize - i % BlockSize, left = size_ - i;
    return {&blocks_[i / BlockSize][i % BlockSize], inBlock < left ? inBlock : left};
  }

  class const_iterator {
   public:
    const_iterator(const BlockList* list, std::size_t i) : list_(list), i_(i) {}
    const T& operator*() const { return (*list_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

   private:
    const BlockList* list_;
    std::size_t i_;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

 private:
  static constexpr std::size_t kBlockBytes = BlockSize * sizeof(T);
  static T* allocateBlock() {
    if (!addressSpaceAllows(kBlockBytes)) return nullptr;
    void* p = mmap(nullptr, kBlockBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<T*>(p);
  }
  // The slot of element size_: in the block holding it (a new one when every block is full),
  // or in the whole block that takes the small first block's place when that one is full;
  // nullptr, the list unchanged, when there is no memory for it.
  [[gnu::noinline]] T* appendInNextBlock() {
    const std::size_t block = size_ / BlockSize;
    if (firstSmall_ && size_ == kFirst) {
      T* whole = allocateBlock();
      if (whole == nullptr) return nullptr;
      memcpy(static_cast<void*>(whole), blocks_[0], kFirst * sizeof(T));
      free(blocks_[0]);
      blocks_[0] = whole;
      firstSmall_ = false;
      next_ = whole + kFirst + 1;
      blockEnd_ = whole + BlockSize;
      ++size_;
      return whole + kFirst;
    }
    if (block == blocks_.size()) {
      if (blocks_.size() == blocks_.capacity()) blocks_.reserve(blocks_.empty() ? 1 : blocks_.size() * 2);
      const bool small = blocks_.empty() && kFirst < BlockSize;
      T* fresh = small ? static_cast<T*>(malloc(kFirst * sizeof(T))) : allocateBlock();
      if (fresh == nullptr) return nullptr;
      blocks_.push_back(fresh);  // within the capacity reserved above: cannot throw
      firstSmall_ = small;
    }
    T* slot = blocks_[block];
    next_ = slot + 1;
    blockEnd_ = slot + (firstSmall_ && block == 0 ? kFirst : BlockSize);
    ++size_;
    return slot;
  }
  void forget() {
    size_ = 0;
    next_ = blockEnd_ = nullptr;
  }
  void release() {
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      if (i == 0 && firstSmall_) free(blocks_[0]);
      else munmap(blocks_[i], kBlockBytes);
    }
    blocks_.clear();
    firstSmall_ = false;
    forget();
  }

  // Elements in the small first block; none where blocks are small themselves.
  static constexpr std::size_t kFirst = BlockSize >= 8 ? 4 : BlockSize >= 2 ? BlockSize / 2 : BlockSize;
  std::vector<T*> blocks_;
  std::size_t size_ = 0;
  // Where element size_ goes and the end of its block: equal when the next append needs a block
  // (size_ is a multiple of BlockSize).
  T* next_ = nullptr;
  T* blockEnd_ = nullptr;
  bool firstSmall_ = false;  // blocks_[0] is the small first block (malloc'd, kFirst elements)
};

// What is kept of a thread once it exited and its slot went to another (Store::releaseEvents):
// the figures of the trace's per-thread metadata and the id CUPTI may name it by, 48 bytes,
// where its ThreadTrack and the views' state for it were about 800 (a program that starts and
// ends threads all the time held them all, 56 MiB after 60,000 threads).
struct ExitedThread {
  uint32_t ordinal = 0;
  uint32_t tid = 0;
  uint32_t pthreadLow = 0;  // ThreadTrack::pthreadLow: its device work may come later
  uint64_t events = 0;  // all released: they are in the stream
  uint64_t dropped = 0;
  uint64_t lostEnds = 0;
  uint64_t seqEnd = 0;
};

struct ThreadTrack {
  // Which thread of the run this is, in the order threads were first seen (TraceData::ordinal):
  // a slot of TraceData::threads is given to a new thread once the one before it exited
  // (Store::releaseEvents), so the index alone does not name a thread for the whole run. The
  // stream's sequence and track of a thread are numbered by it. kIndexOrdinal: the index (a
  // trace read back, data made by hand: no slot is ever reused there).
  static constexpr uint32_t kIndexOrdinal = UINT32_MAX;
  // A slot no thread holds now (its thread exited, no new one took it yet): no view visits it.
  static constexpr uint32_t kVacant = UINT32_MAX - 1;
  uint32_t ordinal = kIndexOrdinal;
  bool vacant() const { return ordinal == kVacant; }
  uint32_t tid = 0;
  uint32_t pthreadLow = 0;  // CUPTI names threads this way unless told to use tids
  std::string name;
  BlockList<Event> events;
  // Events already written to the stream and no longer held in `events` (a traced process keeps
  // only what the drain decoded since its last pass; a trace read from a file holds them all).
  uint64_t released = 0;
  // Default-domain NVTX ranges opened since the last pass (not inside a CUDA call), each before
  // the event of `events` it preceded: the folded stacks are built as the run goes
  // (exporters/folded.h, FoldBuilder), and a range's own event comes only when it ends.
  struct RangeOpen {
    uint32_t before;  // index into events
    uint32_t name;    // string id
    uint64_t start;   // ns, as the range's event will have it
    uint64_t seq;
  };
  std::vector<RangeOpen> opens;
  uint64_t releasedOpens = 0;  // opens cleared with the events so far
  // The PyTorch op range open around each outermost call of `events` that can make device work
  // (makesDeviceWork), where there is one: the innermost, by start, over every domain's stack as
  // the store decoded the call. By seq; cleared with the events. The stream puts it on the device
  // work the call made (perfetto_writer.h), so that a reader names a kernel's op as it comes; the
  // Chrome trace, which holds every event, finds the same range by time (torch_ops.h).
  struct LaunchOp {
    uint64_t seq;     // the call's
    uint64_t opId;    // the range's TorchPayload::opId, where kTorchOpId
    uint32_t name;    // the range's name (its op name), string id
    uint32_t sizes;   // its TorchPayload::sizes, 0: none
    bool hasOpId;
    // A range whose text was kept whole (not in PyTorch's exact spelling) that parseTorchRange
    // reads as an op: `name` is the whole text, opId, sizes and hasOpId are not set.
    bool loose;
  };
  std::vector<LaunchOp> launchOps;
  // NVTX ranges open after the records decoded so far, push/pop ranges of any domain and
  // start/end ranges begun on the thread, by seq (the order they began), each as its event will
  // be but for `end` and the flags only its end sets (kEventUnclosed, kEventEndLost); not those
  // pushed inside a CUDA call (the call is recorded only when it ends). The stream writes their
  // BEGINs at once, so that a process killed with ranges open leaves them (perfetto_writer.h).
  // Set by the store each time it decodes the thread's records (so current for a thread it
  // decoded in this pass: TraceData::changed), emptied at the end.
  std::vector<Event> openRanges;
  uint64_t dropped = 0;   // events lost: a full ring, or the memory cap (seq numbers never seen)
  uint64_t capped = 0;    // of those, dropped by the store at the memory cap
  uint64_t seqEnd = 0;    // the next seq the thread would have used, once it exited (0: unknown)
  // The thread exited and the drain took its last records, with no range of it left open: no
  // event of it comes after these (but the end of a start/end range begun on it). Once they are
  // streamed, what held them and the views' state for the thread are given back, not kept for
  // events to come: a program of 30,000 short threads holds only this list's entries.
  bool exited = false;
  bool changed = false;   // listed in TraceData::changed
  uint64_t lostEnds = 0;  // NVTX pops/ends lost to a full ring
  // Its figures for the per-thread metadata, as kept once it exited (ExitedThread).
  ExitedThread figures(uint32_t ordinalNow) const;
};

inline ExitedThread ThreadTrack::figures(uint32_t ordinalNow) const {
  return ExitedThread{ordinalNow, tid, pthreadLow, released + events.size(), dropped, lostEnds, seqEnd};
}

// The project's hash of a text: sixteen bytes a step in two independent multiply chains
// (std::hash reads a byte at a time: an NVTX message of a PyTorch op, ~100 bytes, is hashed
// once per range in the drain).
inline uint64_t textHash(std::string_view text) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull, kMul2 = 0xbf58476d1ce4e5b9ull;
  uint64_t a = text.size() * kMul, b = ~text.size() * kMul2;
  std::size_t i = 0;
  for (; i + 16 <= text.size(); i += 16) {
    uint64_t w[2];
    memcpy(w, text.data() + i, 16);
    a = (a ^ w[0]) * kMul;
    b = (b ^ w[1]) * kMul2;
    a ^= a >> 32;
    b ^= b >> 29;
  }
  uint64_t tail[2] = {0, 0};
  if (i < text.size()) memcpy(tail, text.data() + i, text.size() - i);  // never from a null view
  a = (a ^ tail[0]) * kMul;
  b = (b ^ tail[1]) * kMul2;
  uint64_t h = (a ^ (b >> 31) ^ (b << 33)) * kMul2;
  return h ^ (h >> 32);
}

// textHash for text looked up by string_view in a map keyed by std::string: no std::string is
// made to find one.
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return textHash(s); }
};

// Strings by id. Most are kept for the whole run (hook, kernel, frame, domain names). Text the
// program makes up per call (an NVTX message holding a step number, PyTorch's op ranges with
// their seq and op_id) would grow the pool with the run: past a cap such text gets a transient
// id (kTransientId set), held only while an event still in memory uses it (dropTransient).
class StringPool {
 public:
  static constexpr uint32_t kTransientId = 0x80000000u;
  static constexpr uint32_t kUnindexedId = 0x40000000u;  // keepUnindexed's (never with kTransientId)
  StringPool() : slots_(64), filter_(8) { intern({}); }  // id 0 is the empty string
  uint32_t intern(std::string_view text);
  // The id of a text the pool holds. A text it does not hold gets a transient id, but at its
  // second sighting in a row of recent texts (a label, not a one-off: most of PyTorch's op ranges
  // are seen once) while the pool holds fewer than `maxStrings` strings and `maxBytes` bytes of
  // text: then it is interned. So one-off texts never fill the pool, and the pool stays small
  // enough for the lookup of every message to stay in cache.
  uint32_t internBounded(std::string_view text, std::size_t maxStrings, std::size_t maxBytes);
  // A transient id for `text`, which is not looked up: a text the caller knows to be made for
  // one event (the ids of the ops whose outputs a PyTorch op takes).
  uint32_t transient(std::string_view text) { return addTransient(text); }
  // The same for a pool that keeps every text (a trace read back): kept for good, not indexed,
  // one after another in one buffer (a read back keeps one per op range: a std::string each was
  // 32 bytes and an allocation).
  uint32_t keepUnindexed(std::string_view text) {
    unindexed_.push_back(KeptSpan{unindexedText_.size(), static_cast<uint32_t>(text.size())});
    unindexedText_.append(text);
    return kUnindexedId | static_cast<uint32_t>(unindexed_.size() - 1);
  }
  // Valid until the text's id is dropped (transient) or the pool is destroyed.
  std::string_view get(uint32_t id) const {
    if (id & kTransientId) {
      id &= ~kTransientId;
      if (id >= transient_.size()) return strings_[0];
      return std::string_view(transientText_).substr(transient_[id].offset, transient_[id].length);
    }
    if (id & kUnindexedId) {
      id &= ~kUnindexedId;
      if (id >= unindexed_.size()) return strings_[0];
      return std::string_view(unindexedText_).substr(unindexed_[id].offset, unindexed_[id].length);
    }
    return strings_[id < strings_.size() ? id : 0];
  }
  static bool isTransient(uint32_t id) { return (id & kTransientId) != 0; }
  std::size_t size() const { return strings_.size(); }
  std::size_t transientCount() const { return transient_.size(); }
  // Forgets every transient string but those `keep` points at, which get new ids.
  void dropTransient(const std::vector<uint32_t*>& keep);

 private:
  std::vector<std::string> strings_;
  // The index: open addressing over (hash, id + 1), 0 = empty, at most half full. Every NVTX
  // message the drain decodes is looked up here, and most of PyTorch's are not in it: a node-based
  // map cost such a miss two or three cache misses (half the drain's time on emit_nvtx ranges,
  // 65,536 strings in), one probe here; the text itself is read only when the hash matches.
  struct Slot {
    uint64_t hash = 0;
    uint32_t idPlusOne = 0;
  };
  // The id of `text` (hash `h`), or where it would go: *slot is the empty slot.
  uint32_t find(std::string_view text, uint64_t h, Slot*& slot);
  // Adds `text` (hash `h`, not in the pool) at the empty `slot` find() gave; its id.
  uint32_t add(std::string_view text, uint64_t h, Slot* slot);
  void grow();
  // A Bloom filter of the hashes in the index, 8 bits per slot, two bits of one 64-bit word a
  // hash (one cache line read; about 1 in 50 false at half full: 128 KB at 65,536 strings, in
  // cache where the index is not): most texts the pool does not hold are told so without a
  // probe into the index.
  static uint64_t filterBits(uint64_t h) { return uint64_t{1} << (h >> 52 & 63) | uint64_t{1} << (h >> 58); }
  bool mayHold(uint64_t h) const {
    const uint64_t bits = filterBits(h);
    return (filter_[h & (filter_.size() - 1)] & bits) == bits;
  }
  void addToFilter(uint64_t h) { filter_[h & (filter_.size() - 1)] |= filterBits(h); }
  std::vector<Slot> slots_;
  std::vector<uint64_t> filter_;  // slots_.size() / 8 words
  // Tags (16 hash bits, never 0) of texts internBounded gave a transient id, direct-mapped (8 KB:
  // read for every message, it stays in cache): a text whose tag is found here was most likely
  // seen recently (a one-off taken for a label now and then only costs a pool entry).
  static constexpr std::size_t kSeenSlots = 4096;
  static uint16_t seenTag(uint64_t h) { return static_cast<uint16_t>(h >> 48 | 1); }
  std::vector<uint16_t> seen_;
  std::size_t bytes_ = 0;
  // Transient texts, one after another in one buffer (no allocation per text: PyTorch's op ranges
  // make one per range), emptied by dropTransient.
  struct Span {
    uint32_t offset, length;
  };
  std::string transientText_;
  std::vector<Span> transient_;
  // keepUnindexed's texts, the same way (a read back's may pass 4 GB in all).
  struct KeptSpan {
    uint64_t offset;
    uint32_t length;
  };
  std::string unindexedText_;
  std::vector<KeptSpan> unindexed_;
  uint32_t addTransient(std::string_view text) {
    transient_.push_back(Span{static_cast<uint32_t>(transientText_.size()), static_cast<uint32_t>(text.size())});
    transientText_.append(text);
    return kTransientId | static_cast<uint32_t>(transient_.size() - 1);
  }
};

struct TraceMeta {
  std::string tool = "cutrace";
  std::string version;
  std::string exe;
  std::vector<std::string> commandLine;
  std::string hostname;
  uint32_t pid = 0;
  int rank = -1;  // RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; -1 when none
  std::string capture = "all";  // CUTRACE_CAPTURE as understood
  std::string clockSource;         // "tsc" or "clock_monotonic"
  uint64_t originMonotonicNs = 0;  // trace ts 0
  int64_t realtimeMinusMonotonicNs = 0;
  uint64_t endMonotonicNs = 0;
  std::vector<std::pair<std::string, uint64_t>> counters;  // diagnostics, e.g. lookups wrapped
};

struct TraceData {
  TraceMeta meta;
  std::vector<HookDescriptor> hooks;
  std::deque<std::string> hookNames;  // storage for hooks[].displayName when read from a file
  std::vector<ThreadTrack> threads;
  // Threads whose slot in `threads` went to another thread, in the order they left (their
  // ordinals rise only within runs of it).
  std::vector<ExitedThread> exitedThreads;
  StringPool strings;
  std::unordered_map<uint64_t, uint32_t> categoryNames;  // (domain << 32 | category) -> string
  std::vector<DeviceEvent> device;
  uint64_t releasedDevice = 0;  // device events already written to the stream, no longer in `device`
  uint64_t releasedLinked = 0;  // of those, linked to their CUDA call (the stream writer's count)
  std::vector<ApiActivity> apiActivity;
  // Device memory allocated before the first event held and still live then (a window's
  // rebuild leaves out the calls that made it): the memory counters start from these.
  struct LiveAllocation {
    uint64_t ptr = 0, bytes = 0;
    int8_t device = -1;
  };
  std::vector<LiveAllocation> liveBefore;
  CuptiInfo cupti;
  // Call stacks by id (an Api event's payload `stack`): frame names in `strings`, innermost
  // first. Id 0 and ids that could not be resolved are empty.
  std::vector<std::vector<uint32_t>> stacks;
  struct StackInfo {
    std::string unwinder = "off";  // stacks::unwinderName()
    uint64_t fallbacks = 0;        // stacks the dwarf walk left to the fallback unwinder
    bool verified = false;         // CUTRACE_UNWIND=verify was in effect
    uint64_t mismatches = 0;       // then: stacks where the walks disagreed
    std::string python;            // what Python frame support found
    uint32_t depth = 0;
    uint64_t overflowed = 0;       // stacks not stored: the table was full
  } stackInfo;

  // Every time held here is CLOCK_MONOTONIC ns (the drain maps ticks as it decodes); the views
  // show them from the trace's origin.
  int64_t toTraceNs(uint64_t ns) const { return static_cast<int64_t>(ns - meta.originMonotonicNs); }
  uint64_t droppedEvents() const;
  uint64_t eventCount() const;
  // The thread in slot `index`, numbered in the order of the run's threads (ThreadTrack::ordinal).
  uint32_t ordinal(std::size_t index) const {
    const uint32_t o = threads[index].ordinal;
    return o == ThreadTrack::kIndexOrdinal ? static_cast<uint32_t>(index) : o;
  }
  // The state a view keeps for slot `index` of `threads` (the stream's sequence, the fold's
  // stack), made anew when another thread took the slot: `states` holds one per slot, and State
  // an `ordinal` (ThreadTrack::kIndexOrdinal at first) naming the thread it is for.
  template <typename State>
  State& slotState(std::vector<State>& states, std::size_t index) const {
    State& s = states[index];
    if (s.ordinal != ordinal(index)) {
      s = State();
      s.ordinal = ordinal(index);
    }
    return s;
  }
  // Every thread of the run, those that left their slot (ExitedThread) and those in `threads`,
  // in ordinal order (the stream's thread order): f(const ExitedThread&), for the per-thread
  // metadata.
  template <typename F>
  void forEachThreadFigures(F&& f) const {
    std::vector<ExitedThread> all = exitedThreads;
    all.reserve(all.size() + threads.size());
    for (std::size_t i = 0; i < threads.size(); ++i) {
      if (!threads[i].vacant()) all.push_back(threads[i].figures(ordinal(i)));
    }
    std::stable_sort(all.begin(), all.end(), [](const ExitedThread& a, const ExitedThread& b) { return a.ordinal < b.ordinal; });
    for (const ExitedThread& t : all) f(t);
  }

  // The threads whose track changed (events, opens, drop counts, name, exit) since the drain last
  // released its events (Store::releaseEvents), when the drain keeps that list
  // (`changesListed`): a pass then costs the threads that ran, not every thread the process ever
  // had (100,000 short threads made an idle drain spend a fifth of a core). Otherwise (a trace
  // read from a file, hand-made data) every thread is visited. In index order.
  bool changesListed = false;
  template <typename F>
  void forEachChanged(F&& f) const {
    if (!changesListed) {
      for (std::size_t i = 0; i < threads.size(); ++i) f(i);
      return;
    }
    if (!changedSorted_) {
      std::sort(changed_.begin(), changed_.end());
      changedSorted_ = true;
    }
    for (uint32_t i : changed_) f(std::size_t{i});
  }
  // A vacant slot (ThreadTrack::vacant) is never listed: no pass visits it.
  void markChanged(std::size_t index) {
    ThreadTrack& t = threads[index];
    if (t.changed || t.vacant()) return;
    t.changed = true;
    if (!changed_.empty() && changed_.back() > index) changedSorted_ = false;
    changed_.push_back(static_cast<uint32_t>(index));
  }
  void clearChanged() {
    for (uint32_t i : changed_) threads[i].changed = false;
    changed_.clear();
    changedSorted_ = true;
  }

 private:
  // Sorted when first visited (one thread at a time uses a TraceData).
  mutable std::vector<uint32_t> changed_;
  mutable bool changedSorted_ = true;
};

}  // namespace cutrace
