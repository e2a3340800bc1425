#include "tools/trace_input.h"

#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>

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
        ev.tid = track.kind == PfTrackKind::Thread ? track.tid : kDomainTrackBase + static_cast<int64_t>(track.uuid);
        ev.track = track.uuid;
        if (s.instant) {
          ev.ph = 'i';
        } else if (s.category == kCategories[0] || s.category == kCategories[1]) {
          if (const std::string_view kernel = launchKernelName(s); !kernel.empty()) ev.kernel = demangled(kernel);
          ev.captured = s.find(Ann::Captured) != nullptr;
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
            setSizes(ev, op.sizes);
          }
        }
        break;
      }
      case PfTrackKind::Span:
        ev.ph = 'b';
        break;
      case PfTrackKind::Device:
        ev.tid = static_cast<int64_t>(deviceTrackId(track.device, track.stream));
        if (s.category == kCategories[3]) {
          if (s.nameIid != 0) ev.name = demangled(s.name);
          // The op range its launch was made in, as the writer put it on the kernel: the reader
          // keeps no range and no kernel for it.
          if (const PfAnnotation* op = s.find(Ann::Op)) {
            ev.op = op->text;
            if (const PfAnnotation* sizes = s.find(Ann::Sizes)) setSizes(ev, sizes->text);
            if (const PfAnnotation* id = s.find(Ann::OpId)) {
              ev.hasOpId = true;
              ev.opId = id->value;
            }
          }
        }
        break;
      default:
        return;
    }
    sink_.event(ev);
  }

  void metadata(std::string_view name, std::string_view value) override {
    if (name == "cutrace") sink_.metadata(value);
  }

  void position(uint64_t offset) override {
    if (bytes_ < kProgressBytes || offset < nextReport_ || offset >= bytes_) return;
    spdlog::info("reading {}: {}% of {} MB", name_, offset * 100 / bytes_, bytes_ >> 20);
    while (nextReport_ <= offset) nextReport_ += bytes_ / 4;
  }

 private:
  const std::string& demangled(std::string_view mangled) {
    auto it = demangled_.find(std::string(mangled));
    if (it == demangled_.end()) it = demangled_.emplace(std::string(mangled), demangle(std::string(mangled))).first;
    return it->second;
  }

  static void setSizes(TraceEvent& ev, std::string_view sizes) {
    if (sizes.empty()) return;
    ev.hasSizes = true;
    ev.sizes = isIntegerList(sizes) ? compactList(sizes) : std::string(sizes);
  }

  TraceEventSink& sink_;
  std::string name_;
  uint64_t bytes_ = 0;
  uint64_t nextReport_ = 0;
  std::unordered_map<std::string, std::string> demangled_;
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
