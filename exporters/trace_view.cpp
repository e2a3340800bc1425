#include "exporters/trace_view.h"


#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace cutrace {

std::vector<uint32_t> timelineOrder(const ThreadTrack& thread) {
  std::vector<uint32_t> order(thread.events.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto before = [&](uint32_t a, uint32_t b) { return timelineBefore(thread.events[a], thread.events[b]); };
  // Events are stored as they ended, so nearly in this order: what nested in an event comes
  // just before it (a call and the driver call it made swap places). An insertion sort takes
  // that in linear time; a bound on its moves hands whatever is further off (a range wrapping
  // many calls) to the general sort.
  std::size_t moves = 4 * order.size() + 64;
  bool sorted = true;
  for (std::size_t i = 1; i < order.size() && sorted; ++i) {
    const uint32_t x = order[i];
    std::size_t j = i;
    for (; j > 0 && before(x, order[j - 1]); --j) {
      order[j] = order[j - 1];
      if (--moves == 0) {  // order[j - 1] stays where it is: x takes its copy's place
        sorted = false;
        break;
      }
    }
    order[j] = x;
  }
  if (!sorted) std::sort(order.begin(), order.end(), before);
  return order;
}

std::vector<HostLink> linkDeviceToHost(const TraceData& data) {
  std::vector<HostLink> links(data.device.size());
  if (data.device.empty() || data.apiActivity.empty()) return links;
  std::unordered_map<uint32_t, const ApiActivity*> byCorrelation;
  for (const ApiActivity& a : data.apiActivity) byCorrelation.emplace(a.correlation, &a);

  // Outermost API events per thread, in monotonic ns, sorted by start.
  struct Outer {
    uint64_t start, end;
    uint32_t event;
  };
  std::vector<std::vector<Outer>> outer(data.threads.size());
  std::unordered_map<uint32_t, std::vector<int>> threadsByTid;
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    const ThreadTrack& thread = data.threads[t];
    // CUPTI reports the OS tid once cutrace sets the thread id type, but a program's own
    // profiler may set it back to pthread_self(): accept both.
    threadsByTid[thread.tid].push_back(static_cast<int>(t));
    if (thread.pthreadLow != 0 && thread.pthreadLow != thread.tid) threadsByTid[thread.pthreadLow].push_back(static_cast<int>(t));
    uint64_t coveredUntil = 0;
    for (uint32_t i : timelineOrder(thread)) {
      const Event& e = thread.events[i];
      if (e.kind != EventKind::Api) continue;
      const uint64_t start = e.start;
      const uint64_t end = e.end;
      if (!outer[t].empty() && start < coveredUntil) continue;  // nested in the previous one
      outer[t].push_back(Outer{start, end, i});
      coveredUntil = end;
    }
  }
  for (std::size_t d = 0; d < data.device.size(); ++d) {
    auto api = byCorrelation.find(data.device[d].correlation);
    if (api == byCorrelation.end()) continue;
    const ApiActivity& a = *api->second;
    auto tids = threadsByTid.find(a.tid);
    if (tids == threadsByTid.end()) continue;
    uint64_t bestOverlap = 0;
    for (int t : tids->second) {
      const auto& list = outer[static_cast<std::size_t>(t)];
      // The last event starting at or before the record's end is the only candidate: host
      // calls on one thread do not overlap each other.
      auto it = std::upper_bound(list.begin(), list.end(), a.end, [](uint64_t v, const Outer& o) { return v < o.start; });
      if (it == list.begin()) continue;
      --it;
      if (it->end < a.start) continue;
      const uint64_t overlap = std::min(it->end, a.end) - std::max(it->start, a.start) + 1;
      if (overlap > bestOverlap) {
        bestOverlap = overlap;
        links[d] = HostLink{t, it->event};
      }
    }
  }
  return links;
}

std::string threadDisplayName(const ThreadTrack& thread) {
  return thread.name.empty() ? "thread " + std::to_string(thread.tid) : thread.name;
}

std::string nvtxDomainTrackName(const ThreadTrack& thread, std::string_view domain) {
  return threadDisplayName(thread) + " nvtx domain " + std::string(domain);
}

NvtxDomainTracks::NvtxDomainTracks(const TraceData& data) : data_(data) {
  std::set<std::pair<std::size_t, uint32_t>> used;  // (thread, domain)
  std::map<std::string_view, uint32_t> byName;       // name -> domain id, ordered bytewise
  for (std::size_t t = 0; t < data.threads.size(); ++t) {
    for (const Event& e : data.threads[t].events) {
      if (!onNvtxDomainTrack(e) || !used.emplace(t, e.domain).second) continue;
      byName.emplace(data.strings.get(e.domain), e.domain);
    }
  }
  // Two ids cannot share a name (the pool interns), so names rank the domains.
  uint32_t ordinal = 0;
  for (const auto& [name, domain] : byName) {
    if (ordinal < kMaxNvtxDomainTracks) ++ordinal;
    ordinals_.emplace(domain, ordinal);
  }
  for (const auto& [thread, domain] : used) {
    const uint32_t o = ordinals_.at(domain);
    tracks_.push_back(Track{thread, domain, o, (uint64_t{1} << 31) + (uint64_t{o} << 22) + data.threads[thread].tid});
  }
  std::sort(tracks_.begin(), tracks_.end(), [](const Track& a, const Track& b) {
    return std::tie(a.thread, a.ordinal, a.domain) < std::tie(b.thread, b.ordinal, b.domain);
  });
}

uint64_t NvtxDomainTracks::tidOf(std::size_t thread, const Event& e) const {
  const uint32_t tid = data_.threads[thread].tid;
  if (!onNvtxDomainTrack(e)) return tid;
  auto it = ordinals_.find(e.domain);
  const uint64_t ordinal = it == ordinals_.end() ? kMaxNvtxDomainTracks : it->second;
  return (uint64_t{1} << 31) + (ordinal << 22) + tid;
}

TrackOrder::TrackOrder(const TraceData& data) : rank_(data.threads.size()) {
  std::vector<uint32_t> order(data.threads.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const ThreadTrack& x = data.threads[a];
    const ThreadTrack& y = data.threads[b];
    const bool xMain = x.tid == data.meta.pid, yMain = y.tid == data.meta.pid;
    if (xMain != yMain) return xMain;
    return x.tid < y.tid;
  });
  for (uint32_t r = 0; r < order.size(); ++r) rank_[order[r]] = r;
}

const std::string& Demangler::operator()(const TraceData& data, uint32_t stringId) {
  auto it = cache_.find(stringId);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(stringId, demangle(std::string(data.strings.get(stringId)))).first->second;
}

std::string memoryCounterName(int device) {
  return device >= 0 ? "GPU " + std::to_string(device) + " memory" : std::string("GPU memory");
}

bool MemoryCounters::apply(const MemoryChange& c, int8_t& device, uint64_t& total) {
  if (c.alloc) {
    // A pointer allocated again while live (a free we never saw) counts anew, as the Chrome
    // trace counts it.
    device = c.device;
    live_[c.ptr] = {device, c.bytes};
    total = totals_[device] += c.bytes;
    return true;
  }
  auto it = live_.find(c.ptr);
  if (it == live_.end()) return false;  // allocated before tracing began, or not by us
  device = it->second.first;
  total = totals_[device] -= it->second.second;
  live_.erase(it);
  return true;
}

}  // namespace cutrace
