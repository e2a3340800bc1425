#include "tools/merge_traces.h"
#include "tools/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "exporters/json_writer.h"
#include "tools/commands.h"
#include "tools/input_file.h"
#include "tools/report_model.h"
#include "tools/trace_input.h"

namespace cutrace::tools {
namespace {

namespace od = simdjson::ondemand;

// Flow ids stay numbers while they fit a double exactly (viewers read JSON numbers as doubles).
constexpr uint64_t kMaxExactId = (uint64_t{1} << 53) - 1;

struct Input {
  std::string file;
  uint64_t maxJson = kDefaultJsonLimit;  // a .pftrace's Chrome trace, at most
  std::string exe;
  std::string host;
  int64_t pid = 0;
  int64_t mergedPid = 0;
  int64_t rank = -1;
  int64_t originNs = 0;  // the trace origin on CLOCK_REALTIME
  int64_t offsetNs = 0;  // from the merged origin
  uint64_t dropped = 0;
  uint64_t recorded = 0;  // metadata "events"
  uint64_t events = 0;    // copied into the merge
  // The bytes of an input that can be read only once (a pipe), kept from pass 1 for pass 2;
  // files are read again instead, so one file at a time is in memory.
  InputBytes kept;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The document ends after its value (document::at_end() is newer than simdjson 3.0).
bool atEnd(od::document& doc) {
  const char* at = nullptr;
  return doc.current_location().get(at) == simdjson::OUT_OF_BOUNDS;
}

// Microseconds with exactly 3 decimals, from integer nanoseconds (no float rounding).
std::string micros(int64_t ns) {
  const uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", mag / 1000, mag % 1000);
}

// Rank from a `<exe>-<pid>-rank<R>.trace.json` name, for traces whose metadata lacks it.
int64_t rankFromName(const std::string& path) {
  const std::string_view name = std::string_view(path).substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  const std::size_t at = name.rfind("-rank");
  if (at == std::string_view::npos) return -1;
  std::size_t i = at + 5;
  int64_t rank = 0;
  const std::size_t digitsStart = i;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i - digitsStart < 9; ++i) rank = rank * 10 + (name[i] - '0');
  if (i == digitsStart || (i < name.size() && name[i] != '.')) return -1;
  return rank;
}

class Merger {
 public:
  Merger(std::vector<Input>& inputs, std::FILE* out) : inputs_(inputs), out_(out) {}

  // Pass 1: the metadata of one input (at the end of cutrace's files, so the whole file is read).
  static bool readMeta(od::parser& parser, Input& in, std::string& error) {
    InputBytes text;
    if (!loadTraceAsJson(in.file, text, error, in.maxJson)) return false;
    od::document doc;
    od::object top;
    if (auto e = parser.iterate(paddedView(text)).get(doc)) return fail(error, in.file, "not JSON", e);
    if (auto e = doc.get_object().get(top)) return fail(error, in.file, "not a JSON object with 'traceEvents'", e);
    bool sawEvents = false, sawOrigin = false, sawOffset = false, sawPid = false;
    int64_t monotonicOrigin = 0, realtimeOffset = 0;
    for (auto fieldResult : top) {
      od::field field;
      std::string_view key;
      if (auto e = std::move(fieldResult).get(field)) return fail(error, in.file, "malformed JSON", e);
      if (auto e = field.unescaped_key().get(key)) return fail(error, in.file, "malformed JSON", e);
      if (key == "traceEvents") {
        od::json_type type;
        if (field.value().type().get(type) || type != od::json_type::array) return fail(error, in.file, "'traceEvents' is not an array");
        sawEvents = true;
      } else if (key == "metadata") {
        od::object meta;
        if (auto e = field.value().get_object().get(meta)) return fail(error, in.file, "'metadata' is not an object", e);
        for (auto metaResult : meta) {
          od::field mf;
          std::string_view mk;
          if (auto e = std::move(metaResult).get(mf)) return fail(error, in.file, "malformed metadata", e);
          if (auto e = mf.unescaped_key().get(mk)) return fail(error, in.file, "malformed metadata", e);
          simdjson::error_code e = simdjson::SUCCESS;
          std::string_view s;
          if (mk == "exe") {
            if (!(e = mf.value().get_string().get(s))) in.exe = s;
          } else if (mk == "hostname") {
            if (!(e = mf.value().get_string().get(s))) in.host = s;
          } else if (mk == "pid") {
            e = mf.value().get_int64().get(in.pid);
            sawPid = true;
          } else if (mk == "rank") {
            e = mf.value().get_int64().get(in.rank);
            if (!e && in.rank < 0) e = simdjson::NUMBER_OUT_OF_RANGE;
          } else if (mk == "events") {
            e = mf.value().get_uint64().get(in.recorded);
          } else if (mk == "dropped_events") {
            e = mf.value().get_uint64().get(in.dropped);
          } else if (mk == "clock") {
            od::object clock;
            if ((e = mf.value().get_object().get(clock)) == simdjson::SUCCESS) {
              for (auto clockResult : clock) {
                od::field cf;
                std::string_view ck;
                if ((e = std::move(clockResult).get(cf)) || (e = cf.unescaped_key().get(ck))) break;
                if (ck == "ts_origin_ns") {
                  if ((e = cf.value().get_int64().get(monotonicOrigin))) break;
                  sawOrigin = true;
                } else if (ck == "realtime_minus_monotonic_ns") {
                  if ((e = cf.value().get_int64().get(realtimeOffset))) break;
                  sawOffset = true;
                }
              }
            }
          }
          if (e) return fail(error, in.file, fmt::format("metadata '{}'", mk), e);
        }
      }
    }
    if (!atEnd(doc)) return fail(error, in.file, "unexpected content after the JSON document");
    if (!sawEvents) return fail(error, in.file, "no 'traceEvents' array: not a cutrace trace");
    const char* missing = !sawOrigin ? "metadata.clock.ts_origin_ns" : !sawOffset ? "metadata.clock.realtime_minus_monotonic_ns" : !sawPid ? "metadata.pid" : nullptr;
    if (missing != nullptr) return fail(error, in.file, fmt::format("no '{}': merging needs each process's clock and pid (a cutrace trace)", missing));
    if (__builtin_add_overflow(monotonicOrigin, realtimeOffset, &in.originNs)) return fail(error, in.file, "clock origin out of range");
    if (in.rank < 0) in.rank = rankFromName(in.file);
    if (in.exe.empty()) {
      const std::size_t slash = in.file.rfind('/');
      in.exe = in.file.substr(slash == std::string::npos ? 0 : slash + 1);
    }
    if (!isRereadable(in.file)) in.kept = std::move(text);
    return true;
  }

  // Pass 2: one input's events, copied with ts, pid, flow ids and the process name rewritten.
  bool copyEvents(od::parser& parser, std::size_t index, std::string& error) {
    Input& in = inputs_[index];
    index_ = index;
    InputBytes text = std::move(in.kept);
    if (text.data() == nullptr && !loadTraceAsJson(in.file, text, error, in.maxJson)) return false;
    od::document doc;
    od::object top;
    if (auto e = parser.iterate(paddedView(text)).get(doc)) return fail(error, in.file, "not JSON", e);
    if (auto e = doc.get_object().get(top)) return fail(error, in.file, "not a JSON object", e);
    sawProcessName_ = false;
    for (auto fieldResult : top) {
      od::field field;
      std::string_view key;
      if (auto e = std::move(fieldResult).get(field)) return fail(error, in.file, "malformed JSON", e);
      if (auto e = field.unescaped_key().get(key)) return fail(error, in.file, "malformed JSON", e);
      if (key != "traceEvents") continue;
      od::array events;
      if (auto e = field.value().get_array().get(events)) return fail(error, in.file, "'traceEvents' is not an array", e);
      uint64_t n = 0;
      for (auto eventResult : events) {
        od::value value;
        if (auto e = std::move(eventResult).get(value)) return fail(error, in.file, fmt::format("event {}", n), e);
        if (!copyEvent(value, in, n, error)) return false;
        ++n;
      }
      in.events += n;
    }
    if (!sawProcessName_) {
      emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", in.mergedPid, jsonStringLiteral(label(in))));
      ++in.events;
    }
    return true;
  }

  void emitSortIndex(const Input& in, std::size_t sortIndex) {
    emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", in.mergedPid, sortIndex));
  }

  void emit(std::string_view event) {
    if (!first_) std::fputs(",\n", out_);
    first_ = false;
    std::fwrite(event.data(), 1, event.size(), out_);
  }

  // Viewers add the pid themselves (Perfetto "name 123", chrome://tracing "name (pid 123)"):
  // the label names the pid only when the merge changed it, the one the process really had.
  static std::string label(const Input& in) {
    std::string s = in.exe;
    if (in.rank >= 0) s += fmt::format(" rank {}", in.rank);
    if (!in.host.empty()) s += " @" + in.host;
    if (in.mergedPid != in.pid) s += fmt::format(" (real pid {})", in.pid);
    return s;
  }

 private:
  enum class Kind { Copied, Ts, Pid, Id, Args };
  struct Field {
    std::string_view key;
    Kind kind;
    std::size_t begin, end;  // the copied value in scratch_
  };

  static bool fail(std::string& error, const std::string& file, std::string_view what, simdjson::error_code e = simdjson::SUCCESS) {
    const std::string name = inputName(file);
    error = e ? fmt::format("{}: {}: {}", name, what, simdjson::error_message(e)) : fmt::format("{}: {}", name, what);
    return false;
  }

  // Copies a value, validating every token on the way: skipped containers are not checked
  // by the on-demand parser, and the merged file must stay valid JSON whatever came in.
  // Depth is bounded by loadJsonFile's nesting check.
  static simdjson::error_code copyValue(od::value v, std::string& out) {
    od::json_type type;
    if (auto e = v.type().get(type)) return e;
    switch (type) {
      case od::json_type::array: {
        od::array a;
        if (auto e = v.get_array().get(a)) return e;
        out += '[';
        bool first = true;
        for (auto r : a) {
          od::value x;
          if (auto e = std::move(r).get(x)) return e;
          if (!first) out += ',';
          first = false;
          if (auto e = copyValue(x, out)) return e;
        }
        out += ']';
        return simdjson::SUCCESS;
      }
      case od::json_type::object: {
        od::object o;
        if (auto e = v.get_object().get(o)) return e;
        out += '{';
        bool first = true;
        for (auto r : o) {
          od::field f;
          std::string_view key;
          if (auto e = std::move(r).get(f)) return e;
          if (auto e = f.unescaped_key().get(key)) return e;
          if (!first) out += ',';
          first = false;
          putJsonString(out, key);
          out += ':';
          if (auto e = copyValue(f.value(), out)) return e;
        }
        out += '}';
        return simdjson::SUCCESS;
      }
      case od::json_type::string: {
        // Written again by the project's escaper rather than copied: the input may hold what
        // JSON allows and Perfetto rejects (a raw DEL, surrogate-pair escapes).
        std::string_view s;
        if (auto e = v.get_string().get(s)) return e;
        putJsonString(out, s);
        return simdjson::SUCCESS;
      }
      case od::json_type::number: {
        const std::string_view raw = trim(v.raw_json_token());
        od::number n;
        if (auto e = v.get_number().get(n)) return e;
        out += raw;
        return simdjson::SUCCESS;
      }
      case od::json_type::boolean: {
        bool b = false;
        if (auto e = v.get_bool().get(b)) return e;
        out += b ? "true" : "false";
        return simdjson::SUCCESS;
      }
      case od::json_type::null: {
        bool isNull = false;
        if (auto e = v.is_null().get(isNull)) return e;
        if (!isNull) return simdjson::INCORRECT_TYPE;
        out += "null";
        return simdjson::SUCCESS;
      }
    }
    return simdjson::INCORRECT_TYPE;
  }

  bool copyEvent(od::value& value, const Input& in, uint64_t n, std::string& error) {
    od::object obj;
    if (auto e = value.get_object().get(obj)) return fail(error, in.file, fmt::format("event {} is not an object", n), e);
    scratch_.clear();
    fields_.clear();
    std::string_view ph, name;
    double ts = 0;
    int64_t pid = 0;
    for (auto fieldResult : obj) {
      od::field field;
      std::string_view key;
      if (auto e = std::move(fieldResult).get(field)) return fail(error, in.file, fmt::format("event {}", n), e);
      if (auto e = field.unescaped_key().get(key)) return fail(error, in.file, fmt::format("event {}", n), e);
      Field f{key, Kind::Copied, scratch_.size(), 0};
      simdjson::error_code e = simdjson::SUCCESS;
      if (key == "ts") {
        f.kind = Kind::Ts;
        if (!(e = field.value().get_double().get(ts)) && !(std::fabs(ts) < kMaxTraceMicros)) e = simdjson::NUMBER_OUT_OF_RANGE;
      } else if (key == "pid") {
        f.kind = Kind::Pid;
        e = field.value().get_int64().get(pid);
      } else {
        if (key == "id") f.kind = Kind::Id;
        if (key == "args") f.kind = Kind::Args;
        od::value v = field.value();
        if (key == "ph" || key == "name") {
          od::json_type type;
          if (!(e = v.type().get(type)) && type == od::json_type::string) e = v.get_string().get(key == "ph" ? ph : name);
          // Read once, so written here from what was read (copyValue cannot read it again).
          if (!e && type == od::json_type::string) {
            putJsonString(scratch_, key == "ph" ? ph : name);
            f.end = scratch_.size();
            fields_.push_back(f);
            continue;
          }
        }
        if (!e) e = copyValue(v, scratch_);
      }
      if (e) return fail(error, in.file, fmt::format("event {}: field '{}'", n, key), e);
      f.end = scratch_.size();
      fields_.push_back(f);
    }
    const bool processName = ph == "M" && name == "process_name" && pid == in.pid;
    sawProcessName_ |= processName;
    // Flows (s/t/f) and async ranges (b/n/e) pair by id across the whole file.
    const bool pairedById = ph.size() == 1 && std::string_view("stfbne").find(ph[0]) != std::string_view::npos;
    event_.clear();
    event_ += '{';
    bool sawArgs = false;
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const Field& f = fields_[i];
      const std::string_view copied = std::string_view(scratch_).substr(f.begin, f.end - f.begin);
      if (i) event_ += ',';
      putJsonString(event_, f.key);
      event_ += ':';
      switch (f.kind) {
        case Kind::Ts:
          event_ += micros(static_cast<int64_t>(std::llround(ts * 1000.0)) + in.offsetNs);
          break;
        case Kind::Pid:
          event_ += fmt::format("{}", pid == in.pid ? in.mergedPid : pid);
          break;
        case Kind::Id:
          event_ += pairedById ? uniqueId(copied) : std::string(copied);
          break;
        case Kind::Args:
          sawArgs = true;
          event_ += processName ? fmt::format(R"({{"name":{}}})", jsonStringLiteral(label(in))) : std::string(copied);
          break;
        case Kind::Copied:
          event_ += copied;
          break;
      }
    }
    if (processName && !sawArgs) event_ += fmt::format(R"({}"args":{{"name":{}}})", fields_.empty() ? "" : ",", jsonStringLiteral(label(in)));
    event_ += '}';
    emit(event_);
    return true;
  }

  // The same id in two inputs must not pair: numbers become id * inputs + index (unique,
  // still a number), anything else a string prefixed with the input's index.
  std::string uniqueId(std::string_view copied) const {
    const uint64_t count = inputs_.size();
    uint64_t id = 0;
    const bool digits = !copied.empty() && copied.find_first_not_of("0123456789") == std::string_view::npos && copied.size() <= 16;
    if (digits) {
      for (char c : copied) id = id * 10 + static_cast<uint64_t>(c - '0');
      if (id <= (kMaxExactId - index_) / count) return fmt::format("{}", id * count + index_);
    }
    std::string_view inner = copied;
    if (inner.size() >= 2 && inner.front() == '"') inner = inner.substr(1, inner.size() - 2);  // still escaped: stays valid
    return fmt::format("\"{}:{}\"", index_, inner);
  }

  std::vector<Input>& inputs_;
  std::FILE* out_;
  std::size_t index_ = 0;
  bool first_ = true;
  bool sawProcessName_ = false;
  std::string scratch_;
  std::string event_;
  std::vector<Field> fields_;
};

// Distinct pids in the merged file: a later input whose pid is taken (another host, or the
// same file twice) gets the next pid above every input's.
void assignPids(std::vector<Input>& inputs, MergeSummary& summary) {
  std::set<int64_t> all, taken;
  for (const Input& in : inputs) all.insert(in.pid);
  int64_t next = all.empty() ? 1 : *all.rbegin() + 1;
  for (Input& in : inputs) {
    in.mergedPid = in.pid;
    if (taken.insert(in.pid).second) continue;
    while (all.count(next) || taken.count(next)) ++next;
    in.mergedPid = next++;
    taken.insert(in.mergedPid);
    summary.notes.push_back(fmt::format("{}: pid {}{} already used by another input; shown as pid {}", in.file, in.pid,
                                        in.host.empty() ? "" : " on " + in.host, in.mergedPid));
  }
}

std::string metadata(const std::vector<Input>& inputs, int64_t originNs, const MergeSummary& summary) {
  std::string m = R"("metadata":{"tool":"cutrace-merge")";
#ifdef CUTRACE_VERSION
  m += R"(,"version":)" + jsonStringLiteral(CUTRACE_VERSION);
#endif
  m += fmt::format(R"(,"clock":{{"domain":"CLOCK_REALTIME","ts_origin_ns":{}}},"inputs":[)", originNs);
  uint64_t events = 0, dropped = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs[i];
    events += in.events;
    dropped += in.dropped;
    m += fmt::format(R"({}{{"file":{},"pid":{},"merged_pid":{},"exe":{},"host":{},"rank":{},"offset_us":{},"events":{},"dropped_events":{}}})",
                     i ? "," : "", jsonStringLiteral(in.file), in.pid, in.mergedPid, jsonStringLiteral(in.exe), jsonStringLiteral(in.host),
                     in.rank >= 0 ? fmt::format("{}", in.rank) : "null", micros(in.offsetNs), in.events, in.dropped);
  }
  m += R"(],"pid_remaps":[)";
  bool first = true;
  for (const Input& in : inputs) {
    if (in.mergedPid == in.pid) continue;
    m += fmt::format(R"({}{{"file":{},"host":{},"pid":{},"merged_pid":{}}})", first ? "" : ",", jsonStringLiteral(in.file), jsonStringLiteral(in.host), in.pid,
                     in.mergedPid);
    first = false;
  }
  m += fmt::format(R"(],"notes":[)");
  for (std::size_t i = 0; i < summary.notes.size(); ++i) m += (i ? "," : "") + jsonStringLiteral(summary.notes[i]);
  m += fmt::format(R"(],"events":{},"dropped_events":{}}})", events, dropped);
  return m;
}

}  // namespace

bool readTraceInfo(const std::string& path, TraceInfo& info, std::string& error) {
  od::parser parser;
  Input in;
  in.file = path;
  if (!Merger::readMeta(parser, in, error)) return false;
  info = TraceInfo{in.exe, in.host, in.pid, in.rank, in.recorded, in.dropped};
  return true;
}

int mergeTraces(const std::vector<std::string>& files, const std::string& output, MergeSummary& summary, std::string& error,
                uint64_t maxJson) {
  if (files.empty()) {
    error = "no input traces";
    return kExitUsage;
  }
  std::vector<Input> inputs(files.size());
  od::parser parser;
  for (std::size_t i = 0; i < files.size(); ++i) {
    inputs[i].file = files[i];
    inputs[i].maxJson = maxJson;
    if (!Merger::readMeta(parser, inputs[i], error)) return kExitBadInput;
  }
  const Input* earliest = &inputs.front();
  for (const Input& in : inputs)
    if (in.originNs < earliest->originNs) earliest = &in;
  const int64_t origin = earliest->originNs;
  // An offset within the bound the readers put on 'ts' keeps an event's shifted time (its own
  // within that bound too) from overflowing; two runs that far apart (31 years) are not one job.
  for (Input& in : inputs) {
    if (__builtin_sub_overflow(in.originNs, origin, &in.offsetNs) || in.offsetNs >= kMaxTraceNs) {
      error = fmt::format("{}: clock origins too far apart (its and {}'s)", inputName(in.file), inputName(earliest->file));
      return kExitBadInput;
    }
  }
  assignPids(inputs, summary);

  // Written beside the output and renamed into place (tools/output_file.h): a bad input found
  // while copying leaves nothing behind.
  OutputTarget target;
  if (!openOutput(output, target, error)) return kExitOutput;
  const int fd = target.fd;
  std::FILE* out = fdopen(fd, "w");
  if (out == nullptr) {
    error = fmt::format("{}: {}", output, std::strerror(errno));
    close(fd);
    abandonOutput(target);
    return kExitOutput;
  }
  std::setvbuf(out, nullptr, _IOFBF, 1 << 20);
  std::fputs("{\"traceEvents\":[\n", out);
  Merger merger(inputs, out);
  int status = kExitOk;
  for (std::size_t i = 0; i < inputs.size() && status == kExitOk; ++i) {
    if (!merger.copyEvents(parser, i, error)) status = kExitBadInput;
  }
  if (status == kExitOk) {
    // Ranks in order, then inputs without a rank in the order given.
    std::vector<std::size_t> order(inputs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const auto key = [&](std::size_t i) { return inputs[i].rank >= 0 ? inputs[i].rank : std::numeric_limits<int64_t>::max(); };
      return key(a) < key(b);
    });
    for (std::size_t k = 0; k < order.size(); ++k) merger.emitSortIndex(inputs[order[k]], k);
    for (const Input& in : inputs) summary.events += in.events;
    const std::string meta = metadata(inputs, origin, summary);
    std::fputs("\n],\"displayTimeUnit\":\"ns\",\n", out);
    std::fwrite(meta.data(), 1, meta.size(), out);
    std::fputs("}\n", out);
  }
  const bool written = std::fflush(out) == 0 && std::ferror(out) == 0 && (!target.tmp.empty() ? fsync(fd) == 0 : true);
  const int writeErrno = errno;
  const bool closed = std::fclose(out) == 0;
  if (status == kExitOk && !(written && closed)) {
    error = fmt::format("{}: cannot write: {}", output, std::strerror(writeErrno));
    status = kExitOutput;
  }
  if (status == kExitOk && !commitOutput(target, error)) status = kExitOutput;
  if (status != kExitOk) abandonOutput(target);
  return status;
}

}  // namespace cutrace::tools
