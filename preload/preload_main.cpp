// Start-up of libtrace.so. Initialisation is lazy and idempotent: the constructor runs it, but
// so does the first hook, because constructors of libraries initialised before ours (and
// dlsym calls from them) can reach CUDA first.

#include <stdlib.h>

#include <string>

#include "collector/own_file.h"
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

// Collector::Writer: the files, then one line on stderr (config.log decides), written like every
// line of cutrace's through writeDiagnostic (never into a file the program opened as fd 2).
void writeOutputsAndReport(TraceData& data, const Config& config) {
  data.meta.version = CUTRACE_VERSION;
  // cutrace stopped writing at the file-size limit during the run and said so: nothing more.
  if (fileSizeLimitReached()) return;
  const OutputResult r = writeOutputFiles(data, config.outputDir, FoldOptions{config.foldedNvtx});
  if (r.ok) journal().discard();  // the trace holds everything the journal did
  std::string line;
  if (!r.ok) {
    if (config.log < LogLevel::Error) return;
    line = "cutrace: could not write the trace: " + r.error;
    if (!journal().path().empty() && !journal().failed())
      line += "; the events so far are in " + journal().path() + " (cutrace recover)";
  } else {
    if (config.log < LogLevel::Info) return;
    line = "cutrace: wrote " + r.tracePath + " and " + r.foldedPath + ", " + std::to_string(data.eventCount()) +
           " events, " + std::to_string(data.droppedEvents()) + " dropped";
  }
  line += '\n';
  writeDiagnostic(line.c_str());
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
