#pragma once
// What a folded-stacks file must satisfy to draw right in flamegraph.pl (and speedscope,
// inferno), checked the way flamegraph.pl reads a line, for tests that run where flamegraph.pl
// is not installed. Shared by trace_check (e2e) and the unit tests.
//
// - every line matches flamegraph.pl's pattern `^(.*)\s+?(\d+(?:\.\d*)?)$`;
// - no line has weight 0: flamegraph.pl names a box "function;depth;end", so a zero-width box
//   of the same name overwrites the real one;
// - no stack ends in whitespace and a number: flamegraph.pl then reads the line as a
//   differential one, that number becoming the first weight;
// - the weights of a file that has lines sum to more than 0 ("No stack counts found").

#include <cstdint>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace cutrace::test {

struct FoldedRules {
  uint64_t lines = 0;
  uint64_t total = 0;
  std::vector<std::string> problems;
};

inline FoldedRules checkFoldedRules(const std::string& text) {
  static const std::regex kLine(R"(^(.*)\s+?(\d+(?:\.\d*)?)$)");
  FoldedRules r;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    ++r.lines;
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) {
      r.problems.push_back("flamegraph.pl cannot read: " + line);
      continue;
    }
    const std::string stack = m[1].str();
    const uint64_t weight = std::stoull(m[2].str());
    if (weight == 0) r.problems.push_back("weight 0 (erases a box of the same name): " + line);
    if (std::regex_match(stack, kLine)) r.problems.push_back("read as a differential line: " + line);
    r.total += weight;
  }
  if (r.lines > 0 && r.total == 0) r.problems.push_back("weights sum to 0: nothing to draw");
  return r;
}

}  // namespace cutrace::test
