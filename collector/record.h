#pragma once
// The fixed-size record that travels from an application thread to the drain thread.
//
// One record is one cache line. Variable-length data (NVTX messages, thread names) follows its
// record as `extra` raw 64-byte blocks in the same ring, so a ring never holds pointers into
// memory the application may free after the call returns.

#include <cstddef>
#include <cstdint>

namespace cutrace {

inline constexpr std::size_t kRecordSize = 64;
// An NVTX text shorter than this is read, copied and compared whole by the hooks
// (preload/nvtx_injection.cpp): one block, and a push repeating the thread's last one carries none.
inline constexpr std::size_t kShortText = 32;
static_assert(kShortText <= kRecordSize);

enum class RecordType : uint8_t {
  Invalid = 0,
  Api,          // one CUDA API call: [t0, t1], hook id, result, payload by hook kind
  NvtxPush,     // payload.nvtx; message in extras; t0 = time of the push
  NvtxPop,      // payload.nvtx (domain, depth); t0 = time of the pop
  NvtxMark,     // payload.nvtx; message in extras
  NvtxStart,    // payload.nvtx with rangeId; message in extras
  NvtxEnd,      // payload.nvtx with rangeId
  ThreadName,   // payload.threadName; name in extras (nvtxNameOsThread)
  CategoryName, // payload.nvtx (domain, category); name in extras (nvtxNameCategory)
};

// Every Api payload ends with the interned id of the call stack (collector/stack_table.h) at
// the same offset, 0 = none: only the outermost recorded call of a thread captures a stack.
inline constexpr std::size_t kStackIdOffset = 28;
// Set in that word (never a stack id) for a call recorded while another recorded call of its
// thread was running: its record comes before its parent's, whose start is earlier. The drain
// folds stacks as the run goes and holds such calls until their parent arrives.
inline constexpr uint32_t kNestedCallBit = 0x80000000u;
// Set in that word for work (a launch, copy, set or graph launch) made into a stream being
// captured into a CUDA graph (collector/graph_capture.h): it runs in the graph's launches.
// Stack ids stay far below both bits (Config::maxStacks).
inline constexpr uint32_t kCapturedBit = 0x40000000u;

// Launch geometry and identity. Grid Y/Z are bounded by the hardware (65535), block dimensions
// by 1024 x 1024 x 64, so block fits 11+11+10 bits: every launch that can succeed is exact.
struct LaunchPayload {
  uint64_t stream;
  uint32_t gridX;
  uint16_t gridY, gridZ;
  uint32_t block;       // packBlock()
  uint32_t kernelName;  // NameTable id; 0 = unknown or not the outermost launch of the call
  uint32_t sharedMem;
  uint32_t stack;

  static uint32_t packBlock(unsigned x, unsigned y, unsigned z) {
    auto clamp = [](unsigned v, unsigned bits) { return v < (1u << bits) ? v : (1u << bits) - 1; };
    return clamp(x, 11) | clamp(y, 11) << 11 | clamp(z, 10) << 22;
  }
  unsigned blockX() const { return block & 0x7ff; }
  unsigned blockY() const { return block >> 11 & 0x7ff; }
  unsigned blockZ() const { return block >> 22; }
};

struct MemPayload {  // copies, sets, allocations, frees
  uint64_t bytes;
  uint64_t stream;
  uint64_t ptr;      // allocation address (alloc/free), for the memory counters
  uint8_t copyKind;  // cudaMemcpyKind-like direction, 0xff when unknown
  int8_t device;     // device of a driver-level device allocation, -1 when unknown
  uint16_t reserved;
  uint32_t stack;
};

struct HandlePayload {  // synchronisation and graph launches
  uint64_t handle;  // event, context or graph exec
  uint64_t stream;
  uint32_t reserved[3];
  uint32_t stack;
};

struct NvtxPayload {
  uint64_t rangeId;   // start/end ranges
  uint32_t domain;    // 0 = default domain
  uint32_t category;
  uint32_t message;   // NameTable id of a registered string, or 0 when the text is in extras
  uint16_t depth;     // push/pop nesting level within (thread, domain), before the push
  uint16_t length;    // bytes of message text in extras
  uint8_t truncated;  // the message was longer than kMaxTextBytes
  uint8_t insideCall; // recorded while a recorded CUDA call of the thread was running
  // A push whose text (shorter than kShortText) is that of the thread's last push in the ring:
  // no text follows; the drain takes the text it kept (Store::pushName).
  uint8_t sameText;
};

struct ThreadNamePayload {
  uint32_t tid;
  uint16_t length;
};

// Eight-byte aligned, though a ring slot is 64 bytes and the ring's mapping puts each at a multiple
// of 64: every hook builds one in a local (HookCall::r_), and a 64-byte alignment there made each
// shim realign its stack frame (a DRAP register, in its prologue and epilogue).
struct Record {
  RecordType type;
  uint8_t extra;   // number of 64-byte blocks of text that follow
  uint16_t hook;   // HookId for Api records
  int32_t result;  // API return code
  uint64_t seq;    // per-thread sequence number of the event this record opens
  uint64_t t0;     // clock ticks
  uint64_t t1;
  union {
    LaunchPayload launch;
    MemPayload mem;
    HandlePayload handle;
    NvtxPayload nvtx;
    ThreadNamePayload threadName;
    unsigned char raw[32];
  };
};

static_assert(sizeof(Record) == kRecordSize);
static_assert(offsetof(LaunchPayload, stack) == kStackIdOffset && offsetof(MemPayload, stack) == kStackIdOffset &&
              offsetof(HandlePayload, stack) == kStackIdOffset && sizeof(LaunchPayload) == 32);
// The stream of work made on one: at one offset for copies, sets and graph launches.
static_assert(offsetof(MemPayload, stream) == offsetof(HandlePayload, stream));

// Text carried in extras is cut at this many bytes; longer messages are marked truncated.
inline constexpr std::size_t kMaxTextBytes = 4096;
inline constexpr std::size_t kMaxExtraBlocks = kMaxTextBytes / kRecordSize;

}  // namespace cutrace
