#pragma once
// Read-side helpers every exporter needs: events of a thread in timeline order, and kernel
// names demangled once.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/symbolizer.h"
#include "collector/trace_data.h"

namespace cutrace {

// Indices of `thread.events` ordered by start, longer first on ties (parents before
// children), then by seq.
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

}  // namespace cutrace
