#include "exporters/frame_names.h"

namespace cutrace {
namespace {

constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // U+2026

bool identifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Index of the bracket closing the one at `open`, counting both kinds; npos when unbalanced.
std::size_t closingBracket(std::string_view s, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      // "->" inside a group (a decltype, a function pointer's trailing return) is no bracket.
      if (c == '>' && i > 0 && s[i - 1] == '-') continue;
      if (--depth == 0) return i;
    }
  }
  return std::string_view::npos;
}

bool endsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && std::string_view(s).substr(s.size() - tail.size()) == tail;
}

}  // namespace

std::string shownFrameName(std::string_view name) {
  std::string out;
  out.reserve(name.size() < kShownFrameBytes ? name.size() : kShownFrameBytes);
  for (std::size_t i = 0; i < name.size();) {
    const char c = name[i];
    if (endsWith(out, "operator")) {
      // The operator's own symbols are no brackets: operator(), operator<<, operator->...
      if (name.substr(i, 2) == "()" || name.substr(i, 2) == "[]") {
        out.append(name.substr(i, 2));
        i += 2;
        continue;
      }
      std::size_t j = i;
      while (j < name.size() && std::string_view("<>=!+-*/%^&|~,").find(name[j]) != std::string_view::npos) ++j;
      if (j > i) {
        out.append(name.substr(i, j - i));
        i = j;
        continue;
      }
    }
    // Only a bracket right after a name, a closing bracket or a lambda's "}" opens a template
    // argument or parameter list. One after a space or at the start is something else: a
    // Python frame's "(file:line)", "<module>", "(anonymous namespace)".
    const bool opens = (c == '<' || c == '(') && i > 0 &&
                       (identifierChar(name[i - 1]) || name[i - 1] == '>' || name[i - 1] == ')' || name[i - 1] == '}');
    if (!opens) {
      out.push_back(c);
      ++i;
      continue;
    }
    const std::size_t close = closingBracket(name, i);
    if (close == std::string_view::npos) {
      out.append(name.substr(i));
      break;
    }
    if (close - i - 1 > kShownGroupBytes) {
      out.push_back(c);
      out.append(kEllipsis);
      out.push_back(name[close]);
    } else {
      out.append(name.substr(i, close - i + 1));
    }
    i = close + 1;
  }
  if (out.size() > kShownFrameBytes) {
    std::size_t cut = kShownFrameBytes - kEllipsis.size();
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;  // not inside a character
    out.resize(cut);
    out.append(kEllipsis);
  }
  return out;
}

}  // namespace cutrace
