#include "exporters/folded.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "exporters/torch_ops.h"
#include "exporters/trace_view.h"

namespace cutrace {

std::string foldedFrame(std::string_view name) {
  if (name.empty()) return "[empty]";
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8SequenceLength(name, i);
      if (n == 0) {
        out += "\xef\xbf\xbd";  // U+FFFD: flamegraph tools read the file as UTF-8
        ++i;
      } else {
        out.append(name.substr(i, n));
        i += n;
      }
      continue;
    }
    out.push_back(c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c));
    ++i;
  }
  return out;
}

namespace {

// Paths are interned as a tree: a node is (parent node, label), a label one or more folded
// frames. An event costs a hash probe instead of building and comparing its whole path (paths
// of deep C++ stacks run to kilobytes); the strings are made once per distinct path at the end.
class PathTree {
 public:
  static constexpr uint32_t kRoot = 0;
  PathTree() : parent_{kRoot}, label_{0}, weights_(1), ends_{false} {}

  uint32_t label(std::string text) {
    auto [it, inserted] = labelIds_.try_emplace(std::move(text), static_cast<uint32_t>(labels_.size()));
    if (inserted) labels_.push_back(&it->first);
    return it->second;
  }
  uint32_t child(uint32_t node, uint32_t label) {
    auto [it, inserted] = children_.try_emplace(uint64_t{node} << 32 | label, static_cast<uint32_t>(parent_.size()));
    if (inserted) {
      parent_.push_back(node);
      label_.push_back(label);
      weights_.emplace_back();
      ends_.push_back(false);
    }
    return it->second;
  }
  // The weights of the path of an event (only such paths are written, not the prefixes
  // they share).
  FoldWeights& eventEndsAt(uint32_t node) {
    ends_[node] = true;
    return weights_[node];
  }
  FoldWeights& weights(uint32_t node) { return weights_[node]; }

  std::map<std::string, FoldWeights> paths() const {
    std::map<std::string, FoldWeights> out;
    std::vector<std::string> text(parent_.size());
    // Parents are created before their children, so one pass in creation order builds them.
    for (uint32_t n = 1; n < parent_.size(); ++n) {
      const std::string& up = text[parent_[n]];
      text[n] = up.empty() ? *labels_[label_[n]] : up + ';' + *labels_[label_[n]];
      if (!ends_[n]) continue;
      FoldWeights& w = out[text[n]];
      w.hostNs += weights_[n].hostNs;
      w.calls += weights_[n].calls;
      w.gpuNs += weights_[n].gpuNs;
    }
    return out;
  }

 private:
  std::unordered_map<std::string, uint32_t> labelIds_;
  std::vector<const std::string*> labels_;  // by label id; the map's nodes do not move
  std::unordered_map<uint64_t, uint32_t> children_;
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> label_;
  std::vector<FoldWeights> weights_;
  std::vector<bool> ends_;
};

struct Open {
  uint64_t end;
  uint32_t node;    // the path up to and including this event
  uint64_t childNs;  // time covered by direct children
  uint64_t ownNs;
  bool api;
};

}  // namespace

std::map<std::string, FoldWeights> foldStacks(const TraceData& data, const FoldOptions& options) {
  PathTree tree;
  Demangler demangle;
  // Device time per host event that caused it, keyed by (thread, event).
  std::unordered_map<uint64_t, uint64_t> gpuNs;
  if (!data.device.empty()) {
    const std::vector<HostLink> links = linkDeviceToHost(data);
    for (std::size_t i = 0; i < links.size(); ++i) {
      if (links[i].thread < 0) continue;
      const DeviceEvent& d = data.device[i];
      gpuNs[static_cast<uint64_t>(links[i].thread) << 32 | links[i].event] += d.end > d.start ? d.end - d.start : 0;
    }
  }
  // Labels by what they come from, each made once: a stack's frames root first (one label for
  // the whole segment), an NVTX range's name (PyTorch op ranges by op name: their seq, op_id
  // and sizes differ every call), an API's name, a kernel's demangled name.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> stackLabels(data.stacks.size(), kNone);
  std::unordered_map<uint32_t, uint32_t> rangeLabels, kernelLabels;
  std::vector<uint32_t> hookLabels(data.hooks.size(), kNone);
  auto stackLabel = [&](uint32_t id) {
    if (stackLabels[id] == kNone) {
      std::string segment;
      const std::vector<uint32_t>& frames = data.stacks[id];
      for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
        if (!segment.empty()) segment += ';';
        segment += foldedFrame(data.strings.get(*f));
      }
      stackLabels[id] = tree.label(std::move(segment));
    }
    return stackLabels[id];
  };
  auto rangeLabel = [&](uint32_t name) {
    auto [it, inserted] = rangeLabels.try_emplace(name, 0);
    if (inserted) {
      TorchOp op;
      const std::string& text = data.strings.get(name);
      it->second = tree.label(foldedFrame(parseTorchRange(text, op) ? op.name : std::string_view(text)));
    }
    return it->second;
  };
  auto hookLabel = [&](uint32_t hook) {
    if (hookLabels[hook] == kNone) hookLabels[hook] = tree.label(foldedFrame(data.hooks[hook].displayName));
    return hookLabels[hook];
  };
  auto kernelLabel = [&](uint32_t name) {
    auto [it, inserted] = kernelLabels.try_emplace(name, 0);
    if (inserted) it->second = tree.label(foldedFrame(demangle(data, name)));
    return it->second;
  };

  for (std::size_t ti = 0; ti < data.threads.size(); ++ti) {
    const ThreadTrack& t = data.threads[ti];
    std::vector<Open> stack;
    auto close = [&] {
      const Open& o = stack.back();
      tree.weights(o.node).hostNs += o.ownNs > o.childNs ? o.ownNs - o.childNs : 0;
      stack.pop_back();
    };
    for (uint32_t index : timelineOrder(t)) {
      const Event& e = t.events[index];
      if (e.kind != EventKind::Api && e.kind != EventKind::NvtxRange) continue;
      if (e.kind == EventKind::Api && e.hook >= data.hooks.size()) continue;
      if (e.kind == EventKind::NvtxRange && !options.nvtxFrames) continue;
      while (!stack.empty() && stack.back().end <= e.start) close();
      // A range that outlives its parent (an NVTX end we had to estimate) is clipped to it.
      const uint64_t end = stack.empty() ? e.end : std::min(e.end, stack.back().end);
      const uint64_t ns = static_cast<uint64_t>(data.toTraceNs(end) - data.toTraceNs(e.start));
      if (!stack.empty()) stack.back().childNs += ns;
      const bool insideApi = !stack.empty() && stack.back().api;
      uint32_t node = stack.empty() ? PathTree::kRoot : stack.back().node;
      if (e.kind == EventKind::NvtxRange) {
        node = tree.child(node, rangeLabel(e.name));
      } else {
        const uint32_t stackId = stackIdOf(e);
        if (!insideApi && stackId != 0 && stackId < data.stacks.size() && !data.stacks[stackId].empty())
          node = tree.child(node, stackLabel(stackId));
        node = tree.child(node, hookLabel(e.hook));
        if (data.hooks[e.hook].kind == ApiKind::Launch && e.launch.kernelName != 0)
          node = tree.child(node, kernelLabel(e.launch.kernelName));
      }
      FoldWeights& w = tree.eventEndsAt(node);
      ++w.calls;
      if (!gpuNs.empty()) {
        auto it = gpuNs.find(static_cast<uint64_t>(ti) << 32 | index);
        if (it != gpuNs.end()) w.gpuNs += it->second;
      }
      stack.push_back(Open{end, node, 0, ns, e.kind == EventKind::Api});
    }
    while (!stack.empty()) close();
  }
  return tree.paths();
}

void writeFolded(const std::map<std::string, FoldWeights>& folded, FoldWeight weight, Sink& out) {
  for (const auto& [stack, w] : folded) {
    uint64_t value = 0;
    switch (weight) {
      case FoldWeight::HostTime: value = (w.hostNs + 500) / 1000; break;
      case FoldWeight::Calls: value = w.calls; break;
      case FoldWeight::GpuTime: value = (w.gpuNs + 500) / 1000; break;
    }
    if (weight != FoldWeight::HostTime && value == 0) continue;
    out.put(stack);
    out.put(' ');
    out.putUint(value);
    out.put('\n');
  }
}


}  // namespace cutrace
