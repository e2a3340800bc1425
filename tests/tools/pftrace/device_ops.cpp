// Writes the stream and the Chrome trace of one made-up GPU run of PyTorch op ranges around
// kernel launches, with CUPTI's records of the calls and of their kernels coming a pass or two
// later, as the drain of a traced process on a GPU writes them (the data built as the drain
// builds it, trace_builder.h): so that `cutrace report` of a stream with device work can be
// checked against the report of the Chrome trace on a machine with no GPU.
//   usage: pftrace_device_ops DIR [STEPS [idle|graph]]   (writes DIR/prog-4242.pftrace and
//          DIR/prog-4242.trace.json; STEPS: 40 by default, 3 kernels each; idle: the GPU idles
//          between kernels, and the one in the outer range runs on a stream of its own; graph:
//          each step ends in a graph launch too, 3 kernels under its one correlation id on two
//          streams, CUPTI's records of them not in time order; the folded files are written
//          too, as the process writes them, for trace_check --compare)
//
// The run: op ranges with no launch inside before any launch (the reader need not keep them);
// then steps, each an outer op range (open across a pass every other step) around an inner one
// around a launch, a launch in the outer range alone, and a launch outside any op range.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "exporters/chrome_trace.h"
#include "exporters/perfetto_writer.h"
#include "exporters/json_writer.h"
#include "exporters/output_files.h"
#include "tests/unit/trace_builder.h"

using namespace cutrace;
using cutrace::test::TraceBuilder;

namespace {

constexpr uint32_t kTid = 11;
constexpr const char* kKernels[] = {"_Z4gemmv", "_Z4reluv", "_Z4copyv"};  // mangled, as CUPTI names them
int steps = 40;
bool idle = false;
bool graph = false;

std::string op(const char* name, int seq, int id, const char* sizes) {
  return std::string(name) + ", seq = " + std::to_string(seq) + ", op_id = " + std::to_string(id) + ", sizes = " + sizes;
}

// The run, encoded pass by pass into `stream` (events released after each pass, as the drain
// does) or, with `stream` null, kept whole for the Chrome trace.
void run(TraceBuilder& b, std::string* stream) {
  Store& store = b.store();
  TraceData& d = store.data();
  d.cupti.state = "on";
  PerfettoWriter writer;
  const auto pass = [&](uint64_t now) {
    if (stream == nullptr) return;
    writer.encodePass(d, now, *stream);
    store.releaseEvents();
    writer.eventsReleased();
  };
  uint32_t kernels[std::size(kKernels)];
  for (std::size_t i = 0; i < std::size(kKernels); ++i) kernels[i] = d.strings.intern(kKernels[i]);
  uint64_t seq = 0, t = 1000, gpuFree = 0;
  uint32_t correlation = 1;
  std::vector<DeviceEvent> waiting;  // CUPTI's kernel records, delivered a pass after their launch
  const auto launch = [&](int kernel) {
    t += 3;  // after the push before it, as every call is
    b.launch(kTid, test::kCudaLaunchKernel, seq++, t, t + 20, kKernels[kernel]);
    d.apiActivity.push_back({t + 2, t + 18, kTid, correlation});
    DeviceEvent k;  // one after another on their stream, as a GPU runs them
    k.start = std::max(t + 100, gpuFree + (idle ? 50 : 0)), k.end = k.start + 300 + 10 * static_cast<uint64_t>(kernel);
    k.correlation = correlation++;
    gpuFree = k.end;
    k.device = 0, k.stream = idle && kernel == 1 ? 8 : 7, k.name = kernels[kernel];
    waiting.push_back(k);
    t += 30;
  };
  for (int i = 0; i < 3; ++i) {
    b.push(kTid, seq++, t, 0, op("aten::empty", i, i + 1, "[[2, 3]]"));
    b.pop(kTid, t + 10, 0);
    t += 20;
  }
  pass(t);
  for (int s = 0; s < steps; ++s) {
    const int id = 100 + 3 * s;
    b.push(kTid, seq++, t, 0, op("aten::linear", s, id, s % 3 == 0 ? "[[4, 8], [8, 8]]" : "[[16, 8], [8, 8]]"));
    t += 5;
    b.push(kTid, seq++, t, 1, op("aten::mm", s, id + 1, s % 3 == 0 ? "[[4, 8], [8, 8]]" : "[[16, 8], [8, 8]]"));
    launch(0);
    b.pop(kTid, t, 1);
    t += 5;
    if (s % 2 == 1) {
      pass(t);  // the outer range is open here: written ahead
      for (const DeviceEvent& k : waiting) d.device.push_back(k);
      waiting.clear();
    }
    launch(1);  // in the outer range only
    b.pop(kTid, t, 0);
    t += 5;
    launch(2);  // in no op range
    if (graph) {
      t += 3;
      b.api(kTid, test::kCudaGraphLaunch, seq++, t, t + 20);
      d.apiActivity.push_back({t + 2, t + 18, kTid, correlation});
      // Its nodes: the last on a stream of the graph's own, started with the first; delivered
      // last node first.
      DeviceEvent k;
      k.correlation = correlation++, k.device = 0;
      const uint64_t start = std::max(t + 100, gpuFree);
      for (int node = 2; node >= 0; --node) {
        k.start = node == 2 ? start : start + 300 * static_cast<uint64_t>(node);
        k.end = k.start + 300 + 10 * static_cast<uint64_t>(node), k.stream = node == 2 ? 9 : 7, k.name = kernels[node];
        waiting.push_back(k);
      }
      gpuFree = start + 610;
      t += 30;
    }
    pass(t);
  }
  for (const DeviceEvent& k : waiting) d.device.push_back(k);
  pass(t + 1000);
  b.finish(t + 2000);
  if (stream != nullptr) writer.encodeEnd(d, t + 2000, chromeTraceMetadata(d), *stream);
}

bool writeFile(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[3] : "";
  if (argc < 2 || argc > 4 || (argc >= 3 && (steps = atoi(argv[2])) <= 0) || (argc == 4 && mode != "idle" && mode != "graph")) {
    fprintf(stderr, "usage: pftrace_device_ops DIR [STEPS [idle|graph]]\n");
    return 2;
  }
  idle = mode == "idle";
  graph = mode == "graph";
  const std::string dir = argv[1];
  std::string stream;
  TraceBuilder streamed;
  run(streamed, &stream);
  TraceBuilder whole;
  run(whole, nullptr);
  if (!writeFile(dir + "/prog-4242.pftrace", stream)) {
    fprintf(stderr, "pftrace_device_ops: cannot write into %s\n", dir.c_str());
    return 1;
  }
  if (graph) {  // all the process's files, for trace_check --compare against `cutrace export`'s
    const OutputResult r = writeOutputFiles(whole.store().data(), dir.c_str());
    if (!r.ok) fprintf(stderr, "pftrace_device_ops: %s\n", r.error.c_str());
    return r.ok ? 0 : 1;
  }
  Sink json;
  writeChromeTrace(whole.store().data(), json);
  if (!writeFile(dir + "/prog-4242.trace.json", json.text())) {
    fprintf(stderr, "pftrace_device_ops: cannot write into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
