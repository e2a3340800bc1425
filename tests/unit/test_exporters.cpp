#include <catch2/catch.hpp>
#include <simdjson.h>

#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
#include "exporters/frame_names.h"
#include "trace_builder.h"

using namespace cutrace;
using cutrace::test::TraceBuilder;

namespace {

// A small but complete timeline on one thread, in ns:
//   step [0, 1000)
//     cudaMalloc [100, 200)
//     cudaLaunchKernel [300, 700) kernel void ns::scale<float>(float*, int)
//       cuLaunchKernel [400, 600)
//   mark at 800
TraceData& sampleTrace(TraceBuilder& b) {
  b.push(11, 0, 0, 0, "step");
  b.mem(11, test::kCudaMalloc, 1, 100, 200, 4096);
  b.launch(11, test::kCudaLaunchKernel, 2, 300, 700, "_ZN2ns5scaleIfEEvPT_i");
  b.launch(11, test::kCuLaunchKernel, 3, 400, 600, nullptr);
  b.mark(11, 4, 800, "checkpoint \"A\"");
  b.pop(11, 1000, 0);
  b.threadName(11, 11, "main");
  return b.finish(1000);
}

std::string str(simdjson::simdjson_result<simdjson::dom::element> v) { return std::string(std::string_view(v)); }

std::string chrome(const TraceData& d) {
  Sink out;
  writeChromeTrace(d, out);
  return out.text();
}

}  // namespace

TEST_CASE("Chrome trace follows the output contract", "[chrome]") {
  TraceBuilder b;
  const std::string text = chrome(sampleTrace(b));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);

  std::map<std::string, int> byName;
  int launchesWithKernel = 0;
  int metaEvents = 0;
  for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
    const std::string ph = str(e["ph"]);
    const std::string name = str(e["name"]);
    REQUIRE(int64_t(e["pid"]) == 4242);
    REQUIRE(int64_t(e["tid"]) == (ph == "M" && name == "process_name" ? 4242 : 11));
    if (ph == "M") {
      ++metaEvents;
      if (name == "thread_name") REQUIRE(std::string_view(e["args"]["name"]) == "main");
      continue;
    }
    ++byName[name];
    REQUIRE(uint64_t(e["args"]["seq"]) <= 4);
    if (name == "cudaLaunchKernel") {
      REQUIRE(std::string_view(e["cat"]) == "cuda_runtime");
      REQUIRE(std::string_view(e["args"]["kernel"]) == "void ns::scale<float>(float*, int)");
      REQUIRE(double(e["ts"]) == Approx(0.3));
      REQUIRE(double(e["dur"]) == Approx(0.4));
      simdjson::dom::array grid = e["args"]["grid"];
      REQUIRE(grid.size() == 3);
      REQUIRE(int64_t(grid.at(0)) == 4);
      REQUIRE(std::string_view(e["args"]["stream"]) == "0x10");
      ++launchesWithKernel;
    }
    if (name == "cuLaunchKernel") {
      REQUIRE(std::string_view(e["cat"]) == "cuda_driver");
      REQUIRE(e["args"]["kernel"].error() == simdjson::NO_SUCH_FIELD);  // one launch, one kernel
    }
    if (name == "cudaMalloc") {
      REQUIRE(uint64_t(e["args"]["bytes"]) == 4096);
      // Runtime-level: the address is only on the driver call nested inside it.
      REQUIRE(e["args"]["ptr"].error() == simdjson::NO_SUCH_FIELD);
    }
    if (name == "step") {
      REQUIRE(std::string_view(e["cat"]) == "nvtx");
      REQUIRE(std::string_view(e["ph"]) == "X");
      REQUIRE(double(e["dur"]) == Approx(1.0));
    }
    if (name == "checkpoint \"A\"") REQUIRE(std::string_view(e["ph"]) == "i");
  }
  REQUIRE(metaEvents == 2);
  REQUIRE(launchesWithKernel == 1);
  REQUIRE(byName == std::map<std::string, int>{{"step", 1}, {"cudaMalloc", 1}, {"cudaLaunchKernel", 1},
                                               {"cuLaunchKernel", 1}, {"checkpoint \"A\"", 1}});
  REQUIRE(uint64_t(doc["metadata"]["dropped_events"]) == 0);
  REQUIRE(uint64_t(doc["metadata"]["events"]) == 5);
  REQUIRE(std::string_view(doc["metadata"]["clock"]["domain"]) == "CLOCK_MONOTONIC");
}

TEST_CASE("events of a thread are written parents first in time order", "[chrome]") {
  TraceBuilder b;
  const std::string text = chrome(sampleTrace(b));
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  std::vector<std::string> order;
  for (simdjson::dom::object e : doc["traceEvents"].get_array())
    if (std::string_view(e["ph"]) != "M") order.push_back(str(e["name"]));
  REQUIRE(order == std::vector<std::string>{"step", "cudaMalloc", "cudaLaunchKernel", "cuLaunchKernel", "checkpoint \"A\""});
}

TEST_CASE("hostile NVTX text still gives valid JSON", "[chrome]") {
  TraceBuilder b;
  const std::string hostile = std::string("bad\xff\xfe\0\x01\"}]\\u0000\n", 16);
  b.push(1, 0, 0, 0, hostile);
  b.pop(1, 10, 0);
  const std::string text = chrome(b.finish(20));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
  bool found = false;
  for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
    if (std::string_view(e["ph"]) != "X") continue;
    REQUIRE(std::string_view(e["name"]) == std::string("bad\xef\xbf\xbd\xef\xbf\xbd\0\x01\"}]\\u0000\n", 20));
    found = true;
  }
  REQUIRE(found);
}

TEST_CASE("folded stacks: NVTX frames, API frames, kernel under its launch, self time", "[folded]") {
  TraceBuilder b;
  const auto folded = foldStacks(sampleTrace(b));
  std::map<std::string, uint64_t> weights;
  for (const auto& [stack, w] : folded) weights[stack] = w.hostNs;
  const std::map<std::string, uint64_t> expected{
      {"step", 1000 - 100 - 400},
      {"step;cudaMalloc", 100},
      {"step;cudaLaunchKernel;void ns::scale<float>(float*, int)", 400 - 200},
      {"step;cudaLaunchKernel;void ns::scale<float>(float*, int);cuLaunchKernel", 200},
  };
  REQUIRE(weights == expected);
}

// Two launches from one call site, one from another, a copy, all under an NVTX range; the
// driver call nested in a runtime launch has no stack of its own and inherits the launch's.
TraceData& stackTrace(TraceBuilder& b) {
  b.defineStack(1, {"launch_site", "train_step", "main"});
  b.defineStack(2, {"other_site", "main"});
  b.push(7, 0, 0, 0, "step");
  b.launch(7, test::kCudaLaunchKernel, 1, 100, 300, "k1", 1);
  b.launch(7, test::kCuLaunchKernel, 2, 150, 250, nullptr);
  b.launch(7, test::kCudaLaunchKernel, 3, 400, 500, "k1", 1);
  b.launch(7, test::kCudaLaunchKernel, 4, 600, 700, "k2", 2);
  b.api(7, test::kCudaDeviceSynchronize, 5, 800, 900, 0, 2);
  b.pop(7, 1000, 0);
  return b.finish(1000);
}

TEST_CASE("folded stacks: call stacks root first between NVTX and API frames, three weights", "[folded][stacks]") {
  TraceBuilder b;
  TraceData& d = stackTrace(b);
  // GPU work: two kernels of the first launch site (linked through CUPTI's API records by
  // correlation, same thread, overlapping), one of the second.
  d.apiActivity = {{100, 300, 7, 11}, {400, 500, 7, 12}, {600, 700, 7, 13}};
  DeviceEvent k;
  k.kind = DeviceKind::Kernel;
  k.correlation = 11, k.start = 1000, k.end = 4000;
  d.device.push_back(k);
  k.correlation = 12, k.start = 5000, k.end = 6000;
  d.device.push_back(k);
  k.correlation = 13, k.start = 7000, k.end = 9500;
  d.device.push_back(k);
  const auto folded = foldStacks(d);
  const std::string site1 = "step;main;train_step;launch_site;cudaLaunchKernel;k1";
  const std::string site2 = "step;main;other_site";
  std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> got;
  for (const auto& [stack, w] : folded) got[stack] = {w.calls, w.hostNs, w.gpuNs};
  const std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> expected{
      {"step", {1, 1000 - 200 - 100 - 100 - 100, 0}},
      {site1, {2, 100 + 100, 3000 + 1000}},
      {site1 + ";cuLaunchKernel", {1, 100, 0}},
      {site2 + ";cudaLaunchKernel;k2", {1, 100, 2500}},
      {site2 + ";cudaDeviceSynchronize", {1, 100, 0}},
  };
  REQUIRE(got == expected);

  Sink calls, gpu, host;
  writeFolded(folded, FoldWeight::Calls, calls);
  writeFolded(folded, FoldWeight::GpuTime, gpu);
  writeFolded(folded, FoldWeight::HostTime, host);
  REQUIRE(calls.text() == "step 1\n" + site2 + ";cudaDeviceSynchronize 1\n" + site2 + ";cudaLaunchKernel;k2 1\n" +
                              site1 + " 2\n" + site1 + ";cuLaunchKernel 1\n");
  REQUIRE(gpu.text() == site2 + ";cudaLaunchKernel;k2 3\n" + site1 + " 4\n");  // 2.5 us rounds to 3
  REQUIRE(host.text().find("step 1\n") == 0);  // 0.5 us of self time rounds up

  const auto noNvtx = foldStacks(d, FoldOptions{false});
  REQUIRE(noNvtx.count("main;train_step;launch_site;cudaLaunchKernel;k1") == 1);
  REQUIRE(noNvtx.count("step") == 0);
  REQUIRE(noNvtx.size() == 4);
}

TEST_CASE("chrome trace: args.stack innermost first on the outermost call only", "[chrome][stacks]") {
  TraceBuilder b;
  const std::string text = chrome(stackTrace(b));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
  std::vector<std::string> stacks;
  for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
    if (std::string_view(e["ph"]) != "X" || std::string_view(e["cat"]) == "nvtx") continue;
    std::string joined = str(e["name"]) + ":";
    simdjson::dom::array frames;
    if (e["args"]["stack"].get(frames) == simdjson::SUCCESS)
      for (std::string_view f : frames) joined += std::string(f) + "<";
    stacks.push_back(joined);
  }
  REQUIRE(stacks == std::vector<std::string>{
                        "cudaLaunchKernel:launch_site<train_step<main<",
                        "cuLaunchKernel:",
                        "cudaLaunchKernel:launch_site<train_step<main<",
                        "cudaLaunchKernel:other_site<main<",
                        "cudaDeviceSynchronize:other_site<main<",
                    });
  REQUIRE(uint64_t(doc["metadata"]["stacks"]["distinct"]) == 2);
}

TEST_CASE("shown frame names: long template and parameter lists elided, the rest exact", "[chrome][stacks]") {
  const std::string lambda = "main::{lambda(std::__cxx11::basic_string<char, std::char_traits<char>, "
                             "std::allocator<char> > const&)#1}::operator()() const";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"app::middle<int>(int)", "app::middle<int>(int)"},
      {"int app::middle<long>(long)", "int app::middle<long>(long)"},
      {"std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> > >::_M_run()",
       "std::thread::_State_impl<\u2026>::_M_run()"},
      {"(anonymous namespace)::worker(std::__cxx11::basic_string<char, std::char_traits<char>, "
       "std::allocator<char> > const&, long, int)",
       "(anonymous namespace)::worker(\u2026)"},
      {"bool std::less<void>::operator()<at::Tensor const&, at::Tensor const&>(at::Tensor const&, "
       "at::Tensor const&) const",
       "bool std::less<void>::operator()<\u2026>(\u2026) const"},
      {lambda, "main::{lambda(\u2026)#1}::operator()() const"},
      {"std::vector<int, std::allocator<int> >::operator[](unsigned long)",
       "std::vector<int, std::allocator<int> >::operator[](unsigned long)"},
      {"operator<<(std::ostream&, int)", "operator<<(std::ostream&, int)"},
      {"x::operator<(x const&) const", "x::operator<(x const&) const"},
      {"x::operator->() const", "x::operator->() const"},
      // Python frames and other non-C++ text stay as they are, however long.
      {"forward (/usr/lib/python3.11/site-packages/torch/nn/modules/module.py:1736)",
       "forward (/usr/lib/python3.11/site-packages/torch/nn/modules/module.py:1736)"},
      {"<module> (train.py:3)", "<module> (train.py:3)"},
      {"Model.<locals>.step (train.py:12)", "Model.<locals>.step (train.py:12)"},
      {"libfoo.so+0x1a2b", "libfoo.so+0x1a2b"},
      {"broken<int, (unbalanced", "broken<int, (unbalanced"},
      {"", ""},
  };
  for (const auto& [name, shown] : cases) {
    INFO(name);
    REQUIRE(shownFrameName(name) == shown);
  }
  const std::string ellipsis = "\u2026";
  const std::string longName = shownFrameName(std::string(1000, 'a'));
  REQUIRE(longName == std::string(kShownFrameBytes - ellipsis.size(), 'a') + ellipsis);
  // Cut at a character boundary: two bytes of 'a' then two-byte characters, so that byte 253
  // (where the cut would fall) is the second byte of one.
  std::string wide = "aa";
  for (int i = 0; i < 200; ++i) wide += "\xc3\xa9";
  const std::string cut = shownFrameName(wide);
  REQUIRE(cut.size() <= kShownFrameBytes);
  REQUIRE(cut.size() == kShownFrameBytes - 1);
  REQUIRE(cut.substr(cut.size() - ellipsis.size()) == ellipsis);
  REQUIRE((cut.size() - ellipsis.size() - 2) % 2 == 0);
}

TEST_CASE("shown frame names: arbitrary bracket soup never grows a name or reads past it", "[chrome][stacks]") {
  // Deterministic pseudo-random names over the characters the elision looks at; run under
  // ASan in the sanitizer builds.
  const std::string alphabet = "<>()a_:, -{}#operator";
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::string name(x % 400, ' ');
    uint64_t y = x;
    for (char& c : name) {
      y = y * 6364136223846793005ull + 1442695040888963407ull;
      c = alphabet[(y >> 33) % alphabet.size()];
    }
    const std::string shown = shownFrameName(name);
    INFO(name);
    // Elision only ever replaces over 32 bytes with 3; the cut caps the rest.
    REQUIRE(shown.size() <= std::min<std::size_t>(name.size(), kShownFrameBytes));
    if (name.find_first_of("<(") == std::string::npos && name.size() <= kShownFrameBytes) REQUIRE(shown == name);
  }
}

TEST_CASE("chrome trace: args.stack shows elided names, the folded stacks keep them whole", "[chrome][stacks][folded]") {
  TraceBuilder b;
  const std::string full = "void run<std::function<void (int, long, std::string const&)> >(std::function<void "
                           "(int, long, std::string const&)> const&)";
  b.defineStack(1, {full.c_str(), "main"});
  b.api(3, test::kCudaDeviceSynchronize, 1, 100, 200, 0, 1);
  b.api(3, test::kCudaDeviceSynchronize, 2, 300, 400, 0, 1);
  TraceData& d = b.finish(500);
  const std::string text = chrome(d);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
  int withStack = 0;
  for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
    simdjson::dom::array frames;
    if (e["args"]["stack"].get(frames) != simdjson::SUCCESS) continue;
    ++withStack;
    std::vector<std::string> names;
    for (std::string_view f : frames) names.emplace_back(f);
    REQUIRE(names == std::vector<std::string>{"void run<\u2026>(\u2026)", "main"});
  }
  REQUIRE(withStack == 2);
  const auto folded = foldStacks(d);
  REQUIRE(folded.size() == 1);
  REQUIRE(folded.begin()->first == "main;" + full + ";cudaDeviceSynchronize");
  REQUIRE(folded.begin()->second.calls == 2);
}

TEST_CASE("folded file: sorted lines, one space, integer microseconds, zero weights kept", "[folded]") {
  TraceBuilder b;
  b.push(1, 0, 0, 0, "a;b\nc");    // ';' and newline cannot appear inside a frame
  b.api(1, test::kCudaDeviceSynchronize, 1, 1000, 3600);
  b.api(1, test::kCudaFree, 2, 4000, 4100);
  b.pop(1, 5000, 0);
  Sink out;
  writeFolded(foldStacks(b.finish(5000)), FoldWeight::HostTime, out);
  REQUIRE(out.text() ==
          "a:b c 2\n"
          "a:b c;cudaDeviceSynchronize 3\n"
          "a:b c;cudaFree 0\n");
}

TEST_CASE("frame names are sanitised", "[folded]") {
  REQUIRE(foldedFrame("x;y") == "x:y");
  REQUIRE(foldedFrame("") == "[empty]");
  REQUIRE(foldedFrame("tab\there") == "tab here");
  REQUIRE(foldedFrame("bad\xff \xc3\xa9") == "bad\xef\xbf\xbd \xc3\xa9");
}
