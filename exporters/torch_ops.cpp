#include "exporters/torch_ops.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace cutrace {

bool torchOpOf(const TraceData& data, const Event& e, TorchOp& op) {
  if (e.kind != EventKind::NvtxRange || !(e.torch.fields & kTorchParts))
    return parseTorchRange(data.strings.get(e.name), op);
  op = TorchOp{};
  op.name = data.strings.get(e.name);
  op.hasSeq = (e.torch.fields & kTorchSeq) != 0;
  op.stashed = (e.torch.fields & kTorchStashed) != 0;
  op.seq = e.torch.seq;
  op.hasOpId = (e.torch.fields & kTorchOpId) != 0;
  op.opId = e.torch.opId;
  if (e.torch.sizes != 0) op.sizes = data.strings.get(e.torch.sizes);
  if (e.torch.inputOpIds != 0) op.inputOpIds = data.strings.get(e.torch.inputOpIds);
  op.backward = op.stashed || isBackwardFunction(op.name);
  return true;
}

namespace {

struct OpRange {
  EventRef ref;
  uint64_t start;
  uint64_t end;
};

// One range of several, if they are one chain of nested ranges on one thread: the innermost
// (`innermost`) or the outermost; else none.
bool single(const std::vector<OpRange>& ranges, bool innermost, EventRef& out) {
  if (ranges.empty()) return false;
  std::vector<OpRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(), [](const OpRange& a, const OpRange& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    const OpRange& outer = sorted[i - 1];
    const OpRange& inner = sorted[i];
    if (inner.ref.thread != outer.ref.thread || inner.start < outer.start || inner.end > outer.end) return false;
  }
  out = innermost ? sorted.back().ref : sorted.front().ref;
  return true;
}

}  // namespace

TorchLinks linkTorchOps(const TraceData& data, const std::vector<HostLink>& launches) {
  TorchLinks links;
  links.opOfDevice.assign(data.device.size(), EventRef{});
  std::map<uint64_t, std::vector<OpRange>> forward, backward;  // by seq
  // Launch events that device work came from, and the innermost op range open around each.
  std::unordered_map<uint64_t, std::vector<std::size_t>> devicesOf;
  for (std::size_t d = 0; d < launches.size(); ++d)
    if (launches[d].thread >= 0)
      devicesOf[static_cast<uint64_t>(launches[d].thread) << 32 | launches[d].event].push_back(d);

  for (std::size_t ti = 0; ti < data.threads.size(); ++ti) {
    const ThreadTrack& t = data.threads[ti];
    std::vector<OpRange> open;  // op ranges enclosing the current event, outermost first
    for (uint32_t index : timelineOrder(t)) {
      const Event& e = t.events[index];
      while (!open.empty() && open.back().end <= e.start) open.pop_back();
      if (e.kind == EventKind::NvtxRange) {
        TorchOp op;
        if (!torchOpOf(data, e, op)) continue;
        const OpRange range{EventRef{static_cast<int>(ti), index}, e.start, e.end};
        if (op.hasSeq) (op.backward ? backward : forward)[op.seq].push_back(range);
        open.push_back(range);
      } else if (e.kind == EventKind::Api && !open.empty() && !devicesOf.empty()) {
        auto it = devicesOf.find(static_cast<uint64_t>(ti) << 32 | index);
        if (it != devicesOf.end())
          for (std::size_t d : it->second) links.opOfDevice[d] = open.back().ref;
      }
    }
  }
  for (const auto& [seq, back] : backward) {
    auto fwd = forward.find(seq);
    if (fwd == forward.end()) continue;
    // The op that created the function is the innermost of a nest sharing the number (a
    // composite op and the op it calls); the function's own range is the outermost of its nest.
    EventRef from, to;
    if (single(fwd->second, true, from) && single(back, false, to)) links.forwardToBackward.emplace_back(from, to);
  }
  return links;
}

}  // namespace cutrace
