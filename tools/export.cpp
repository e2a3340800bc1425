// `cutrace export`: the Chrome trace and folded stacks of a process, from its stream
// (<stem>.pftrace). The stream is what a process killed before its end leaves (SIGKILL, OOM
// killer, a node lost); from a process that ended normally it gives the same files again.

#include <cstdio>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "exporters/output_files.h"
#include "exporters/perfetto_reader.h"
#include "tools/commands.h"

namespace cutrace::tools {

namespace {

constexpr const char* kUsage = R"(usage: cutrace export [-o DIR] [--no-nvtx-frames] TRACE.pftrace...

Writes <stem>.trace.json, <stem>.folded, <stem>.calls.folded (and <stem>.gpu.folded when
device work was linked to launches) from each stream a traced process wrote while it ran
(<stem>.pftrace). A process killed before its end leaves only the stream: everything up to
its last drain pass, host side (device work and the final metadata are written at the end).
A file that is taken gets the next free name (<stem>.1.trace.json, ...).

options:
  -o DIR             write the files there (default: next to each input)
  --no-nvtx-frames   leave NVTX ranges out of the folded stacks (as CUTRACE_FOLDED_NVTX=0)
exit: 0 ok, 2 usage, 3 an input could not be read or is malformed, 4 an output could not be written.
)";

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int exportOne(const std::string& input, const std::string& outputDir, const FoldOptions& fold) {
  TraceData data;
  PfRebuildInfo info;
  std::string error;
  if (!readPerfettoTrace(input, data, error, &info)) {
    spdlog::error("export: {}", error);
    return kExitBadInput;
  }
  if (info.stats.packets == 0) {
    spdlog::error("export: {}: no packets (empty, or not a cutrace stream)", input);
    return kExitBadInput;
  }
  const std::size_t slash = input.rfind('/');
  const std::string dir = !outputDir.empty() ? outputDir : slash == std::string::npos ? "." : input.substr(0, slash);
  std::string stem = slash == std::string::npos ? input : input.substr(slash + 1);
  if (endsWith(stem, ".pftrace")) stem.resize(stem.size() - 8);
  const OutputResult r = writeOutputFiles(data, dir.c_str(), fold, stem);
  if (!r.ok) {
    spdlog::error("export: {}: {}", input, r.error);
    return kExitOutput;
  }
  std::string note;
  if (!info.ended) note += "; the process did not end normally: no device work, metadata from its start";
  if (info.stats.truncated) note += "; its last packet was cut short";
  if (info.ended && info.metadataEvents != data.eventCount())
    note += "; the stream holds " + std::to_string(data.eventCount()) + " events, the process counted " +
            std::to_string(info.metadataEvents);
  std::fprintf(stderr, "cutrace: exported %s -> %s and %s, %llu events%s\n", input.c_str(), r.tracePath.c_str(),
               r.foldedPath.c_str(), static_cast<unsigned long long>(data.eventCount()), note.c_str());
  return kExitOk;
}

}  // namespace

int exportCommand(int argc, char** argv) {
  std::string outputDir;
  FoldOptions fold;
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
  int status = kExitOk;
  for (const std::string& input : inputs) {
    const int rc = exportOne(input, outputDir, fold);
    // The first failure decides the status; the other inputs are still exported.
    if (rc != kExitOk && status == kExitOk) status = rc;
  }
  return status;
}

}  // namespace cutrace::tools
