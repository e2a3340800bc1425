// Start-up of libtrace.so. Initialisation is lazy and idempotent: the constructor runs it, but
// so does the first hook, because constructors of libraries initialised before ours (and
// dlsym calls from them) can reach CUDA first.

#include <stdlib.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "exporters/journal.h"
#include "exporters/output_files.h"
#include "preload/hook_support.h"

#ifndef CUTRACE_VERSION
#define CUTRACE_VERSION "unknown"
#endif

namespace cutrace {

namespace {

// Used by the drain thread under the collector's drain mutex, then by the final write.
JournalWriter& journal() {
  static JournalWriter* j = new JournalWriter();  // never destroyed: used at exit
  return *j;
}

void appendJournal(const TraceData& data, const Config& config, ClockAnchor start, ClockAnchor last, bool ticksAreNs) {
  journal().append(data, config.outputDir, start, last, ticksAreNs);
}

void forgetJournal() { journal().forget(); }

const Collector::Journal kJournal{appendJournal, forgetJournal};

// Collector::Writer: the files, then one line on stderr (config.log decides).
void writeOutputsAndReport(TraceData& data, const Config& config) {
  data.meta.version = CUTRACE_VERSION;
  const OutputResult r = writeOutputFiles(data, config.outputDir, FoldOptions{config.foldedNvtx});
  if (r.ok) journal().discard();  // the trace holds everything the journal did
  if (config.log == LogLevel::Off) return;
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_st>();
  spdlog::logger log("cutrace", sink);
  log.set_pattern("cutrace: %v");
  log.set_level(config.log == LogLevel::Debug  ? spdlog::level::debug
                : config.log == LogLevel::Info ? spdlog::level::info
                : config.log == LogLevel::Warn ? spdlog::level::warn
                                               : spdlog::level::err);
  if (!r.ok) {
    if (!journal().path().empty())
      log.error("could not write the trace: {}; the events so far are in {} (cutrace recover)", r.error, journal().path());
    else
      log.error("could not write the trace: {}", r.error);
    return;
  }
  log.info("wrote {} and {}, {} events, {} dropped", r.tracePath, r.foldedPath, data.eventCount(), data.droppedEvents());
}

__attribute__((constructor)) void preloadConstructor() {
  ErrnoKeeper keepErrno;
  initializePreload();
  const Config& config = Collector::config();
  // NVTX v3 reaches a tool only through this variable; point it at ourselves unless the user
  // (or another tool) chose an injection library already. Done here, while the process is
  // still single-threaded, because setenv races with getenv on other threads.
  if (config.enabled && config.nvtx && getenv("NVTX_INJECTION64_PATH") == nullptr && Collector::libraryPath()[0] != '\0')
    setenv("NVTX_INJECTION64_PATH", Collector::libraryPath(), 0);
}

}  // namespace

void initializePreload() { Collector::initialize(kHookDescriptors, kHookCount, writeOutputsAndReport, &kJournal); }

}  // namespace cutrace
