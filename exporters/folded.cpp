#include "exporters/folded.h"

#include <vector>

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
};

}  // namespace

std::map<std::string, uint64_t> foldStacks(const TraceData& data) {
  std::map<std::string, uint64_t> weights;
  Demangler demangle;
  for (const ThreadTrack& t : data.threads) {
    std::string path;
    std::vector<Open> stack;
    auto close = [&] {
      const Open& o = stack.back();
      const uint64_t self = o.ownNs > o.childNs ? o.ownNs - o.childNs : 0;
      weights[path.substr(0, o.pathLength)] += self;
      stack.pop_back();
      path.resize(stack.empty() ? 0 : stack.back().pathLength);
    };
    for (uint32_t index : timelineOrder(t)) {
      const Event& e = t.events[index];
      if (e.kind != EventKind::Api && e.kind != EventKind::NvtxRange) continue;
      if (e.kind == EventKind::Api && e.hook >= data.hooks.size()) continue;
      while (!stack.empty() && stack.back().end <= e.start) close();
      // A range that outlives its parent (an NVTX end we had to estimate) is clipped to it.
      const uint64_t end = stack.empty() ? e.end : std::min(e.end, stack.back().end);
      const uint64_t ns = static_cast<uint64_t>(data.toTraceNs(end) - data.toTraceNs(e.start));
      if (!stack.empty()) stack.back().childNs += ns;
      if (!path.empty()) path += ';';
      if (e.kind == EventKind::NvtxRange) {
        path += foldedFrame(data.strings.get(e.name));
      } else {
        const HookDescriptor& hook = data.hooks[e.hook];
        path += foldedFrame(hook.displayName);
        if (hook.kind == ApiKind::Launch && e.launch.kernelName != 0) {
          path += ';';
          path += foldedFrame(demangle(data, e.launch.kernelName));
        }
      }
      stack.push_back(Open{end, path.size(), 0, ns});
    }
    while (!stack.empty()) close();
  }
  return weights;
}

void writeFolded(const TraceData& data, Sink& out) {
  for (const auto& [stack, ns] : foldStacks(data)) {
    out.put(stack);
    out.put(' ');
    out.putUint((ns + 500) / 1000);
    out.put('\n');
  }
}

}  // namespace cutrace
