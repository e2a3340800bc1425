#include "exporters/chrome_trace.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "exporters/frame_names.h"
#include "exporters/torch_ops.h"
#include "exporters/trace_view.h"

namespace cutrace {

namespace {

const char* layerCategory(ApiLayer layer) { return layer == ApiLayer::Runtime ? "cuda_runtime" : "cuda_driver"; }

// Device flows past a correlation's first are numbered from here (ChromeWriter::deviceFlowIds).
constexpr uint64_t kSharedFlowIds = uint64_t{1} << 32;

class ChromeWriter {
 public:
  ChromeWriter(const TraceData& data, Sink& out, const FoldedStacks* folded)
      : data_(data), out_(out), folded_(folded), domainTracks_(data), order_(data), stackJson_(data.stacks.size()) {}

  void writeMetadataOnly() {
    links_ = linkDeviceToHost(data_);
    writeMetadata();
  }

  void write() {
    out_.put("{\"traceEvents\":[\n");
    writeNames();
    links_ = linkDeviceToHost(data_);
    torch_ = linkTorchOps(data_, links_);
    for (std::size_t ti = 0; ti < data_.threads.size(); ++ti) {
      const ThreadTrack& t = data_.threads[ti];
      for (uint32_t i : timelineOrder(t)) writeEvent(domainTracks_.tidOf(ti, t.events[i]), t.events[i]);
    }
    writeDevice();
    writeFlows();
    writeTorchFlows();
    writeMemoryCounters();
    out_.put("],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":");
    writeMetadata();
    out_.put("}\n");
  }

  // Up to `maxEvents` host events (each thread's first, in the order recorded) and as many device
  // events, each with a flow as if linked (its values from the device event), counted apart.
  // Nothing is linked: linking orders every thread's events, which would cost as much as the
  // pass the sample is taken from.
  ChromeTraceSample writeSample(std::size_t maxEvents) {
    ChromeTraceSample sample;
    for (std::size_t ti = 0; ti < data_.threads.size() && sample.hostEvents < maxEvents; ++ti) {
      const ThreadTrack& t = data_.threads[ti];
      const std::size_t n = std::min<std::size_t>(t.events.size(), maxEvents - sample.hostEvents);
      for (std::size_t i = 0; i < n; ++i) writeEvent(domainTracks_.tidOf(ti, t.events[i]), t.events[i]);
      sample.hostEvents += n;
    }
    sample.hostBytes = out_.bytesWritten();
    sample.deviceEvents = std::min(data_.device.size(), maxEvents);
    for (std::size_t i = 0; i < sample.deviceEvents; ++i) {
      writeDeviceEvent(i);
      const DeviceEvent& d = data_.device[i];
      const uint64_t track = deviceTrackId(d.device, d.stream);
      const int64_t ts = data_.toTraceNs(d.start);
      writeFlow("flow", flowName(d), d.correlation, data_.meta.pid, ts, track, ts);
    }
    sample.deviceBytes = out_.bytesWritten() - sample.hostBytes;
    return sample;
  }

 private:
  void sep() {
    if (!first_) out_.put(",\n");
    first_ = false;
  }

  void head(const char* ph, std::string_view cat, std::string_view name, uint64_t tid) {
    sep();
    out_.put("{\"ph\":\"");
    out_.put(ph);
    out_.put("\",\"cat\":\"");
    out_.put(cat);
    out_.put("\",\"name\":");
    putJsonString(out_, name);
    // Every event of a track repeats its pid and tid: the text is made once per track met.
    if (tid != headTid_) {
      headTid_ = tid;
      headIds_ = ",\"pid\":" + std::to_string(data_.meta.pid) + ",\"tid\":" + std::to_string(tid);
    }
    out_.put(headIds_);
  }

  void writeNames() {
    metaHead("process_name", data_.meta.pid);
    out_.put("\"name\":");
    putJsonString(out_, data_.meta.exe);
    out_.put("}}");
    for (std::size_t ti = 0; ti < data_.threads.size(); ++ti) {
      const ThreadTrack& t = data_.threads[ti];
      metaHead("thread_name", t.tid);
      out_.put("\"name\":");
      putJsonString(out_, threadDisplayName(t));
      out_.put("}}");
      sortIndex(t.tid, order_.thread(ti));
    }
    for (const NvtxDomainTracks::Track& d : domainTracks_.tracks()) {
      metaHead("thread_name", d.tid);
      out_.put("\"name\":");
      putJsonString(out_, nvtxDomainTrackName(data_.threads[d.thread], data_.strings.get(d.domain)));
      out_.put("}}");
      sortIndex(d.tid, order_.domainTrack(d));
    }
    std::set<std::pair<uint32_t, uint32_t>> tracks;
    for (const DeviceEvent& d : data_.device) tracks.emplace(d.device, d.stream);
    for (const auto& [device, stream] : tracks) {
      const uint64_t tid = deviceTrackId(device, stream);
      metaHead("thread_name", tid);
      out_.put("\"name\":");
      putJsonString(out_, "GPU " + std::to_string(device) + " stream " + std::to_string(stream));
      out_.put("}}");
      sortIndex(tid, TrackOrder::gpuStream(device, stream));
    }
  }

  void sortIndex(uint64_t tid, int64_t index) {
    metaHead("thread_sort_index", tid);
    out_.put("\"sort_index\":");
    out_.putInt(index);
    out_.put("}}");
  }

  // {"ph":"M","name":WHAT,"pid":P,"tid":TID,"args":{   (the caller writes the args and "}}")
  void metaHead(const char* what, uint64_t tid) {
    sep();
    out_.put("{\"ph\":\"M\",\"name\":\"");
    out_.put(what);
    out_.put("\",\"pid\":");
    out_.putUint(data_.meta.pid);
    out_.put(",\"tid\":");
    out_.putUint(tid);
    out_.put(",\"args\":{");
  }

  static const char* cuptiCopyKind(uint8_t k) {
    static constexpr const char* kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                             "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return k < sizeof(kNames) / sizeof(kNames[0]) ? kNames[k] : "unknown";
  }

  std::string deviceName(const DeviceEvent& d) {
    switch (d.kind) {
      case DeviceKind::Kernel: return d.name != 0 ? demangle_(data_, d.name) : std::string("kernel");
      case DeviceKind::Memcpy: return std::string("Memcpy ") + cuptiCopyKind(d.copyKind);
      case DeviceKind::Memset: return "Memset";
    }
    return "device";
  }

  static const char* deviceCategory(DeviceKind k) {
    return k == DeviceKind::Kernel ? "kernel" : k == DeviceKind::Memcpy ? "memcpy" : "memset";
  }

  void writeDevice() {
    std::vector<uint32_t> order(data_.device.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const DeviceEvent& x = data_.device[a];
      const DeviceEvent& y = data_.device[b];
      if (x.device != y.device) return x.device < y.device;
      if (x.stream != y.stream) return x.stream < y.stream;
      return x.start < y.start;
    });
    for (uint32_t i : order) writeDeviceEvent(i);
  }

  void writeDeviceEvent(std::size_t i) {
    const DeviceEvent& d = data_.device[i];
    sep();
    out_.put("{\"ph\":\"X\",\"cat\":\"");
    out_.put(deviceCategory(d.kind));
    out_.put("\",\"name\":");
    putJsonString(out_, deviceName(d));
    out_.put(",\"pid\":");
    out_.putUint(data_.meta.pid);
    out_.put(",\"tid\":");
    out_.putUint(deviceTrackId(d.device, d.stream));
    const int64_t start = data_.toTraceNs(d.start);
    out_.put(",\"ts\":");
    out_.putMicros(start);
    out_.put(",\"dur\":");
    out_.putMicros(data_.toTraceNs(d.end) - start);
    out_.put(",\"args\":{\"correlation\":");
    out_.putUint(d.correlation);
    if (d.kind == DeviceKind::Kernel) {
      dims(",\"grid\":[", static_cast<uint32_t>(d.grid[0]), static_cast<uint32_t>(d.grid[1]), static_cast<uint32_t>(d.grid[2]));
      dims(",\"block\":[", static_cast<uint32_t>(d.block[0]), static_cast<uint32_t>(d.block[1]), static_cast<uint32_t>(d.block[2]));
      out_.put(",\"registers\":");
      out_.putUint(d.registers);
      out_.put(",\"shared_static\":");
      out_.putInt(d.staticShared);
      out_.put(",\"shared_dynamic\":");
      out_.putInt(d.dynamicShared);
    } else {
      out_.put(",\"bytes\":");
      out_.putUint(d.bytes);
    }
    // Its call is not in this trace but was linked in the stream it was read from: outside the
    // window of an export, its op as the stream named it.
    const bool noCall = i < links_.size() && links_[i].thread < 0;
    const bool launchOutside = noCall && d.streamLinked;
    if (noCall) out_.put(launchOutside ? ",\"launch_outside_window\":true" : ",\"unlinked\":true");
    const EventRef op = i < torch_.opOfDevice.size() ? torch_.opOfDevice[i] : EventRef{};
    const auto putOp = [&](std::string_view name, bool hasOpId, uint64_t opId) {
      out_.put(",\"op\":");
      putJsonString(out_, name);
      if (hasOpId) {
        out_.put(",\"op_id\":");
        out_.putUint(opId);
      }
    };
    if (op.thread >= 0) {
      TorchOp parsed;
      const Event& range = data_.threads[static_cast<std::size_t>(op.thread)].events[op.event];
      if (torchOpOf(data_, range, parsed)) putOp(parsed.name, parsed.hasOpId, parsed.opId);
    } else if (launchOutside && d.streamOp != 0) {
      putOp(data_.strings.get(d.streamOp), d.streamHasOpId, d.streamOpId);
    }
    out_.put("}}");
  }

  // A flow arrow from each launch (or copy, or set) to the device work it produced. The start
  // sits 1 ns into the host call so it binds to that call, not to an enclosing NVTX range.
  void writeFlows() {
    const std::vector<uint64_t> flowIds = deviceFlowIds();
    for (std::size_t i = 0; i < data_.device.size(); ++i) {
      const HostLink& link = links_[i];
      if (link.thread < 0) continue;
      const DeviceEvent& d = data_.device[i];
      const ThreadTrack& t = data_.threads[static_cast<std::size_t>(link.thread)];
      const Event& host = t.events[link.event];
      writeFlow("flow", flowName(d), flowIds[i], t.tid, data_.toTraceNs(host.start) + 1, deviceTrackId(d.device, d.stream),
                data_.toTraceNs(d.start));
    }
  }

  // Flow ids of device work: one flow per device event, since Perfetto keeps one arrow per
  // (id, cat, name). A graph launch's kernels share one correlation id: the first of them in
  // time keeps it as its id (as every other device event does), the rest are numbered from 2^32
  // on, above CUPTI's 32-bit correlation ids and below the PyTorch flows' 2^40. Ordered by what
  // each event is, never by where it sits in TraceData::device: the process's own trace and the
  // one rebuilt from its stream (which holds device work in another order) get the same ids.
  std::vector<uint64_t> deviceFlowIds() {
    const std::vector<DeviceEvent>& device = data_.device;
    std::vector<uint64_t> ids(device.size());
    std::unordered_map<uint32_t, uint32_t> perCorrelation;
    for (std::size_t i = 0; i < device.size(); ++i) {
      ids[i] = device[i].correlation;
      ++perCorrelation[device[i].correlation];
    }
    std::vector<uint32_t> shared;
    for (uint32_t i = 0; i < device.size(); ++i)
      if (perCorrelation[device[i].correlation] > 1) shared.push_back(i);
    if (shared.empty()) return ids;
    // By all the trace shows of an event (the name as shown: the stream keeps only that), so
    // events that tie are written alike whichever id each gets.
    const auto key = [&](uint32_t i) {
      const DeviceEvent& d = device[i];
      return std::tuple(d.correlation, d.start, d.end, d.device, d.stream, d.kind, d.copyKind, d.bytes, d.grid[0], d.grid[1],
                        d.grid[2], d.block[0], d.block[1], d.block[2], d.registers, d.staticShared, d.dynamicShared);
    };
    std::sort(shared.begin(), shared.end(), [&](uint32_t a, uint32_t b) {
      const auto ka = key(a), kb = key(b);
      if (ka != kb) return ka < kb;
      return deviceName(device[a]) < deviceName(device[b]);
    });
    uint64_t next = kSharedFlowIds;
    for (std::size_t k = 1; k < shared.size(); ++k)
      if (device[shared[k]].correlation == device[shared[k - 1]].correlation) ids[shared[k]] = next++;
    return ids;
  }

  static const char* flowName(const DeviceEvent& d) {
    return d.kind == DeviceKind::Kernel ? "launch" : d.kind == DeviceKind::Memcpy ? "copy" : "set";
  }

  // One arrow: "s" on (tid0, ts0), "f" binding to the enclosing slice on (tid1, ts1).
  void writeFlow(const char* cat, const char* name, uint64_t id, uint64_t tid0, int64_t ts0, uint64_t tid1, int64_t ts1) {
    for (int end = 0; end < 2; ++end) {
      sep();
      out_.put(end ? "{\"ph\":\"f\",\"bp\":\"e\"" : "{\"ph\":\"s\"");
      out_.put(",\"cat\":\"");
      out_.put(cat);
      out_.put("\",\"name\":\"");
      out_.put(name);
      out_.put("\",\"id\":");
      out_.putUint(id);
      out_.put(",\"pid\":");
      out_.putUint(data_.meta.pid);
      out_.put(",\"tid\":");
      out_.putUint(end ? tid1 : tid0);
      out_.put(",\"ts\":");
      out_.putMicros(end ? ts1 : ts0);
      out_.put('}');
    }
  }

  // PyTorch (emit_nvtx): forward op -> backward function, and op -> the device work it caused.
  // Ids from 2^40, above the device flows' (deviceFlowIds), so every flow id stays unique.
  void writeTorchFlows() {
    uint64_t id = uint64_t{1} << 40;
    for (const auto& [from, to] : torch_.forwardToBackward) {
      const auto ft = static_cast<std::size_t>(from.thread), bt = static_cast<std::size_t>(to.thread);
      const Event& fe = data_.threads[ft].events[from.event];
      const Event& be = data_.threads[bt].events[to.event];
      writeFlow("autograd", "forward->backward", id++, domainTracks_.tidOf(ft, fe), data_.toTraceNs(fe.start),
                domainTracks_.tidOf(bt, be), data_.toTraceNs(be.start));
    }
    for (std::size_t i = 0; i < torch_.opOfDevice.size(); ++i) {
      const EventRef op = torch_.opOfDevice[i];
      if (op.thread < 0) continue;
      const auto ot = static_cast<std::size_t>(op.thread);
      const Event& oe = data_.threads[ot].events[op.event];
      const DeviceEvent& d = data_.device[i];
      writeFlow("op", "op->device", id++, domainTracks_.tidOf(ot, oe), data_.toTraceNs(oe.start),
                deviceTrackId(d.device, d.stream), data_.toTraceNs(d.start));
    }
  }

  // Bytes allocated per device through the hooked driver allocators (the runtime's own calls
  // land there too), as Chrome counter tracks.
  void writeMemoryCounters() {
    std::vector<MemoryChange> changes;
    for (const ThreadTrack& t : data_.threads) {
      for (const Event& e : t.events) {
        MemoryChange c;
        if (memoryChangeOf(data_, e, c)) changes.push_back(c);
      }
    }
    std::stable_sort(changes.begin(), changes.end(), [](const MemoryChange& a, const MemoryChange& b) { return a.ns < b.ns; });
    MemoryCounters counters;
    for (const TraceData::LiveAllocation& a : data_.liveBefore) {
      int8_t device = -1;
      uint64_t total = 0;
      counters.apply(MemoryChange{0, a.ptr, a.bytes, a.device, true}, device, total);
    }
    for (const MemoryChange& c : changes) {
      int8_t device = -1;
      uint64_t total = 0;
      if (!counters.apply(c, device, total)) continue;
      sep();
      out_.put("{\"ph\":\"C\",\"name\":");
      putJsonString(out_, memoryCounterName(device));
      out_.put(",\"pid\":");
      out_.putUint(data_.meta.pid);
      out_.put(",\"tid\":");
      out_.putUint(data_.meta.pid);
      out_.put(",\"ts\":");
      out_.putMicros(data_.toTraceNs(c.ns));
      out_.put(",\"args\":{\"allocated\":");
      out_.putUint(total);
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

  void torchArgs(const TorchOp& op) {
    if (op.hasSeq) {
      out_.put(op.stashed ? ",\"stashed_seq\":" : ",\"op_seq\":");
      out_.putUint(op.seq);
    }
    if (op.hasOpId) {
      out_.put(",\"op_id\":");
      out_.putUint(op.opId);
    }
    for (const auto& [key, list] : {std::pair{",\"sizes\":", op.sizes}, std::pair{",\"input_op_ids\":", op.inputOpIds}}) {
      if (list.empty()) continue;
      out_.put(key);
      if (isIntegerList(list)) out_.put(list);
      else putJsonString(out_, list);
    }
    if (op.backward) out_.put(",\"backward\":true");
  }

  // `key` (`,"name":"`), then the value in hex and the closing quote: pointers and handles.
  void hexArg(const char* key, uint64_t value) {
    out_.put(key);
    out_.putHex(value);
    out_.put('"');
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
    if (hook.kind == ApiKind::Launch) {
      if (e.launch.kernelName != 0) {
        out_.put(",\"kernel\":");
        putJsonString(out_, demangle_(data_, e.launch.kernelName));
        dims(",\"grid\":[", e.launch.gridX, e.launch.gridY, e.launch.gridZ);
        dims(",\"block\":[", e.launch.blockX(), e.launch.blockY(), e.launch.blockZ());
        if (e.launch.sharedMem != 0) {
          out_.put(",\"shared\":");
          out_.putUint(e.launch.sharedMem);
        }
        if (e.launch.stream != 0) hexArg(",\"stream\":\"", e.launch.stream);
      }
    } else if (carriesMemory(hook.kind)) {
      if (hook.kind != ApiKind::Free && hook.kind != ApiKind::HostFree) {
        out_.put(",\"bytes\":");
        out_.putUint(e.mem.bytes);
      }
      if (hook.kind == ApiKind::Memcpy && e.mem.copyKind != static_cast<uint8_t>(CopyKind::Unknown)) {
        out_.put(",\"kind\":\"");
        out_.put(copyKindName(e.mem.copyKind));
        out_.put('"');
      }
      // The address is on the driver-level call only: a runtime allocation shows the driver
      // call it made nested inside, with the same address (kept compact: ~20 bytes an event).
      if (hook.kind != ApiKind::Memcpy && hook.kind != ApiKind::Memset && e.mem.ptr != 0 && hook.layer == ApiLayer::Driver)
        hexArg(",\"ptr\":\"", e.mem.ptr);
      if (e.mem.stream != 0) hexArg(",\"stream\":\"", e.mem.stream);
    } else {
      if (e.handle.handle != 0) hexArg(",\"handle\":\"", e.handle.handle);
      if (e.handle.stream != 0) hexArg(",\"stream\":\"", e.handle.stream);
    }
    if (e.result != 0) {
      out_.put(",\"result\":");
      out_.putInt(e.result);
    }
    if (e.flags & kEventCaptured) out_.put(",\"captured\":true");
    // The calling code, innermost frame first; only the outermost call of a nest carries it.
    const uint32_t stack = stackIdOf(e);
    if (stack != 0 && stack < data_.stacks.size() && !data_.stacks[stack].empty()) out_.put(stackJson(stack));
  }

  // `,"stack":[...]` of a stack id, rendered once: a stack recurs on every call made from the
  // same place.
  const std::string& stackJson(uint32_t stack) {
    std::string& json = stackJson_[stack];
    if (json.empty()) {
      Sink text;
      text.put(",\"stack\":[");
      bool first = true;
      for (uint32_t frame : data_.stacks[stack]) {
        if (!first) text.put(',');
        first = false;
        putJsonString(text, shownFrameName(data_.strings.get(frame)));
      }
      text.put(']');
      json = text.text();
    }
    return json;
  }

  // `tid`: the track the event is drawn on (its thread's, or an NVTX domain's).
  void writeEvent(uint64_t tid, const Event& e) {
    switch (e.kind) {
      case EventKind::Api: {
        if (e.hook >= data_.hooks.size()) return;
        const HookDescriptor& hook = data_.hooks[e.hook];
        head("X", layerCategory(hook.layer), hook.displayName, tid);
        times(e, true);
        argsOpen(e);
        apiArgs(e, hook);
        out_.put("}}");
        break;
      }
      case EventKind::NvtxRange: {
        // A PyTorch op range shows its op name; the fields of its message become args.
        TorchOp op;
        const bool torch = torchOpOf(data_, e, op);
        head("X", "nvtx", torch ? op.name : std::string_view(data_.strings.get(e.name)), tid);
        times(e, true);
        argsOpen(e);
        if (torch) torchArgs(op);
        nvtxArgs(e);
        out_.put("}}");
        break;
      }
      case EventKind::NvtxMark:
        head("i", "nvtx", data_.strings.get(e.name), tid);
        out_.put(",\"s\":\"t\"");
        times(e, false);
        argsOpen(e);
        nvtxArgs(e);
        out_.put("}}");
        break;
      case EventKind::NvtxSpan: {
        // Start/end ranges may cross threads, so they are async events, not X slices.
        head("b", "nvtx", data_.strings.get(e.name), tid);
        hexArg(",\"id\":\"", e.rangeId);
        times(e, false);
        argsOpen(e);
        nvtxArgs(e);
        out_.put("}}");
        head("e", "nvtx", data_.strings.get(e.name), tid);
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
    if (m.rank >= 0) {
      out_.put(",\"rank\":");
      out_.putUint(static_cast<uint64_t>(m.rank));
    }
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
    out_.put("},\"cupti\":{\"state\":");
    putJsonString(out_, data_.cupti.state);
    out_.put(",\"reason\":");
    putJsonString(out_, data_.cupti.reason);
    out_.put(",\"dropped_records\":");
    out_.putUint(data_.cupti.droppedRecords);
    if (data_.cupti.outsideCapture != 0) {
      out_.put(",\"outside_capture\":");
      out_.putUint(data_.cupti.outsideCapture);
    }
    out_.put(",\"device_events\":");
    out_.putUint(data_.releasedDevice + data_.device.size());
    uint64_t linked = data_.releasedLinked;
    for (const HostLink& l : links_) linked += l.thread >= 0;
    out_.put(",\"linked_to_host\":");
    out_.putUint(linked);
    out_.put("},\"capture\":");
    putJsonString(out_, m.capture);
    out_.put(",\"stacks\":{\"unwinder\":");
    putJsonString(out_, data_.stackInfo.unwinder);
    out_.put(",\"python\":");
    putJsonString(out_, data_.stackInfo.python);
    out_.put(",\"unwind_fallbacks\":");
    out_.putUint(data_.stackInfo.fallbacks);
    if (data_.stackInfo.verified) {
      out_.put(",\"unwind_mismatches\":");
      out_.putUint(data_.stackInfo.mismatches);
    }
    out_.put(",\"depth\":");
    out_.putUint(data_.stackInfo.depth);
    out_.put(",\"distinct\":");
    out_.putUint(data_.stacks.empty() ? 0 : data_.stacks.size() - 1);
    out_.put(",\"overflowed\":");
    out_.putUint(data_.stackInfo.overflowed);
    out_.put("},\"events\":");
    out_.putUint(data_.eventCount());
    out_.put(",\"dropped_events\":");
    out_.putUint(data_.droppedEvents());
    if (folded_ != nullptr) {
      out_.put(",\"folded\":{\"max_frames\":");
      out_.putUint(folded_->maxFrames());
      out_.put(",\"depth_capped\":");
      out_.putUint(folded_->depthCapped());
      out_.put('}');
    }
    out_.put(",\"threads\":[");
    bool firstThread = true;
    data_.forEachThreadFigures([&](const ExitedThread& t) {
      if (!firstThread) out_.put(',');
      firstThread = false;
      out_.put("{\"tid\":");
      out_.putUint(t.tid);
      out_.put(",\"events\":");
      out_.putUint(t.events);
      out_.put(",\"dropped\":");
      out_.putUint(t.dropped);
      out_.put(",\"lost_ends\":");
      out_.putUint(t.lostEnds);
      if (t.seqEnd != 0) {
        out_.put(",\"seq_end\":");
        out_.putUint(t.seqEnd);
      }
      out_.put('}');
    });
    out_.put("]}");
  }

  const TraceData& data_;
  Sink& out_;
  const FoldedStacks* folded_;
  NvtxDomainTracks domainTracks_;
  TrackOrder order_;
  Demangler demangle_;
  std::vector<HostLink> links_;
  TorchLinks torch_;
  std::vector<std::string> stackJson_;  // by stack id; empty until first written
  bool first_ = true;
  uint64_t headTid_ = UINT64_MAX;  // the tid headIds_ was made for (no track has this one)
  std::string headIds_;
};

}  // namespace

void writeChromeTrace(const TraceData& data, Sink& out, const FoldedStacks* folded) {
  ChromeWriter(data, out, folded).write();
}

ChromeTraceSample chromeTraceSample(const TraceData& data, std::size_t maxEvents) {
  Sink out(Sink::kCountOnly);
  return ChromeWriter(data, out, nullptr).writeSample(maxEvents);
}

std::string chromeTraceMetadata(const TraceData& data) {
  Sink out;
  ChromeWriter(data, out, nullptr).writeMetadataOnly();
  return out.text();
}

}  // namespace cutrace
