// `cutrace diff`: compares the rows of two traces or reports by total time; a CI gate.
//
// Rule: a row present on both sides regressed when new > base, the increase is more than
// --threshold percent of base (any increase when base is 0) and at least --min-us. A row only
// in NEW ("new") regressed when its total is at least --min-us (so, by default, any new row);
// a row only in BASE ("gone") never did. Kernel rows compare GPU time when both sides have
// device events, else host launch time. Op rows compare host time, keyed by name and input
// shapes.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exporters/json_writer.h"
#include "tools/commands.h"
#include "tools/output_file.h"
#include "tools/report_model.h"

namespace cutrace::tools {
namespace {

constexpr const char* kUsage = R"(usage: cutrace diff BASE NEW [options]

Compares two traces or two `cutrace report --format json` outputs (or one of each), row by
row (table and name) by total time. Exit 1 when a row regressed, 0 otherwise. BASE or NEW
'-' reads standard input; pipes such as <(zcat t.json.gz) are read as streams.

options:
  --threshold PCT          a row regressed when its total grew by more than PCT percent
                           (default 10) ...
  --min-us US              ... and by at least US microseconds (default 0)
  --by api|kernel|nvtx|op|all
                           tables compared (default all)
  --group-by-shapes        op rows of a trace per (name, input shapes); a report keeps the
                           grouping it was written with, and both sides must agree
  --format table|json|markdown
                           output format (default table; markdown: a GitHub-flavoured table
                           for a CI job's summary or a pull-request comment)
  -o FILE                  write to FILE instead of stdout

Rows only in NEW are "new" and regress when their total is at least --min-us; rows only in
BASE are "gone" and never regress. A table missing from a report (written with --by) is not
compared. Kernel rows compare GPU time when both sides have device
(CUPTI) events, else host launch time. Op rows (PyTorch ops) compare host time, matched by
name and input shapes. Unchanged rows are counted, not listed.
exit: 0 no regression, 1 regression, 2 usage, 3 unreadable or malformed input, 4 output.
)";

struct Change {
  Section section;
  std::string name;
  std::string shapes;  // op rows grouped by input shapes
  bool inBase = false, inNew = false;
  int64_t baseNs = 0, newNs = 0;
  bool regressed = false;
  int64_t delta() const { return newNs - baseNs; }
};

bool parseDouble(const std::string& text, double& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out) && out >= 0;
}

std::string status(const Change& c) {
  std::string s = !c.inBase ? "new" : !c.inNew ? "gone" : c.delta() > 0 ? "slower" : "faster";
  return c.regressed ? s + ", REGRESSED" : s;
}

std::string deltaPct(const Change& c) {
  if (!c.inBase || !c.inNew) return "-";
  if (c.baseNs == 0) return c.newNs == 0 ? "0.0%" : "inf";
  return fmt::format("{:+.1f}%", 100.0 * static_cast<double>(c.delta()) / static_cast<double>(c.baseNs));
}

std::string signedDuration(int64_t ns) { return (ns > 0 ? "+" : "") + formatDuration(ns); }

std::string displayName(const Change& c) { return c.shapes.empty() ? c.name : c.name + " " + c.shapes; }

}  // namespace

int diffCommand(int argc, char** argv) {
  Options opts;
  std::string error;
  if (!parseOptions(argc, argv, {"--threshold", "--min-us", "--by", "--format", "-o", "--output"}, {"--group-by-shapes"},
                    opts, error)) {
    spdlog::error("diff: {} (see 'cutrace diff --help')", error);
    return kExitUsage;
  }
  if (opts.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  double threshold = 10, minUs = 0;
  std::vector<Section> sections = {Section::Api, Section::Kernel, Section::Nvtx, Section::Op};
  ReadOptions readOptions;
  readOptions.groupByShapes = opts.has("--group-by-shapes");
  std::string format = "table", output;
  for (const auto& [name, value] : opts.values) {
    bool ok = true;
    if (name == "--threshold") {
      ok = parseDouble(value, threshold);
    } else if (name == "--min-us") {
      ok = parseDouble(value, minUs) && minUs < 1e12;
    } else if (name == "--by") {
      ok = parseSections(value, sections);
    } else if (name == "--format") {
      format = value;
      ok = format == "table" || format == "json" || format == "markdown";
    } else {
      output = value;
    }
    if (!ok) {
      spdlog::error("diff: bad value '{}' for {} (see 'cutrace diff --help')", value, name);
      return kExitUsage;
    }
  }
  if (opts.positional.size() != 2) {
    spdlog::error("diff: expected BASE and NEW (see 'cutrace diff --help')");
    return kExitUsage;
  }
  Report reports[2];
  for (int side = 0; side < 2; ++side) {
    if (!readTraceOrReport(opts.positional[static_cast<std::size_t>(side)], reports[side], error, readOptions)) {
      spdlog::error("{}", error);
      return kExitBadInput;
    }
  }
  constexpr auto kOp = static_cast<std::size_t>(Section::Op);
  const bool compareOps = std::find(sections.begin(), sections.end(), Section::Op) != sections.end() &&
                          reports[0].present[kOp] && reports[1].present[kOp];
  if (compareOps && reports[0].opsGroupedByShapes != reports[1].opsGroupedByShapes) {
    // Rows per name against rows per shape would all read as new and gone.
    spdlog::error("diff: op rows of {} are {}grouped by input shapes and those of {} {} (a report keeps the grouping it was "
                  "written with; see --group-by-shapes)",
                  opts.positional[0], reports[0].opsGroupedByShapes ? "" : "not ", opts.positional[1],
                  reports[1].opsGroupedByShapes ? "are" : "are not");
    return kExitUsage;
  }
  const int64_t minNs = std::llround(minUs * 1000.0);
  const bool deviceKernels = reports[0].deviceKernels && reports[1].deviceKernels;
  std::map<std::tuple<Section, std::string, std::string>, Change> changes;
  for (int side = 0; side < 2; ++side) {
    for (const Section s : sections) {
      const auto si = static_cast<std::size_t>(s);
      if (!reports[0].present[si] || !reports[1].present[si]) continue;
      for (const Row& r : reports[side].sections[si]) {
        Change& c = changes[{s, r.name, r.shapes}];
        c.section = s;
        c.name = r.name;
        c.shapes = r.shapes;
        const int64_t ns = s == Section::Kernel && !deviceKernels ? r.hostNs : r.totalNs;
        (side == 0 ? c.inBase : c.inNew) = true;
        (side == 0 ? c.baseNs : c.newNs) = ns;
      }
    }
  }
  std::vector<Change> listed;
  std::size_t regressions = 0;
  for (auto& [key, c] : changes) {
    if (c.inBase && c.inNew) {
      const double pct = c.baseNs == 0 ? INFINITY : 100.0 * static_cast<double>(c.delta()) / static_cast<double>(c.baseNs);
      c.regressed = c.delta() > 0 && pct > threshold && c.delta() >= minNs;
    } else {
      c.regressed = c.inNew && c.newNs >= minNs;
    }
    regressions += c.regressed ? 1 : 0;
    if (!c.inBase || !c.inNew || c.delta() != 0) listed.push_back(c);
  }
  // Per table, the largest increase first; ties by name.
  std::sort(listed.begin(), listed.end(), [](const Change& a, const Change& b) {
    if (a.section != b.section) return a.section < b.section;
    if (a.delta() != b.delta()) return a.delta() > b.delta();
    return std::tie(a.name, a.shapes) < std::tie(b.name, b.shapes);
  });
  std::string text;
  const std::string summary =
      fmt::format("{} rows compared, {} changed, {} regressed (threshold {}%, min {} us)", changes.size(), listed.size(),
                  regressions, threshold, minUs);
  if (format == "json") {
    text = fmt::format("{{\"tool\":\"cutrace-diff\",\"version\":1,\"threshold_pct\":{},\"min_us\":{},\"compared\":{},"
                       "\"regressions\":{},\"rows\":[",
                       threshold, minUs, changes.size(), regressions);
    for (std::size_t i = 0; i < listed.size(); ++i) {
      const Change& c = listed[i];
      const std::string pct = c.inBase && c.inNew && c.baseNs != 0
                                  ? fmt::format("{:.2f}", 100.0 * static_cast<double>(c.delta()) / static_cast<double>(c.baseNs))
                                  : "null";
      // Op rows say their shapes (null when not grouped); other rows keep their fields.
      const std::string shapes =
          c.section != Section::Op ? "" : ",\"shapes\":" + (c.shapes.empty() ? std::string("null") : jsonStringLiteral(c.shapes));
      text += fmt::format("{}\n{{\"section\":\"{}\",\"name\":{}{},\"status\":\"{}\",\"base_ns\":{},\"new_ns\":{},"
                          "\"delta_ns\":{},\"delta_pct\":{},\"regressed\":{}}}",
                          i ? "," : "", kSectionKeys[static_cast<std::size_t>(c.section)], jsonStringLiteral(c.name), shapes,
                          !c.inBase ? "new" : !c.inNew ? "gone" : "changed", c.inBase ? std::to_string(c.baseNs) : "null",
                          c.inNew ? std::to_string(c.newNs) : "null", c.delta(), pct, c.regressed);
    }
    text += "]}\n";
  } else {
    std::vector<std::vector<std::string>> cells;
    for (const Change& c : listed) {
      cells.push_back({displayName(c), kSectionKeys[static_cast<std::size_t>(c.section)], c.inBase ? formatDuration(c.baseNs) : "-",
                       c.inNew ? formatDuration(c.newNs) : "-", signedDuration(c.delta()), deltaPct(c), status(c)});
    }
    const std::vector<std::string> header = {"Name", "Table", "Base", "New", "Delta", "Delta %", "Status"};
    if (format == "markdown") {
      if (!cells.empty()) text = renderMarkdownTable(header, cells) + "\n";
      text += markdownText(summary) + "\n";
    } else {
      if (!cells.empty()) text = renderTable(header, cells) + "\n";
      text += summary + "\n";
    }
  }
  if (std::string error; !writeOutputText(output, text, error)) {
    spdlog::error("diff: {}", error);
    return kExitOutput;
  }
  return regressions > 0 ? kExitCheckFailed : kExitOk;
}

}  // namespace cutrace::tools
