#include "tools/trace_input.h"

#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "collector/symbolizer.h"
#include "collector/trace_data.h"
#include "exporters/chrome_trace.h"
#include "exporters/output_files.h"
#include "exporters/perfetto_reader.h"
#include "exporters/torch_ops.h"
#include "exporters/trace_view.h"
#include "tools/report_model.h"

namespace cutrace::tools {

namespace {

constexpr uint64_t kProgressBytes = 100ull << 20;
// Bytes read ahead to tell the formats apart: JSON may start with this much whitespace.
constexpr std::size_t kSniffBytes = 4096;
// Track ids given NVTX domain tracks: above every tid and device track id, distinct per track.
constexpr int64_t kDomainTrackBase = int64_t{1} << 40;

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The integer list as compact JSON text ("[[256], [2048, 256]]" -> "[[256],[2048,256]]"), as
// the report's reader of the Chrome trace's args.sizes makes it.
std::string compactList(std::string_view list) {
  std::string out;
  out.reserve(list.size());
  for (const char c : list)
    if (!isSpace(c)) out += c;
  return out;
}

struct OpRange {
  int64_t start, end;
  uint32_t name;   // in opNames_
  uint32_t sizes;  // in opSizes_, kNoSizes without
  bool hasOpId;
  uint64_t opId;
};
constexpr uint32_t kNoSizes = UINT32_MAX;

// A kernel until the end of the read, when the op around its launch is known (finish()): what
// its TraceEvent is made of then (a third of the bytes of keeping the event itself).
struct PendingKernel {
  int64_t startNs, endNs, pid, tid;
  std::string_view name;  // demangled (EventAdapter::demangled_) or a literal: lives as long as the adapter
  uint64_t hostStart;     // the CUDA call behind it, as CUPTI reported it: its start
  uint32_t hostTid;       // and its thread
  bool linked;
  const OpRange* op = nullptr;  // set by finish()
};

// Turns the stream's slices into the Chrome trace's events (exporters/chrome_trace.cpp's
// writeEvent and writeDevice).
class EventAdapter : public PerfettoVisitor {
 public:
  EventAdapter(TraceEventSink& sink, std::string name, uint64_t bytes) : sink_(sink), name_(std::move(name)), bytes_(bytes) {
    nextReport_ = bytes_ / 4;
    if (bytes_ >= kProgressBytes) spdlog::info("reading {} ({} MB)", name_, bytes_ >> 20);
  }

  // Op ranges written as their parts are read from PfSlice::op: named by the op, as a parsed
  // text would be.
  bool wantsOpText() const override { return false; }

  void slice(const PfSlice& s) override {
    const PfTrack& track = *s.track;
    TraceEvent ev;
    ev.cat = s.category;
    ev.name = s.name;
    ev.startNs = static_cast<int64_t>(s.startNs);
    ev.endNs = static_cast<int64_t>(s.endNs);
    ev.pid = track.pid != 0 ? track.pid : static_cast<int64_t>(track.uuid >> 24);
    switch (track.kind) {
      case PfTrackKind::Thread:
      case PfTrackKind::Domain: {
        const uint64_t thread = track.kind == PfTrackKind::Thread ? track.uuid : track.thread;
        ev.tid = track.kind == PfTrackKind::Thread ? track.tid : kDomainTrackBase + static_cast<int64_t>(track.uuid);
        ev.track = track.uuid;
        if (s.instant) {
          ev.ph = 'i';
        } else if (s.category == kCategories[0] || s.category == kCategories[1]) {
          if (const std::string_view kernel = launchKernelName(s); !kernel.empty()) ev.kernel = demangled(kernel);
        } else if (s.category == kCategories[2]) {
          TorchOp op;
          bool torch = s.isTorchOp;
          if (torch) op = s.op;
          else torch = parseTorchRange(s.name, op);
          if (torch) {
            ev.name = op.name;
            ev.hasOpSeq = op.hasSeq;
            ev.hasOpId = op.hasOpId;
            ev.opId = op.opId;
            if (!op.sizes.empty()) {
              ev.hasSizes = true;
              ev.sizes = isIntegerList(op.sizes) ? compactList(op.sizes) : std::string(op.sizes);
            }
            // Kept for the kernels launched inside it (finish()), which come only where CUPTI
            // recorded device work: a range that came before any sign of it (see cuptiSeen_)
            // holds no launch that has any.
            if (cuptiSeen_)
              opRanges_[thread].push_back(OpRange{ev.startNs, ev.endNs, opName(op.name),
                                                  ev.hasSizes ? intern(opSizes_, opSizeIds_, ev.sizes) : kNoSizes,
                                                  op.hasOpId, op.opId});
          }
        }
        cuptiSeen_ = cuptiSeen_ || s.flowOut;
        break;
      }
      case PfTrackKind::Span:
        ev.ph = 'b';
        break;
      case PfTrackKind::Device:
        cuptiSeen_ = true;
        ev.tid = static_cast<int64_t>(deviceTrackId(track.device, track.stream));
        if (s.category == kCategories[3]) {
          // The op of a kernel is known once every host event is (finish()). Sent after the
          // read, when the reader's texts the slice's views point into are gone: only views of
          // what lives on are kept.
          const PfAnnotation* hostTid = s.find(Ann::HostTid);
          const PfAnnotation* hostStart = s.find(Ann::HostStart);
          const bool linked = hostTid != nullptr && hostStart != nullptr;
          kernels_.push_back(PendingKernel{ev.startNs, ev.endNs, ev.pid, ev.tid,
                                           s.nameIid != 0 ? std::string_view(demangled(s.name)) : std::string_view("kernel"),
                                           linked ? hostStart->value : 0, linked ? static_cast<uint32_t>(hostTid->value) : 0,
                                           linked});
          return;
        }
        break;
      default:
        return;
    }
    sink_.event(ev);
  }

  void track(const PfTrack& t) override {
    if (t.kind == PfTrackKind::Thread) threadOfTid_[t.tid] = t.uuid;
  }

  void metadata(std::string_view name, std::string_view value) override {
    if (name == "cutrace") sink_.metadata(value);
  }

  void position(uint64_t offset) override {
    if (bytes_ < kProgressBytes || offset < nextReport_ || offset >= bytes_) return;
    spdlog::info("reading {}: {}% of {} MB", name_, offset * 100 / bytes_, bytes_ >> 20);
    while (nextReport_ <= offset) nextReport_ += bytes_ / 4;
  }

  // Device kernels, with the innermost op range open around the launch that caused them (the
  // Chrome writer's linkTorchOps: ranges and the launch in timeline order on the launch's
  // thread).
  void finish() {
    struct Query {
      int64_t at;
      std::size_t kernel;
    };
    std::map<uint64_t, std::vector<Query>> queries;  // by thread track
    // The op open when the CUDA call began (CUPTI's interval lies inside the launch call).
    for (std::size_t i = 0; i < kernels_.size(); ++i) {
      if (!kernels_[i].linked) continue;
      const auto it = threadOfTid_.find(kernels_[i].hostTid);
      if (it != threadOfTid_.end()) queries[it->second].push_back(Query{static_cast<int64_t>(kernels_[i].hostStart), i});
    }
    for (auto& [thread, list] : queries) {
      auto rangesIt = opRanges_.find(thread);
      if (rangesIt == opRanges_.end()) continue;
      std::vector<OpRange>& ranges = rangesIt->second;
      std::stable_sort(ranges.begin(), ranges.end(),
                       [](const OpRange& a, const OpRange& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
      std::stable_sort(list.begin(), list.end(), [](const Query& a, const Query& b) { return a.at < b.at; });
      std::vector<const OpRange*> open;
      std::size_t next = 0;
      for (const Query& q : list) {
        for (; next < ranges.size() && ranges[next].start <= q.at; ++next) {
          while (!open.empty() && open.back()->end <= ranges[next].start) open.pop_back();
          open.push_back(&ranges[next]);
        }
        while (!open.empty() && open.back()->end <= q.at) open.pop_back();
        if (!open.empty()) kernels_[q.kernel].op = open.back();
      }
    }
    TraceEvent ev;
    ev.cat = kCategories[3];
    for (const PendingKernel& k : kernels_) {
      ev.name = k.name;
      ev.startNs = k.startNs;
      ev.endNs = k.endNs;
      ev.pid = k.pid;
      ev.tid = k.tid;
      ev.op = k.op != nullptr ? std::string_view(opNames_[k.op->name]) : std::string_view();
      ev.hasOpId = k.op != nullptr && k.op->hasOpId;
      ev.opId = k.op != nullptr ? k.op->opId : 0;
      ev.hasSizes = k.op != nullptr && k.op->sizes != kNoSizes;
      ev.sizes = ev.hasSizes ? opSizes_[k.op->sizes] : std::string();
      sink_.event(ev);
    }
  }

 private:
  const std::string& demangled(std::string_view mangled) {
    auto it = demangled_.find(std::string(mangled));
    if (it == demangled_.end()) it = demangled_.emplace(std::string(mangled), demangle(std::string(mangled))).first;
    return it->second;
  }

  // `text`'s index in `texts` (stable strings: a deque), added the first time.
  static uint32_t intern(std::deque<std::string>& texts, std::unordered_map<std::string, uint32_t>& ids, std::string_view text) {
    const auto [it, added] = ids.try_emplace(std::string(text), static_cast<uint32_t>(texts.size()));
    if (added) texts.emplace_back(text);
    return it->second;
  }
  uint32_t opName(std::string_view name) { return intern(opNames_, opNameIds_, name); }


  TraceEventSink& sink_;
  std::string name_;
  uint64_t bytes_ = 0;
  uint64_t nextReport_ = 0;
  std::unordered_map<std::string, std::string> demangled_;
  std::unordered_map<uint32_t, uint64_t> threadOfTid_;  // OS tid -> thread track
  std::unordered_map<uint64_t, std::vector<OpRange>> opRanges_;  // by thread track
  std::deque<std::string> opNames_, opSizes_;
  std::unordered_map<std::string, uint32_t> opNameIds_, opSizeIds_;
  std::vector<PendingKernel> kernels_;
  // A sign that CUPTI records device work in this stream: a CUDA call starting flows (the
  // writer's, for the device work to come) or device work. An op range that ended before the
  // first (its launches, inside it, came before it) holds no launch whose kernels come: without
  // CUPTI (no GPU, CI) no range is kept, and reading stays bounded however many there are.
  bool cuptiSeen_ = false;
};

uint64_t fileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

bool traceFormatOf(std::string_view head, TraceFormat& out) {
  std::size_t i = 0;
  while (i < head.size() && isSpace(head[i])) ++i;
  if (i < head.size() && (head[i] == '{' || head[i] == '[')) {
    out = TraceFormat::ChromeJson;
    return true;
  }
  // A TracePacket field (1, length-delimited) can start with '\n' (0x0a) followed by bytes
  // that look like whitespace, never by '{' or '[' (wire type 3, groups: never written).
  if (!head.empty() && head[0] == 0x0a) {
    out = TraceFormat::Perfetto;
    return true;
  }
  return false;
}

bool openTraceInput(const std::string& path, TraceInput& out, std::string& error) {
  out.path = path;
  out.name = inputName(path);
  out.whole = false;
  out.bytes.clear();
  InputStream in;
  if (!in.open(path, error)) return false;
  std::string_view head;
  if (!in.peek(kSniffBytes, head, error)) return false;
  // Anything that is not a stream goes to the JSON readers, whose messages say what is wrong.
  if (!traceFormatOf(head, out.format)) out.format = TraceFormat::ChromeJson;
  if (in.rereadable()) return true;
  if (!in.setBinary(out.format == TraceFormat::Perfetto, error) || !in.readAll(wholeInputCap(), out.bytes, error)) return false;
  out.whole = true;
  return true;
}

bool readPerfettoEvents(TraceInput& input, TraceEventSink& sink, std::string& error) {
  EventAdapter adapter(sink, input.name, input.whole ? input.bytes.size() : fileSize(input.path));
  PfReadStats stats;
  const bool ok = input.whole ? readPerfettoBytes(input.bytes.view(), adapter, error, &stats)
                              : readPerfetto(input.path, adapter, error, &stats);
  if (!ok) {
    if (input.whole) error = input.name + ": " + error;
    return false;
  }
  if (stats.packets == 0) {
    error = fmt::format("{}: no packets (empty, or not a cutrace stream)", input.name);
    return false;
  }
  adapter.finish();
  return true;
}

bool readPerfettoData(TraceInput& input, TraceData& out, std::string& error, const PfRebuildOptions& options,
                      PfRebuildInfo* infoOut) {
  PfRebuildInfo info;
  const bool ok = input.whole ? readPerfettoTraceBytes(input.bytes.view(), out, error, &info, options)
                              : readPerfettoTrace(input.path, out, error, &info, options);
  if (infoOut != nullptr) *infoOut = info;
  if (!ok) {
    if (input.whole) error = input.name + ": " + error;
    return false;
  }
  if (info.stats.packets == 0) {
    error = fmt::format("{}: no packets (empty, or not a cutrace stream)", input.name);
    return false;
  }
  return true;
}

bool loadTraceAsJson(const std::string& path, InputBytes& out, std::string& error, uint64_t maxJson) {
  TraceInput input;
  if (!openTraceInput(path, input, error)) return false;
  if (input.format == TraceFormat::ChromeJson) {
    if (!input.whole) return loadJsonFile(path, out, error);
    out = std::move(input.bytes);
    if (jsonTooDeep(out.view())) {
      error = input.name + ": JSON nested too deep: not a cutrace trace";
      return false;
    }
    return true;
  }
  const std::string tooLarge =
      fmt::format("{}: its Chrome trace would pass {} bytes (--max-json; the default is about what Perfetto UI "
                  "opens): convert a part of it with `cutrace export --from T1 --to T2` or `--steps A-B`, and use the "
                  ".trace.json that writes",
                  input.name, maxJson);
  TraceData data;
  PfRebuildOptions options;
  options.maxEvents = std::max<uint64_t>(maxJson / kMinJsonBytesPerEvent, 1);
  PfRebuildInfo info;
  if (!readPerfettoData(input, data, error, options, &info)) {
    if (info.overMaxEvents) error = tooLarge;
    return false;
  }
  {
    Sink measure(Sink::kCountOnly);
    writeChromeTrace(data, measure);
    if (measure.bytesWritten() > maxJson) {
      error = tooLarge;
      return false;
    }
  }
  Sink sink;
  writeChromeTrace(data, sink);
  if (!out.assign(sink.text())) {
    error = input.name + ": out of memory converting it to a Chrome trace";
    return false;
  }
  return true;
}

}  // namespace cutrace::tools
