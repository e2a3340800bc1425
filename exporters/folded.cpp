#include "exporters/folded.h"

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

struct Open {
  uint64_t end;
  std::size_t pathLength;  // length of the stack string including this event's frames
  uint64_t childNs;        // time covered by direct children
  uint64_t ownNs;
  bool api;
};

void appendFrame(std::string& path, std::string_view name) {
  if (!path.empty()) path += ';';
  path += foldedFrame(name);
}

}  // namespace

std::map<std::string, FoldWeights> foldStacks(const TraceData& data, const FoldOptions& options) {
  std::map<std::string, FoldWeights> weights;
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
  // The frames of each stack id as one folded segment, root first, built once: a stack
  // recurs on every call made from the same place.
  std::vector<std::string> stackSegments(data.stacks.size());
  auto stackSegment = [&](uint32_t id) -> const std::string& {
    std::string& segment = stackSegments[id];
    if (segment.empty()) {
      const std::vector<uint32_t>& frames = data.stacks[id];
      for (auto f = frames.rbegin(); f != frames.rend(); ++f) appendFrame(segment, data.strings.get(*f));
    }
    return segment;
  };
  for (std::size_t ti = 0; ti < data.threads.size(); ++ti) {
    const ThreadTrack& t = data.threads[ti];
    std::string path;
    std::vector<Open> stack;
    auto close = [&] {
      const Open& o = stack.back();
      const uint64_t self = o.ownNs > o.childNs ? o.ownNs - o.childNs : 0;
      weights[path.substr(0, o.pathLength)].hostNs += self;
      stack.pop_back();
      path.resize(stack.empty() ? 0 : stack.back().pathLength);
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
      if (e.kind == EventKind::NvtxRange) {
        // PyTorch op ranges fold by op name: their seq, op_id and sizes differ every call.
        TorchOp op;
        const std::string& text = data.strings.get(e.name);
        appendFrame(path, parseTorchRange(text, op) ? op.name : std::string_view(text));
      } else {
        const uint32_t stackId = stackIdOf(e);
        if (!insideApi && stackId != 0 && stackId < data.stacks.size() && !data.stacks[stackId].empty()) {
          if (!path.empty()) path += ';';
          path += stackSegment(stackId);
        }
        const HookDescriptor& hook = data.hooks[e.hook];
        appendFrame(path, hook.displayName);
        if (hook.kind == ApiKind::Launch && e.launch.kernelName != 0)
          appendFrame(path, demangle(data, e.launch.kernelName));
      }
      FoldWeights& w = weights[path];
      ++w.calls;
      if (!gpuNs.empty()) {
        auto it = gpuNs.find(static_cast<uint64_t>(ti) << 32 | index);
        if (it != gpuNs.end()) w.gpuNs += it->second;
      }
      stack.push_back(Open{end, path.size(), 0, ns, e.kind == EventKind::Api});
    }
    while (!stack.empty()) close();
  }
  return weights;
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
