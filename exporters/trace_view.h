#pragma once
// Read-side helpers every exporter needs: events of a thread in timeline order, and kernel
// names demangled once.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collector/symbolizer.h"
#include "collector/trace_data.h"

namespace cutrace {

// Timeline order: by start, longer first on ties (parents before children), then by seq.
inline bool timelineBefore(const Event& x, const Event& y) {
  if (x.start != y.start) return x.start < y.start;
  if (x.end != y.end) return x.end > y.end;
  return x.seq < y.seq;
}
// Indices of `thread.events` in timeline order.
std::vector<uint32_t> timelineOrder(const ThreadTrack& thread);

// Demangles C++ names (kernel names arrive mangled from the runtime and the driver).
class Demangler {
 public:
  const std::string& operator()(const TraceData& data, uint32_t stringId);

 private:
  std::unordered_map<uint32_t, std::string> cache_;
};


// For each TraceData::device event, the host API event that launched it: the outermost CUDA
// call on the thread of the CUPTI API record with the same correlation id, overlapping it in
// time. thread < 0 when there is no such event.
struct HostLink {
  int thread = -1;
  uint32_t event = 0;
};
std::vector<HostLink> linkDeviceToHost(const TraceData& data);

// A synthetic thread id for the track of one GPU stream (real tids stay below 2^22).
inline uint64_t deviceTrackId(uint32_t device, uint32_t stream) {
  return (uint64_t{1} << 30) + (uint64_t{device} << 22) + stream;
}

// A thread's name as viewers show it: "thread <tid>" when it was never named.
std::string threadDisplayName(const ThreadTrack& thread);

// NVTX ranges nest within their domain only: on one thread a library's range (its own domain)
// may open before the user's range (the default domain) and close inside it, which no single
// track can show (viewers drop, move or stretch slices that overlap without nesting). So the
// ranges and marks of each named domain go on a track of their own per thread, "<thread> nvtx
// domain <name>", next to the thread's track; the default domain's ranges and marks stay on the
// thread's track with its CUDA calls, and only they are frames of the folded stacks. Start/end
// spans are async (they may end on another thread) and belong to no thread track.
inline bool onNvtxDomainTrack(const Event& e) {
  return e.domain != 0 && (e.kind == EventKind::NvtxRange || e.kind == EventKind::NvtxMark);
}
std::string nvtxDomainTrackName(const ThreadTrack& thread, std::string_view domain);

// The named-domain tracks of a process. A domain's ordinal is the rank of its name among the
// named domains the process used (1, 2, ...; the ones past kMaxNvtxDomainTracks share the last),
// so the same program gets the same track ids run after run. In the Chrome trace a track's tid
// is 2^31 + ordinal * 2^22 + the thread's tid (real tids stay below 2^22, GPU streams use
// [2^30, 2^31)), and a track's sort index follows its thread's (threadSortIndex).
class NvtxDomainTracks {
 public:
  static constexpr uint32_t kMaxNvtxDomainTracks = 511;
  struct Track {
    std::size_t thread;  // index into TraceData::threads
    uint32_t domain;     // string id of the domain's name
    uint32_t ordinal;
    uint64_t tid;
  };

  explicit NvtxDomainTracks(const TraceData& data);
  // The tid of the track an event is drawn on: its thread's, or its domain's track.
  uint64_t tidOf(std::size_t thread, const Event& e) const;
  // Ordered by thread, then ordinal.
  const std::vector<Track>& tracks() const { return tracks_; }

 private:
  const TraceData& data_;
  std::unordered_map<uint32_t, uint32_t> ordinals_;  // domain string id -> ordinal
  std::vector<Track> tracks_;
};

// Sort indices that keep the host threads in the order viewers use by default (the main
// thread, then by tid) with each thread's NVTX domain tracks right below it, and the GPU
// streams below all of them.
class TrackOrder {
 public:
  explicit TrackOrder(const TraceData& data);
  int64_t thread(std::size_t threadIndex) const { return int64_t{rank_[threadIndex]} * 512; }
  int64_t domainTrack(const NvtxDomainTracks::Track& t) const { return thread(t.thread) + t.ordinal; }
  static int64_t gpuStream(uint32_t device, uint32_t stream) {
    return (int64_t{1} << 30) + int64_t{device % 1024} * (1 << 20) + (stream & ((1 << 20) - 1));
  }

 private:
  std::vector<uint32_t> rank_;
};

// Device memory as both the Chrome trace and the stream count it ("GPU N memory" counters): driver-layer
// allocations and frees that succeeded and name a pointer; an allocation counts at its call's
// end, a free at its start, and a free of a pointer not seen allocated changes nothing. Changes
// are applied in time order.
struct MemoryChange {
  uint64_t ns = 0;  // CLOCK_MONOTONIC
  uint64_t ptr = 0;
  uint64_t bytes = 0;
  int8_t device = -1;
  bool alloc = false;
};
// Whether a call of `h` can change the counters: a driver allocation or free (a runtime
// allocation makes one, so counting only the driver's counts each once).
inline bool changesMemory(const HookDescriptor& h) {
  return h.layer == ApiLayer::Driver && (h.kind == ApiKind::Alloc || h.kind == ApiKind::Free);
}
// The change `e` makes, if any. Inline: the stream writer asks it of every event.
inline bool memoryChangeOf(const TraceData& data, const Event& e, MemoryChange& out) {
  if (e.kind != EventKind::Api || e.hook >= data.hooks.size() || e.result != 0) return false;
  const HookDescriptor& h = data.hooks[e.hook];
  if (!changesMemory(h) || e.mem.ptr == 0) return false;
  out.alloc = h.kind == ApiKind::Alloc;
  out.ns = out.alloc ? e.end : e.start;
  out.ptr = e.mem.ptr;
  out.bytes = e.mem.bytes;
  out.device = e.mem.device;
  return true;
}

// The counter's name: "GPU <device> memory", or "GPU memory" when the device is unknown.
std::string memoryCounterName(int device);
// The running totals. Memory: the allocations still live, and one total per device seen.
class MemoryCounters {
 public:
  // False when `c` changes nothing; otherwise the device whose total changed and that total.
  bool apply(const MemoryChange& c, int8_t& device, uint64_t& total);
  bool seen(int8_t device) const { return totals_.count(device) != 0; }

 private:
  std::unordered_map<uint64_t, std::pair<int8_t, uint64_t>> live_;  // ptr -> device, bytes
  std::map<int8_t, uint64_t> totals_;
};

}  // namespace cutrace
