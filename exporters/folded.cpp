#include "exporters/folded.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "exporters/torch_ops.h"
#include "exporters/trace_view.h"

namespace cutrace {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Whether `s` ends in a character Perl's \s matches: flamegraph.pl reads its input as UTF-8,
// so besides the space (control bytes were already turned into spaces) the Unicode White_Space
// characters count: U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F and
// U+3000.
bool endsInWhitespace(std::string_view s) {
  const auto at = [&](std::size_t back) { return static_cast<unsigned char>(s[s.size() - back]); };
  if (s.empty()) return false;
  if (at(1) == ' ') return true;
  if (s.size() >= 2 && at(2) == 0xc2 && (at(1) == 0x85 || at(1) == 0xa0)) return true;
  if (s.size() < 3) return false;
  const uint32_t cp = (at(3) & 0x0fu) << 12 | (at(2) & 0x3fu) << 6 | (at(1) & 0x3fu);
  if ((at(3) & 0xf0) != 0xe0 || (at(2) & 0xc0) != 0x80 || (at(1) & 0xc0) != 0x80) return false;
  return cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
         cp == 0x205f || cp == 0x3000;
}

// Where a number that flamegraph.pl would take for a weight starts at the end of `s`
// (its pattern: whitespace, then \d+(\.\d*)? at the end), or npos.
std::size_t trailingNumber(std::string_view s) {
  std::size_t i = s.size();
  while (i > 0 && isDigit(s[i - 1])) --i;
  if (i > 0 && s[i - 1] == '.') {  // a fraction ("0.5", "2."): digits must come before the point
    std::size_t j = i - 1;
    while (j > 0 && isDigit(s[j - 1])) --j;
    if (j == i - 1) return std::string_view::npos;
    i = j;
  } else if (i == s.size()) {
    return std::string_view::npos;
  }
  return i > 0 && endsInWhitespace(s.substr(0, i)) ? i : std::string_view::npos;
}

}  // namespace

std::string foldedFrame(std::string_view name) {
  if (name.empty()) return "[No name]";
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
  const std::size_t number = trailingNumber(out);
  if (number != std::string_view::npos) out.insert(number, 1, '#');
  return out;
}

uint32_t FoldIndex::findOrInsert(uint64_t key, uint32_t value, bool& inserted) {
  if ((size_ + 1) * 2 > keys_.size()) grow();  // at most half full
  for (std::size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
    if (keys_[i] == key) {
      inserted = false;
      return values_[i];
    }
    if (keys_[i] == kEmpty) {
      keys_[i] = key;
      values_[i] = value;
      ++size_;
      inserted = true;
      return value;
    }
  }
}

uint32_t FoldIndex::find(uint64_t key) const {
  if (keys_.empty()) return UINT32_MAX;
  for (std::size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
    if (keys_[i] == key) return values_[i];
    if (keys_[i] == kEmpty) return UINT32_MAX;
  }
}

void FoldIndex::grow() {
  std::vector<uint64_t> keys = std::move(keys_);
  std::vector<uint32_t> values = std::move(values_);
  const std::size_t capacity = keys.empty() ? 1024 : keys.size() * 2;
  keys_.assign(capacity, kEmpty);
  values_.assign(capacity, 0);
  shift_ = 64 - std::countr_zero(capacity);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == kEmpty) continue;
    std::size_t j = slot(keys[i]);
    while (keys_[j] != kEmpty) j = (j + 1) & (capacity - 1);
    keys_[j] = keys[i];
    values_[j] = values[i];
  }
}

uint32_t FoldedStacks::label(std::string_view text) {
  auto [it, inserted] = labelIds_.try_emplace(std::string(text), static_cast<uint32_t>(labels_.size()));
  if (inserted) labels_.push_back(&it->first);
  return it->second;
}

uint32_t FoldedStacks::child(uint32_t node, uint32_t label) {
  bool inserted = false;
  const uint32_t id = children_.findOrInsert(uint64_t{node} << 32 | label, static_cast<uint32_t>(parent_.size()), inserted);
  if (inserted) {
    parent_.push_back(node);
    label_.push_back(label);
    depth_.push_back(depth_[node] + 1);
    weights_.emplace_back();
    ends_.push_back(false);
  }
  return id;
}

uint32_t FoldedStacks::descend(uint32_t node, uint32_t label) {
  if (depth_[node] > maxFrames_) return node;  // the kDeeperFramesFrame node
  return child(node, depth_[node] == maxFrames_ ? deeperLabel_ : label);
}

void FoldedStacks::appendPath(uint32_t node, std::string& out, std::vector<uint32_t>& chain) const {
  chain.clear();
  for (uint32_t n = node; n != kRoot; n = parent_[n]) chain.push_back(n);
  for (auto n = chain.rbegin(); n != chain.rend(); ++n) {
    if (n != chain.rbegin()) out.push_back(';');
    out.append(*labels_[label_[*n]]);
  }
}

const FoldedStacks::value_type& FoldedStacks::const_iterator::operator*() const {
  if (built_ != i_) {
    const uint32_t node = owner_->lines_[i_];
    current_.first.clear();
    owner_->appendPath(node, current_.first, chain_);
    current_.second = owner_->weights_[node];
    built_ = i_;
  }
  return current_;
}

const FoldWeights* FoldedStacks::find(std::string_view stack) const {
  uint32_t node = kRoot;
  for (std::size_t from = 0;;) {
    const std::size_t semi = stack.find(';', from);
    auto l = labelIds_.find(std::string(stack.substr(from, semi == std::string_view::npos ? semi : semi - from)));
    if (l == labelIds_.end()) return nullptr;
    node = children_.find(uint64_t{node} << 32 | l->second);
    if (node == UINT32_MAX) return nullptr;
    if (semi == std::string_view::npos) break;
    from = semi + 1;
  }
  return ends_[node] ? &weights_[node] : nullptr;
}

bool FoldedStacks::anyGpu() const {
  for (uint32_t n : lines_)
    if (weights_[n].gpuNs != 0) return true;
  return false;
}

void FoldedStacks::finish() {
  // Children of each node, by parent (parents are created before their children).
  const auto nodes = static_cast<uint32_t>(parent_.size());
  std::vector<uint32_t> first(nodes + 1, 0), kids(nodes > 0 ? nodes - 1 : 0);
  for (uint32_t n = 1; n < nodes; ++n) ++first[parent_[n] + 1];
  for (uint32_t n = 0; n < nodes; ++n) first[n + 1] += first[n];
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  for (uint32_t n = 1; n < nodes; ++n) kids[fill[parent_[n]]++] = n;

  // Depth first, in bytewise order of the whole lines, with nothing but labels compared. Under
  // one parent P the lines of a child c are "P;c" itself and the group "P;c;..." of its
  // descendants (contiguous in the order: they share that prefix), two items keyed "c" and
  // "c;". As no frame holds ';', comparing the keys bytewise (a key that ends first is the
  // smaller) orders every line of one item against every line of another.
  struct Item {
    uint32_t node;
    bool below;  // the group of its descendants, not its own line
  };
  const auto keyByte = [](const std::string& label, bool below, std::size_t i) {
    return i < label.size() ? static_cast<int>(static_cast<unsigned char>(label[i])) : i == label.size() && below ? ';' : -1;
  };
  const auto less = [&](const Item& a, const Item& b) {
    const std::string& x = *labels_[label_[a.node]];
    const std::string& y = *labels_[label_[b.node]];
    const std::size_t n = std::min(x.size(), y.size());
    if (const int c = memcmp(x.data(), y.data(), n); c != 0) return c < 0;
    for (std::size_t i = n;; ++i) {  // ends within two bytes: a key is its label and maybe ';'
      const int bx = keyByte(x, a.below, i), by = keyByte(y, b.below, i);
      if (bx != by) return bx < by;
      if (bx < 0) return false;
    }
  };
  std::vector<std::vector<Item>> levels;
  std::vector<std::size_t> next;
  const auto open = [&](uint32_t node) {
    if (levels.size() <= next.size()) levels.emplace_back();
    std::vector<Item>& items = levels[next.size()];
    items.clear();
    for (uint32_t k = first[node]; k < first[node + 1]; ++k) {
      const uint32_t c = kids[k];
      if (ends_[c]) items.push_back(Item{c, false});
      if (first[c + 1] > first[c]) items.push_back(Item{c, true});
    }
    std::sort(items.begin(), items.end(), less);
    next.push_back(0);
  };
  lines_.clear();
  open(kRoot);
  while (!next.empty()) {
    std::vector<Item>& items = levels[next.size() - 1];
    if (next.back() == items.size()) {
      next.pop_back();
      continue;
    }
    const Item item = items[next.back()++];
    if (item.below) open(item.node);
    else lines_.push_back(item.node);
  }
}

// Folding, shared by foldStacks() (a whole trace in timeline order) and FoldBuilder (a run as it
// goes): labels made once per source, and one event placed on a thread's stack of open frames.
class Folder {
 public:
  // A frame of a thread's stack: an event whose end is not yet passed. `end` is kOpenEnd for an
  // NVTX range whose pop is still to come (FoldBuilder only); its `ownNs` is known at the end.
  static constexpr uint64_t kOpenEnd = UINT64_MAX;
  struct Open {
    uint64_t end;
    uint32_t node;     // the path up to and including this event
    uint64_t childNs;  // time covered by direct children
    uint64_t ownNs;
    bool api;
    uint64_t start = 0;
    uint64_t seq = 0;  // an open range's, to find it at its end
  };
  using Stack = std::vector<Open>;

  Folder(FoldedStacks& f, const FoldOptions& options) : f_(f), options_(options) {
    f_.maxFrames_ = std::max<uint32_t>(options.maxFrames, 1);
    f_.deeperLabel_ = f_.label(kDeeperFramesFrame);
  }

  bool rangeFrames() const { return options_.nvtxFrames; }
  // Whether an event is a frame of the folded stacks (CUDA calls and default-domain ranges).
  bool folds(const TraceData& data, const Event& e) const {
    if (e.kind == EventKind::Api) return e.hook < data.hooks.size();
    // Named domains nest only within themselves: the default domain's ranges are the frames.
    return e.kind == EventKind::NvtxRange && options_.nvtxFrames && !onNvtxDomainTrack(e);
  }

  void close(Stack& stack) {
    const Open& o = stack.back();
    f_.weights_[o.node].hostNs += o.ownNs > o.childNs ? o.ownNs - o.childNs : 0;
    stack.pop_back();
  }

  // `node` ends a folded line, counted once more where it passes the frame cap: its weights.
  FoldWeights& endsAt(uint32_t node, uint64_t lines = 1) {
    if (f_.depth_[node] > f_.maxFrames_) f_.depthCapped_ += lines;
    f_.ends_[node] = true;
    return f_.weights_[node];
  }
  // An event starting at `start` and ending at `end` (kOpenEnd: not yet known) enters: what ended
  // before it closes, its frame is pushed with `node` (see nodeOf) and counted once.
  void closeBefore(Stack& stack, uint64_t start) {
    while (!stack.empty() && stack.back().end <= start) close(stack);
  }
  Open& push(Stack& stack, uint64_t start, uint64_t end, uint32_t node, bool api, uint64_t gpuNs) {
    // A range that outlives its parent (an NVTX end we had to estimate) is clipped to it.
    if (!stack.empty() && stack.back().end < end) end = stack.back().end;
    const uint64_t ns = end == kOpenEnd ? 0 : end - start;
    if (!stack.empty() && end != kOpenEnd) stack.back().childNs += ns;
    FoldWeights& w = endsAt(node);
    ++w.calls;
    w.gpuNs += gpuNs;
    // Written field by field into its slot: an Open built aside and copied in was read back by
    // 16-byte loads straight after its 8-byte stores, which cannot be forwarded (half the
    // function's time in a profile of an NVTX loop).
    Open& o = stack.emplace_back();
    o.end = end;
    o.node = node;
    o.childNs = 0;
    o.ownNs = ns;
    o.api = api;
    o.start = start;
    o.seq = 0;
    return o;
  }
  // A range that opened on `stack` (empty, or its top still open: nothing to clip to) and ended
  // at `end`, as push() with kOpenEnd and end() leave it.
  void pushEnded(Stack& stack, uint64_t start, uint64_t end, uint32_t node) {
    Open& o = push(stack, start, kOpenEnd, node, false, 0);
    o.end = end;
    o.ownNs = end > start ? end - start : 0;
    if (stack.size() > 1) stack[stack.size() - 2].childNs += o.ownNs;
  }
  // A call that nothing ran inside and nothing recorded later can be inside (FoldBuilder: a call
  // recorded while no call of its thread ran, nothing held for it): counted as push() and
  // close() would, without entering the stack.
  void leaf(Stack& stack, uint64_t start, uint64_t end, uint32_t node) {
    if (!stack.empty() && stack.back().end < end) end = stack.back().end;
    leaves(stack, node, 1, end - start);
  }
  // `calls` leaf() calls of `node` on `stack`, whose top is open (kOpenEnd: nothing to close or
  // clip to) or which is empty, of `ns` in all: counted at once (FoldBuilder's runs).
  void leaves(Stack& stack, uint32_t node, uint64_t calls, uint64_t ns) {
    if (!stack.empty()) stack.back().childNs += ns;
    FoldWeights& w = endsAt(node, calls);
    w.calls += calls;
    w.hostNs += ns;
  }
  // `calls` pair() calls on such a stack: `ns` the first calls' time in all, `ownNs` what their
  // inner calls left of it, `innerNs` the inner calls' time.
  void pairs(Stack& stack, uint32_t node, uint32_t cNode, uint64_t calls, uint64_t ns, uint64_t ownNs, uint64_t innerNs) {
    if (!stack.empty()) stack.back().childNs += ns;
    endsAt(node, calls).calls += calls;
    FoldWeights& c = endsAt(cNode, calls);
    c.calls += calls;
    c.hostNs += innerNs;
    f_.weights_[node].hostNs += ownNs;
  }
  // A call [start, end] and the one call recorded inside it, [cStart, cEnd] (which starts before
  // `end`): the first's time, the inner one's (its end clipped to the first's) and what it left
  // of the first's.
  struct PairTimes {
    uint64_t ns, innerNs, ownNs;
  };
  [[gnu::always_inline]] static PairTimes pairTimes(uint64_t start, uint64_t end, uint64_t cStart, uint64_t cEnd) {
    const uint64_t ns = end - start, cNs = (cEnd < end ? cEnd : end) - cStart;
    return {ns, cNs, ns > cNs ? ns - cNs : 0};
  }
  // A call and the one call recorded inside it, which nothing ran inside, as push() of the first,
  // leaf() of the second and close() of the first would count them: nothing recorded later can
  // be inside the first (see leaf()). [cStart, cEnd]: the inner call, which starts before `end`.
  void pair(Stack& stack, uint64_t start, uint64_t end, uint32_t node, uint64_t cStart, uint64_t cEnd,
            uint32_t cNode) {
    if (!stack.empty() && stack.back().end < end) end = stack.back().end;
    const PairTimes t = pairTimes(start, end, cStart, cEnd);
    pairs(stack, node, cNode, 1, t.ns, t.ownNs, t.innerNs);
  }
  // The open range `o` (on `stack`, frames above it already closed) ends: its event spans
  // [start, end] (the start it opened with: the drain maps a range's start once, at its push).
  void end(Stack& stack, Open& o, uint64_t start, uint64_t end) {
    o.end = end;
    o.ownNs = end > start ? end - start : 0;
    if (&o != &stack.front()) (&o - 1)->childNs += o.ownNs;
  }

  // The node of an event entering above `stack`'s top.
  // `label`: a range's label when already known (kNone: from its name).
  // Inlined where it is called: the repeat of the last call is a few compares, and the whole
  // lookup, out of line, cost as much again in its prologue alone.
  [[gnu::always_inline]] uint32_t nodeOf(const TraceData& data, const Stack& stack, const Event& e, uint32_t label = kNone) {
    return stack.empty() ? nodeUnder(data, FoldedStacks::kRoot, false, e, label)
                         : nodeUnder(data, stack.back().node, stack.back().api, e, label);
  }
  // nodeOf() above a frame of `node` (`insideApi`: a CUDA call's).
  [[gnu::always_inline]] uint32_t nodeUnder(const TraceData& data, uint32_t node, bool insideApi, const Event& e,
                                            uint32_t label = kNone) {
    // The call before it, in most programs the same call from the same place (a loop of
    // launches): checked on the raw event first, before any lookup.
    if (e.kind != EventKind::NvtxRange && repeatsLast(e, node, insideApi)) return last_[insideApi].node;
    return nodeLookup(data, node, insideApi, e, label);
  }
  // Whether the call `e` (not a range) above a frame of `node` has the node of the last such call
  // looked up: nodeUnder() gives it without a lookup (lastNode()).
  [[gnu::always_inline]] bool repeatsLast(const Event& e, uint32_t node, bool insideApi) const {
    const LastCall& last = last_[insideApi];
    return last.parent == node && last.hook == e.hook && last.stack == stackIdOf(e) &&
           (!last.launch || last.kernel == e.launch.kernelName);
  }
  uint32_t lastNode(bool insideApi) const { return last_[insideApi].node; }
  [[gnu::noinline]] uint32_t nodeLookup(const TraceData& data, uint32_t node, bool insideApi, const Event& e, uint32_t label) {
    if (e.kind == EventKind::NvtxRange) return f_.descend(node, label != kNone ? label : rangeLabel(data, e.name));
    const uint32_t rawStack = stackIdOf(e);
    uint32_t stackId = rawStack;
    if (insideApi || stackId == 0 || stackId >= data.stacks.size() || data.stacks[stackId].empty()) stackId = 0;
    const bool launch = data.hooks[e.hook].kind == ApiKind::Launch;
    const uint32_t kernel = launch ? e.launch.kernelName : 0;
    const uint32_t found = callNode(data, node, stackId, e.hook, kernel);
    // A stack whose frames are not resolved yet (still being copied) may be by the next call.
    if (insideApi || stackId == rawStack) last_[insideApi] = LastCall{node, e.hook, rawStack, kernel, launch, found};
    return found;
  }
  uint32_t callNode(const TraceData& data, uint32_t node, uint32_t stackId, uint16_t hook, uint32_t kernel) {
    // A call repeats from the same place most of the time: the last node of each such (parent,
    // stack, hook, kernel) is kept in a small direct-mapped cache (nodes never change or move).
    const uint64_t h = (uint64_t{node} * 0x9e3779b97f4a7c15ull) ^ (uint64_t{stackId} << 20) ^ (uint64_t{hook} << 8) ^ kernel;
    CallNode& c = callNodes_[(h ^ (h >> 29)) % kCallNodes];
    if (c.parent == node && c.stack == stackId && c.hook == hook && c.kernel == kernel) return c.node;
    c.parent = node, c.stack = stackId, c.hook = hook, c.kernel = kernel;
    if (stackId != 0) node = underStack(data, node, stackId);
    node = f_.descend(node, hookLabel(data, hook));
    if (kernel != 0) node = f_.descend(node, kernelLabel(data, kernel));
    c.node = node;
    return node;
  }
  uint32_t rangeNode(const TraceData& data, const Stack& stack, uint32_t name) {
    const uint32_t parent = stack.empty() ? FoldedStacks::kRoot : stack.back().node;
    // The range before it, in most programs the same range at the same place (a step loop's):
    // no lookup.
    if (repeatsLastRange(name, parent)) return lastRange_.node;
    const uint32_t node = f_.descend(parent, rangeLabel(data, name));
    if (!StringPool::isTransient(name)) lastRange_ = LastRange{parent, name, node};
    return node;
  }
  // Whether rangeNode() of `name` above a frame of `parent` is the last range's node, with no
  // lookup (lastRangeNode()). A transient name id is reused for other text: never kept.
  [[gnu::always_inline]] bool repeatsLastRange(uint32_t name, uint32_t parent) const {
    return lastRange_.parent == parent && lastRange_.name == name && !StringPool::isTransient(name);
  }
  uint32_t lastRangeNode() const { return lastRange_.node; }
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t rangeLabel(const TraceData& data, uint32_t name) {
    auto labelOf = [&] {
      const std::string_view text = data.strings.get(name);
      std::string_view op;
      if (!torchRangeName(text, op)) return f_.label(foldedFrame(text));
      // PyTorch's op ranges: a text per call, a few hundred op names; each name's label is
      // made once (the first kMaxOpLabels names; past them, made every time).
      auto it = opLabels_.find(op);
      if (it != opLabels_.end()) return it->second;
      const uint32_t label = f_.label(foldedFrame(op));
      if (opLabels_.size() < kMaxOpLabels) opLabels_.emplace(op, label);
      return label;
    };
    if (StringPool::isTransient(name)) return labelOf();  // a one-off id: not worth a cache entry
    auto [it, inserted] = rangeLabels_.try_emplace(name, 0);
    if (inserted) it->second = labelOf();
    return it->second;
  }

  // Device work whose launching call is not in this trace though the run linked it (an export
  // window that starts after the launch): its time under a frame that says so, the op the run
  // gave it, its kernel, so that the window's device time is all there.
  void launchedOutside(const TraceData& data, const DeviceEvent& d, uint64_t ns) {
    if (outsideLabel_ == kNone) outsideLabel_ = f_.label("[launched before the window]");
    uint32_t node = f_.descend(FoldedStacks::kRoot, outsideLabel_);
    if (d.streamOp != 0 && options_.nvtxFrames) node = f_.descend(node, rangeLabel(data, d.streamOp));
    if (d.kind == DeviceKind::Kernel && d.name != 0) node = f_.descend(node, kernelLabel(data, d.name));
    endsAt(node).gpuNs += ns;
  }
 private:
  // Labels by what they come from, each made once: a stack frame's name, an NVTX range's name
  // (PyTorch op ranges by op name: their seq, op_id and sizes differ every call), an API's
  // name, a kernel's demangled name. A call stack under a given node is walked once.
  uint32_t frameLabel(const TraceData& data, uint32_t name) {
    auto [it, inserted] = frameLabels_.try_emplace(name, 0);
    if (inserted) it->second = f_.label(foldedFrame(data.strings.get(name)));
    return it->second;
  }
  uint32_t underStack(const TraceData& data, uint32_t node, uint32_t stackId) {
    const uint64_t key = uint64_t{node} << 32 | stackId;
    const uint32_t known = stackEnds_.find(key);
    if (known != UINT32_MAX) return known;
    uint32_t end = node;
    const std::vector<uint32_t>& frames = data.stacks[stackId];
    for (auto fr = frames.rbegin(); fr != frames.rend(); ++fr) end = f_.descend(end, frameLabel(data, *fr));
    bool inserted = false;
    stackEnds_.findOrInsert(key, end, inserted);
    return end;
  }
  uint32_t hookLabel(const TraceData& data, uint32_t hook) {
    if (hookLabels_.size() < data.hooks.size()) hookLabels_.resize(data.hooks.size(), kNone);
    if (hookLabels_[hook] == kNone) hookLabels_[hook] = f_.label(foldedFrame(data.hooks[hook].displayName));
    return hookLabels_[hook];
  }
  uint32_t kernelLabel(const TraceData& data, uint32_t name) {
    auto [it, inserted] = kernelLabels_.try_emplace(name, 0);
    if (inserted) it->second = f_.label(foldedFrame(demangle_(data, name)));
    return it->second;
  }

  FoldedStacks& f_;
  FoldOptions options_;
  Demangler demangle_;
  std::unordered_map<uint32_t, uint32_t> frameLabels_, rangeLabels_, kernelLabels_;
  static constexpr std::size_t kMaxOpLabels = 4096;
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> opLabels_;  // by PyTorch op name
  std::vector<uint32_t> hookLabels_;
  uint32_t outsideLabel_ = kNone;
  FoldIndex stackEnds_;  // (node << 32 | stack id) -> node of its innermost frame
  struct CallNode {
    uint32_t parent = UINT32_MAX, stack = 0, hook = 0, kernel = 0, node = 0;
  };
  static constexpr std::size_t kCallNodes = 64;
  CallNode callNodes_[kCallNodes];
  // The last call's node and what it was found from: its raw stack id (kept only once the stack
  // was resolved: then it stays so), its kernel only when it launched one. One for calls made
  // inside another call, one for the others: a runtime call and the driver call it makes
  // alternate.
  struct LastCall {
    uint32_t parent = UINT32_MAX;
    uint16_t hook = 0;
    uint32_t stack = 0, kernel = 0;
    bool launch = false;
    uint32_t node = 0;
  } last_[2];
  struct LastRange {
    uint32_t parent = UINT32_MAX, name = 0, node = 0;
  } lastRange_;
};

FoldedStacks foldStacks(const TraceData& data, const FoldOptions& options) {
  FoldedStacks f;
  Folder folder(f, options);
  // Device time per host event that caused it, keyed by (thread, event).
  std::unordered_map<uint64_t, uint64_t> gpuNs;
  if (!data.device.empty()) {
    const std::vector<HostLink> links = linkDeviceToHost(data);
    for (std::size_t i = 0; i < links.size(); ++i) {
      const DeviceEvent& d = data.device[i];
      const uint64_t ns = d.end > d.start ? d.end - d.start : 0;
      if (links[i].thread < 0) {
        if (d.streamLinked) folder.launchedOutside(data, d, ns);
        continue;
      }
      gpuNs[static_cast<uint64_t>(links[i].thread) << 32 | links[i].event] += ns;
    }
  }
  for (std::size_t ti = 0; ti < data.threads.size(); ++ti) {
    const ThreadTrack& t = data.threads[ti];
    Folder::Stack stack;
    for (uint32_t index : timelineOrder(t)) {
      const Event& e = t.events[index];
      if (!folder.folds(data, e)) continue;
      const uint64_t start = static_cast<uint64_t>(data.toTraceNs(e.start));
      folder.closeBefore(stack, start);
      uint64_t gpu = 0;
      if (!gpuNs.empty()) {
        auto it = gpuNs.find(static_cast<uint64_t>(ti) << 32 | index);
        if (it != gpuNs.end()) gpu = it->second;
      }
      folder.push(stack, start, static_cast<uint64_t>(data.toTraceNs(e.end)), folder.nodeOf(data, stack, e),
                  e.kind == EventKind::Api, gpu);
    }
    while (!stack.empty()) folder.close(stack);
  }
  f.finish();
  return f;
}

struct FoldBuilder::Impl {
  FoldedStacks f;
  Folder folder;
  struct Thread {
    uint32_t ordinal = ThreadTrack::kIndexOrdinal;  // the thread it is for (TraceData::ordinal)
    Folder::Stack stack;
    // Recorded inside a CUDA call whose own event is still to come, with a range's label made
    // when it arrived (a transient name does not outlive its pass).
    std::vector<std::pair<Event, uint32_t>> held;
    // A CUDA call recorded inside another, nothing held before it (a driver call inside the
    // runtime call that made it: a launch), seen in place in this pass's events instead of
    // copied into `held`; kept there (keepInner) before anything else reads `held` and before
    // the pass's events are released.
    const Event* inner = nullptr;
    uint64_t folded = 0;  // events of the thread seen, released ones included
    uint64_t opened = 0;  // ThreadTrack::opens seen, released ones included
  };
  std::vector<Thread> threads;

  explicit Impl(const FoldOptions& options) : folder(f, options) {}

  // One thread's events and range opens of the pass (FoldBuilder::pass).
  void passThread(const TraceData& data, std::size_t ti);

  // A loop's calls and ranges, counted at once (passThread): each the call before it again from
  // the same place (Folder::repeatsLast), alone or with the one call recorded inside it (a
  // launch through the runtime and its driver call), or the range before it again with nothing
  // recorded inside it (Folder::repeatsLastRange), while nothing is held and the thread's top
  // frame, if any, is a range still open (nothing ends before them or clips them). What
  // completeLeaf(), completePair() or event() would add for each is summed, and counted by
  // flushRepeats() before any other event of the pass is taken (the sums are the same in any
  // order). Within one pass: `inner` points into its events.
  struct Repeats {
    bool on = false;  // the state above holds and the caches are set: `parent` is the top frame's node
    uint32_t parent = 0;
    const Event* inner = nullptr;  // the inner call of a pair whose call is still to come
    uint64_t leaves = 0, leafNs = 0;
    uint64_t pairs = 0, pairNs = 0, pairOwnNs = 0, innerNs = 0;
    uint64_t ranges = 0, rangeNs = 0;
  };
  // After `e` was taken the usual way: whether a run can start (after a call or a range that
  // folds: the caches are then set for the same again).
  [[gnu::always_inline]] void startRepeats(const Thread& t, Repeats& rep, const Event& e) const {
    rep.on = (e.kind == EventKind::Api || e.kind == EventKind::NvtxRange) && t.inner == nullptr && t.held.empty() &&
             (t.stack.empty() || (t.stack.back().end == Folder::kOpenEnd && !t.stack.back().api));
    rep.parent = t.stack.empty() ? FoldedStacks::kRoot : t.stack.back().node;
  }
  // Whether `e` was taken into the run (else the run ends: flushRepeats(), then `e` the usual way).
  [[gnu::always_inline]] bool repeats(const TraceData& data, const Thread& t, Repeats& rep, const Event& e) {
    if (e.kind == EventKind::NvtxRange) return repeatsRange(data, t, rep, e);
    if (e.kind != EventKind::Api || e.hook >= data.hooks.size()) return false;
    const bool inside = e.flags & kEventInsideCall;
    if (rep.inner == nullptr) {
      if (!inside) {
        if (!folder.repeatsLast(e, rep.parent, false)) return false;
        ++rep.leaves;
        rep.leafNs += e.end - e.start;  // as the trace's times (Folder::leaf) subtract
        return true;
      }
      // A pair's inner call, recorded first: as event() would keep it, if its call repeats too.
      if (!folder.repeatsLast(e, folder.lastNode(false), true)) return false;
      rep.inner = &e;
      return true;
    }
    const Event& inner = *rep.inner;
    if (inside || !folder.repeatsLast(e, rep.parent, false) || !timelineBefore(e, inner)) return false;
    const uint64_t start = static_cast<uint64_t>(data.toTraceNs(e.start));
    const uint64_t end = static_cast<uint64_t>(data.toTraceNs(e.end));
    const uint64_t innerStart = static_cast<uint64_t>(data.toTraceNs(inner.start));
    if (innerStart >= end) return false;  // completePair() takes the long way
    const Folder::PairTimes times =
        Folder::pairTimes(start, end, innerStart, static_cast<uint64_t>(data.toTraceNs(inner.end)));
    ++rep.pairs;
    rep.pairNs += times.ns;
    rep.innerNs += times.innerNs;
    rep.pairOwnNs += times.ownNs;
    rep.inner = nullptr;
    return true;
  }
  // A range with no open: as event() takes one that ends none of the thread's open frames.
  [[gnu::always_inline]] bool repeatsRange(const TraceData& data, const Thread& t, Repeats& rep, const Event& e) {
    if (rep.inner != nullptr || (e.flags & kEventInsideCall) || !folder.folds(data, e) ||
        !folder.repeatsLastRange(e.name, rep.parent))
      return false;
    for (const Folder::Open& frame : t.stack)
      if (endsFrame(frame, e)) return false;
    ++rep.ranges;
    rep.rangeNs += e.end - e.start;
    return true;
  }
  [[gnu::always_inline]] void flushRepeats(Thread& t, Repeats& rep) {
    if (!rep.on) return;
    if (rep.leaves != 0 || rep.pairs != 0 || rep.ranges != 0) flushRepeatCounts(t, rep);
    t.inner = rep.inner;  // taken as event() takes a call recorded inside another
    rep = Repeats{};
  }
  [[gnu::noinline]] void flushRepeatCounts(Thread& t, const Repeats& rep) {
    if (rep.leaves != 0) folder.leaves(t.stack, folder.lastNode(false), rep.leaves, rep.leafNs);
    if (rep.ranges != 0) folder.leaves(t.stack, folder.lastRangeNode(), rep.ranges, rep.rangeNs);
    if (rep.pairs != 0)
      folder.pairs(t.stack, folder.lastNode(false), folder.lastNode(true), rep.pairs, rep.pairNs, rep.pairOwnNs,
                   rep.innerNs);
  }

  // A complete event in timeline order (times in trace ns: the views' times).
  void complete(const TraceData& data, Thread& t, const Event& e, uint32_t label) {
    const uint64_t start = static_cast<uint64_t>(data.toTraceNs(e.start));
    folder.closeBefore(t.stack, start);
    folder.push(t.stack, start, static_cast<uint64_t>(data.toTraceNs(e.end)), folder.nodeOf(data, t.stack, e, label),
                e.kind == EventKind::Api, 0);
  }
  // complete() for a call nothing is recorded inside: later records of the thread began after
  // it ended (any call or range made while it ran was marked inside a call, and held first).
  [[gnu::always_inline]] void completeLeaf(const TraceData& data, Thread& t, const Event& e) {
    const uint64_t start = static_cast<uint64_t>(data.toTraceNs(e.start));
    folder.closeBefore(t.stack, start);
    folder.leaf(t.stack, start, static_cast<uint64_t>(data.toTraceNs(e.end)), folder.nodeOf(data, t.stack, e));
  }
  // complete() of `e`, then completeLeaf() of `inner`, the one call recorded inside it: without
  // entering the stack where `inner` starts before `e` ends (it always does, but for equal or
  // clipped times, which go the long way).
  [[gnu::always_inline]] void completePair(const TraceData& data, Thread& t, const Event& e, const Event& inner) {
    const uint64_t start = static_cast<uint64_t>(data.toTraceNs(e.start));
    const uint64_t end = static_cast<uint64_t>(data.toTraceNs(e.end));
    const uint64_t innerStart = static_cast<uint64_t>(data.toTraceNs(inner.start));
    folder.closeBefore(t.stack, start);
    if (innerStart >= end || (!t.stack.empty() && t.stack.back().end <= innerStart)) {
      complete(data, t, e, Folder::kNone);
      completeLeaf(data, t, inner);
      return;
    }
    const uint32_t node = folder.nodeOf(data, t.stack, e);
    folder.pair(t.stack, start, end, node, innerStart, static_cast<uint64_t>(data.toTraceNs(inner.end)),
                folder.nodeUnder(data, node, true, inner));
  }
  void hold(const TraceData& data, Thread& t, const Event& e) {
    t.held.emplace_back(e, e.kind == EventKind::NvtxRange ? folder.rangeLabel(data, e.name) : Folder::kNone);
  }
  // Calls and ranges held for the call they were recorded in: in timeline order (as
  // timelineOrder sorts) before `next`.
  [[gnu::always_inline]] void flushHeld(const TraceData& data, Thread& t) {
    keepInner(t);
    if (!t.held.empty()) flushHeldEvents(data, t);
  }
  [[gnu::always_inline]] void keepInner(Thread& t) {
    if (t.inner == nullptr) return;
    t.held.emplace_back(*t.inner, Folder::kNone);
    t.inner = nullptr;
  }
  [[gnu::noinline]] void flushHeldEvents(const TraceData& data, Thread& t) {
    // A group is a call and what ran inside it, a few events, mostly in reverse order (children
    // are recorded first): an insertion sort, stable and without the temporary buffer
    // std::stable_sort allocates on every call (seen in the drain's profile).
    const auto before = timelineBefore;
    // Most often a chain (a runtime call, the driver call inside it, ...), recorded innermost
    // first: exactly the reverse of the order wanted, taken backwards with no moves.
    std::size_t reversed = 1;
    while (reversed < t.held.size() && before(t.held[reversed].first, t.held[reversed - 1].first)) ++reversed;
    if (reversed == t.held.size()) {
      // Nested each in the next: the innermost, recorded first, holds nothing.
      for (std::size_t i = t.held.size(); i-- > 1;) complete(data, t, t.held[i].first, t.held[i].second);
      const auto& [innermost, label] = t.held.front();
      if (innermost.kind == EventKind::Api) completeLeaf(data, t, innermost);
      else complete(data, t, innermost, label);
      t.held.clear();
      return;
    }
    for (std::size_t i = 1; i < t.held.size(); ++i)
      for (std::size_t j = i; j > 0 && before(t.held[j].first, t.held[j - 1].first); --j) std::swap(t.held[j], t.held[j - 1]);
    for (const auto& [e, label] : t.held) complete(data, t, e, label);
    t.held.clear();
  }
  // open() followed by the range's own event `e`, when that is the next event: with the stack
  // empty or its top still open, push() and end() would leave exactly the frame pushed here with
  // its end (nothing to clip it to), without looking for it. True when `e` was taken.
  [[gnu::always_inline]] bool openEnded(const TraceData& data, Thread& t, const ThreadTrack::RangeOpen& o,
                                        const Event& e) {
    if (e.seq != o.seq || e.kind != EventKind::NvtxRange || !t.held.empty() || t.inner != nullptr) {
      open(data, t, o);
      return false;
    }
    const uint64_t start = static_cast<uint64_t>(data.toTraceNs(o.start));
    folder.closeBefore(t.stack, start);
    if (!t.stack.empty() && t.stack.back().end != Folder::kOpenEnd) {
      open(data, t, o);
      return false;
    }
    folder.pushEnded(t.stack, start, static_cast<uint64_t>(data.toTraceNs(e.end)), folder.rangeNode(data, t.stack, o.name));
    return true;
  }
  // The thread's end: what is held folds, every frame closes.
  void closeThread(const TraceData& data, Thread& t) {
    flushHeld(data, t);
    while (!t.stack.empty()) {
      // A range still open here has no end in the trace either: it counts no time.
      if (t.stack.back().end == Folder::kOpenEnd) folder.end(t.stack, t.stack.back(), t.stack.back().start, t.stack.back().start);
      folder.close(t.stack);
    }
  }
  // Whether the range `e` is the end of `frame`, a range still open (open() marks it with the
  // range's seq + 1).
  [[gnu::always_inline]] static bool endsFrame(const Folder::Open& frame, const Event& e) {
    return frame.seq == e.seq + 1 && frame.end == Folder::kOpenEnd;
  }
  void open(const TraceData& data, Thread& t, const ThreadTrack::RangeOpen& o) {
    flushHeld(data, t);
    const uint64_t start = static_cast<uint64_t>(data.toTraceNs(o.start));
    folder.closeBefore(t.stack, start);
    Folder::Open& frame = folder.push(t.stack, start, Folder::kOpenEnd, folder.rangeNode(data, t.stack, o.name), false, 0);
    if (frame.end == Folder::kOpenEnd) frame.seq = o.seq + 1;  // 0: no open range
  }
  [[gnu::always_inline]] void event(const TraceData& data, Thread& t, const Event& e) {
    if (!folder.folds(data, e)) return;
    if (e.flags & kEventInsideCall) {
      if (t.inner == nullptr && t.held.empty() && e.kind == EventKind::Api) {
        t.inner = &e;
        return;
      }
      keepInner(t);
      hold(data, t, e);
      return;
    }
    if (t.inner != nullptr) {
      // The call the inner one ran in (the most common group): entered as flushHeld() would.
      if (e.kind == EventKind::Api && timelineBefore(e, *t.inner)) {
        completePair(data, t, e, *t.inner);
        t.inner = nullptr;
        return;
      }
      keepInner(t);
    }
    if (e.kind == EventKind::NvtxRange) {
      // The end of a range opened earlier: the frames above it ended inside it.
      for (std::size_t i = t.stack.size(); i-- > 0;) {
        if (!endsFrame(t.stack[i], e)) continue;
        flushHeld(data, t);
        while (t.stack.size() > i + 1) folder.close(t.stack);
        folder.end(t.stack, t.stack[i], static_cast<uint64_t>(data.toTraceNs(e.start)),
                   static_cast<uint64_t>(data.toTraceNs(e.end)));
        t.stack[i].seq = 0;
        return;
      }
    }
    if (t.held.empty()) {  // nothing ran inside it (most calls): no need to hold it
      if (e.kind == EventKind::Api) return completeLeaf(data, t, e);
      // A range with no open (the drain saw its push and pop together, so nothing was recorded
      // inside it): counted as complete() would with its label, the node found through the last
      // range's, without entering the stack (nothing later can be inside it).
      const uint64_t start = static_cast<uint64_t>(data.toTraceNs(e.start));
      folder.closeBefore(t.stack, start);
      folder.leaf(t.stack, start, static_cast<uint64_t>(data.toTraceNs(e.end)), folder.rangeNode(data, t.stack, e.name));
      return;
    }
    // The call the one held call ran in (a runtime call and the driver call it made, the most
    // common group): entered as flushHeld() would, without holding it too.
    if (t.held.size() == 1 && e.kind == EventKind::Api && t.held.front().first.kind == EventKind::Api &&
        timelineBefore(e, t.held.front().first)) {
      complete(data, t, e, Folder::kNone);
      completeLeaf(data, t, t.held.front().first);
      t.held.clear();
      return;
    }
    hold(data, t, e);
    flushHeld(data, t);
  }
};

FoldBuilder::FoldBuilder(const FoldOptions& options) : impl_(std::make_unique<Impl>(options)) {}
FoldBuilder::~FoldBuilder() = default;

void FoldBuilder::pass(const TraceData& data) {
  Impl& b = *impl_;
  if (b.threads.size() < data.threads.size()) b.threads.resize(data.threads.size());
  data.forEachChanged([&](std::size_t ti) { b.passThread(data, ti); });
}

void FoldBuilder::Impl::passThread(const TraceData& data, std::size_t ti) {
  const ThreadTrack& track = data.threads[ti];
  Thread& t = data.slotState(threads, ti);  // a slot another thread left: that one was closed at its exit
  // The lists hold what came since they were last released: continue where this left off.
  std::size_t i = t.folded > track.released ? static_cast<std::size_t>(t.folded - track.released) : 0;
  std::size_t o = t.opened > track.releasedOpens ? static_cast<std::size_t>(t.opened - track.releasedOpens) : 0;
  // Ranges that are no frames (FoldOptions::nvtxFrames off) open none: their ends are skipped
  // as every other event that does not fold, and an opened frame would never be ended.
  if (!folder.rangeFrames()) o = track.opens.size();
  // The next open's place, or past every event: the loop over a run compares one number.
  auto nextOpen = [&] { return o < track.opens.size() ? std::size_t{track.opens[o].before} : SIZE_MAX; };
  Repeats rep;
  for (std::size_t at = nextOpen(); i < track.events.size();) {
    const auto run = track.events.run(i);
    for (std::size_t k = 0; k < run.count; ++k, ++i) {
      const Event& e = run.at[k];
      if (rep.on && at > i && repeats(data, t, rep, e)) continue;
      flushRepeats(t, rep);
      if (__builtin_expect(at <= i, 0)) {
        for (; o + 1 < track.opens.size() && track.opens[o + 1].before <= i; ++o) open(data, t, track.opens[o]);
        // The last range opened before this event: when the event is that range's end, nothing
        // was recorded inside it (a loop's ranges around nothing traced, PyTorch's op ranges).
        const bool ended = openEnded(data, t, track.opens[o], e);
        ++o;
        at = nextOpen();
        if (ended) continue;
      }
      event(data, t, e);
      startRepeats(t, rep, e);
    }
  }
  flushRepeats(t, rep);
  for (; o < track.opens.size(); ++o) open(data, t, track.opens[o]);
  keepInner(t);  // the pass's events are released after it
  t.folded = track.released + track.events.size();
  t.opened = track.releasedOpens + track.opens.size();
  // Nothing more folds on a thread that exited (ThreadTrack::exited): it is closed as finish()
  // would close it, and its lists are given back.
  if (track.exited && (!t.stack.empty() || t.stack.capacity() != 0 || t.held.capacity() != 0)) {
    closeThread(data, t);
    Folder::Stack().swap(t.stack);
    decltype(t.held)().swap(t.held);
  }
}

FoldedStacks FoldBuilder::finish(const TraceData& data) {
  pass(data);
  Impl& b = *impl_;
  for (Impl::Thread& t : b.threads) b.closeThread(data, t);
  b.f.finish();
  return std::move(b.f);
}

void writeFolded(const FoldedStacks& folded, FoldWeight weight, Sink& out) {
  for (const auto& [stack, w] : folded) {
    const uint64_t value = weight == FoldWeight::HostTime ? w.hostNs : weight == FoldWeight::Calls ? w.calls : w.gpuNs;
    if (value == 0) continue;
    out.put(stack);
    out.put(' ');
    out.putUint(value);
    out.put('\n');
  }
}

}  // namespace cutrace
