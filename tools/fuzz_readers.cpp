// libFuzzer target over everything `cutrace` reads from files it did not write: the trace and
// report reader (report, diff, run's summary; JSON, and a .pftrace read as a stream), the merge (metadata pass, then the validating
// copy of every event), the folded-stacks parser behind `cutrace flame`, and the .pftrace
// reader (packets, then the TraceData rebuild of `cutrace export`, rendered as Chrome JSON and
// folded stacks as export does).
// Built and run by tests/tools/fuzz/run_fuzz.sh with clang++ -fsanitize=fuzzer,address,undefined;
// not part of the cutrace executable.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
#include "exporters/perfetto_reader.h"
#include "tools/commands.h"
#include "tools/merge_traces.h"
#include "tools/report_model.h"

namespace {

std::string scratch(const char* what) {
  const char* dir = std::getenv("FUZZ_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/cutrace-fuzz-" + std::to_string(getpid()) + what;
}

bool writeFile(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Rejections are the expected outcome for most inputs; their messages would drown the log.
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cutrace::tools;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string error;
  bool isTrace = false;
  {
    Report report;
    isTrace = readTraceText(bytes, "fuzz", report, error);
  }
  {
    Report report;
    readTraceOrReportText(bytes, "fuzz", report, error);
  }
  {
    cutrace::PerfettoVisitor visitor;
    readPerfettoBytes(bytes, visitor, error);
    cutrace::TraceData rebuilt;
    if (readPerfettoTraceBytes(bytes, rebuilt, error)) {
      // What the reader accepted, the exporters must render.
      cutrace::Sink out;
      writeChromeTrace(rebuilt, out);
      const auto folded = foldStacks(rebuilt);
      writeFolded(folded, cutrace::FoldWeight::HostTime, out);
      writeFolded(folded, cutrace::FoldWeight::GpuTime, out);
    }
  }
  static const std::string input = scratch(".trace.json");
  static const std::string merged = scratch("-merged.json");
  if (!writeFile(input, bytes)) return 0;
  {
    // From a file, told apart by content: a .pftrace takes the stream path of report and diff
    // (tools/trace_input.cpp): kernels with their op, and the GPU busy time's union among it.
    Report report;
    readTraces({input}, report, error);
  }
  {
    TraceInfo info;
    readTraceInfo(input, info, error);
    // The same file twice: pid collision and flow-id rewriting on every accepted input.
    MergeSummary summary;
    if (mergeTraces({input, input}, merged, summary, error) == kExitOk && isTrace) {
      // What merge writes from a readable trace must read back: valid JSON, still a trace.
      Report report;
      if (!readTraces({merged}, report, error)) {
        std::fprintf(stderr, "merged output does not read back: %s\n", error.c_str());
        __builtin_trap();
      }
    }
  }
  {
    std::string flame = "flame", out = "-o", devnull = "/dev/null";
    std::string file = input;
    char* argv[] = {flame.data(), file.data(), out.data(), devnull.data(), nullptr};
    flameCommand(4, argv);
  }
  return 0;
}
