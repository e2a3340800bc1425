#include "exporters/chrome_trace.h"

#include "exporters/trace_view.h"

namespace cutrace {

namespace {

const char* layerCategory(ApiLayer layer) { return layer == ApiLayer::Runtime ? "cuda_runtime" : "cuda_driver"; }

class ChromeWriter {
 public:
  ChromeWriter(const TraceData& data, Sink& out) : data_(data), out_(out) {}

  void write() {
    out_.put("{\"traceEvents\":[\n");
    writeNames();
    for (const ThreadTrack& t : data_.threads) {
      for (uint32_t i : timelineOrder(t)) writeEvent(t, t.events[i]);
    }
    out_.put("],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":");
    writeMetadata();
    out_.put("}\n");
  }

 private:
  void sep() {
    if (!first_) out_.put(",\n");
    first_ = false;
  }

  void head(const char* ph, std::string_view cat, std::string_view name, uint32_t tid) {
    sep();
    out_.put("{\"ph\":\"");
    out_.put(ph);
    out_.put("\",\"cat\":\"");
    out_.put(cat);
    out_.put("\",\"name\":");
    putJsonString(out_, name);
    out_.put(",\"pid\":");
    out_.putUint(data_.meta.pid);
    out_.put(",\"tid\":");
    out_.putUint(tid);
  }

  void writeNames() {
    sep();
    out_.put("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    out_.putUint(data_.meta.pid);
    out_.put(",\"tid\":");
    out_.putUint(data_.meta.pid);
    out_.put(",\"args\":{\"name\":");
    putJsonString(out_, data_.meta.exe);
    out_.put("}}");
    for (const ThreadTrack& t : data_.threads) {
      sep();
      out_.put("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
      out_.putUint(data_.meta.pid);
      out_.put(",\"tid\":");
      out_.putUint(t.tid);
      out_.put(",\"args\":{\"name\":");
      putJsonString(out_, t.name.empty() ? std::string("thread ") + std::to_string(t.tid) : t.name);
      out_.put("}}");
    }
  }

  void times(const Event& e, bool withDuration) {
    const int64_t start = data_.toTraceNs(e.start);
    out_.put(",\"ts\":");
    out_.putMicros(start);
    if (withDuration) {
      out_.put(",\"dur\":");
      out_.putMicros(data_.toTraceNs(e.end) - start);
    }
  }

  void argsOpen(const Event& e) {
    out_.put(",\"args\":{\"seq\":");
    out_.putUint(e.seq);
  }

  void flagArgs(const Event& e) {
    if (e.flags & kEventUnclosed) out_.put(",\"unclosed\":true");
    if (e.flags & kEventEndLost) out_.put(",\"end_lost\":true");
    if (e.flags & kEventTextTruncated) out_.put(",\"truncated\":true");
  }

  void nvtxArgs(const Event& e) {
    if (e.domain != 0) {
      out_.put(",\"domain\":");
      putJsonString(out_, data_.strings.get(e.domain));
    }
    if (e.category != 0) {
      out_.put(",\"category\":");
      auto it = data_.categoryNames.find((static_cast<uint64_t>(e.domain) << 32) | e.category);
      if (it != data_.categoryNames.end()) putJsonString(out_, data_.strings.get(it->second));
      else out_.putUint(e.category);
    }
    flagArgs(e);
  }

  void dims(const char* key, uint32_t x, uint32_t y, uint32_t z) {
    out_.put(key);
    out_.putUint(x);
    out_.put(',');
    out_.putUint(y);
    out_.put(',');
    out_.putUint(z);
    out_.put(']');
  }

  void apiArgs(const Event& e, const HookDescriptor& hook) {
    switch (hook.kind) {
      case ApiKind::Launch:
        if (e.launch.kernelName != 0) {
          out_.put(",\"kernel\":");
          putJsonString(out_, demangle_(data_, e.launch.kernelName));
          dims(",\"grid\":[", e.launch.gridX, e.launch.gridY, e.launch.gridZ);
          dims(",\"block\":[", e.launch.blockX, e.launch.blockY, e.launch.blockZ);
          if (e.launch.sharedMem != 0) {
            out_.put(",\"shared\":");
            out_.putUint(e.launch.sharedMem);
          }
          out_.put(",\"stream\":\"");
          out_.putHex(e.launch.stream);
          out_.put('"');
        }
        break;
      case ApiKind::Memcpy:
      case ApiKind::Memset:
      case ApiKind::Alloc:
      case ApiKind::Free:
        if (hook.kind != ApiKind::Free) {
          out_.put(",\"bytes\":");
          out_.putUint(e.mem.bytes);
        }
        if (hook.kind == ApiKind::Memcpy && e.mem.copyKind != static_cast<uint8_t>(CopyKind::Unknown)) {
          out_.put(",\"kind\":\"");
          out_.put(copyKindName(e.mem.copyKind));
          out_.put('"');
        }
        if ((hook.kind == ApiKind::Alloc || hook.kind == ApiKind::Free) && e.mem.ptr != 0) {
          out_.put(",\"ptr\":\"");
          out_.putHex(e.mem.ptr);
          out_.put('"');
        }
        if (e.mem.stream != 0) {
          out_.put(",\"stream\":\"");
          out_.putHex(e.mem.stream);
          out_.put('"');
        }
        break;
      case ApiKind::Graph:
      case ApiKind::Sync:
        if (e.handle.handle != 0) {
          out_.put(",\"handle\":\"");
          out_.putHex(e.handle.handle);
          out_.put('"');
        }
        if (e.handle.stream != 0) {
          out_.put(",\"stream\":\"");
          out_.putHex(e.handle.stream);
          out_.put('"');
        }
        break;
      default:
        break;
    }
    if (e.result != 0) {
      out_.put(",\"result\":");
      out_.putInt(e.result);
    }
  }

  void writeEvent(const ThreadTrack& t, const Event& e) {
    switch (e.kind) {
      case EventKind::Api: {
        if (e.hook >= data_.hooks.size()) return;
        const HookDescriptor& hook = data_.hooks[e.hook];
        head("X", layerCategory(hook.layer), hook.displayName, t.tid);
        times(e, true);
        argsOpen(e);
        apiArgs(e, hook);
        out_.put("}}");
        break;
      }
      case EventKind::NvtxRange:
        head("X", "nvtx", data_.strings.get(e.name), t.tid);
        times(e, true);
        argsOpen(e);
        nvtxArgs(e);
        out_.put("}}");
        break;
      case EventKind::NvtxMark:
        head("i", "nvtx", data_.strings.get(e.name), t.tid);
        out_.put(",\"s\":\"t\"");
        times(e, false);
        argsOpen(e);
        nvtxArgs(e);
        out_.put("}}");
        break;
      case EventKind::NvtxSpan: {
        // Start/end ranges may cross threads, so they are async events, not X slices.
        head("b", "nvtx", data_.strings.get(e.name), t.tid);
        out_.put(",\"id\":\"");
        out_.putHex(e.rangeId);
        out_.put('"');
        times(e, false);
        argsOpen(e);
        nvtxArgs(e);
        out_.put("}}");
        head("e", "nvtx", data_.strings.get(e.name), t.tid);
        out_.put(",\"id\":\"");
        out_.putHex(e.rangeId);
        out_.put("\",\"ts\":");
        out_.putMicros(data_.toTraceNs(e.end));
        out_.put('}');
        break;
      }
    }
  }

  void writeMetadata() {
    const TraceMeta& m = data_.meta;
    out_.put("{\"tool\":");
    putJsonString(out_, m.tool);
    out_.put(",\"version\":");
    putJsonString(out_, m.version);
    out_.put(",\"exe\":");
    putJsonString(out_, m.exe);
    out_.put(",\"pid\":");
    out_.putUint(m.pid);
    out_.put(",\"hostname\":");
    putJsonString(out_, m.hostname);
    out_.put(",\"command_line\":[");
    for (std::size_t i = 0; i < m.commandLine.size(); ++i) {
      if (i) out_.put(',');
      putJsonString(out_, m.commandLine[i]);
    }
    out_.put("],\"clock\":{\"source\":");
    putJsonString(out_, m.clockSource);
    out_.put(",\"domain\":\"CLOCK_MONOTONIC\",\"ts_origin_ns\":");
    out_.putUint(m.originMonotonicNs);
    out_.put(",\"realtime_minus_monotonic_ns\":");
    out_.putInt(m.realtimeMinusMonotonicNs);
    out_.put("},\"counters\":{");
    for (std::size_t i = 0; i < m.counters.size(); ++i) {
      if (i) out_.put(',');
      putJsonString(out_, m.counters[i].first);
      out_.put(':');
      out_.putUint(m.counters[i].second);
    }
    out_.put("},\"events\":");
    out_.putUint(data_.eventCount());
    out_.put(",\"dropped_events\":");
    out_.putUint(data_.droppedEvents());
    out_.put(",\"threads\":[");
    for (std::size_t i = 0; i < data_.threads.size(); ++i) {
      const ThreadTrack& t = data_.threads[i];
      if (i) out_.put(',');
      out_.put("{\"tid\":");
      out_.putUint(t.tid);
      out_.put(",\"events\":");
      out_.putUint(t.events.size());
      out_.put(",\"dropped\":");
      out_.putUint(t.dropped);
      out_.put(",\"lost_ends\":");
      out_.putUint(t.lostEnds);
      out_.put('}');
    }
    out_.put("]}");
  }

  const TraceData& data_;
  Sink& out_;
  Demangler demangle_;
  bool first_ = true;
};

}  // namespace

void writeChromeTrace(const TraceData& data, Sink& out) { ChromeWriter(data, out).write(); }

}  // namespace cutrace
