#include "exporters/trace_view.h"

#include <cxxabi.h>
#include <stdlib.h>

#include <algorithm>

namespace cutrace {

std::vector<uint32_t> timelineOrder(const ThreadTrack& thread) {
  std::vector<uint32_t> order(thread.events.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Event& x = thread.events[a];
    const Event& y = thread.events[b];
    if (x.start != y.start) return x.start < y.start;
    if (x.end != y.end) return x.end > y.end;
    return x.seq < y.seq;
  });
  return order;
}

std::string demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    free(out);
    return name;
  }
  std::string result(out);
  free(out);
  return result;
}

const std::string& Demangler::operator()(const TraceData& data, uint32_t stringId) {
  auto it = cache_.find(stringId);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(stringId, demangle(data.strings.get(stringId))).first->second;
}

}  // namespace cutrace
