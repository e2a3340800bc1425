#pragma once
// The reader of cutrace's stream (<stem>.pftrace; exporters/perfetto_writer.h describes what is
// written). A Trace is a sequence of field-1 TracePackets; they are read one at a time into a
// reused buffer, so memory is one packet (at most kMaxPacketBytes) plus what the sequences
// intern and the slices still open, whatever the file's length. A last packet cut short (a
// process killed while appending) ends the file without error; anything else malformed is an
// error message, never a crash or a read past the bytes given.
//
// Decoding follows Perfetto's rules: per sequence, the interned state (event names,
// categories, debug-annotation names and string values, function names, frames, callstacks)
// and the packet defaults, cleared by sequence_flags & 1 (a packet that needs incremental
// state on a sequence that never had it is skipped, as trace_processor does); timestamps on
// the sequence's default clock, a sequence-scoped clock (64..127) from its ClockSnapshot as
// deltas when it is incremental, or an explicit timestamp_clock_id (MONOTONIC is absolute;
// BOOTTIME and REALTIME through a ClockSnapshot that has MONOTONIC); track descriptors; slices
// paired BEGIN/END per track on a stack, an END's annotations added to its slice's; INSTANT and
// COUNTER events; ChromeEventBundle metadata. NVTX slices still open where the file ends (ranges
// a killed process had open) end at its last timestamp, with an `unclosed` annotation.
//
// Concurrency: none; a read runs on the calling thread and calls the visitor from it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "collector/torch_text.h"
#include "collector/trace_data.h"
#include "exporters/perfetto_writer.h"

namespace cutrace {

// A TracePacket larger than this is malformed (the writer's largest is one event with the
// strings it interns: kilobytes).
inline constexpr std::size_t kMaxPacketBytes = std::size_t{64} << 20;
// Slices open at once on one track (the writer nests a pass at most PerfettoWriter::kMaxNesting
// deep, inside at most kMaxBegun ranges written ahead).
inline constexpr std::size_t kMaxOpenSlices = 4096;

// What a track is, from its descriptor and the writer's uuid layout.
enum class PfTrackKind : uint8_t { Other, Process, Thread, Domain, Span, DropCounter, Device };

struct PfTrack {
  uint64_t uuid = 0;
  uint64_t parent = 0;
  PfTrackKind kind = PfTrackKind::Other;
  std::string name;         // the thread's or process's name for those
  uint32_t pid = 0;         // Process, Thread
  uint32_t tid = 0;         // Thread
  uint32_t sequence = 0;    // the sequence that last described it
  uint64_t thread = 0;      // Thread: its own uuid; Domain, Span, DropCounter: the thread's
  uint32_t device = 0;      // Device
  uint32_t stream = 0;      // Device
};

struct PfAnnotation {
  enum class Type : uint8_t { Uint, Int, Bool, Pointer, String };
  Ann id = Ann::Count;  // Ann::Count: a name outside kAnnotationNames
  Type type = Type::Uint;
  uint64_t value = 0;  // Uint, Bool, Pointer; Int as two's complement
  std::string_view name;
  std::string_view text;  // String
  int64_t asInt() const { return static_cast<int64_t>(value); }
};

// One slice (BEGIN to END on one track) or instant. Views stay valid until the visitor returns.
struct PfSlice {
  const PfTrack* track = nullptr;  // never null
  uint32_t sequence = 0;
  uint64_t startNs = 0;  // CLOCK_MONOTONIC
  uint64_t endNs = 0;
  bool instant = false;
  std::string_view category;  // the first one
  std::string_view name;
  uint64_t nameIid = 0;       // 0: the name was not interned
  uint64_t callstackIid = 0;  // 0: none
  bool flowOut = false;       // it has flow_ids: a CUDA call whose device work CUPTI reports, or that work
  std::vector<std::string_view> frames;  // the callstack's function names, innermost first
  std::vector<PfAnnotation> annotations;
  // One of PyTorch's op ranges written as its parts (perfetto_writer.cpp): `op` holds them (its
  // name the op name), and `name` is its text, rendered again where the visitor wants it
  // (PerfettoVisitor::wantsOpText), else the op name too.
  bool isTorchOp = false;
  TorchOp op;
  // Its seq annotation, or where it has none the previous BEGIN or INSTANT's on its sequence + 1
  // (the writer leaves out a seq that follows; 0 for a first without one).
  uint64_t seq = 0;

  const PfAnnotation* find(Ann a) const {
    for (const PfAnnotation& x : annotations)
      if (x.id == a) return &x;
    return nullptr;
  }
};

// The kernel a launch slice names: the part of its `launch` annotation before the last "<<<"
// (perfetto_writer.h), or an older stream's `kernel` annotation; empty when neither.
inline std::string_view launchKernelName(const PfSlice& s) {
  if (const PfAnnotation* l = s.find(Ann::Launch)) {
    const std::size_t at = l->text.rfind("<<<");
    if (at != std::string_view::npos && at > 0) return l->text.substr(0, at);
  }
  if (const PfAnnotation* k = s.find(Ann::Kernel)) return k->text;
  return {};
}

class PerfettoVisitor {
 public:
  virtual ~PerfettoVisitor() = default;
  // A track described (again, when it is described anew: a thread renamed).
  virtual void track(const PfTrack&) {}
  // A slice when its END arrives (an NVTX slice never ended: at the end), an instant when it
  // arrives.
  virtual void slice(const PfSlice&) {}
  virtual void counter(const PfTrack&, uint32_t /*sequence*/, uint64_t /*ns*/, int64_t /*value*/) {}
  // ChromeEventBundle metadata: its json_value, or string_value.
  virtual void metadata(std::string_view /*name*/, std::string_view /*value*/) {}
  // False stops the read with this message as its error (e.g. a file the visitor cannot use).
  virtual bool ok(std::string& /*error*/) { return true; }
  // After each whole packet: the bytes of the input read so far (a progress line).
  virtual void position(uint64_t /*offset*/) {}
  // Whether PfSlice::name of an op range written as its parts is its text, rendered again (a
  // visitor that reads PfSlice::op instead, as the rebuild does, spares that).
  virtual bool wantsOpText() const { return true; }
};

struct PfReadStats {
  uint64_t packets = 0;
  uint64_t bytes = 0;            // of whole packets
  bool truncated = false;        // the file ended inside a packet
  uint64_t skipped = 0;          // packets that needed incremental state their sequence never had
  uint64_t unmatchedEnds = 0;    // END with no open slice on its track
  uint64_t openAtEnd = 0;        // BEGINs whose END never came (NVTX ones visited as unclosed)
};

// false with a message (path and byte offset) on unreadable or malformed input.
bool readPerfetto(const std::string& path, PerfettoVisitor& visitor, std::string& error, PfReadStats* stats = nullptr);
bool readPerfettoBytes(std::string_view bytes, PerfettoVisitor& visitor, std::string& error,
                       PfReadStats* stats = nullptr);

// What a rebuild holds an event in (an Event in the thread's blocks and the Chrome writer's
// order of it), measured as cutrace export's peak RSS for more of them, rounded up: 82-88 bytes
// a CUDA call or NVTX range; 141 a PyTorch op range (its input ids and autograd links too);
// 217 a kernel with its links to its launch and op, about 270 with every page of the vectors
// it doubled touched (pftrace_device_ops; test_export_memory.py checks the sum).
inline constexpr uint64_t kRebuildBytesPerEvent = 96;
inline constexpr uint64_t kRebuildBytesPerOpRange = 160;
inline constexpr uint64_t kRebuildBytesPerDevice = 288;
// `events` host events, `opRanges` of them op ranges, and `devices` device events.
inline uint64_t rebuildBytes(uint64_t events, uint64_t opRanges, uint64_t devices) {
  return (events - std::min(events, opRanges)) * kRebuildBytesPerEvent + opRanges * kRebuildBytesPerOpRange +
         devices * kRebuildBytesPerDevice;
}

// What rebuilding TraceData found besides the data.
struct PfRebuildInfo {
  PfReadStats stats;
  bool ended = false;             // the `cutrace` metadata is there: the process ended normally
  uint64_t metadataEvents = 0;    // its "events" (when ended)
  uint64_t skippedEvents = 0;     // slices that are not a cutrace event (unknown hook, category)
  uint64_t outsideWindow = 0;     // host events left out by PfRebuildOptions::window
  bool overMaxEvents = false;     // the rebuild failed at PfRebuildOptions::maxEvents (info is filled then too)
  bool overMaxThreads = false;    // it failed at the thread limit, which every rebuild has (`cutrace export` too)
};

// The sequence the writer puts the process's metadata and tracks on: no thread's events.
inline constexpr uint32_t kPfProcessSequence = 1;

// A part of a run in trace ns: CLOCK_MONOTONIC minus the process's origin (ts_origin_ns of its
// `cutrace.process` metadata, which the final metadata repeats), ts 0 of the Chrome trace. An
// event is in it when it overlaps [fromNs, toNs), kept whole: start < toNs and end > fromNs;
// one of no duration (an NVTX mark, end <= start) when fromNs <= start < toNs. A window of no
// duration (fromNs == toNs: a step range of none, as a process killed right after pushing it
// leaves) holds what spans its instant, start <= fromNs <= end: the events of no duration at
// it, the step among them, and the ranges around it.
struct PfWindow {
  int64_t fromNs = 0;
  int64_t toNs = std::numeric_limits<int64_t>::max();
  bool holds(int64_t start, int64_t end) const {
    if (fromNs == toNs) return start <= fromNs && end >= fromNs;
    if (end <= start) return start >= fromNs && start < toNs;
    return start < toNs && end > fromNs;
  }
};

struct PfRebuildOptions {
  // Only the events in the window: host events by their own times (a mark by its start), device
  // work by its own. The others are never stored, so a rebuild's memory follows the window, not
  // the file; threads, names, stacks, metadata and drop counts are rebuilt as without it.
  bool windowed = false;
  PfWindow window;
  // More host events than this (0: no cap) fail the rebuild ("more than N events",
  // PfRebuildInfo::overMaxEvents) as soon as one more would be stored: a reader's memory stays
  // bounded whatever the file.
  uint64_t maxEvents = 0;
};

// Where a rebuild takes the process's own figures from. In the tools: the stream's metadata
// packets (`cutrace.process`, then `cutrace` at a normal end), whose JSON the reader library
// parses (exporters/perfetto_metadata.cpp, simdjson). In the traced process at its exit: what it
// holds in memory (`known`: meta, hooks, CUPTI and stack figures, per-thread counts), so the
// preload needs no JSON parser.
struct PfFinalThread {
  uint32_t tid = 0;
  uint64_t dropped = 0, lostEnds = 0, seqEnd = 0;
};
struct PfFinalMetadata {
  bool ended = false;           // the process ended normally and said so
  uint64_t events = 0;          // the events it counted
  uint64_t distinctStacks = 0;  // its stack table's size
  std::vector<PfFinalThread> threads;  // in the writer's thread order
};
struct PfMetadataSource {
  // The process metadata JSON: TraceData::meta and ::hooks (false with a message: malformed).
  bool (*process)(std::string_view json, TraceData& out, std::string& error) = nullptr;
  // The final metadata JSON: meta, cupti, stackInfo and `final`.
  bool (*final)(std::string_view json, TraceData& out, PfFinalMetadata& final, std::string& error) = nullptr;
  const TraceData* known = nullptr;  // instead of both: the figures as given
};
bool rebuildPerfetto(const std::string& path, const PfMetadataSource& source, TraceData& out, std::string& error,
                     PfRebuildInfo* info = nullptr, const PfRebuildOptions& options = {});
bool rebuildPerfettoBytes(std::string_view bytes, const PfMetadataSource& source, TraceData& out,
                          std::string& error, PfRebuildInfo* info = nullptr, const PfRebuildOptions& options = {});

// The tools' source: the stream's own metadata JSON (exporters/perfetto_metadata.cpp; the reader
// library only), for readPerfettoTrace and for visitors that want the same figures.
const PfMetadataSource& perfettoFileMetadata();

// One process's stream back as the TraceData it was written from, for the Chrome and folded
// writers: threads (by sequence, i.e. in the writer's order) with their events in the order
// they were recorded, strings, stacks (same ids), hooks and metadata (from `cutrace.process`,
// then the final `cutrace` metadata where the process wrote it), device events with the host
// links the writer recorded, drop counts. Times are CLOCK_MONOTONIC ns. A file holding several processes is refused. (The reader library only: it parses the
// metadata JSON.)
bool readPerfettoTrace(const std::string& path, TraceData& out, std::string& error, PfRebuildInfo* info = nullptr,
                       const PfRebuildOptions& options = {});
bool readPerfettoTraceBytes(std::string_view bytes, TraceData& out, std::string& error,
                            PfRebuildInfo* info = nullptr, const PfRebuildOptions& options = {});

}  // namespace cutrace
