#pragma once
// The stream: a process's trace as Perfetto's native protobuf (`<stem>.pftrace`), appended by
// the drain thread on every pass. The file is a concatenation of whole TracePackets and each
// pass appends whole packets only, so it opens (ui.perfetto.dev, trace_processor) at every
// moment: a process killed by SIGKILL leaves everything older than one drain interval.
//
// What is written (exporters/perfetto_reader reads exactly this):
// - Sequence 1 (the process): a ClockSnapshot (BOOTTIME, MONOTONIC, REALTIME), the process
//   track (uuid processUuid(pid)) with pid, name and command line, and ChromeEventBundle
//   metadata `cutrace.process` (JSON: tool, version, pid, exe, hostname, rank, capture,
//   clock_source, ts_origin_ns, realtime_minus_monotonic_ns, command_line, hooks: the hook
//   table, {name, layer, kind} by hook index); at a normal end, the device work (one track per
//   GPU stream, named "GPU <device> stream <stream>"; a slice whose CUDA call CUPTI reported
//   carries that call's host_tid (OS tid), host_start and host_end (MONOTONIC ns), from which a
//   reader finds the host slice as the collector would; with flows on, one that has a flow
//   from its call and was launched inside a PyTorch op range carries the range's name as `op`,
//   and its `sizes` and `op_id`, so that a reader names a kernel's op as it comes) and `cutrace`
//   metadata = the Chrome trace's `metadata` object. Threads that recorded nothing are
//   described at the end too.
// - Device memory, on sequence 1 too: a counter track per device (uuid memoryCounterUuid, under
//   the process track, named memoryCounterName, unit bytes), described just before its first
//   value; each pass writes COUNTER events for the changes its events made (MemoryChange), in
//   time order, each the device's allocated bytes after the change: the Chrome trace's counters,
//   same values at the same times. Absolute MONOTONIC timestamps: changes on different threads
//   can reach different passes out of time order, and trace_processor sorts a file's packets by
//   time before importing them. The totals and the live allocations carry over between passes.
//   Readers that rebuild the events skip these (the Chrome trace recomputes them from events).
// - One sequence per thread track (id 2 + thread index): its first packet clears the
//   incremental state and sets the defaults (timestamps on clock 64, delta-encoded, defined by
//   a ClockSnapshot against MONOTONIC; events on the thread's track) and describes the track.
//   Only that packet has sequence_flags: the others use the interned state without asking for
//   it (SEQ_NEEDS_INCREMENTAL_STATE only makes trace_processor skip packets after a loss,
//   which a file cutrace wrote never has; drops are counted, not lost packets).
//   Events are BEGIN/END pairs (CUDA calls, NVTX push/pop ranges) and INSTANTs (NVTX marks).
//   Each pass writes a thread's new events nested: an event wraps the events just before it
//   (in the order they were recorded: the order they ended) that began at or after it, so a
//   parent's BEGIN precedes its children and timestamps rarely step back; END packets (and
//   instants) come in the order the events were recorded, which is how the reader rebuilds
//   that order. An END carries its timestamp, its type and, off the thread's track, the track.
//   A timestamp lower than the previous one on the sequence is written absolute on MONOTONIC.
//   An NVTX range (push/pop of any domain, start/end) still open when a pass ends
//   (ThreadTrack::openRanges, the first kMaxBegun) has its BEGIN written in that pass, among the
//   pass's events by its start, and its END alone in the pass its event comes in (on the track
//   its BEGIN went to, whichever thread ended it), carrying what only its end knew
//   (unclosed, end_lost) as annotations, which trace_processor adds to the slice's: a process
//   killed inside a step leaves the step and the epoch around it, and a file read while the
//   program runs shows them as not ended (our reader ends such a range at the file's last
//   timestamp, unclosed).
//   Non-default NVTX domains and start/end ranges go on child tracks of the thread. The
//   thread's running drop count is a counter track under it.
//   Annotations (kAnnotationNames) carry the Event's fields: seq only where it is not the
//   seq of the previous BEGIN or INSTANT on the sequence + 1 (seqs are numbered as calls and
//   ranges begin, which is the order of BEGINs; the first event of a thread always has it, and
//   so does one after a gap, e.g. a drop, or after a pop, which takes a seq of its own); a
//   launch with a known kernel:
//   `launch`, an interned string "KERNEL<<<[gx,gy,gz], [bx,by,bz], SHARED, STREAM>>>" (KERNEL
//   demangled; STREAM "0" or "0x" + hex; the reader splits at the last "<<<"); by hook kind
//   bytes, kind, ptr, device, handle (pointer values); stream where non-zero and not in
//   `launch`, an interned string "0x" + hex (a program has few streams); result when non-zero;
//   captured (true) on work made into a stream being captured; for NVTX domain, category (its number) and category_name
//   (when named), unclosed, end_lost, truncated, range_id (start/end ranges). An API call's
//   stack is callstack_iid.
//   Flows, while CUPTI records the device timeline (cupti.state "on"): an outermost CUDA call
//   that can make device work (a launch, graph launch, copy or set) carries flow_ids =
//   [launchFlowId(pid, tid, seq)], an id known at the call; the device slices whose CUDA call
//   CUPTI reported carry the same id in flow_ids, found from the call's thread and interval
//   among the calls the writer tagged (the newest kMaxFlowCalls per thread, the call overlapping
//   CUPTI's interval, as linkDeviceToHost picks). flow_ids rather than terminating_flow_ids on the
//   device side: a graph launch makes many device slices, which then show as a chain from it
//   (trace_processor joins consecutive slices with one id, in time order).
// - Interned per sequence (each entry in the first packet that uses it): event names (hook i:
//   iid i + 1; string s of the trace's pool: hookCount + 1 + s), categories (kCategories),
//   annotation names (kAnnotationNames), annotation string values (see below), frames and
//   function names (pool id + 1), callstacks (stack id; frames bottom first). Annotation
//   string values are numbered from 1 in the order the process first used them (pool strings
//   and launch strings alike), so the common ones take one byte.
// - Text in string fields (names, interned strings, descriptors) is valid UTF-8: a byte that
//   does not start a valid sequence is written as U+FFFD, as the Chrome trace shows it.
//
// Concurrency: one writer per process, used under the collector's drain mutex only.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "collector/clock.h"
#include "collector/own_file.h"
#include "collector/trace_data.h"
#include "exporters/perfetto_fields.h"
#include "exporters/proto_writer.h"
#include "exporters/trace_view.h"

namespace cutrace {

// Categories and debug-annotation names, in iid order (iid = index + 1). Reader and writer
// both use these lists.
inline constexpr const char* kCategories[] = {"cuda_runtime", "cuda_driver", "nvtx", "kernel", "memcpy", "memset"};
enum class Ann : uint8_t {
  Seq, Result, Kernel, Grid, Block, Shared, Stream, Bytes, Kind, Ptr, Device, Handle, Domain, Category,
  Unclosed, EndLost, Truncated, Correlation, Registers, SharedStatic, SharedDynamic, RangeId,
  CategoryName, HostTid, HostStart, HostEnd, Launch,
  // A PyTorch op range's fields (collector/torch_text.h), named as the Chrome trace's args.
  OpSeq, StashedSeq, OpId, Sizes, InputOpIds,
  // Device work: the op range around its CUDA call (its name; its sizes and op_id as above).
  Op,
  // A CUDA call's work made into a stream being captured (kEventCaptured).
  Captured, Count
};
inline constexpr const char* kAnnotationNames[] = {
    "seq",       "result",   "kernel",    "grid",        "block",     "shared",        "stream",         "bytes",
    "kind",      "ptr",      "device",    "handle",      "domain",    "category",      "unclosed",       "end_lost",
    "truncated", "correlation", "registers", "shared_static", "shared_dynamic", "range_id",
    "category_name", "host_tid", "host_start", "host_end", "launch",
    "op_seq",    "stashed_seq", "op_id", "sizes", "input_op_ids", "op", "captured"};
static_assert(sizeof(kAnnotationNames) / sizeof(kAnnotationNames[0]) == static_cast<std::size_t>(Ann::Count));
// CUPTI memcpy kinds by number, as a device copy's slice is named ("Memcpy HtoD").
inline constexpr const char* kCuptiCopyKinds[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                  "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};

// Track uuids: the pid in the high bits keeps the tracks of several processes apart when
// their files are merged. Below the pid: a thread's track, then its child tracks (uuid + 1 +
// slot: non-default NVTX domains; + kDropCounterSlot: its drop counter), all below
// kDeviceTrackBit; GPU streams have kDeviceTrackBit, NVTX start/end ranges kSpanTrackBit.
inline constexpr uint64_t kDeviceTrackBit = 0x400000;
inline constexpr uint64_t kSpanTrackBit = 0x800000;
inline constexpr uint64_t kDropCounterSlot = 63;
inline constexpr uint32_t kMaxDomainSlots = 62;
inline uint64_t processUuid(uint32_t pid) { return (uint64_t{pid} << 24) | 1; }
// A thread's 64 uuids: the first 16,384 threads of a process below bit 24 as they always were,
// later ones with the rest of their number from bit 46 up, past any pid (pid_max is at most
// 2^22): the uuids of two threads never meet (trace_processor keeps the first of two tracks
// described with one uuid and puts the second one's events on it).
inline uint64_t threadUuid(uint32_t pid, uint32_t ordinal) {
  return (uint64_t{ordinal >> 14} << 46) | (uint64_t{pid} << 24) | (0x100 + uint64_t{ordinal & 0x3fff} * 64);
}
inline uint64_t deviceUuid(uint32_t pid, uint32_t device, uint32_t stream) {
  return (uint64_t{pid} << 24) | kDeviceTrackBit | (uint64_t{device & 0x3f} << 16) | (stream & 0xffff);
}
inline uint64_t spanUuid(uint32_t pid, uint64_t n) { return (uint64_t{pid} << 24) | kSpanTrackBit | (n & 0x7fffff); }
// A device's memory counter: below kDeviceTrackBit and above every thread's tracks (which end
// at 0x100100); one per int8 device number, -1 (unknown) included.
inline constexpr uint64_t kMemoryCounterBase = 0x200000;
inline uint64_t memoryCounterUuid(uint32_t pid, int8_t device) {
  return (uint64_t{pid} << 24) | kMemoryCounterBase | static_cast<uint8_t>(device);
}

// The flow id of a CUDA call: the process and thread in a hash (ids are global in a merged
// file), plus the call's seq. Never 0.
inline uint64_t launchFlowId(uint32_t pid, uint32_t tid, uint64_t seq) {
  uint64_t x = (uint64_t{pid} << 32) | tid;  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return (x + seq) | (x + seq == 0);
}

class PerfettoWriter {
 public:
  // Packets for what `data` gained since the last call, left in pending(). A pass may come in
  // pieces: the memory counters (time-ordered across the threads of a pass) and the device work
  // are written with its last one (`passEnd`).
  void encodePass(const TraceData& data, uint64_t nowNs, bool passEnd = true);
  // At the end: the remaining events (encodePass), the device work and the final metadata
  // (`metadataJson`: the Chrome trace's metadata object).
  void encodeEnd(const TraceData& data, uint64_t nowNs, std::string_view metadataJson);
  // The packets written since clearPending(), whole: the stream's file takes them from here, with
  // no copy between (the drain's stream buffer is this one, reserved once: reserve()).
  std::string_view pending() const { return w_.buffer(); }
  void clearPending() { w_.clear(); }
  void reserve(std::size_t bytes) { w_.reserve(bytes); }
  // The same, appended to `out`.
  void encodePass(const TraceData& data, uint64_t nowNs, std::string& out, bool passEnd = true) {
    encodePass(data, nowNs, passEnd);
    out += pending();
    clearPending();
  }
  void encodeEnd(const TraceData& data, uint64_t nowNs, std::string_view metadataJson, std::string& out) {
    encodeEnd(data, nowNs, metadataJson);
    out += pending();
    clearPending();
  }
  // At the end, before the metadata that counts linkedDevice(): the device work held for its
  // call (encodeDevice) and any `data` gained, written now, left in pending().
  void endDevice(const TraceData& data) { encodeDevice(data, UINT64_MAX, true); }
  // Device slices written so far that were joined to their CUDA call by a flow.
  uint64_t linkedDevice() const { return linkedDevice_; }
  // Device work left out so far: its CUDA call was made outside the capture (never written).
  uint64_t outsideCapture() const { return outsideCapture_; }
  // PyTorch op ranges written so far as their parts (they take more to read back).
  uint64_t opRanges() const { return opRanges_; }
  // The device work and CUPTI's API records encoded so far left `data` (Store::releaseEvents):
  // the next pass starts at their first again. (A thread's events are counted with its
  // ThreadTrack::released, so no thread is visited here.)
  void eventsReleased() {
    devicesEncoded_ = 0;
    apiSeen_ = 0;
  }

 private:
  struct Sequence {
    uint32_t id = 0;
    uint64_t uuid = 0;
    uint64_t lastNs = 0;  // the incremental clock's value
    bool started = false;
    std::vector<bool> names, categories, strings, frames, stacks;
    uint64_t annotations = 0;  // bit iid: that annotation name was interned (every event asks, several times)
    std::vector<uint32_t> domainSlots;  // domain pool id per child-track slot
    uint64_t spans = 0;
    uint64_t lastSeq = 0;  // of the last BEGIN or INSTANT
    bool seqWritten = false;
    // The last BEGINs of events that repeat (a loop of launches, a range pushed every step): its
    // TrackEvent body but for seq and flow, valid on this sequence as long as its interned
    // entries are (the sequence's lifetime). An event with the same key, result, flags, stack
    // and payload bytes (a range: the same name) is written as that body. API calls take the
    // first kTemplates slots (by hook; a new hook replaces the oldest), default-domain NVTX
    // ranges the last kRangeTemplates (by name), so ranges of ever new names (PyTorch's op
    // ranges) never push out the calls'. Allocated at the first such event (a program of 30,000
    // short threads keeps 30,000 sequences).
    struct EventTemplate {
      static constexpr uint16_t kRange = UINT16_MAX - 1;  // `hook` of a range's template
      uint16_t hook = UINT16_MAX;  // UINT16_MAX: empty
      int32_t result = 0;
      uint32_t name = 0;  // a range's
      uint8_t flags = 0;
      bool withStack = false;
      uint8_t size = 0;
      unsigned char raw[sizeof(Event::raw)] = {};
      char body[128];
      // The same result, flags and payload bytes (the stack id among them).
      bool matches(const Event& e) const;
    };
    std::unique_ptr<EventTemplate[]> templates;
    static constexpr std::size_t kTemplates = 4, kRangeTemplates = 2;
    std::size_t nextTemplate = 0, nextRangeTemplate = 0;
  };
  struct ThreadMark {
    uint32_t ordinal = ThreadTrack::kIndexOrdinal;  // the thread it is for (TraceData::ordinal)
    uint64_t events = 0;  // the thread's events encoded, released ones included (ThreadTrack::released)
    std::string name;
    uint64_t dropped = 0;
    Sequence seq;
    // The ranges of ThreadTrack::openRanges whose BEGIN was written while they were open (their
    // END comes with their event), by seq, with the track their BEGIN went to (0: the thread's).
    struct Begun {
      uint64_t seq;
      uint64_t track;
    };
    std::vector<Begun> begun;
  };

  void startProcess(const TraceData& data);
  void startThread(const TraceData& data, std::size_t index, uint64_t ns);
  void describeThread(const TraceData& data, std::size_t index);
  // A thread's events of this pass, nested (see above): node i is the pass's first event not yet encoded + i. Events
  // come in the order they ended, children before their parent, so the nodes are the forest in
  // post-order: a node's subtree is the contiguous run [first, itself], and its children are
  // found walking back from the node before it (child c, then the one ending at c.first - 1).
  struct Node {
    const Event* event = nullptr;  // in the pass's list, which does not change while it is written
    uint64_t start = 0;  // the event's, kept here: the wrapping loop reads it for every event
    uint64_t track = 0;  // where its BEGIN went (0: the thread's), for its END
    uint32_t first = 0;  // its subtree's first node (itself when it wraps nothing)
    uint32_t height = 1; // nesting depth of the subtree, bounded by kMaxNesting
  };
  // Well under the reader's kMaxOpenSlices: deeper wraps are written flat (absolute times).
  static constexpr uint32_t kMaxNesting = 1024;
  // Open ranges written ahead of their end, at most (deeper ones are written when they end):
  // with a pass's nesting, still under the reader's kMaxOpenSlices.
  static constexpr std::size_t kMaxBegun = 1024;
  // In Node::track: the BEGIN was written by an earlier pass (ThreadMark::begun), on the track in
  // the other bits (no uuid has this bit: see threadUuid).
  static constexpr uint64_t kBegunBit = uint64_t{1} << 63;
  void encodeThreadEvents(const TraceData& data, std::size_t thread);
  // The BEGIN (or INSTANT) of `e`, an event of thread `thread`, and the packets describing its track
  // first when it is new; returns the track (0: the thread's).
  uint64_t beginEvent(const TraceData& data, std::size_t thread, const Event& e);
  void endEvent(Sequence& seq, uint64_t ns, uint64_t track);
  // The END of a range written ahead (kBegunBit) on `track`, with the flags its end set.
  void endBegun(Sequence& seq, const Event& e, uint64_t track);
  // The END of `e`, whose BEGIN went to `track` (beginEvent's, or kBegunBit and endBegun's); none
  // for an instant.
  [[gnu::always_inline]] void endOf(Sequence& seq, const Event& e, uint64_t track) {
    if (e.kind == EventKind::NvtxMark) return;
    if (track == 0 && e.end >= seq.lastNs) w_.close(putThreadEnd(w_.open(kEndBytes), seq, e.end));  // endEvent's common case
    else if (track & kBegunBit) endBegun(seq, e, track & ~kBegunBit);
    else endEvent(seq, e.end, track);
  }
  // An event that nested nothing, BEGIN and END, from its template where it repeats one
  // (fromTemplate), else from beginEvent.
  void writeLeaf(const TraceData& data, std::size_t thread, Sequence& seq, const Event& e);
  // The BEGIN of an event that nests others, the same way; returns where it went (0: the thread's track).
  uint64_t writeBegin(const TraceData& data, std::size_t thread, Sequence& seq, const Event& e);
  // Node `n`, if it is a range of ThreadMark::begun, leaves the list and is marked kBegunBit.
  void takeBegun(ThreadMark& mark, Node& n);
  // A call that repeats a template of its thread (a loop's calls): its BEGIN, and its END when
  // it nested nothing (`leaf`), at one cursor, every length known before it is written. False
  // (nothing written) where beginEvent() (and endEvent()) must write it.
  bool fromTemplate(const TraceData& data, std::size_t thread, Sequence& seq, const Event& e, bool leaf);
  // The template key of `e` (EventTemplate::hook), or UINT16_MAX where its kind has none: an API
  // call of a known hook, or a default-domain NVTX range with a name kept for the run.
  static uint16_t templateKey(const TraceData& data, const Event& e);
  // The template kept for `e`'s key (an API call's hook, a range's name), or null; `e` has a key
  // and seq.templates exists.
  static Sequence::EventTemplate* findTemplate(Sequence& seq, const Event& e);
  // The template slot of `e` with that key: the one kept for it (`matched`: `e` repeats it), else
  // the one to refill.
  static Sequence::EventTemplate* templateSlot(Sequence& seq, const Event& e, uint16_t key, bool& matched);
  static constexpr std::size_t kEndBytes = 2 + 11 + 6 + 4;
  static char* putThreadEnd(char* c, Sequence& seq, uint64_t ns);
  // A call's flow id (see Flows above), where it has one, after the rest of its BEGIN. Called
  // only with flows on (flows_): the caller checks, so a run without CUPTI makes no call.
  void flowOut(const TraceData& data, std::size_t thread, const Event& e, uint64_t start);
  // Whether `e` has a flow id (with flows on): an outermost call that can make device work.
  static bool startsFlow(const TraceData& data, const Event& e) {
    return e.kind == EventKind::Api && !(e.flags & kEventInsideCall) && e.hook < data.hooks.size() &&
           makesDeviceWork(data.hooks[e.hook].kind);
  }
  // The flow id of `e`, which startsFlow(), its call kept (flowCalls_) for the device work to come.
  uint64_t flowCall(const TraceData& data, std::size_t thread, const Event& e, uint64_t start);
  // The device work `data` gained since the last call, on the process sequence, but what waits
  // for its call (heldDevice_) unless `last`; `anchorNs`: every call that ended before it is
  // written.
  void encodeDevice(const TraceData& data, uint64_t anchorNs, bool last);
  // The memory counters of the changes gathered this pass, in time order.
  void encodeMemoryCounters(const TraceData& data);

  // Packet assembly. A packet is begun with its timestamp on `seq`, interned entries go into
  // `interned_` first (needX), then the track event.
  proto::Writer::Nested beginPacket(Sequence& seq, uint64_t ns);
  // The same at a cursor (proto::Writer::open): packet tag, length byte, timestamp (two fields at
  // most), sequence id.
  char* packetAt(char* cursor, Sequence& seq, uint64_t ns, proto::Writer::Nested& packet);
  static constexpr std::size_t kPacketHeaderBytes = 2 + 1 + 2 * 11 + 2 * 6;
  void flushInterned();
  bool need(std::vector<bool>& sent, std::size_t iid) {
    if (iid < sent.size() && sent[iid]) return false;  // sent already: every event asks
    return needFirst(sent, iid);
  }
  bool needFirst(std::vector<bool>& sent, std::size_t iid);
  void needName(Sequence& seq, uint64_t iid, std::string_view text);
  void needCategory(Sequence& seq, uint32_t iid);
  void needAnnotation(Sequence& seq, Ann a) {
    static_assert(static_cast<uint32_t>(Ann::Count) < 64);
    const uint32_t iid = static_cast<uint32_t>(a) + 1;
    if (seq.annotations >> iid & 1) return;
    seq.annotations |= uint64_t{1} << iid;
    internAnnotation(iid);
  }
  void internAnnotation(uint32_t iid);
  // The iid of a string value, interned on `seq` (first use: into interned_); a name (of a
  // domain, a kernel) shows demangled, any other text as it is. `poolId` is not transient.
  uint64_t needString(const TraceData& data, Sequence& seq, uint32_t poolId, bool demangle = true);
  uint64_t needLaunch(const TraceData& data, Sequence& seq, const LaunchPayload& l);
  uint64_t needStream(Sequence& seq, uint64_t stream);
  void needText(Sequence& seq, uint64_t iid, std::string_view text);
  void needStack(const TraceData& data, Sequence& seq, uint32_t stack);
  // One debug annotation: its interned name and one varint value field (uint, int, pointer,
  // bool, or the iid of an interned string value).
  void annotation(Ann a, uint32_t valueField, uint64_t v);
  void annotationUint(Ann a, uint64_t v) { annotation(a, pf::DebugAnnotation::kUintValue, v); }
  void annotationInt(Ann a, int64_t v) { annotation(a, pf::DebugAnnotation::kIntValue, static_cast<uint64_t>(v)); }
  void annotationPointer(Ann a, uint64_t v) { annotation(a, pf::DebugAnnotation::kPointerValue, v); }
  void annotationInterned(Ann a, uint64_t iid) { annotation(a, pf::DebugAnnotation::kStringValueIid, iid); }
  void annotationBool(Ann a) { annotation(a, pf::DebugAnnotation::kBoolValue, 1); }
  void annotationString(Ann a, std::string_view v);

  bool processStarted_ = false;
  std::size_t exitedSeen_ = 0;  // TraceData::exitedThreads whose sequences were ended
  Sequence process_;
  std::vector<ThreadMark> threads_;
  proto::Writer w_;         // the packets of this call
  proto::Writer interned_;  // InternedData body of the packet being built
  std::vector<uint64_t> frameIids_;
  // Device work: what of data.device / data.apiActivity was seen, the CUPTI API records by
  // correlation id (the newest kMaxApiRecords), the GPU stream tracks described.
  static constexpr std::size_t kMaxApiRecords = std::size_t{1} << 20;
  std::size_t devicesEncoded_ = 0, apiSeen_ = 0;
  std::unordered_map<uint32_t, ApiActivity> api_;
  std::deque<uint32_t> apiOrder_;
  std::unordered_set<uint64_t> deviceTracks_;
  // Device work held for its call, a pass at most: no flow to it yet, and CUPTI's record of the
  // call missing or ending this close to the pass's anchor (a call's own record ends after
  // CUPTI's, by microseconds unless its thread was preempted there).
  static constexpr uint64_t kDeviceHoldNs = 5000000;
  std::vector<DeviceEvent> heldDevice_;
  // Flows: the calls tagged with a flow id, by OS tid, in the order they ended (monotonic ns),
  // the newest kMaxFlowCalls per thread: device work arrives a few passes after its call. A
  // thread whose last call is kFlowCallAgeNs old is forgotten (checked once a second), so a
  // program of many short-lived threads does not keep one list per thread it ever had.
  // With the PyTorch op range open around the call (ThreadTrack::launchOps), which the device
  // work it made carries: its name and sizes as entries of opTexts_ (null: none).
  using OpText = std::pair<const std::string, uint64_t>;  // text, its string iid
  struct FlowCall {
    uint64_t start = 0, end = 0, seq = 0;
    const OpText* op = nullptr;
    const OpText* sizes = nullptr;
    uint64_t opId = 0;
    bool hasOpId = false;
  };
  static constexpr std::size_t kMaxFlowCalls = std::size_t{1} << 16;
  static constexpr uint64_t kFlowCallAgeNs = uint64_t{60} * 1000000000;
  uint64_t flowPrunedNs_ = 0;
  bool flows_ = false;  // this pass: CUPTI records the device timeline
  uint64_t linkedDevice_ = 0;
  uint64_t outsideCapture_ = 0;
  uint64_t opRanges_ = 0;
  // One thread's calls, oldest first: a ring whose room doubles up to kMaxFlowCalls, then the
  // newest call takes the oldest one's place (with a deque's push and pop, a launch took 30 more
  // drain instructions: bench_drain --case launch-cupti).
  class FlowCalls {
   public:
    void push(const FlowCall& c) {
      if (count_ == ring_.size() && count_ < kMaxFlowCalls) grow();
      ring_[(head_ + count_) & (ring_.size() - 1)] = c;
      if (count_ < ring_.size()) ++count_;
      else head_ = (head_ + 1) & (ring_.size() - 1);
    }
    bool empty() const { return count_ == 0; }
    const FlowCall& back() const { return at(count_ - 1); }
    // The last call to start at or before `ns`, or null.
    const FlowCall* lastStartingBy(uint64_t ns) const;

   private:
    const FlowCall& at(std::size_t i) const { return ring_[(head_ + i) & (ring_.size() - 1)]; }
    void grow();
    std::vector<FlowCall> ring_;
    std::size_t head_ = 0, count_ = 0;
  };
  std::unordered_map<uint32_t, FlowCalls> flowCalls_;
  // The list of the thread that tagged a call last (a loop's launches come from one thread),
  // forgotten when lists are pruned.
  FlowCalls* lastFlowCalls_ = nullptr;
  uint32_t lastFlowTid_ = 0;
  // Op names and sizes texts of FlowCall::op and ::sizes, each with a string iid (on the process
  // sequence, interned when device work first carries it): copies, as the calls outlive the
  // pass's strings. A run has few of them (its ops and their shapes); past kMaxOpTexts, calls
  // with new ones carry none.
  static constexpr std::size_t kMaxOpTexts = std::size_t{1} << 16;
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint64_t, TextHash, std::equal_to<>> opTexts_;
  const OpText* opText(std::string_view text);
  std::vector<Node> nodes_;       // this pass's, one thread at a time
  std::vector<uint32_t> roots_;   // nodes not wrapped (yet), in recorded order
  std::vector<std::pair<uint32_t, bool>> walk_;  // node, its BEGIN written
  std::vector<uint64_t> staleEnds_;  // this thread's: tracks owed an END (ranges written ahead that ended unseen)
  std::vector<uint32_t> toBegin_;    // this thread's: ThreadTrack::openRanges to write ahead in this pass
  // Annotation string value iids, process-wide, from 1 in order of first use.
  std::vector<uint64_t> stringIids_;  // by pool id (not transient); 0: none yet
  std::unordered_map<uint64_t, uint64_t> streamIids_;  // by stream, as "0x..."
  std::map<std::tuple<uint32_t, uint32_t, uint16_t, uint16_t, uint32_t, uint32_t, uint64_t>, uint64_t> launchIids_;
  uint64_t nextStringIid_ = 1;
  Demangler demangle_;
  MemoryCounters memory_;                    // across passes
  std::vector<MemoryChange> memoryChanges_;  // this pass's, gathered as each thread is encoded
  std::vector<uint8_t> memoryHooks_;         // by hook: changesMemory()
  // A call that changes device memory: its change, for this pass's counters.
  void noteMemoryChange(const TraceData& data, const Event& e) {
    if (e.kind != EventKind::Api || e.hook >= memoryHooks_.size() || !memoryHooks_[e.hook]) return;
    MemoryChange c;
    if (memoryChangeOf(data, e, c)) memoryChanges_.push_back(c);
  }
};

// The stream's file: created once (O_EXCL, no symlink followed) under the first free numbered
// stem, then appended to pass by pass through collector/own_file.h: opened by path for each
// append and checked to be the file cutrace created, never past RLIMIT_FSIZE; any failure stops
// it for good with one warning.
class StreamFile {
 public:
  // Creates <dir>/<stem>.pftrace (or the first free <stem>.N.pftrace). False with a message.
  bool create(const std::string& dir, const std::string& stem, std::string& error);
  bool append(std::string_view bytes);
  // The stream's last bytes are in: the disk reserved past its end goes back (OwnFile).
  void finish() { file_.releaseReserve(); }
  bool isOpen() const { return file_.created() && !file_.stopped(); }
  const std::string& path() const { return file_.path(); }
  const std::string& stem() const { return stem_; }  // the numbered stem taken
  // In a forked child: forget the parent's file without touching it.
  void forget();

 private:
  OwnFile file_;
  std::string stem_;
};

}  // namespace cutrace
