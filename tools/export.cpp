// `cutrace export`: the Chrome trace and folded stacks of a process, from its stream
// (<stem>.pftrace). The stream is what a process killed before its end leaves (SIGKILL, OOM
// killer, a node lost); from a process that ended normally it gives the same files again.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "exporters/output_files.h"
#include "exporters/perfetto_reader.h"
#include "exporters/torch_ops.h"
#include "tools/commands.h"
#include "tools/trace_input.h"

namespace cutrace::tools {

namespace {

constexpr const char* kUsage = R"(usage: cutrace export [-o DIR] [--no-nvtx-frames] [--from T] [--to T | --steps A-B] [--max-json SIZE] TRACE.pftrace...

Writes <stem>.trace.json, <stem>.folded, <stem>.calls.folded (and <stem>.gpu.folded when
device work was linked to launches) from each stream a traced process wrote while it ran
(<stem>.pftrace). A process killed before its end leaves only the stream: everything up to
its last drain pass, host side (device work and the final metadata are written at the end).
A file that is taken gets the next free name (<stem>.1.trace.json, ...).

options:
  -o DIR             write the files there (default: next to each input)
  --no-nvtx-frames   leave NVTX ranges out of the folded stacks (as CUTRACE_FOLDED_NVTX=0)
  --from T, --to T   only the window [T1, T2) of the run: T is a decimal number of seconds,
                     or with a unit s, ms, us or ns (2.5, 2500ms), counted from the trace
                     origin, ts 0 of the Chrome trace (metadata.clock.ts_origin_ns); --from
                     alone runs to the end, --to alone from 0. Files: <stem>.window-T1-T2.*
  --steps A-B        only steps A to B (or --steps N: one step): the window from the first
                     start to the last end of the step ranges numbered A..B. A step range is
                     an NVTX range (push/pop or start/end, any domain, any thread) named
                     ProfilerStep#N (PyTorch's profiler; the op name of an emit_nvtx range),
                     or "step" in any case followed by any of ' ', '#', '_', '=', ':' and the
                     number N, and nothing after it ("step 3", "Step#3", "step_3").
                     Files: <stem>.steps-A-B.*
A window keeps each event that overlaps it whole, not clipped: a CUDA call or range with
start < T2 and end > T1, a mark or an event of no duration with T1 <= ts < T2 (device work by
its own times), so the ranges around what it holds are there too; everything else is left
out. Steps A..B of no duration (a process killed right after a step's push) are the window
[T, T]: the events with start <= T <= end. No step range A..B in a trace: exit 3.
  --max-json SIZE    memory cap: more events than a Chrome trace of SIZE holds (K/M/G; default
                     1G, CUTRACE_JSON_LIMIT's default, about what Perfetto UI opens: ~10 M events,
                     ~80 bytes each in memory) in the stream or the window: exit 3, asking for a
                     smaller window
exit: 0 ok, 2 usage, 3 an input could not be read or is malformed, 4 an output could not be written.
)";

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What part of the run to export.
struct Window {
  bool byTime = false;
  int64_t fromNs = 0;  // trace ns (from the origin)
  int64_t toNs = std::numeric_limits<int64_t>::max();
  std::string fromText = "0", toText = "end";
  bool bySteps = false;
  uint64_t firstStep = 0, lastStep = 0;
};

// "2.5", "2.5s", "2500ms", "40us", "7ns": nanoseconds. False on anything else.
bool parseTime(const std::string& text, int64_t& ns) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  std::string_view number = text;
  double scale = 1e9;
  for (const auto& [unit, factor] : kUnits) {
    if (number.size() > unit.size() && number.ends_with(unit)) {
      number.remove_suffix(unit.size());
      scale = factor;
      break;
    }
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || !(value >= 0) || value * scale > 9e18) return false;
  ns = std::llround(value * scale);
  return true;
}

bool parseSteps(const std::string& text, Window& w) {
  const std::size_t dash = text.find('-');
  const auto number = [](std::string_view s, uint64_t& n) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
  };
  const std::string_view all = text;
  if (dash == std::string::npos) {
    if (!number(all, w.firstStep)) return false;
    w.lastStep = w.firstStep;
  } else if (!number(all.substr(0, dash), w.firstStep) || !number(all.substr(dash + 1), w.lastStep)) {
    return false;
  }
  w.bySteps = true;
  return w.firstStep <= w.lastStep;
}

// The number of a step range (see the usage), or false.
bool stepNumber(std::string_view name, uint64_t& n) {
  TorchOp op;
  if (parseTorchRange(name, op)) name = op.name;
  std::string_view digits;
  if (name.starts_with("ProfilerStep#")) {
    digits = name.substr(13);
  } else {
    if (name.size() < 5) return false;
    for (std::size_t i = 0; i < 4; ++i)
      if ((name[i] | 0x20) != "step"[i]) return false;
    digits = name.substr(4);
    while (!digits.empty() && std::string_view(" #_=:").find(digits.front()) != std::string_view::npos) digits.remove_prefix(1);
  }
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return !digits.empty() && ec == std::errc() && end == digits.data() + digits.size();
}

// The first pass of --steps, over the stream as it is read: the window from the first start to
// the last end of the step ranges A..B, the NVTX ranges (not marks) on the threads' sequences
// as the rebuild reads them; times from the origin of the process's metadata.
class StepFinder : public PerfettoVisitor {
 public:
  explicit StepFinder(const Window& w) : first_(w.firstStep), last_(w.lastStep) {}

  void metadata(std::string_view name, std::string_view value) override {
    // A malformed metadata is the rebuild's to report (the second pass).
    const PfMetadataSource& source = perfettoFileMetadata();
    std::string ignored;
    if (name == "cutrace.process" && !haveProcess_) haveProcess_ = source.process(value, meta_, ignored);
    else if (name == "cutrace") source.final(value, meta_, final_, ignored);
  }

  void slice(const PfSlice& s) override {
    if (s.track->kind == PfTrackKind::Device || s.sequence == kPfProcessSequence || s.instant ||
        s.category != kCategories[2])
      return;
    uint64_t n = 0;
    if (!stepNumber(s.name, n) || n < first_ || n > last_) return;
    start_ = found_ ? std::min(start_, s.startNs) : s.startNs;
    end_ = found_ ? std::max(end_, s.endNs) : s.endNs;
    found_ = true;
  }

  // False when there was no step range A..B.
  bool window(Window& w) const {
    if (!found_) return false;
    w.fromNs = meta_.toTraceNs(start_);
    w.toNs = meta_.toTraceNs(end_);
    return true;
  }

 private:
  uint64_t first_, last_;
  TraceData meta_;  // the process's metadata: its origin
  PfFinalMetadata final_;
  bool haveProcess_ = false;
  bool found_ = false;
  uint64_t start_ = 0, end_ = 0;  // CLOCK_MONOTONIC
};

int exportOne(const std::string& input, const std::string& outputDir, const FoldOptions& fold, const Window& window,
              uint64_t maxJson) {
  TraceData data;
  std::string error;
  TraceInput in;
  if (!openTraceInput(input, in, error)) {
    spdlog::error("export: {}", error);
    return kExitBadInput;
  }
  if (in.format != TraceFormat::Perfetto) {
    spdlog::error("export: {}: a Chrome JSON trace; export reads the stream (<stem>.pftrace)", in.name);
    return kExitBadInput;
  }
  const auto badInput = [&](const std::string& why) {
    spdlog::error("export: {}{}", in.whole ? in.name + ": " : "", why);
    return kExitBadInput;
  };
  const auto noPackets = [&] {
    spdlog::error("export: {}: no packets (empty, or not a cutrace stream)", input);
    return kExitBadInput;
  };
  // A window is cut while the stream is read (the events outside it are never stored): memory
  // follows the window, not the file. --steps first reads the stream once to find its window.
  std::string suffix;
  Window w = window;
  PfRebuildOptions options;
  if (w.bySteps) {
    StepFinder finder(w);
    PfReadStats stats;
    if (!(in.whole ? readPerfettoBytes(in.bytes.view(), finder, error, &stats) : readPerfetto(input, finder, error, &stats)))
      return badInput(error);
    if (stats.packets == 0) return noPackets();
    if (!finder.window(w)) {
      spdlog::error("export: {}: no step range {}-{} (NVTX ranges named ProfilerStep#N or 'step N')", input, w.firstStep,
                    w.lastStep);
      return kExitBadInput;
    }
    suffix = ".steps-" + std::to_string(w.firstStep) + "-" + std::to_string(w.lastStep);
  } else if (w.byTime) {
    suffix = ".window-" + w.fromText + "-" + w.toText;
  }
  if (w.bySteps || w.byTime) {
    options.windowed = true;
    options.window = PfWindow{w.fromNs, w.toNs};
  }
  // Memory follows the events kept (~80 bytes each): past what a Chrome trace Perfetto UI opens
  // can hold, the export stops and asks for a smaller part.
  options.maxEvents = std::max<uint64_t>(maxJson / kMinJsonBytesPerEvent, 1);
  PfRebuildInfo info;
  if (!(in.whole ? readPerfettoTraceBytes(in.bytes.view(), data, error, &info, options)
                 : readPerfettoTrace(input, data, error, &info, options))) {
    if (info.overMaxEvents) {
      spdlog::error("export: {}: more than {} events {}: more than a Chrome trace of --max-json holds; export a "
                    "smaller part (--from T1 --to T2, or --steps A-B)",
                    input, options.maxEvents, w.bySteps || w.byTime ? "in the window" : "in the stream");
      return kExitBadInput;
    }
    return badInput(error);
  }
  if (info.stats.packets == 0) return noPackets();
  // A window with no CUDA call or range in it would make folded stacks with nothing to draw
  // (flamegraph.pl refuses them): as for a process that recorded nothing, no files.
  if ((w.bySteps || w.byTime) && data.eventCount() == 0) {
    spdlog::error("export: {}: no CUDA call or range in the window {} to {} ({} events outside it): nothing written",
                  input, w.fromText, w.toText, info.outsideWindow);
    return kExitBadInput;
  }
  const uint64_t allEvents = data.eventCount() + info.outsideWindow;
  const std::size_t slash = input.rfind('/');
  const std::string dir = !outputDir.empty() ? outputDir : slash == std::string::npos ? "." : input.substr(0, slash);
  std::string stem = slash == std::string::npos ? input : input.substr(slash + 1);
  if (endsWith(stem, ".pftrace")) stem.resize(stem.size() - 8);
  stem += suffix;
  const OutputResult r = writeOutputFiles(data, dir.c_str(), fold, stem);
  if (!r.ok) {
    spdlog::error("export: {}: {}", input, r.error);
    return kExitOutput;
  }
  std::string note;
  if (!info.ended) note += "; the process did not end normally: no device work, metadata from its start";
  if (info.stats.truncated) note += "; its last packet was cut short";
  if (info.ended && info.metadataEvents != allEvents)
    note += "; the stream holds " + std::to_string(allEvents) + " events, the process counted " +
            std::to_string(info.metadataEvents);
  if (w.bySteps || w.byTime)
    note += "; window [" + std::to_string(w.fromNs) + ", " +
            (w.toNs == std::numeric_limits<int64_t>::max() ? std::string("end") : std::to_string(w.toNs)) +
            (w.fromNs == w.toNs ? "] ns: " : ") ns: ") +
            std::to_string(data.eventCount()) + " of " + std::to_string(allEvents) + " events";
  std::fprintf(stderr, "cutrace: exported %s -> %s and %s, %llu events%s\n", input.c_str(), r.tracePath.c_str(),
               r.foldedPath.c_str(), static_cast<unsigned long long>(data.eventCount()), note.c_str());
  return kExitOk;
}

}  // namespace

int exportCommand(int argc, char** argv) {
  std::string outputDir;
  FoldOptions fold;
  Window window;
  uint64_t maxJson = kDefaultJsonLimit;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (a == "-o") {
      if (i + 1 >= argc) {
        spdlog::error("export: -o needs a directory");
        return kExitUsage;
      }
      outputDir = argv[++i];
    } else if (a == "--max-json") {
      if (i + 1 >= argc || !parseSize(argv[i + 1], maxJson) || maxJson == 0) {
        spdlog::error("export: --max-json wants a size such as 512M or 2G");
        return kExitUsage;
      }
      ++i;
    } else if (a == "--from" || a == "--to" || a == "--steps") {
      if (i + 1 >= argc) {
        spdlog::error("export: {} needs a value", a);
        return kExitUsage;
      }
      const std::string v = argv[++i];
      bool ok = true;
      if (a == "--steps") {
        ok = parseSteps(v, window);
      } else {
        window.byTime = true;
        ok = parseTime(v, a == "--from" ? window.fromNs : window.toNs) &&
             v.find_first_not_of("0123456789.nums") == std::string::npos;
        (a == "--from" ? window.fromText : window.toText) = v;
      }
      if (!ok) {
        spdlog::error("export: bad value '{}' for {} (see 'cutrace export --help')", v, a);
        return kExitUsage;
      }
    } else if (a == "--no-nvtx-frames") {
      fold.nvtxFrames = false;
    } else if (a == "--") {
      for (++i; i < argc; ++i) inputs.emplace_back(argv[i]);
    } else if (!a.empty() && a[0] == '-') {
      spdlog::error("export: unknown option '{}'", a);
      std::fputs(kUsage, stderr);
      return kExitUsage;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) {
    spdlog::error("export: no .pftrace given");
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  if (window.bySteps && window.byTime) {
    spdlog::error("export: --steps and --from/--to exclude each other");
    return kExitUsage;
  }
  if (window.byTime && window.fromNs >= window.toNs) {
    spdlog::error("export: --from {} is not before --to {}", window.fromText, window.toText);
    return kExitUsage;
  }
  int status = kExitOk;
  for (const std::string& input : inputs) {
    const int rc = exportOne(input, outputDir, fold, window, maxJson);
    // The first failure decides the status; the other inputs are still exported.
    if (rc != kExitOk && status == kExitOk) status = rc;
  }
  return status;
}

}  // namespace cutrace::tools
