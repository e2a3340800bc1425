// The stream's metadata JSON (`cutrace.process`, `cutrace`: exporters/perfetto_writer.h) read
// back with simdjson, for the tools' rebuilds of a .pftrace. Not in the preload, which rebuilds
// its own stream from the figures it holds (PfMetadataSource::known).

#include <simdjson.h>

#include "exporters/json_writer.h"
#include "exporters/perfetto_reader.h"

namespace cutrace {

namespace {

bool getString(simdjson::dom::element e, const char* key, std::string& out) {
  std::string_view v;
  if (e[key].get(v) != simdjson::SUCCESS) return false;
  out = std::string(v);
  return true;
}
bool getUint(simdjson::dom::element e, const char* key, uint64_t& out) { return e[key].get(out) == simdjson::SUCCESS; }
bool getInt(simdjson::dom::element e, const char* key, int64_t& out) { return e[key].get(out) == simdjson::SUCCESS; }
void getStrings(simdjson::dom::element e, const char* key, std::vector<std::string>& out) {
  simdjson::dom::array a;
  if (e[key].get(a) != simdjson::SUCCESS) return;
  out.clear();
  for (simdjson::dom::element x : a) {
    std::string_view v;
    if (x.get(v) == simdjson::SUCCESS) out.emplace_back(v);
  }
}

// The origin as the stream reader bounds its timestamps: the Chrome trace's times from it stay
// in what its readers take.
bool originInRange(const TraceMeta& m, const char* what, std::string& error) {
  if (m.originMonotonicNs < static_cast<uint64_t>(kMaxTraceNs)) return true;
  error = std::string("ts_origin_ns out of range in the ") + what + " metadata";
  return false;
}

// One parser per thread, reused: a rebuild reads two small documents.
bool parse(std::string_view json, simdjson::dom::element& root, const char* what, std::string& error) {
  thread_local simdjson::dom::parser parser;
  if (json.empty() || parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS || !root.is_object()) {
    error = std::string("malformed ") + what + " metadata";
    return false;
  }
  return true;
}

// What both metadata objects say of the process the same way.
void processFields(simdjson::dom::element root, TraceMeta& m) {
  getString(root, "tool", m.tool);
  getString(root, "version", m.version);
  getString(root, "exe", m.exe);
  getString(root, "hostname", m.hostname);
  getString(root, "capture", m.capture);
  getStrings(root, "command_line", m.commandLine);
  uint64_t pid = 0;
  if (getUint(root, "pid", pid)) m.pid = static_cast<uint32_t>(pid);
}

bool processJson(std::string_view json, TraceData& d, std::string& error) {
  simdjson::dom::element root;
  if (!parse(json, root, "cutrace.process", error)) return false;
  TraceMeta& m = d.meta;
  processFields(root, m);
  getString(root, "clock_source", m.clockSource);
  uint64_t u = 0;
  int64_t i = 0;
  if (getInt(root, "rank", i)) m.rank = static_cast<int>(i);
  if (getUint(root, "ts_origin_ns", u)) m.originMonotonicNs = u;
  if (!originInRange(m, "cutrace.process", error)) return false;
  if (getInt(root, "realtime_minus_monotonic_ns", i)) m.realtimeMinusMonotonicNs = i;
  simdjson::dom::array hooks;
  if (root["hooks"].get(hooks) != simdjson::SUCCESS) return true;
  for (simdjson::dom::element h : hooks) {
    std::string name;
    uint64_t layer = 0, kind = 0;
    if (!h.is_object() || !getString(h, "name", name) || !getUint(h, "layer", layer) || !getUint(h, "kind", kind) ||
        layer > static_cast<uint64_t>(ApiLayer::Driver) || kind >= kApiKindCount) {
      error = "malformed hook table in the cutrace.process metadata";
      d.hooks.clear();
      return false;
    }
    d.hookNames.push_back(std::move(name));
    d.hooks.push_back(HookDescriptor{d.hookNames.back().c_str(), static_cast<ApiLayer>(layer), static_cast<ApiKind>(kind)});
  }
  return true;
}

// The Chrome trace's metadata object, as the process wrote it at its end.
bool finalJson(std::string_view json, TraceData& d, PfFinalMetadata& final, std::string& error) {
  simdjson::dom::element root;
  if (!parse(json, root, "cutrace", error)) return false;
  final.ended = true;
  TraceMeta& m = d.meta;
  processFields(root, m);
  uint64_t u = 0;
  m.rank = getUint(root, "rank", u) ? static_cast<int>(u) : -1;
  if (getUint(root, "events", u)) final.events = u;
  simdjson::dom::element clock, cupti, stacks;
  if (root["clock"].get(clock) == simdjson::SUCCESS) {
    getString(clock, "source", m.clockSource);
    getUint(clock, "ts_origin_ns", m.originMonotonicNs);
    getInt(clock, "realtime_minus_monotonic_ns", m.realtimeMinusMonotonicNs);
    if (!originInRange(m, "cutrace", error)) return false;
  }
  simdjson::dom::object counters;
  if (root["counters"].get(counters) == simdjson::SUCCESS) {
    m.counters.clear();
    for (auto [key, value] : counters) {
      uint64_t v = 0;
      if (value.get(v) == simdjson::SUCCESS) m.counters.emplace_back(std::string(key), v);
    }
  }
  if (root["cupti"].get(cupti) == simdjson::SUCCESS) {
    getString(cupti, "state", d.cupti.state);
    getString(cupti, "reason", d.cupti.reason);
    getUint(cupti, "dropped_records", d.cupti.droppedRecords);
    getUint(cupti, "outside_capture", d.cupti.outsideCapture);
  }
  if (root["stacks"].get(stacks) == simdjson::SUCCESS) {
    TraceData::StackInfo& s = d.stackInfo;
    getString(stacks, "unwinder", s.unwinder);
    getString(stacks, "python", s.python);
    getUint(stacks, "unwind_fallbacks", s.fallbacks);
    s.verified = getUint(stacks, "unwind_mismatches", s.mismatches);
    if (getUint(stacks, "depth", u)) s.depth = static_cast<uint32_t>(u);
    getUint(stacks, "overflowed", s.overflowed);
    getUint(stacks, "distinct", final.distinctStacks);
  }
  simdjson::dom::array threads;
  if (root["threads"].get(threads) == simdjson::SUCCESS) {
    final.threads.clear();
    for (simdjson::dom::element t : threads) {
      PfFinalThread f;
      if (getUint(t, "tid", u)) f.tid = static_cast<uint32_t>(u);
      getUint(t, "dropped", f.dropped);
      getUint(t, "lost_ends", f.lostEnds);
      getUint(t, "seq_end", f.seqEnd);
      final.threads.push_back(f);
    }
  }
  return true;
}

constexpr PfMetadataSource kFromFile{processJson, finalJson, nullptr};

}  // namespace

const PfMetadataSource& perfettoFileMetadata() { return kFromFile; }

bool readPerfettoTrace(const std::string& path, TraceData& out, std::string& error, PfRebuildInfo* info,
                       const PfRebuildOptions& options) {
  return rebuildPerfetto(path, kFromFile, out, error, info, options);
}

bool readPerfettoTraceBytes(std::string_view bytes, TraceData& out, std::string& error, PfRebuildInfo* info,
                            const PfRebuildOptions& options) {
  return rebuildPerfettoBytes(bytes, kFromFile, out, error, info, options);
}

}  // namespace cutrace
