// `cutrace report`: torch.profiler-style tables (key_averages) from cutrace traces.
//
// JSON schema (--format json), version 1; times are integer nanoseconds (ts/dur rounded):
//   {"tool":"cutrace-report","version":1,"inputs":[path...],"processes":N,"wall_ns":N,
//    "gpu_busy_ns":N,"kernel_source":"device"|"launch","note":string|null,
//    "group_by_shapes":bool,            // op rows per (name, input shapes)
//    "sections":{                       // only the sections asked for with --by
//      "api":[{"name","layer":"runtime"|"driver","calls","total_ns","self_ns","avg_ns",
//              "min_ns","max_ns","percent"}],          // percent of wall, null when wall is 0
//      "kernel":[{"name","launches","host_total_ns","captured","calls","total_ns","avg_ns",
//                 "min_ns","max_ns","percent"}],  // GPU figures, null without device events;
//                 // captured: launches made into a stream capture (CUDA graphs), not in
//                 // launches nor host_total_ns
//      "nvtx":[{"name","calls","total_ns","self_ns","avg_ns","min_ns","max_ns"}],
//      "op":[{"name","shapes":string|null,"calls","total_ns","self_ns","avg_ns","min_ns",
//             "max_ns",                 // host: the op's NVTX ranges (emit_nvtx)
//             "gpu_total_ns","gpu_avg_ns","kernels","percent"}]}}
//             // GPU: kernels launched in the op (innermost range), avg per call, percent of
//             // GPU busy; null without device events (gpu_avg_ns also when calls is 0)
// avg = total / calls rounded to nearest. shapes: the op's sizes as compact JSON text (or the
// string the tracer wrote), only with --group-by-shapes. "op" is in "all" only when the
// traces have op ranges.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exporters/json_writer.h"
#include "tools/commands.h"
#include "tools/output_file.h"
#include "tools/report_model.h"

namespace cutrace::tools {
namespace {

constexpr const char* kUsage = R"(usage: cutrace report [options] TRACE...

Tables by CUDA API, kernel, NVTX range and PyTorch op from cutrace Chrome traces; several
traces are several processes, aggregated by name. TRACE '-' reads standard input; pipes
such as <(zcat t.json.gz) are read as streams.

options:
  --by api|kernel|nvtx|op|all
                             which tables (default all: op only when there are op ranges)
  --group-by-shapes          op rows per (name, input shapes), as torch.profiler's
                             key_averages(group_by_input_shape=True)
  --sort total|self|calls|avg|min|max|gpu|name
                             order, descending (name ascending); ties by name (default total);
                             gpu: GPU time of kernel and op rows (else as total)
  --limit N                  at most N rows per table
  --format table|csv|json|markdown
                             output format (default table; markdown: GitHub-flavoured
                             tables for a CI job's summary or a pull-request comment)
  -o FILE                    write to FILE instead of stdout

Tables: times are 3 decimals of us, ms or s; csv and json give integer nanoseconds.
  api     calls, total, self (minus nested CUDA calls on the same thread), avg, min, max,
          % of wall (sum over processes of first-to-last event)
  kernel  launches and host launch time; with device (CUPTI) events the GPU executions,
          GPU total/avg/min/max and % of GPU busy time (union of kernel intervals per device);
          launches made while their stream was captured into a CUDA graph are counted apart
          (Captured, shown when there are any): their kernels run in the graph's replays
  nvtx    calls, total, self (minus nested ranges), avg, min, max
  op      PyTorch ops from emit_nvtx ranges (op_seq, op_id or sizes in args): calls, host
          total, self (minus nested NVTX ranges), avg; with device events the GPU total and
          avg per call of the kernels launched inside the op (innermost op range, matched by
          op_id; by op name when there is none and rows are per name), kernel count and %
          of GPU busy time
csv: one table, columns section,name,layer,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,
     percent,launches,host_total_ns,shapes,gpu_total_ns,gpu_avg_ns,kernels,captured (empty
     where a column does not apply).
exit: 0 ok, 2 usage, 3 unreadable or malformed input, 4 output not written.
)";

constexpr const char* kTitles[] = {"By CUDA API", "By kernel", "By NVTX range", "By PyTorch op"};

std::string pct(double p) { return p < 0 ? "-" : fmt::format("{:.2f}", p); }

bool gpuColumns(const Row& r) { return r.calls > 0; }

// Op rows' GPU average is per op call; a row made only of kernels naming the op has none.
bool opGpuAvg(const Report& rep, const Row& r) { return rep.deviceKernels && r.calls > 0; }

int64_t opGpuAvgNs(const Row& r) {
  return r.calls == 0 ? 0 : (r.gpuNs + static_cast<int64_t>(r.calls / 2)) / static_cast<int64_t>(r.calls);
}

const char* kNoDeviceNote = "note: no device kernel events (GPU times need CUPTI and a GPU)";

// `markdown`: titles as headings, tables and notes as GitHub-flavoured Markdown (a CI job's
// summary); else text tables for a terminal.
std::string renderTables(const Report& rep, const std::vector<Section>& sections, bool markdown) {
  std::string out;
  const auto title = [&](const std::string& text) { out += markdown ? "### " + markdownText(text) + "\n\n" : text + "\n"; };
  const auto note = [&](const std::string& text) { out += markdown ? markdownText(text) + "\n\n" : text + "\n"; };
  for (const Section s : sections) {
    const auto& rows = rep.sections[static_cast<std::size_t>(s)];
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> cells;
    if (s == Section::Api) {
      title(fmt::format("{} (wall {} over {} process{})", kTitles[0], formatDuration(rep.wallNs), rep.processes,
                        rep.processes == 1 ? "" : "es"));
      header = {"Name", "Layer", "Calls", "Total", "Self", "Avg", "Min", "Max", "% Wall"};
      for (const Row& r : rows) {
        cells.push_back({r.name, r.layer, std::to_string(r.calls), formatDuration(r.totalNs), formatDuration(r.selfNs),
                         formatDuration(r.avgNs()), formatDuration(r.minNs), formatDuration(r.maxNs), pct(r.percent)});
      }
    } else if (s == Section::Kernel) {
      title(rep.deviceKernels ? fmt::format("{} (GPU busy {})", kTitles[1], formatDuration(rep.gpuBusyNs))
                              : std::string(kTitles[1]));
      header = {"Name", "Launches", "Host total", "GPU calls", "GPU total", "GPU avg", "GPU min", "GPU max", "% GPU busy"};
      const bool captured = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.captured > 0; });
      if (captured) header.insert(header.begin() + 3, "Captured");
      for (const Row& r : rows) {
        const bool gpu = gpuColumns(r);
        cells.push_back({r.name, std::to_string(r.launches), formatDuration(r.hostNs), gpu ? std::to_string(r.calls) : "-",
                         gpu ? formatDuration(r.totalNs) : "-", gpu ? formatDuration(r.avgNs()) : "-",
                         gpu ? formatDuration(r.minNs) : "-", gpu ? formatDuration(r.maxNs) : "-", pct(r.percent)});
        if (captured) cells.back().insert(cells.back().begin() + 3, std::to_string(r.captured));
      }
    } else if (s == Section::Op) {
      const char* by = rep.opsGroupedByShapes ? " and input shapes" : "";
      title(rep.deviceKernels ? fmt::format("{}{} (GPU busy {})", kTitles[3], by, formatDuration(rep.gpuBusyNs))
                              : fmt::format("{}{}", kTitles[3], by));
      header = {"Name", "Calls", "Host total", "Host self", "Host avg", "GPU total", "GPU avg", "Kernels", "% GPU busy"};
      if (rep.opsGroupedByShapes) header.insert(header.begin() + 1, "Input shapes");
      for (const Row& r : rows) {
        const bool gpu = rep.deviceKernels;
        cells.push_back({r.name, std::to_string(r.calls), formatDuration(r.totalNs), formatDuration(r.selfNs),
                         formatDuration(r.avgNs()), gpu ? formatDuration(r.gpuNs) : "-",
                         opGpuAvg(rep, r) ? formatDuration(opGpuAvgNs(r)) : "-", gpu ? std::to_string(r.kernels) : "-",
                         pct(r.percent)});
        if (rep.opsGroupedByShapes) cells.back().insert(cells.back().begin() + 1, r.shapes.empty() ? "-" : r.shapes);
      }
    } else {
      title(kTitles[2]);
      header = {"Name", "Calls", "Total", "Self", "Avg", "Min", "Max"};
      for (const Row& r : rows) {
        cells.push_back({r.name, std::to_string(r.calls), formatDuration(r.totalNs), formatDuration(r.selfNs),
                         formatDuration(r.avgNs()), formatDuration(r.minNs), formatDuration(r.maxNs)});
      }
    }
    if (cells.empty())
      out += markdown ? "(none)\n\n" : "(none)\n";
    else
      out += markdown ? renderMarkdownTable(header, cells) + "\n" : renderTable(header, cells);
    const std::string cupti = rep.cuptiNote.empty() ? "" : fmt::format(" ({})", rep.cuptiNote);
    if (s == Section::Kernel && !rep.deviceKernels) note(fmt::format("{}; kernels listed by host launch{}", kNoDeviceNote, cupti));
    if (s == Section::Op && !rep.deviceKernels && !cells.empty())
      note(fmt::format("{}; host times only{}", kNoDeviceNote, cupti));
    if (s == Section::Op && rep.opUnmatchedKernels > 0) {
      note(fmt::format("note: {} kernel{} launched in ops matched no op range by op_id{}; not in this table",
                       rep.opUnmatchedKernels, rep.opUnmatchedKernels == 1 ? "" : "s",
                       rep.opsGroupedByShapes ? " (shapes unknown)" : ""));
    }
    if (!markdown) out += "\n";
  }
  return out;
}

std::string renderCsv(const Report& rep, const std::vector<Section>& sections) {
  std::string out =
      "section,name,layer,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,percent,launches,host_total_ns,shapes,gpu_total_ns,"
      "gpu_avg_ns,kernels,captured\n";
  for (const Section s : sections) {
    const char* key = kSectionKeys[static_cast<std::size_t>(s)];
    for (const Row& r : rep.sections[static_cast<std::size_t>(s)]) {
      const std::string percent = r.percent < 0 ? "" : fmt::format("{:.2f}", r.percent);
      if (s == Section::Kernel) {
        const bool gpu = gpuColumns(r);
        out += gpu ? fmt::format("{},{},,{},{},,{},{},{},{},{},{},,,,,{}\n", key, csvField(r.name), r.calls, r.totalNs,
                                 r.avgNs(), r.minNs, r.maxNs, percent, r.launches, r.hostNs, r.captured)
                   : fmt::format("{},{},,,,,,,,,{},{},,,,,{}\n", key, csvField(r.name), r.launches, r.hostNs, r.captured);
      } else if (s == Section::Op) {
        const bool gpu = rep.deviceKernels;
        out += fmt::format("{},{},,{},{},{},{},{},{},{},,,{},{},{},{},\n", key, csvField(r.name), r.calls, r.totalNs,
                           r.selfNs, r.avgNs(), r.minNs, r.maxNs, percent, csvField(r.shapes),
                           gpu ? std::to_string(r.gpuNs) : "", opGpuAvg(rep, r) ? std::to_string(opGpuAvgNs(r)) : "",
                           gpu ? std::to_string(r.kernels) : "");
      } else {
        out += fmt::format("{},{},{},{},{},{},{},{},{},{},,,,,,,\n", key, csvField(r.name), r.layer, r.calls, r.totalNs,
                           r.selfNs, r.avgNs(), r.minNs, r.maxNs, s == Section::Api ? percent : "");
      }
    }
  }
  return out;
}

std::string renderJson(const Report& rep, const std::vector<Section>& sections, const std::vector<std::string>& inputs) {
  std::string out = "{\"tool\":\"cutrace-report\",\"version\":1,\"inputs\":[";
  for (std::size_t i = 0; i < inputs.size(); ++i) out += (i ? "," : "") + jsonStringLiteral(inputs[i]);
  out += fmt::format("],\"processes\":{},\"wall_ns\":{},\"gpu_busy_ns\":{},\"kernel_source\":\"{}\",\"note\":{},"
                     "\"group_by_shapes\":{},\"sections\":{{",
                     rep.processes, rep.wallNs, rep.gpuBusyNs, rep.deviceKernels ? "device" : "launch",
                     rep.cuptiNote.empty() ? "null" : jsonStringLiteral(rep.cuptiNote), rep.opsGroupedByShapes);
  for (std::size_t si = 0; si < sections.size(); ++si) {
    const Section s = sections[si];
    out += fmt::format("{}\n\"{}\":[", si ? "]," : "", kSectionKeys[static_cast<std::size_t>(s)]);
    const auto& rows = rep.sections[static_cast<std::size_t>(s)];
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const std::string percent = r.percent < 0 ? "null" : fmt::format("{:.2f}", r.percent);
      out += i ? ",\n{" : "\n{";
      out += "\"name\":" + jsonStringLiteral(r.name);
      if (s == Section::Kernel) {
        out += fmt::format(",\"launches\":{},\"host_total_ns\":{},\"captured\":{}", r.launches, r.hostNs, r.captured);
        if (gpuColumns(r)) {
          out += fmt::format(",\"calls\":{},\"total_ns\":{},\"avg_ns\":{},\"min_ns\":{},\"max_ns\":{},\"percent\":{}}}", r.calls,
                             r.totalNs, r.avgNs(), r.minNs, r.maxNs, percent);
        } else {
          out += ",\"calls\":null,\"total_ns\":null,\"avg_ns\":null,\"min_ns\":null,\"max_ns\":null,\"percent\":null}";
        }
        continue;
      }
      if (s == Section::Op) {
        const bool gpu = rep.deviceKernels;
        out += fmt::format(",\"shapes\":{},\"calls\":{},\"total_ns\":{},\"self_ns\":{},\"avg_ns\":{},\"min_ns\":{},"
                           "\"max_ns\":{},\"gpu_total_ns\":{},\"gpu_avg_ns\":{},\"kernels\":{},\"percent\":{}}}",
                           r.shapes.empty() ? "null" : jsonStringLiteral(r.shapes), r.calls, r.totalNs, r.selfNs, r.avgNs(), r.minNs,
                           r.maxNs, gpu ? std::to_string(r.gpuNs) : "null",
                           opGpuAvg(rep, r) ? std::to_string(opGpuAvgNs(r)) : "null", gpu ? std::to_string(r.kernels) : "null",
                           percent);
        continue;
      }
      if (s == Section::Api) out += ",\"layer\":" + jsonStringLiteral(r.layer);
      out += fmt::format(",\"calls\":{},\"total_ns\":{},\"self_ns\":{},\"avg_ns\":{},\"min_ns\":{},\"max_ns\":{}", r.calls,
                         r.totalNs, r.selfNs, r.avgNs(), r.minNs, r.maxNs);
      out += s == Section::Api ? fmt::format(",\"percent\":{}}}", percent) : "}";
    }
  }
  out += sections.empty() ? "}}\n" : "]}}\n";
  return out;
}

}  // namespace

int reportCommand(int argc, char** argv) {
  Options opts;
  std::string error;
  if (!parseOptions(argc, argv, {"--by", "--sort", "--limit", "--format", "-o", "--output"}, {"--group-by-shapes"}, opts,
                    error)) {
    spdlog::error("report: {} (see 'cutrace report --help')", error);
    return kExitUsage;
  }
  if (opts.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  std::vector<Section> sections = {Section::Api, Section::Kernel, Section::Nvtx, Section::Op};
  bool byAll = true;
  ReadOptions readOptions;
  readOptions.groupByShapes = opts.has("--group-by-shapes");
  SortKey sort = SortKey::Total;
  std::size_t limit = SIZE_MAX;
  std::string format = "table", output;
  for (const auto& [name, value] : opts.values) {
    bool ok = true;
    if (name == "--by") {
      ok = parseSections(value, sections);
      byAll = value == "all";
    } else if (name == "--sort") {
      ok = parseSortKey(value, sort);
    } else if (name == "--limit") {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
      ok = ec == std::errc() && end == value.data() + value.size();
    } else if (name == "--format") {
      format = value;
      ok = format == "table" || format == "csv" || format == "json" || format == "markdown";
    } else {
      output = value;
    }
    if (!ok) {
      spdlog::error("report: bad value '{}' for {} (see 'cutrace report --help')", value, name);
      return kExitUsage;
    }
  }
  if (opts.positional.empty()) {
    spdlog::error("report: no trace given (see 'cutrace report --help')");
    return kExitUsage;
  }
  Report rep;
  if (!readTraces(opts.positional, rep, error, readOptions)) {
    spdlog::error("{}", error);
    return kExitBadInput;
  }
  // A trace without PyTorch ops would only add an empty table to every report.
  if (byAll && rep.sections[static_cast<std::size_t>(Section::Op)].empty()) sections.pop_back();
  for (auto& rows : rep.sections) {
    const bool kernel = &rows == &rep.sections[static_cast<std::size_t>(Section::Kernel)];
    sortRows(rows, sort, !kernel || rep.deviceKernels);
    if (rows.size() > limit) rows.resize(limit);
  }
  const std::string text = format == "json"  ? renderJson(rep, sections, opts.positional)
                           : format == "csv" ? renderCsv(rep, sections)
                                             : renderTables(rep, sections, format == "markdown");
  if (std::string error; !writeOutputText(output, text, error)) {
    spdlog::error("report: {}", error);
    return kExitOutput;
  }
  return kExitOk;
}

}  // namespace cutrace::tools
