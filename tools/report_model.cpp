#include "tools/report_model.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "exporters/json_writer.h"
#include "tools/input_file.h"
#include "tools/trace_input.h"

namespace cutrace::tools {
namespace {

namespace od = simdjson::ondemand;

constexpr int64_t kDeviceTidBase = int64_t{1} << 30;
constexpr uint64_t kProgressBytes = 100ull << 20;

constexpr uint32_t kNoOp = UINT32_MAX;

struct Span {
  int64_t start;
  int64_t end;
  uint32_t name;
  uint32_t track;  // host thread
  uint8_t rank;    // among equal intervals the outer one first: runtime before driver
  uint32_t op = kNoOp;  // nvtx spans: index into the op ranges
};

struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct Names {
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> ids;
  std::vector<std::string> names;
  uint32_t intern(std::string_view name) {
    if (const auto it = ids.find(name); it != ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(names.size());
    ids.emplace(std::string(name), id);
    names.emplace_back(name);
    return id;
  }
};

struct Launches {
  uint64_t count = 0;
  uint64_t captured = 0;  // not in `count` nor the times: launches made into a stream capture
  int64_t totalNs = 0, minNs = 0, maxNs = 0;
};

struct Event {
  std::string_view ph, cat, name, kernel;
  double ts = 0, dur = 0;
  int64_t pid = 0, tid = 0;
  bool hasTs = false, hasDur = false, hasTid = false, hasName = false;
  // PyTorch (emit_nvtx) args: on NVTX op ranges op_seq/stashed_seq/op_id/sizes, on device
  // work the innermost op around its launch (op, op_id).
  std::string_view op;
  uint64_t opId = 0;
  bool hasOpId = false, hasOpSeq = false, hasSizes = false;
  std::string sizes;  // compact JSON text of the list, or the string as written
  bool captured = false;  // args.captured
};

// One NVTX range that is a PyTorch op: where it lives and what kernels can name it by.
struct OpRange {
  uint32_t file;
  int64_t pid;
  uint32_t name;    // in the op names
  uint32_t shapes;  // in the shape texts; kNoOp without sizes
  bool hasOpId;
  uint64_t opId;
};

// A device kernel launched inside an op range.
struct KernelOp {
  uint32_t file;
  int64_t pid;
  uint32_t name;  // in the op names; kNoOp without args.op
  bool hasOpId;
  uint64_t opId;
  int64_t durNs;
};

// GPU busy time: the union of kernel intervals per device, taken as they come and kept as its
// disjoint pieces. A stream's are bounded: past kMaxPieces on one device the oldest are summed and
// let go, and a later kernel counts only from their end on. (The stream writes each pass's device
// work in time order per device, and a pass's work is rarely older than the last pass's: far
// fewer kernels out of order than that.) A JSON trace's are not: it is written device by device,
// stream by stream, each stream whole, and held whole anyway.
class BusyTime {
 public:
  static constexpr std::size_t kMaxPieces = std::size_t{1} << 16;

  void add(uint32_t device, int64_t start, int64_t end, bool bounded) {
    Device& d = devices_[device];
    start = std::max(start, d.settledTo);
    if (end <= start) return;
    auto it = d.pieces.upper_bound(start);
    if (it != d.pieces.begin() && std::prev(it)->second >= start) --it;
    while (it != d.pieces.end() && it->first <= end) {
      start = std::min(start, it->first);
      end = std::max(end, it->second);
      it = d.pieces.erase(it);
    }
    d.pieces.emplace_hint(it, start, end);
    while (bounded && d.pieces.size() > kMaxPieces) {
      const auto oldest = d.pieces.begin();
      d.settled += oldest->second - oldest->first;
      d.settledTo = oldest->second;
      d.pieces.erase(oldest);
    }
  }

  int64_t total() const {
    int64_t sum = 0;
    for (const auto& [key, d] : devices_) {
      sum += d.settled;
      for (const auto& [start, end] : d.pieces) sum += end - start;
    }
    return sum;
  }

 private:
  struct Device {
    std::map<int64_t, int64_t> pieces;  // start -> end, disjoint, not touching
    int64_t settled = 0;                // the pieces let go
    int64_t settledTo = INT64_MIN;      // and where the last of them ended
  };
  std::unordered_map<uint32_t, Device> devices_;
};

// Writes an integer list (nested to any depth, as the tracer copies PyTorch's sizes) as
// compact JSON, so "[[256], [16, 256]]" and "[[256],[16,256]]" group together.
simdjson::error_code compactIntegerList(od::value value, std::string& out) {
  od::array list;
  if (auto e = value.get_array().get(list)) return e;
  out += '[';
  bool first = true;
  for (auto itemResult : list) {
    od::value item;
    if (auto e = std::move(itemResult).get(item)) return e;
    if (!first) out += ',';
    first = false;
    od::json_type type;
    if (auto e = item.type().get(type)) return e;
    if (type == od::json_type::array) {
      if (auto e = compactIntegerList(item, out)) return e;
      continue;
    }
    int64_t n = 0;
    if (auto e = item.get_int64().get(n)) return e;
    out += std::to_string(n);
  }
  out += ']';
  return simdjson::SUCCESS;
}

// args.sizes: an integer list, or a string where PyTorch's text was not one.
simdjson::error_code readSizes(od::value value, std::string& out) {
  od::json_type type;
  if (auto e = value.type().get(type)) return e;
  if (type == od::json_type::string) {
    std::string_view text;
    if (auto e = value.get_string().get(text)) return e;
    out = text;
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::array) return simdjson::INCORRECT_TYPE;
  return compactIntegerList(value, out);
}

// document::at_end() is newer than the simdjson 3.0 we build against; past the last token the
// location is out of bounds.
bool atEnd(od::document& doc) {
  const char* at = nullptr;
  return doc.current_location().get(at) == simdjson::OUT_OF_BOUNDS;
}

int64_t toNs(double micros) { return std::llround(micros * 1000.0); }

class Aggregator {
 public:
  explicit Aggregator(const ReadOptions& options) : options_(options) {}

  // Parses one document (the parser's current one) as a trace.
  bool addTrace(od::document& doc, const std::string& path, std::string_view text, std::string& error) {
    file_ = fileCount_++;
    stream_ = false;
    path_ = path;
    base_ = text.data();
    bytes_ = text.size();
    od::json_type type;
    if (auto e = doc.type().get(type)) return fail(error, "not JSON", e);
    bool sawEvents = false;
    if (type == od::json_type::array) {
      od::array events;
      if (auto e = doc.get_array().get(events)) return fail(error, "malformed or truncated JSON", e);
      if (!readEvents(events, error)) return false;
      sawEvents = true;
    } else if (type == od::json_type::object) {
      od::object top;
      if (auto e = doc.get_object().get(top)) return fail(error, "malformed or truncated JSON", e);
      for (auto fieldResult : top) {
        od::field field;
        std::string_view key;
        if (auto e = std::move(fieldResult).get(field)) return fail(error, "malformed JSON", e);
        if (auto e = field.unescaped_key().get(key)) return fail(error, "malformed JSON", e);
        if (key == "traceEvents") {
          od::array events;
          if (auto e = field.value().get_array().get(events)) return fail(error, "'traceEvents' is not an array", e);
          if (!readEvents(events, error)) return false;
          sawEvents = true;
        } else if (key == "metadata") {
          if (!readMetadata(field.value(), error)) return false;
        }
      }
    } else {
      error = fmt::format("{}: not a cutrace trace (neither an object with 'traceEvents' nor an array)", path);
      return false;
    }
    if (!atEnd(doc)) {
      error = fmt::format("{}: unexpected content after the JSON document", path);
      return false;
    }
    if (!sawEvents) {
      error = fmt::format("{}: no 'traceEvents' array: not a cutrace trace", path);
      return false;
    }
    return true;
  }

  void finish(Report& out) {
    out.wallNs = 0;
    for (const auto& [key, span] : processes_) out.wallNs += span.second - span.first;
    out.processes = static_cast<uint32_t>(processes_.size());
    if (out.cuptiNote.empty()) out.cuptiNote = cuptiNote_;
    std::vector<int64_t> childNs;
    nested(api_, apiRows_, childNs);
    out.sections[0] = rowsOf(apiRows_, apiNames_, true);
    for (Row& r : out.sections[0]) {
      if (out.wallNs > 0) r.percent = 100.0 * static_cast<double>(r.totalNs) / static_cast<double>(out.wallNs);
    }
    out.deviceKernels = deviceKernels_;
    out.gpuBusyNs = kernelRows(out.sections[1]);
    nested(nvtx_, nvtxRows_, childNs);
    out.sections[2] = rowsOf(nvtxRows_, nvtxNames_, false);
    out.opsGroupedByShapes = options_.groupByShapes;
    out.sections[3] = opRows(childNs, out);
  }

 private:
  bool fail(std::string& error, std::string_view what, simdjson::error_code e) const {
    error = fmt::format("{}: {}: {}", path_, what, simdjson::error_message(e));
    return false;
  }

  bool readEvents(od::array& events, std::string& error) {
    uint64_t index = 0;
    uint64_t nextReport = bytes_ / 4;
    for (auto eventResult : events) {
      od::value value;
      if (auto e = std::move(eventResult).get(value)) return fail(error, fmt::format("event {}", index), e);
      if (bytes_ >= kProgressBytes && (index & 0xffff) == 0) progress(value, nextReport);
      Event ev;
      if (!readEvent(value, index, ev, error)) return false;
      if (!addEvent(ev, index, error)) return false;
      ++index;
    }
    return true;
  }

  void progress(od::value& value, uint64_t& nextReport) const {
    const char* at = nullptr;
    if (value.current_location().get(at) || at == nullptr) return;
    const auto offset = static_cast<uint64_t>(at - base_);
    if (offset < nextReport) return;
    spdlog::info("reading {}: {}% of {} MB", path_, offset * 100 / bytes_, bytes_ >> 20);
    nextReport += bytes_ / 4;
  }

  bool readEvent(od::value& value, uint64_t index, Event& ev, std::string& error) const {
    od::object obj;
    if (auto e = value.get_object().get(obj)) return fail(error, fmt::format("event {} is not an object", index), e);
    for (auto fieldResult : obj) {
      od::field field;
      std::string_view key;
      if (auto e = std::move(fieldResult).get(field)) return fail(error, fmt::format("event {}", index), e);
      if (auto e = field.unescaped_key().get(key)) return fail(error, fmt::format("event {}", index), e);
      simdjson::error_code e = simdjson::SUCCESS;
      if (key == "ph") {
        e = field.value().get_string().get(ev.ph);
      } else if (key == "cat") {
        e = field.value().get_string().get(ev.cat);
      } else if (key == "name") {
        e = field.value().get_string().get(ev.name);
        ev.hasName = true;
      } else if (key == "ts") {
        e = field.value().get_double().get(ev.ts);
        ev.hasTs = true;
      } else if (key == "dur") {
        e = field.value().get_double().get(ev.dur);
        ev.hasDur = true;
      } else if (key == "pid") {
        e = field.value().get_int64().get(ev.pid);
      } else if (key == "tid") {
        e = field.value().get_int64().get(ev.tid);
        ev.hasTid = true;
      } else if (key == "args") {
        od::object args;
        if ((e = field.value().get_object().get(args)) == simdjson::SUCCESS) {
          for (auto argResult : args) {
            od::field arg;
            std::string_view argKey;
            if ((e = std::move(argResult).get(arg)) || (e = arg.unescaped_key().get(argKey))) break;
            if (argKey == "kernel") {
              e = arg.value().get_string().get(ev.kernel);
            } else if (argKey == "op") {
              e = arg.value().get_string().get(ev.op);
            } else if (argKey == "op_id") {
              e = arg.value().get_uint64().get(ev.opId);
              ev.hasOpId = true;
            } else if (argKey == "op_seq" || argKey == "stashed_seq") {
              uint64_t seq = 0;
              e = arg.value().get_uint64().get(seq);
              ev.hasOpSeq = true;
            } else if (argKey == "sizes") {
              e = readSizes(arg.value(), ev.sizes);
              ev.hasSizes = true;
            } else if (argKey == "captured") {
              e = arg.value().get_bool().get(ev.captured);
            }
            if (e) {
              // Static storage: `key` outlives this loop's strings in the message below.
              static constexpr std::string_view kArgKeys[] = {"args.kernel",      "args.op",    "args.op_id", "args.op_seq",
                                                              "args.stashed_seq", "args.sizes", "args.captured"};
              for (const std::string_view k : kArgKeys) {
                if (k.substr(5) == argKey) key = k;
              }
              break;
            }
          }
        }
      }
      if (e == simdjson::INCORRECT_TYPE || e == simdjson::NUMBER_OUT_OF_RANGE) {
        const bool text = key == "ph" || key == "cat" || key == "name" || key == "args.kernel" || key == "args.op";
        error = fmt::format("{}: event {}: '{}' is not {}", path_, index, key,
                            text                 ? "a string"
                            : key == "args"      ? "an object"
                            : key == "args.sizes" ? "a list of integers or a string"
                            : key == "args.captured" ? "true or false"
                            : key == "ts" || key == "dur" ? "a number"
                            : key.starts_with("args.") ? "a non-negative integer"
                                                       : "an integer");
        return false;
      }
      if (e) return fail(error, fmt::format("event {}: field '{}'", index, key), e);
    }
    return true;
  }

  bool addEvent(const Event& ev, uint64_t index, std::string& error) {
    if (ev.ph == "M") return true;
    if (ev.hasTs && !(std::fabs(ev.ts) < kMaxTraceMicros)) {
      error = fmt::format("{}: event {}: 'ts' out of range", path_, index);
      return false;
    }
    if (ev.ph != "X") {
      if (ev.hasTs) touchProcess(ev.pid, toNs(ev.ts), toNs(ev.ts));
      return true;
    }
    const char* missing = !ev.hasName ? "name" : !ev.hasTs ? "ts" : !ev.hasDur ? "dur" : !ev.hasTid ? "tid" : nullptr;
    if (missing != nullptr) {
      error = fmt::format("{}: event {}: complete ('X') event without '{}'", path_, index, missing);
      return false;
    }
    if (!(ev.dur >= 0 && ev.dur < kMaxTraceMicros)) {
      error = fmt::format("{}: event {}: 'dur' negative or out of range", path_, index);
      return false;
    }
    const int64_t start = toNs(ev.ts);
    addSpan(ev, start, start + toNs(ev.dur));
    return true;
  }

 public:
  // A .pftrace input: its events as the Chrome trace holds them (tools/trace_input.h).
  void beginStream(const std::string& path) {
    file_ = fileCount_++;
    stream_ = true;
    path_ = path;
    hostTracks_.clear();  // a track of another file
  }

  void addStreamEvent(const TraceEvent& t) {
    if (t.ph != 'X') {
      touchProcess(t.pid, t.startNs, t.ph == 'b' ? t.endNs : t.startNs);
      return;
    }
    Event ev;
    ev.ph = "X";
    ev.cat = t.cat;
    ev.name = t.name;
    ev.kernel = t.kernel;
    ev.pid = t.pid;
    ev.tid = t.tid;
    ev.op = t.op;
    ev.opId = t.opId;
    ev.hasOpId = t.hasOpId;
    ev.hasOpSeq = t.hasOpSeq;
    ev.hasSizes = t.hasSizes;
    ev.sizes = t.sizes;
    ev.captured = t.captured;
    if (t.track == 0) addSpan(ev, t.startNs, t.endNs);
    else addNestedSlice(ev, t.track, t.startNs, t.endNs);
  }

  // The stream's `cutrace` metadata: the Chrome trace's metadata object.
  bool addStreamMetadata(std::string_view json, std::string& error) {
    simdjson::padded_string text(json);
    od::parser parser;
    od::document doc;
    od::value value;
    if (auto e = parser.iterate(text).get(doc)) return fail(error, "metadata", e);
    if (auto e = doc.get_value().get(value)) return fail(error, "metadata", e);
    return readMetadata(value, error);
  }

 private:
  enum class Kind { Api, Nvtx, Kernel, Other };
  static Kind kindOf(std::string_view cat) {
    if (cat == "cuda_runtime" || cat == "cuda_driver") return Kind::Api;
    if (cat == "nvtx") return Kind::Nvtx;
    return cat == "kernel" ? Kind::Kernel : Kind::Other;
  }
  static bool isOpRange(const Event& ev) { return ev.hasOpSeq || ev.hasOpId || ev.hasSizes; }

  // A complete event of a JSON trace: its nesting is found at the end (finish), from all of them.
  void addSpan(const Event& ev, int64_t start, int64_t end) {
    touchProcess(ev.pid, start, end);
    switch (kindOf(ev.cat)) {
      case Kind::Api:
        api_.push_back({start, end, apiName(ev, end - start), thread(ev.pid, ev.tid), static_cast<uint8_t>(ev.cat == "cuda_runtime" ? 0 : 1)});
        break;
      case Kind::Nvtx: {
        uint32_t op = kNoOp;
        if (isOpRange(ev)) {
          op = static_cast<uint32_t>(opRanges_.size());
          opRanges_.push_back({file_, ev.pid, opNames_.intern(ev.name), shapesOf(ev), ev.hasOpId, ev.opId});
        }
        nvtx_.push_back({start, end, nvtxNames_.intern(ev.name), thread(ev.pid, ev.tid), 0, op});
        break;
      }
      case Kind::Kernel: addKernel(ev, start, end); break;
      case Kind::Other: break;
    }
  }

  // A slice of a stream's host track: counted at once. Its direct children of its kind are the
  // slices of that kind on its track that began inside it and have no parent yet: they arrived
  // before it (slices arrive at their end), and nothing that arrived since began before them,
  // so they are the top of the track's stack of such slices, sorted by start. A call or range
  // that spanned a drain pass comes after slices written in later passes, and takes them as
  // its children all the same: the nesting is by time, as the Chrome trace's readers find it.
  void addNestedSlice(const Event& ev, uint64_t track, int64_t start, int64_t end) {
    touchProcess(ev.pid, start, end);
    const Kind kind = kindOf(ev.cat);
    if (kind != Kind::Api && kind != Kind::Nvtx) return;
    HostTrack& t = hostTracks_[track];
    std::vector<Unparented>& stack = kind == Kind::Api ? t.api : t.nvtx;
    int64_t childNs = 0;
    while (!stack.empty() && stack.back().start >= start && stack.back().start < end) {
      childNs += stack.back().end - stack.back().start;
      stack.pop_back();
    }
    // Past the cap the older half can have no parent any more: a range reaching that far back
    // (more top-level ranges inside it than the cap) counts those in its self time.
    if (stack.size() >= (kind == Kind::Api ? kMaxUnparentedCalls : kMaxUnparentedRanges))
      stack.erase(stack.begin(), stack.begin() + static_cast<std::ptrdiff_t>(stack.size() / 2));
    stack.push_back({start, end});
    const int64_t dur = end - start;
    if (kind == Kind::Api) {
      count(rowAt(apiRows_, apiName(ev, dur)), dur, childNs);
      return;
    }
    count(rowAt(nvtxRows_, nvtxNames_.intern(ev.name)), dur, childNs);
    if (isOpRange(ev)) {
      const std::size_t r = opRow(opNames_.intern(ev.name), shapesOf(ev));
      count(opRows_[r], dur, childNs);
    }
  }

  // The API name of a call (interned, with its layer) and, for a launch, its kernel's host figures.
  uint32_t apiName(const Event& ev, int64_t dur) {
    const uint32_t name = apiNames_.intern(ev.name);
    if (apiLayer_.size() < apiNames_.names.size()) apiLayer_.push_back(ev.cat == "cuda_runtime" ? "runtime" : "driver");
    if (!ev.kernel.empty()) {
      const uint32_t k = kernelNames_.intern(ev.kernel);
      if (launches_.size() <= k) launches_.resize(k + 1);
      Launches& l = launches_[k];
      // Its kernel runs in the graph's replays, never at this call: a launch of its own would
      // count a kernel the GPU never ran here and mix capture time into launch time.
      if (ev.captured) {
        ++l.captured;
        return name;
      }
      l.minNs = l.count == 0 ? dur : std::min(l.minNs, dur);
      l.maxNs = l.count == 0 ? dur : std::max(l.maxNs, dur);
      l.totalNs += dur;
      ++l.count;
    }
    return name;
  }

  uint32_t shapesOf(const Event& ev) { return ev.sizes.empty() ? kNoOp : shapeTexts_.intern(ev.sizes); }

  void addKernel(const Event& ev, int64_t start, int64_t end) {
    // Device tracks encode the device above bit 22 of the offset from 2^30 (one per stream).
    const int64_t device = ev.tid >= kDeviceTidBase ? (ev.tid - kDeviceTidBase) >> 22 : -1;
    busy_.add(thread(ev.pid, -1 - device), start, end, stream_);
    count(rowAt(kernelRows_, kernelNames_.intern(ev.name)), end - start, 0);
    deviceKernels_ = true;
    if (!ev.op.empty() || ev.hasOpId) {
      const uint32_t op = ev.op.empty() ? kNoOp : opNames_.intern(ev.op);
      // A stream's kernel comes with its op range's name and sizes (trace_input.cpp): counted
      // at once in the row of that name and sizes, with no index of every range's op id and
      // nothing kept. The others wait for every range (opRows()).
      if (stream_ && op != kNoOp) {
        Row& r = opRows_[opRow(op, shapesOf(ev))];
        r.gpuNs += end - start;
        ++r.kernels;
      } else {
        kernelOps_.push_back({file_, ev.pid, op, ev.hasOpId, ev.opId, end - start});
      }
    }
  }

  static void count(Row& r, int64_t dur, int64_t childNs) {
    r.minNs = r.calls == 0 ? dur : std::min(r.minNs, dur);
    r.maxNs = r.calls == 0 ? dur : std::max(r.maxNs, dur);
    r.totalNs += dur;
    r.selfNs += std::max<int64_t>(0, dur - childNs);
    ++r.calls;
  }
  static Row& rowAt(std::vector<Row>& rows, uint32_t id) {
    if (rows.size() <= id) rows.resize(std::size_t{id} + 1);
    return rows[id];
  }
  // The op row of (name, shapes), made on first use; shapes count only when grouping by them.
  std::size_t opRow(uint32_t name, uint32_t shapes) {
    const auto [it, added] = opRowOf_.try_emplace({name, options_.groupByShapes ? shapes : kNoOp}, opRows_.size());
    if (added) {
      opRows_.emplace_back();
      opRows_.back().name = opNames_.names[name];
      if (options_.groupByShapes && shapes != kNoOp) opRows_.back().shapes = shapeTexts_.names[shapes];
    }
    return it->second;
  }

  bool readMetadata(od::value value, std::string& error) {
    od::object meta;
    if (auto e = value.get_object().get(meta)) return fail(error, "'metadata' is not an object", e);
    for (auto fieldResult : meta) {
      od::field field;
      std::string_view key;
      if (auto e = std::move(fieldResult).get(field)) return fail(error, "metadata", e);
      if (auto e = field.unescaped_key().get(key)) return fail(error, "metadata", e);
      if (key != "cupti") continue;
      od::object cupti;
      if (field.value().get_object().get(cupti)) continue;  // informational only
      std::string_view state, reason;
      for (auto cfResult : cupti) {
        od::field cf;
        std::string_view ck;
        if (auto e = std::move(cfResult).get(cf)) return fail(error, "metadata.cupti", e);
        if (auto e = cf.unescaped_key().get(ck)) return fail(error, "metadata.cupti", e);
        if (ck == "state" && cf.value().get_string().get(state)) state = {};
        if (ck == "reason" && cf.value().get_string().get(reason)) reason = {};
      }
      if (cuptiNote_.empty() && !state.empty() && state != "on") {
        cuptiNote_ = reason.empty() ? fmt::format("CUPTI {}", state) : fmt::format("CUPTI {}: {}", state, reason);
      }
    }
    return true;
  }

  void touchProcess(int64_t pid, int64_t start, int64_t end) {
    auto [it, added] = processes_.try_emplace({file_, pid}, start, end);
    if (!added) {
      it->second.first = std::min(it->second.first, start);
      it->second.second = std::max(it->second.second, end);
    }
  }

  uint32_t thread(int64_t pid, int64_t tid) {
    const auto key = std::make_tuple(file_, pid, tid);
    if (lastThread_ != threads_.end() && lastThread_->first == key) return lastThread_->second;
    lastThread_ = threads_.try_emplace(key, static_cast<uint32_t>(threads_.size())).first;
    return lastThread_->second;
  }

  // Self time of a JSON trace's spans: on each thread, an interval starting inside another is
  // its child (calls and push/pop ranges nest by construction), so a stack over start order
  // finds direct parents. Each span is counted in `rows` (by name id); `childNs` receives, per
  // span in the sorted order, the time of its direct children.
  static void nested(std::vector<Span>& spans, std::vector<Row>& rows, std::vector<int64_t>& childNs) {
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return std::tie(a.track, a.start, b.end, a.rank) < std::tie(b.track, b.start, a.end, b.rank);
    });
    childNs.assign(spans.size(), 0);
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      if (i > 0 && spans[i].track != spans[i - 1].track) stack.clear();
      while (!stack.empty() && spans[stack.back()].end <= spans[i].start) stack.pop_back();
      if (!stack.empty()) childNs[stack.back()] += spans[i].end - spans[i].start;
      stack.push_back(i);
    }
    for (std::size_t i = 0; i < spans.size(); ++i) count(rowAt(rows, spans[i].name), spans[i].end - spans[i].start, childNs[i]);
  }

  // The rows of a section, one per name (every name was counted at least once).
  std::vector<Row> rowsOf(std::vector<Row>& rows, const Names& names, bool withLayer) const {
    rows.resize(names.names.size());
    for (std::size_t n = 0; n < rows.size(); ++n) {
      rows[n].name = names.names[n];
      if (withLayer) rows[n].layer = apiLayer_[n];
    }
    return std::move(rows);
  }

  int64_t kernelRows(std::vector<Row>& rows) {
    rows = std::move(kernelRows_);
    rows.resize(kernelNames_.names.size());
    for (std::size_t n = 0; n < rows.size(); ++n) {
      rows[n].name = kernelNames_.names[n];
      if (n < launches_.size()) {
        rows[n].launches = launches_[n].count;
        rows[n].captured = launches_[n].captured;
        rows[n].hostNs = launches_[n].totalNs;
        rows[n].hostMinNs = launches_[n].minNs;
        rows[n].hostMaxNs = launches_[n].maxNs;
      }
    }
    const int64_t busy = busy_.total();
    for (Row& r : rows) {
      r.selfNs = r.totalNs;
      r.gpuNs = r.totalNs;
      r.kernels = r.calls;
      if (r.calls > 0 && busy > 0) r.percent = 100.0 * static_cast<double>(r.totalNs) / static_cast<double>(busy);
    }
    return busy;
  }

  // Op rows: those the streams' op ranges made as they were read, and those of the JSON
  // traces' op ranges (nvtx_ sorted by nested(), `childNs` its result); then the kernels naming
  // an op. A kernel goes to the range whose op_id it carries, within its file and process
  // (PyTorch numbers ops per process; should two ranges of a JSON trace share a number the first
  // in the file wins; a stream's kernel was counted in its own range's row as it came, addKernel);
  // without such a range, by op name alone, which only a table per name can do.
  std::vector<Row> opRows(const std::vector<int64_t>& childNs, Report& out) {
    std::vector<std::size_t> rangeRow(opRanges_.size(), 0);
    for (std::size_t i = 0; i < nvtx_.size(); ++i) {
      const Span& s = nvtx_[i];
      if (s.op == kNoOp) continue;
      const OpRange& op = opRanges_[s.op];
      rangeRow[s.op] = opRow(op.name, op.shapes);
      count(opRows_[rangeRow[s.op]], s.end - s.start, childNs[i]);
    }
    // Only kernels look op ids up: without any, no index of them is made.
    std::map<std::tuple<uint32_t, int64_t, uint64_t>, std::size_t> rowOfOpId;  // (file, pid, op_id) -> row
    if (!kernelOps_.empty()) {
      for (std::size_t i = 0; i < opRanges_.size(); ++i) {
        const OpRange& op = opRanges_[i];
        if (op.hasOpId) rowOfOpId.try_emplace({op.file, op.pid, op.opId}, rangeRow[i]);
      }
    }
    out.opUnmatchedKernels = 0;
    for (const KernelOp& k : kernelOps_) {
      std::size_t r = SIZE_MAX;
      if (const auto it = k.hasOpId ? rowOfOpId.find({k.file, k.pid, k.opId}) : rowOfOpId.end(); it != rowOfOpId.end()) {
        r = it->second;
      } else if (!options_.groupByShapes && k.name != kNoOp) {
        r = opRow(k.name, kNoOp);
      }
      if (r == SIZE_MAX) {
        ++out.opUnmatchedKernels;
        continue;
      }
      opRows_[r].gpuNs += k.durNs;
      ++opRows_[r].kernels;
    }
    for (Row& r : opRows_) {
      if (out.deviceKernels && out.gpuBusyNs > 0) r.percent = 100.0 * static_cast<double>(r.gpuNs) / static_cast<double>(out.gpuBusyNs);
    }
    return std::move(opRows_);
  }

 private:
  // A stream's slices of one kind on a host track that have no parent yet (addNestedSlice).
  struct Unparented {
    int64_t start, end;
  };
  struct HostTrack {
    std::vector<Unparented> api, nvtx;
  };
  // A call is late only by a batch of its thread (a runtime call whose driver call the drain
  // took in the batch before); a range by as long as it stayed open.
  static constexpr std::size_t kMaxUnparentedCalls = 256;
  static constexpr std::size_t kMaxUnparentedRanges = std::size_t{1} << 16;

  ReadOptions options_;
  const char* base_ = nullptr;
  uint32_t fileCount_ = 0;
  uint32_t file_ = 0;
  bool stream_ = false;  // the file being read is a .pftrace
  std::string path_;
  uint64_t bytes_ = 0;
  Names apiNames_, nvtxNames_, kernelNames_, opNames_, shapeTexts_;
  std::vector<const char*> apiLayer_;
  std::vector<Span> api_, nvtx_;         // of JSON traces
  std::vector<Row> apiRows_, nvtxRows_, kernelRows_;  // by name id
  BusyTime busy_;
  bool deviceKernels_ = false;
  std::vector<Row> opRows_;
  std::map<std::pair<uint32_t, uint32_t>, std::size_t> opRowOf_;                 // (name, shapes) -> row
  std::unordered_map<uint64_t, HostTrack> hostTracks_;                         // of the stream being read, by uuid
  std::vector<OpRange> opRanges_;
  std::vector<KernelOp> kernelOps_;
  std::vector<Launches> launches_;
  std::map<std::pair<uint32_t, int64_t>, std::pair<int64_t, int64_t>> processes_;
  std::map<std::tuple<uint32_t, int64_t, int64_t>, uint32_t> threads_;
  std::map<std::tuple<uint32_t, int64_t, int64_t>, uint32_t>::iterator lastThread_ = threads_.end();
  std::string cuptiNote_;
};

// simdjson's on-demand skipping never recurses, so nesting cannot crash it; traces nest about
// 5 deep, and refusing anything past this keeps hostile input a clear error.
constexpr int kMaxDepth = 64;

bool tooDeep(std::string_view text) {
  int depth = 0;
  bool inString = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

static_assert(kInputPadding >= simdjson::SIMDJSON_PADDING, "simdjson parses the input buffer in place");

bool load(const std::string& path, InputBytes& bytes, std::string& error) {
  if (!readInputFile(path, wholeInputCap(), bytes, error)) return false;
  if (tooDeep(bytes.view())) {
    error = fmt::format("{}: JSON nested deeper than {} levels: not a cutrace trace", inputName(path), kMaxDepth);
    return false;
  }
  return true;
}

// A JSON input opened by openTraceInput: from the bytes it read (a pipe), or from its file.
bool loadJson(TraceInput& input, InputBytes& text, std::string& error) {
  if (!input.whole) return load(input.path, text, error);
  text = std::move(input.bytes);
  if (tooDeep(text.view())) {
    error = fmt::format("{}: JSON nested deeper than {} levels: not a cutrace trace", input.name, kMaxDepth);
    return false;
  }
  return true;
}

class StreamSink : public TraceEventSink {
 public:
  explicit StreamSink(Aggregator& agg) : agg_(agg) {}
  void event(const TraceEvent& e) override { agg_.addStreamEvent(e); }
  void metadata(std::string_view json) override {
    if (error_.empty()) agg_.addStreamMetadata(json, error_);
  }
  std::string error_;

 private:
  Aggregator& agg_;
};

// A .pftrace input into `agg`, event by event.
bool addStream(TraceInput& input, Aggregator& agg, std::string& error) {
  agg.beginStream(input.name);
  StreamSink sink(agg);
  if (!readPerfettoEvents(input, sink, error)) return false;
  if (!sink.error_.empty()) {
    error = sink.error_;
    return false;
  }
  return true;
}

bool parseTrace(od::parser& parser, simdjson::padded_string_view text, Aggregator& agg, const std::string& path, std::string& error) {
  od::document doc;
  if (auto e = parser.iterate(text).get(doc)) {
    error = fmt::format("{}: not JSON: {}", path, simdjson::error_message(e));
    return false;
  }
  if (text.size() >= kProgressBytes) spdlog::info("reading {} ({} MB)", path, text.size() >> 20);
  return agg.addTrace(doc, path, text, error);
}

// A row of a report written by `cutrace report --format json`; null numbers read as 0.
bool readReportRow(od::value value, Row& row) {
  od::object obj;
  if (value.get_object().get(obj)) return false;
  bool named = false;
  for (auto fieldResult : obj) {
    od::field field;
    std::string_view key;
    if (std::move(fieldResult).get(field) || field.unescaped_key().get(key)) return false;
    od::value v = field.value();
    bool isNull = false;
    if (v.is_null().get(isNull)) return false;
    if (isNull) continue;
    std::string_view s;
    int64_t* target = nullptr;
    if (key == "name") {
      if (v.get_string().get(s)) return false;
      row.name = s;
      named = true;
    } else if (key == "layer") {
      if (v.get_string().get(s)) return false;
      row.layer = s;
    } else if (key == "shapes") {
      if (v.get_string().get(s)) return false;
      row.shapes = s;
    } else if (key == "calls" || key == "launches" || key == "captured" || key == "kernels") {
      uint64_t n = 0;
      if (v.get_uint64().get(n)) return false;
      (key == "calls" ? row.calls : key == "launches" ? row.launches : key == "captured" ? row.captured : row.kernels) = n;
    } else if (key == "total_ns") {
      target = &row.totalNs;
    } else if (key == "self_ns") {
      target = &row.selfNs;
    } else if (key == "min_ns") {
      target = &row.minNs;
    } else if (key == "max_ns") {
      target = &row.maxNs;
    } else if (key == "host_total_ns") {
      target = &row.hostNs;
    } else if (key == "gpu_total_ns") {
      target = &row.gpuNs;
    } else if (key == "percent") {
      if (v.get_double().get(row.percent)) return false;
    }
    if (target != nullptr && v.get_int64().get(*target)) return false;
  }
  return named;
}

bool readReport(od::document& doc, const std::string& path, Report& out, std::string& error) {
  od::object top;
  if (doc.get_object().get(top)) {
    error = fmt::format("{}: malformed report", path);
    return false;
  }
  bool sawSections = false;
  for (auto fieldResult : top) {
    od::field field;
    std::string_view key;
    if (std::move(fieldResult).get(field) || field.unescaped_key().get(key)) {
      error = fmt::format("{}: malformed report JSON", path);
      return false;
    }
    if (key == "kernel_source") {
      std::string_view source;
      if (field.value().get_string().get(source)) {
        error = fmt::format("{}: report: 'kernel_source' is not a string", path);
        return false;
      }
      out.deviceKernels = source == "device";
    } else if (key == "group_by_shapes") {
      if (field.value().get_bool().get(out.opsGroupedByShapes)) {
        error = fmt::format("{}: report: 'group_by_shapes' is not a boolean", path);
        return false;
      }
    } else if (key == "sections") {
      od::object sections;
      if (field.value().get_object().get(sections)) {
        error = fmt::format("{}: report: 'sections' is not an object", path);
        return false;
      }
      sawSections = true;
      out.present = {};
      for (auto sectionResult : sections) {
        od::field sf;
        std::string_view name;
        if (std::move(sectionResult).get(sf) || sf.unescaped_key().get(name)) {
          error = fmt::format("{}: malformed report JSON", path);
          return false;
        }
        const auto it = std::find_if(kSectionKeys.begin(), kSectionKeys.end(), [&](const char* k) { return name == k; });
        if (it == kSectionKeys.end()) continue;
        const auto section = static_cast<Section>(it - kSectionKeys.begin());
        out.present[static_cast<std::size_t>(section)] = true;
        od::array rows;
        if (sf.value().get_array().get(rows)) {
          error = fmt::format("{}: report: section '{}' is not an array", path, name);
          return false;
        }
        for (auto rowResult : rows) {
          od::value v;
          Row row;
          if (std::move(rowResult).get(v) || !readReportRow(v, row)) {
            error = fmt::format("{}: report: malformed row in section '{}'", path, name);
            return false;
          }
          out.sections[static_cast<std::size_t>(section)].push_back(std::move(row));
        }
      }
    }
  }
  if (!atEnd(doc) || !sawSections) {
    error = fmt::format("{}: malformed report (no 'sections' or trailing content)", path);
    return false;
  }
  return true;
}

// After the file is loaded: a `cutrace report --format json` output or a trace, by content.
bool readTraceOrReportPadded(simdjson::padded_string_view text, const std::string& path, Report& out, std::string& error,
                             const ReadOptions& options) {
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(text).get(doc)) {
    error = fmt::format("{}: not JSON: {}", path, simdjson::error_message(e));
    return false;
  }
  od::json_type type;
  if (doc.type().get(type) == simdjson::SUCCESS && type == od::json_type::object) {
    std::string_view tool;
    if (doc.find_field_unordered("tool").get_string().get(tool) == simdjson::SUCCESS && tool == "cutrace-report") {
      doc.rewind();
      return readReport(doc, path, out, error);
    }
  }
  Aggregator agg(options);
  if (!parseTrace(parser, text, agg, path, error)) return false;
  agg.finish(out);
  return true;
}

}  // namespace

bool readTraces(const std::vector<std::string>& paths, Report& out, std::string& error, const ReadOptions& options) {
  od::parser parser;
  Aggregator agg(options);
  InputBytes text;
  for (const std::string& path : paths) {
    TraceInput input;
    if (!openTraceInput(path, input, error)) return false;
    if (input.format == TraceFormat::Perfetto) {
      if (!addStream(input, agg, error)) return false;
      continue;
    }
    if (!loadJson(input, text, error) || !parseTrace(parser, paddedView(text), agg, input.name, error)) return false;
  }
  agg.finish(out);
  return true;
}

bool readTraceOrReport(const std::string& path, Report& out, std::string& error, const ReadOptions& options) {
  TraceInput input;
  if (!openTraceInput(path, input, error)) return false;
  if (input.format == TraceFormat::Perfetto) {
    Aggregator agg(options);
    if (!addStream(input, agg, error)) return false;
    agg.finish(out);
    return true;
  }
  InputBytes text;
  if (!loadJson(input, text, error)) return false;
  return readTraceOrReportPadded(paddedView(text), input.name, out, error, options);
}

bool readTraceText(std::string_view bytes, const std::string& name, Report& out, std::string& error) {
  simdjson::padded_string text(bytes);
  if (tooDeep(text)) {
    error = fmt::format("{}: JSON nested deeper than {} levels: not a cutrace trace", name, kMaxDepth);
    return false;
  }
  od::parser parser;
  Aggregator agg(ReadOptions{});
  if (!parseTrace(parser, text, agg, name, error)) return false;
  agg.finish(out);
  return true;
}

bool readTraceOrReportText(std::string_view bytes, const std::string& name, Report& out, std::string& error) {
  simdjson::padded_string text(bytes);
  if (tooDeep(text)) {
    error = fmt::format("{}: JSON nested deeper than {} levels: not a cutrace trace", name, kMaxDepth);
    return false;
  }
  return readTraceOrReportPadded(text, name, out, error, {});
}

bool loadJsonFile(const std::string& path, InputBytes& bytes, std::string& error) { return load(path, bytes, error); }

simdjson::padded_string_view paddedView(const InputBytes& bytes) {
  return simdjson::padded_string_view(bytes.data(), bytes.size(), bytes.size() + kInputPadding);
}

bool jsonTooDeep(std::string_view text) { return tooDeep(text); }

bool parseSections(const std::string& by, std::vector<Section>& out) {
  if (by == "all") {
    out = {Section::Api, Section::Kernel, Section::Nvtx, Section::Op};
    return true;
  }
  for (std::size_t i = 0; i < kSectionKeys.size(); ++i) {
    if (by == kSectionKeys[i]) {
      out = {static_cast<Section>(i)};
      return true;
    }
  }
  return false;
}

bool parseSortKey(std::string_view text, SortKey& key) {
  static constexpr std::pair<std::string_view, SortKey> kKeys[] = {
      {"total", SortKey::Total}, {"self", SortKey::Self}, {"calls", SortKey::Calls}, {"avg", SortKey::Avg},
      {"min", SortKey::Min},     {"max", SortKey::Max},   {"gpu", SortKey::Gpu},   {"name", SortKey::Name}};
  for (const auto& [name, k] : kKeys) {
    if (text == name) {
      key = k;
      return true;
    }
  }
  return false;
}

void sortRows(std::vector<Row>& rows, SortKey key, bool deviceKernels) {
  if (key == SortKey::Gpu && std::none_of(rows.begin(), rows.end(), [](const Row& r) { return r.gpuNs > 0; })) key = SortKey::Total;
  const auto value = [&](const Row& r) -> int64_t {
    const bool host = r.calls == 0 && !deviceKernels;
    switch (key) {
      case SortKey::Total:
        return host ? r.hostNs : r.totalNs;
      case SortKey::Self:
        return host ? r.hostNs : r.selfNs;
      case SortKey::Calls:
        return static_cast<int64_t>(host ? r.launches : r.calls);
      case SortKey::Avg:
        return host ? (r.launches == 0 ? 0 : r.hostNs / static_cast<int64_t>(r.launches)) : r.avgNs();
      case SortKey::Min:
        return host ? r.hostMinNs : r.minNs;
      case SortKey::Max:
        return host ? r.hostMaxNs : r.maxNs;
      case SortKey::Gpu:
        return r.gpuNs;
      case SortKey::Name:
        break;
    }
    return 0;
  };
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (key != SortKey::Name) {
      const int64_t va = value(a), vb = value(b);
      if (va != vb) return va > vb;
    }
    return std::tie(a.name, a.shapes) < std::tie(b.name, b.shapes);
  });
}

std::string formatDuration(int64_t ns) {
  const double v = static_cast<double>(ns);
  const double mag = std::fabs(v);
  if (mag < 1e6) return fmt::format("{:.3f} us", v / 1e3);
  if (mag < 1e9) return fmt::format("{:.3f} ms", v / 1e6);
  return fmt::format("{:.3f} s", v / 1e9);
}

std::string csvField(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {
constexpr std::size_t kMaxNameWidth = 72;

// Display width in code points; names are UTF-8 (simdjson validated them).
std::size_t width(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

std::string cut(std::string_view s) {
  if (width(s) <= kMaxNameWidth) return std::string(s);
  std::size_t kept = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80 && ++kept > kMaxNameWidth - 3) break;
  }
  return std::string(s.substr(0, i)) + "...";
}
}  // namespace

std::string markdownText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n' || c == '\r') {
      out += ' ';
      continue;
    }
    // Inline markup only: the text never starts a line of its own (a cell, or after a label).
    // A ':' that could open one of GitHub's emoji codes (std::thread::_M_run would show a spool
    // of thread): one before a name's character.
    const bool emoji = c == ':' && i + 1 < s.size() && (std::isalnum(static_cast<unsigned char>(s[i + 1])) ||
                                                        s[i + 1] == '_' || s[i + 1] == '+' || s[i + 1] == '-');
    if (emoji || std::string_view("\\`*_[]<>|~&$").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string renderMarkdownTable(const std::vector<std::string>& header,
                                const std::vector<std::vector<std::string>>& rows) {
  const auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const std::string& cell : cells) out += " " + markdownText(cell) + " |";
    return out + "\n";
  };
  std::string out = line(header) + "|";
  for (std::size_t c = 0; c < header.size(); ++c) out += c == 0 ? " :--- |" : " ---: |";
  out += "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string renderTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back(header);
  for (const auto& r : rows) {
    cells.push_back(r);
    cells.back()[0] = cut(r[0]);
  }
  std::vector<std::size_t> widths(header.size(), 0);
  for (const auto& r : cells) {
    for (std::size_t c = 0; c < r.size(); ++c) widths[c] = std::max(widths[c], width(r[c]));
  }
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string line;
    for (std::size_t c = 0; c < cells[i].size(); ++c) {
      const std::string& cell = cells[i][c];
      const std::string pad(widths[c] - width(cell), ' ');
      if (c > 0) line += "  ";
      line += c == 0 ? cell + pad : pad + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (i == 0) {
      std::size_t total = 0;
      for (std::size_t w : widths) total += w;
      out += std::string(total + 2 * (widths.size() - 1), '-') + "\n";
    }
  }
  return out;
}

bool Options::has(std::string_view flag) const { return std::find(flags.begin(), flags.end(), flag) != flags.end(); }

bool parseOptions(int argc, char** argv, const std::vector<std::string_view>& withValue, Options& out, std::string& error) {
  return parseOptions(argc, argv, withValue, {}, out, error);
}

bool parseOptions(int argc, char** argv, const std::vector<std::string_view>& withValue,
                  const std::vector<std::string_view>& flags, Options& out, std::string& error) {
  bool optionsDone = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (optionsDone || arg.size() < 2 || arg[0] != '-') {
      out.positional.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsDone = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      continue;
    }
    if (std::find(flags.begin(), flags.end(), arg) != flags.end()) {
      out.flags.emplace_back(arg);
      continue;
    }
    std::string_view name = arg;
    std::string value;
    bool hasValue = false;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    if (std::find(withValue.begin(), withValue.end(), name) == withValue.end()) {
      error = fmt::format("unknown option '{}'", name);
      return false;
    }
    if (!hasValue) {
      if (i + 1 >= argc) {
        error = fmt::format("option '{}' needs a value", name);
        return false;
      }
      value = argv[++i];
    }
    out.values.emplace_back(std::string(name), std::move(value));
  }
  return true;
}

}  // namespace cutrace::tools
