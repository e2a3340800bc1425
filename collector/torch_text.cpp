#include "collector/torch_text.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>

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
    // Only brackets change the depth, which first comes back to 0 at the matching one. Sizes
    // lists are a third brackets: 16 bytes are looked at a time and only their brackets visited
    // (a branch per byte, mispredicted on every bracket, was a tenth of the drain's time).
    int depth = 0;
    std::size_t i = 0;
#if defined(__SSE2__)
    const __m128i open = _mm_set1_epi8('['), close = _mm_set1_epi8(']');
    // The matching bracket's offset in the 16 bytes at `p`, or -1 (depth carried on).
    const auto step = [&](const char* p) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const auto opens = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, open)));
      for (uint32_t brackets = opens | static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, close))); brackets != 0;
           brackets &= brackets - 1) {
        const int bit = __builtin_ctz(brackets);
        depth += (opens >> bit & 1) ? 1 : -1;
        if (depth == 0) return bit;
      }
      return -1;
    };
    for (; i + 16 <= s.size(); i += 16)
      if (const int at = step(s.data() + i); at >= 0) return i + static_cast<std::size_t>(at) + 1;
    // The last bytes (an op's input_op_ids end its text), copied into 16 with no bracket after them.
    if (i < s.size()) {
      char tail[16] = {};
      memcpy(tail, s.data() + i, s.size() - i);
      if (const int at = step(tail); at >= 0) return i + static_cast<std::size_t>(at) + 1;
    }
#else
    for (; i < s.size(); ++i) {
      depth += (s[i] == '[') - (s[i] == ']');
      if (depth == 0) return i + 1;
    }
#endif
    return s.size();
  }
  const std::size_t comma = s.find(", ");
  return comma == std::string_view::npos ? s.size() : comma;
}

// Whether `s` begins with the literal `lit` (a constant length: the compare is a few moves).
template <std::size_t N>
[[gnu::always_inline]] inline bool startsWith(std::string_view s, const char (&lit)[N]) {
  return s.size() >= N - 1 && memcmp(s.data(), lit, N - 1) == 0;
}
// The same, with something after it (a field's prefix, then its value).
template <std::size_t N>
[[gnu::always_inline]] inline bool leads(std::string_view s, const char (&lit)[N]) {
  return s.size() > N - 1 && startsWith(s, lit);
}

// Whether `rest` is "<key> = <at least one character>" for a known key (seq, stashed seq, op_id,
// sizes, input_op_ids, scope).
bool knownField(std::string_view rest) {
  const auto is = [rest](const auto& prefix) { return leads(rest, prefix); };
  switch (rest.empty() ? '\0' : rest.front()) {
    case 's':
      return is("seq = ") || is("sizes = ") || is("stashed seq = ") || is("scope = ");
    case 'o':
      return is("op_id = ");
    case 'i':
      return is("input_op_ids = ");
    default:
      return false;
  }
}

// Position of the first ", key = " of a known key, npos when none.
std::size_t firstField(std::string_view text) {
  for (std::size_t at = 0; at < text.size(); ++at) {
    const void* comma = memchr(text.data() + at, ',', text.size() - at);
    if (comma == nullptr) return std::string_view::npos;
    at = static_cast<std::size_t>(static_cast<const char*>(comma) - text.data());
    if (at + 1 < text.size() && text[at + 1] == ' ' && knownField(text.substr(at + 2))) return at;
  }
  return std::string_view::npos;
}

}  // namespace

TorchPayload torchPayload(const TorchOp& op, uint32_t sizes, uint32_t inputOpIds) {
  TorchPayload t{};
  t.fields = static_cast<uint8_t>(kTorchParts | (op.hasSeq ? kTorchSeq : 0) | (op.stashed ? kTorchStashed : 0) |
                                  (op.hasOpId ? kTorchOpId : 0));
  t.seq = op.seq;
  t.opId = op.opId;
  t.sizes = sizes;
  t.inputOpIds = inputOpIds;
  return t;
}

bool isBackwardFunction(std::string_view name) {
  if (startsWith(name, "autograd::engine::evaluate_function:")) return true;
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

void renderTorchRange(const TorchOp& op, std::string& out) {
  const auto number = [&out](uint64_t v) {
    char digits[20];
    out.append(digits, std::to_chars(digits, digits + sizeof(digits), v).ptr);
  };
  out.append(op.name);
  if (op.hasSeq) {
    out.append(op.stashed ? ", stashed seq = " : ", seq = ");
    number(op.seq);
  }
  if (op.hasOpId) {
    out.append(", op_id = ");
    number(op.opId);
  }
  if (!op.sizes.empty()) {
    out.append(", sizes = ");
    out.append(op.sizes);
  }
  if (!op.inputOpIds.empty()) {
    out.append(", input_op_ids = ");
    out.append(op.inputOpIds);
  }
}

bool parseExactTorchRange(std::string_view text, TorchOp& out) {
  // One pass, in PyTorch's order, each field at most once; anything else (another order, a
  // field twice, one parseTorchRange skips or reads differently) fails, as it would fail to
  // render back. The name ends where parseTorchRange ends it.
  const std::size_t first = firstField(text);
  if (first == std::string_view::npos || first == 0 || text.front() == ' ' || text[first - 1] == ' ') return false;
  TorchOp op;
  op.name = text.substr(0, first);
  std::string_view rest = text.substr(first);
  // `prefix` is ", <key> = ", as PyTorch writes it.
  const auto field = [&rest](const auto& prefix) {
    if (!leads(rest, prefix)) return false;
    rest.remove_prefix(sizeof(prefix) - 1);
    return true;
  };
  const auto value = [&rest] {
    const std::string_view v = rest.substr(0, valueEnd(rest));
    rest.remove_prefix(v.size());
    return v;
  };
  // As renderTorchRange writes a number: no sign, no leading zero, at most 19 digits; the value
  // (up to the next ", ") is its digits alone. Read digit by digit, with no search for the ", "
  // first (about 50 instructions an op range).
  const auto number = [&rest](uint64_t& n) {
    std::size_t i = 0;
    uint64_t v = 0;
    for (; i < rest.size() && i < 20 && rest[i] >= '0' && rest[i] <= '9'; ++i) v = v * 10 + static_cast<uint64_t>(rest[i] - '0');
    if (i == 0 || i > 19 || (i > 1 && rest[0] == '0')) return false;
    if (i < rest.size() && (i + 1 >= rest.size() || rest[i] != ',' || rest[i + 1] != ' ')) return false;
    rest.remove_prefix(i);
    n = v;
    return true;
  };
  const bool seq = field(", seq = ");
  op.stashed = !seq && field(", stashed seq = ");
  if (seq || op.stashed) {
    if (!number(op.seq)) return false;
    op.hasSeq = true;
  }
  if (field(", op_id = ")) {
    if (!number(op.opId)) return false;
    op.hasOpId = true;
  }
  if (field(", sizes = ") && (op.sizes = value()).empty()) return false;
  if (field(", input_op_ids = ") && (op.inputOpIds = value()).empty()) return false;
  if (!rest.empty() || (!op.hasSeq && !op.hasOpId && op.sizes.empty())) return false;
  op.backward = op.stashed || isBackwardFunction(op.name);
  out = op;
  return true;
}

}  // namespace cutrace
