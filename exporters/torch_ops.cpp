#include "exporters/torch_ops.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

namespace cutrace {

namespace {

bool parseUint(std::string_view v, uint64_t& out) {
  if (v.empty() || v.size() > 19) return false;
  uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  out = n;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The end of a value starting at `s`: a bracketed value runs to its matching bracket, anything
// else to the next ", " or the end.
std::size_t valueEnd(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    int depth = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '[') ++depth;
      else if (s[i] == ']' && --depth == 0) return i + 1;
    }
    return s.size();
  }
  const std::size_t comma = s.find(", ");
  return comma == std::string_view::npos ? s.size() : comma;
}

constexpr std::string_view kKeys[] = {"seq", "stashed seq", "op_id", "sizes", "input_op_ids", "scope"};

// Position of the first ", key = " of a known key, npos when none.
std::size_t firstField(std::string_view text) {
  for (std::size_t at = text.find(", "); at != std::string_view::npos; at = text.find(", ", at + 1)) {
    const std::string_view rest = text.substr(at + 2);
    for (std::string_view key : kKeys)
      if (rest.size() > key.size() + 3 && rest.substr(0, key.size()) == key && rest.substr(key.size(), 3) == " = ")
        return at;
  }
  return std::string_view::npos;
}

}  // namespace

bool isBackwardFunction(std::string_view name) {
  if (name.rfind("autograd::engine::evaluate_function:", 0) == 0) return true;
  if (name == "torch::autograd::AccumulateGrad" || name == "AccumulateGrad" || name == "torch::autograd::GraphRoot" ||
      name == "GraphRoot")
    return true;
  std::size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  constexpr std::string_view kSuffix = "Backward";
  return end >= kSuffix.size() && name.substr(end - kSuffix.size(), kSuffix.size()) == kSuffix;
}

bool isIntegerList(std::string_view list) {
  if (list.empty() || list.front() != '[') return false;
  int depth = 0;
  bool needValue = false;
  for (char c : list) {
    if (c == '[') {
      ++depth;
      needValue = false;
    } else if (c == ']') {
      if (--depth < 0 || needValue) return false;
    } else if (c == ',') {
      needValue = true;
    } else if ((c >= '0' && c <= '9') || c == '-') {
      needValue = false;
    } else if (c != ' ') {
      return false;
    }
    if (depth == 0 && c == ']') needValue = false;
  }
  return depth == 0;
}

namespace {

// parseTorchRange; `nameOnly`: stops at the first field that makes the text an op range (the
// name and the answer are then known: the fields after it change neither).
bool parseRange(std::string_view text, TorchOp& out, bool nameOnly) {
  const std::size_t first = firstField(text);
  if (first == std::string_view::npos) return false;
  TorchOp op;
  op.name = trim(text.substr(0, first));
  if (op.name.empty()) return false;
  std::string_view rest = text.substr(first);
  bool any = false;
  while (rest.size() > 2 && rest.substr(0, 2) == ", ") {
    rest.remove_prefix(2);
    const std::size_t eq = rest.find(" = ");
    if (eq == std::string_view::npos) break;
    const std::string_view key = rest.substr(0, eq);
    rest.remove_prefix(eq + 3);
    const std::size_t end = valueEnd(rest);
    const std::string_view value = rest.substr(0, end);
    rest.remove_prefix(end);
    if (key == "seq" || key == "stashed seq") {
      if (!parseUint(value, op.seq)) continue;
      op.hasSeq = true;
      op.stashed = key == "stashed seq";
      any = true;
    } else if (key == "op_id") {
      op.hasOpId = parseUint(value, op.opId);
      any |= op.hasOpId;
    } else if (key == "sizes") {
      op.sizes = value;
      any = true;
    } else if (key == "input_op_ids") {
      op.inputOpIds = value;
    }
    if (any && nameOnly) break;
  }
  if (!any) return false;
  if (!nameOnly) op.backward = op.stashed || isBackwardFunction(op.name);
  out = op;
  return true;
}

}  // namespace

bool parseTorchRange(std::string_view text, TorchOp& out) { return parseRange(text, out, false); }

bool torchRangeName(std::string_view text, std::string_view& name) {
  TorchOp op;
  if (!parseRange(text, op, true)) return false;
  name = op.name;
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
        if (!parseTorchRange(data.strings.get(e.name), op)) continue;
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
