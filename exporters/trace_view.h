#pragma once
// Read-side helpers every exporter needs: events of a thread in timeline order, and kernel
// names demangled once.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

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

std::string demangle(const std::string& name);

}  // namespace cutrace
