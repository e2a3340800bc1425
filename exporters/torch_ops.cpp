#include "exporters/torch_ops.h"

#include <algorithm>
#include <tuple>
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

// The outermost range of each nest of several ranges, where they form nests: on each thread, in
// time, a range that starts at or after the end of its nest's outermost one begins another; every
// other must lie inside the range before it (one chain of nested ranges). False, with no nest,
// where some range overlaps another without nesting.
bool outermostOfNests(const std::vector<OpRange>& ranges, std::vector<EventRef>& out) {
  out.clear();
  std::vector<OpRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(), [](const OpRange& a, const OpRange& b) {
    return std::tie(a.ref.thread, a.start, b.end) < std::tie(b.ref.thread, b.start, a.end);
  });
  const OpRange* outer = nullptr;
  const OpRange* last = nullptr;
  for (const OpRange& r : sorted) {
    if (outer == nullptr || r.ref.thread != outer->ref.thread || r.start >= outer->end) {
      out.push_back(r.ref);
      outer = &r;
    } else if (r.start < last->start || r.end > last->end) {
      out.clear();
      return false;
    }
    last = &r;
  }
  return !out.empty();
}

// Of ranges in timeline order, the one that started last (the inner one of two that start
// together), if all are on one thread; else none.
bool latestOnOneThread(const std::vector<OpRange>& ranges, EventRef& out) {
  if (ranges.empty()) return false;
  for (const OpRange& r : ranges)
    if (r.ref.thread != ranges.front().ref.thread) return false;
  out = ranges.back().ref;
  return true;
}

}  // namespace

TorchLinks linkTorchOps(const TraceData& data, const std::vector<HostLink>& launches) {
  TorchLinks links;
  links.opOfDevice.assign(data.device.size(), EventRef{});
  // Every op range with a seq, flat, 24 bytes each (a map of lists by seq took ~100 a range at
  // exit, most of a read back's memory for PyTorch runs), grouped by (seq, backward) below.
  struct Numbered {
    uint64_t seq;
    uint32_t order;  // as met (threads, then timeline order): a group's ranges keep it
    bool backward;
    EventRef ref;
  };
  std::vector<Numbered> numbered;
  std::size_t ranges = 0;  // room for all at once: growing it would hold it twice at its peak
  for (const ThreadTrack& t : data.threads)
    for (std::size_t i = 0; i < t.events.size(); ++i) ranges += t.events[i].kind == EventKind::NvtxRange;
  numbered.reserve(ranges);
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
        if (op.hasSeq) numbered.push_back(Numbered{op.seq, static_cast<uint32_t>(numbered.size()), op.backward, range.ref});
        open.push_back(range);
      } else if (e.kind == EventKind::Api && !open.empty() && !devicesOf.empty()) {
        auto it = devicesOf.find(static_cast<uint64_t>(ti) << 32 | index);
        if (it != devicesOf.end())
          for (std::size_t d : it->second) links.opOfDevice[d] = open.back().ref;
      }
    }
  }
  // In place (a stable sort would take a buffer as large).
  std::sort(numbered.begin(), numbered.end(), [](const Numbered& a, const Numbered& b) {
    return std::tie(a.seq, a.backward, a.order) < std::tie(b.seq, b.backward, b.order);
  });
  std::vector<OpRange> fwd, back;
  std::vector<EventRef> functions;
  for (std::size_t i = 0; i < numbered.size();) {
    const uint64_t seq = numbered[i].seq;
    fwd.clear();
    back.clear();
    for (; i < numbered.size() && numbered[i].seq == seq; ++i) {
      const EventRef ref = numbered[i].ref;
      const Event& e = data.threads[static_cast<std::size_t>(ref.thread)].events[ref.event];
      (numbered[i].backward ? back : fwd).push_back(OpRange{ref, e.start, e.end});
    }
    // PyTorch's counter is per thread, and moves only when an op makes an autograd node: every op
    // run meanwhile records the number the next node will take (a composite op and the ops it
    // calls, views of a tensor that needs no grad, before and beside the op that makes it). So
    // of the ranges with the number on one thread, the node's op is the one that started last
    // (Kineto's rule too); on two threads the number is two counters' and names no one op.
    // The function's own range is the outermost of its nest; a function run again (a second
    // backward through a retained graph) makes another nest, linked too (Kineto links the first).
    EventRef from;
    if (!fwd.empty() && !back.empty() && latestOnOneThread(fwd, from) && outermostOfNests(back, functions))
      for (const EventRef& to : functions) links.forwardToBackward.emplace_back(from, to);
  }
  return links;
}

}  // namespace cutrace
