// Start-up of libtrace.so. Initialisation is lazy and idempotent: the constructor runs it, but
// so does the first hook, because constructors of libraries initialised before ours (and
// dlsym calls from them) can reach CUDA first.

#include <stdio.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "collector/own_file.h"
#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
#include "exporters/output_files.h"
#include "exporters/perfetto_reader.h"
#include "exporters/perfetto_writer.h"
#include "preload/hook_support.h"

#ifndef CUTRACE_VERSION
#define CUTRACE_VERSION "unknown"
#endif

namespace cutrace {

namespace {

// The stream (<stem>.pftrace): appended by the drain thread under the collector's drain mutex,
// ended by the final write. Never destroyed: used at exit.
struct StreamOutput {
  // Its packets wait in the writer's buffer (PerfettoWriter::pending) until they go to the file.
  PerfettoWriter writer;
  StreamFile file;
  bool failed = false;
  // The folded stacks of the run, built from each pass's events before they leave memory.
  std::unique_ptr<FoldBuilder> folded;
  // The Chrome trace's size as the run goes: the JSON of a sample of the passes' events, per
  // host event and per device event (chromeTraceSample). At exit it is scaled to the run's
  // events, so that a trace that could not be written is never read back from the stream
  // (seconds, and ~80 B/event of memory, for nothing).
  ChromeTraceSample metered;
  uint64_t unmeteredEvents = 0;
  uint64_t jsonEstimate(uint64_t hostEvents, uint64_t deviceEvents) const {
    auto scaled = [](uint64_t bytes, uint64_t sampled, uint64_t all) {
      return sampled == 0 ? 0 : static_cast<uint64_t>(static_cast<double>(bytes) / static_cast<double>(sampled) * all);
    };
    return scaled(metered.hostBytes, metered.hostEvents, hostEvents) +
           scaled(metered.deviceBytes, metered.deviceEvents, deviceEvents);
  }
};
// A sample costs the drain what writing its JSON does (~250 ns/event: 1 M instructions a sample
// under callgrind, ~0.35 ms) while the rings fill: at most kMeterPassEvents in a pass (from its
// last piece), every pass until that many are measured (most programs: their first pass), then
// one pass after each kMeterEveryEvents (0.4 % of the events). Sampled so, the estimate was
// within 1 % of the written JSON on the launch loop and 85-99 % of it on small e2e programs (it
// leaves out the names and metadata). The estimate only spares a huge trace's writing at exit,
// and a huge trace has had many samples by then; a smaller one is written, measured, and
// discarded if too large. Eight first samples (until 8K events), one a pass, took ~2.8 ms of
// the first 0.8 s of a busy process once passes came every 100 ms (bench_events' driver-sync
// run, 372 K events: 9.5 M instructions sampling, 1.9 M now).
constexpr uint64_t kMeterPassEvents = 1024;
constexpr uint64_t kMeterEveryEvents = 256 << 10;
StreamOutput& stream() {
  static StreamOutput* s = new StreamOutput();
  return *s;
}

void appendStream(StreamOutput& s, const Config& config, const TraceData& data) {
  if (s.failed) return;
  if (!s.file.isOpen()) {
    std::string error;
    if (!s.file.create(config.outputDir, outputStem(data.meta), error)) {
      s.failed = true;
      return;
    }
  }
  if (!s.file.append(s.writer.pending())) s.failed = true;
  s.writer.clearPending();
}

// The packets of a pass go to the file at its end, or sooner once this many bytes wait (a busy
// thread's batches, ~250 KB each): one check/write (OwnFile::append) per pass or per few
// batches, not per batch. The buffer is reserved at the first pass, so that later ones, the
// one at exit included, rarely need memory.
constexpr std::size_t kAppendBytes = std::size_t{512} << 10;
constexpr std::size_t kStreamBufferBytes = std::size_t{1} << 20;

bool streamPass(const TraceData& data, const Config& config, uint64_t nowNs, bool passEnd) {
  StreamOutput& s = stream();
  if (s.failed) return false;
  // Room at a pass's first piece (nothing pending); after the first pass the buffer has it.
  if (s.writer.pending().empty()) s.writer.reserve(kStreamBufferBytes);
  s.writer.encodePass(data, nowNs, passEnd);
  if (passEnd || s.writer.pending().size() >= kAppendBytes) appendStream(s, config, data);
  if (s.failed) return false;
  if (!s.folded) s.folded = std::make_unique<FoldBuilder>(FoldOptions{config.foldedNvtx});
  s.folded->pass(data);
  if (config.jsonLimit != 0) {
    uint64_t events = 0;
    data.forEachChanged([&](std::size_t i) { events += data.threads[i].events.size(); });
    s.unmeteredEvents += events;
    // Once per pass, with its last piece: a busy thread's batches (collector.cpp) would each be
    // sampled, and the first ones, metered in full, held up the drain while the rings filled.
    if (passEnd && events != 0 && (s.metered.hostEvents < kMeterPassEvents || s.unmeteredEvents >= kMeterEveryEvents)) {
      const ChromeTraceSample sample = chromeTraceSample(data, kMeterPassEvents);
      s.metered.hostBytes += sample.hostBytes;
      s.metered.hostEvents += sample.hostEvents;
      s.metered.deviceBytes += sample.deviceBytes;
      s.metered.deviceEvents += sample.deviceEvents;
      s.unmeteredEvents = 0;
    }
  }
  s.writer.eventsReleased();
  return true;
}

void forgetStream() {
  StreamOutput& s = stream();
  s.writer = PerfettoWriter();
  s.file.forget();
  s.failed = false;
  s.folded.reset();
  s.metered = ChromeTraceSample();  // the child's trace is its own
  s.unmeteredEvents = 0;
}

const Collector::Stream kStream{streamPass, forgetStream};

// Collector::Writer: the stream's end, the files, then one line on stderr (config.log decides),
// written like every line of cutrace's through writeDiagnostic (never into a file the program
// opened as fd 2).
void writeOutputsAndReport(TraceData& data, const Config& config) {
  data.meta.version = CUTRACE_VERSION;
  // cutrace stopped writing at the file-size limit during the run and said so: nothing more.
  if (fileSizeLimitReached()) return;
  StreamOutput& s = stream();
  if (!s.failed) {
    // The metadata's linked_to_host: the device work already written and linked, which left
    // memory (what the writer held for its call too), and what is still in `data`, linked by the
    // Chrome writer's rule.
    s.writer.endDevice(data);
    data.releasedLinked = s.writer.linkedDevice();
    // Device work of calls outside the capture left memory as written, but never was.
    data.cupti.outsideCapture = s.writer.outsideCapture();
    data.releasedDevice -= s.writer.outsideCapture();
    s.writer.encodeEnd(data, data.meta.endMonotonicNs, chromeTraceMetadata(data));
    appendStream(s, config, data);
    s.file.finish();
  }
  if (fileSizeLimitReached()) return;
  const std::string streamPath = s.failed ? std::string() : s.file.path();
  // The Chrome trace and the folded stacks are views of the stream, read back from the file (the
  // events left memory pass by pass), so they never disagree with it. Only a stream that could
  // not be written at all leaves the events in memory, and the views come from there.
  uint64_t released = 0;
  for (const ThreadTrack& t : data.threads) released += t.released;
  for (const ExitedThread& t : data.exitedThreads) released += t.events;
  // The host-time and calls folded files come from the folding done as the run went (bounded
  // memory whatever its length); the Chrome trace and GPU time, from the stream read back, only
  // when the trace fits CUTRACE_JSON_LIMIT (writeOutputFiles skips it otherwise).
  TraceData rebuilt;
  const TraceData* view = &data;
  std::string error, readError;
  PfRebuildInfo readInfo;
  FoldedStacks runFolded;
  uint64_t jsonEstimate = 0;
  const bool streamed = !s.failed && s.folded != nullptr;
  if (streamed) {
    runFolded = s.folded->finish(data);
    s.folded.reset();
    const uint64_t devices = data.releasedDevice + data.device.size();
    jsonEstimate = s.jsonEstimate(data.eventCount(), devices);
    // The read holds every event at once: it keeps to the memory the events may take, as the
    // run did (a process near its memory limit must not be pushed past it as it ends).
    const uint64_t readBytes = rebuildBytes(data.eventCount(), s.writer.opRanges(), devices);
    const bool tooLarge = jsonKnownTooLarge(data.eventCount(), jsonEstimate, config.jsonLimit);
    if (!tooLarge && readBytes > config.maxMemory) {
      char sizes[96];
      snprintf(sizes, sizeof(sizes), " events back would take about %.1f MiB, past CUTRACE_MAX_MEMORY (%.1f MiB)",
               static_cast<double>(readBytes) / (1 << 20), static_cast<double>(config.maxMemory) / (1 << 20));
      readError = "reading its " + std::to_string(data.eventCount() + devices) + sizes;
    } else if (!tooLarge) {
      const PfMetadataSource known{nullptr, nullptr, &data};
      view = &rebuilt;
      if (!rebuildPerfetto(streamPath, known, rebuilt, readError, &readInfo)) {
        // No Chrome trace (most often no memory for the events: an address-space limit), but the
        // folded stacks of the run are at hand: they are written, from the events still in memory.
        readError = "reading the stream back failed (" + readError + ")";
        rebuilt = TraceData();
        view = &data;
      }
    }
  } else if (released != 0) {
    error = "the stream stopped during the run";
  }
  OutputResult r;
  if (error.empty())
    r = writeOutputFiles(*view, config.outputDir, FoldOptions{config.foldedNvtx}, s.file.stem(), config.jsonLimit,
                         streamed ? &runFolded : nullptr, jsonEstimate, !readError.empty());
  else
    r.error = error;
  std::string line;
  if (!r.ok) {
    if (config.log < LogLevel::Error) return;
    line = "cutrace: could not write the trace: " + r.error;
    if (!streamPath.empty()) line += "; the events are in " + streamPath;
  } else {
    if (config.log < LogLevel::Info) return;
    std::vector<std::string> files;
    for (const std::string* f : std::initializer_list<const std::string*>{&streamPath, &r.tracePath, &r.foldedPath})
      if (!f->empty()) files.push_back(*f);
    line = "cutrace: wrote ";
    for (std::size_t i = 0; i < files.size(); ++i)
      line += (i == 0 ? "" : i + 1 == files.size() ? " and " : ", ") + files[i];
    line += ", " + std::to_string(data.eventCount()) + " events, " + std::to_string(data.droppedEvents()) + " dropped";
    if (r.jsonSkipped)
      line += "; no Chrome trace: it would pass CUTRACE_JSON_LIMIT (" + std::to_string(config.jsonLimit) + " bytes) at " +
              (r.jsonMeasured ? "" : "about ") + std::to_string(r.jsonBytes) +
              " bytes, which Perfetto UI would not open; open the .pftrace, or `cutrace export` it";
    // `cutrace export` reads as this read did: it helps where memory was short here, not past
    // the thread limit.
    if (r.jsonWithheld)
      line += "; no Chrome trace: " + readError + "; open the .pftrace" + (readInfo.overMaxThreads ? "" : ", or `cutrace export` it");
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

void initializePreload() { Collector::initialize(kHookDescriptors, kHookCount, writeOutputsAndReport, &kStream); }

}  // namespace cutrace
