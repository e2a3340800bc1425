#include <catch2/catch.hpp>
#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
#include "exporters/frame_names.h"
#include "exporters/trace_view.h"
#include "../e2e/folded_rules.h"
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
      if (name == "thread_sort_index") REQUIRE(int64_t(e["args"]["sort_index"]) == 0);
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
  REQUIRE(metaEvents == 3);
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
  REQUIRE(gpu.text() == site2 + ";cudaLaunchKernel;k2 2500\n" + site1 + " 4000\n");
  REQUIRE(host.text().find("step 500\n") == 0);

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

TEST_CASE("folded file: sorted lines, one space, integer nanoseconds", "[folded]") {
  TraceBuilder b;
  b.push(1, 0, 0, 0, "a;b\nc");    // ';' and newline cannot appear inside a frame
  b.api(1, test::kCudaDeviceSynchronize, 1, 1000, 3600);
  b.api(1, test::kCudaFree, 2, 4000, 4100);
  b.pop(1, 5000, 0);
  Sink out;
  writeFolded(foldStacks(b.finish(5000)), FoldWeight::HostTime, out);
  REQUIRE(out.text() ==
          "a:b c 2300\n"
          "a:b c;cudaDeviceSynchronize 2600\n"
          "a:b c;cudaFree 100\n");
}

TEST_CASE("frame names are sanitised", "[folded]") {
  REQUIRE(foldedFrame("x;y") == "x:y");
  REQUIRE(foldedFrame("") == "[No name]");  // as Perfetto shows an empty name
  REQUIRE(foldedFrame("tab\there") == "tab here");
  REQUIRE(foldedFrame("bad\xff \xc3\xa9") == "bad\xef\xbf\xbd \xc3\xa9");
}

// ------------------------------------------------------------------ viewers (issue 13)

namespace {

std::string foldedText(const TraceData& d, FoldWeight weight) {
  Sink out;
  writeFolded(foldStacks(d), weight, out);
  return out.text();
}

std::string problems(const std::string& folded) {
  std::string all;
  for (const std::string& p : test::checkFoldedRules(folded).problems) all += p + "\n";
  return all;
}

}  // namespace

TEST_CASE("folded files have no zero-weight line: nanoseconds keep every box", "[folded][viewers]") {
  // flamegraph.pl erased the bundled example's cudaLaunchKernel/cuLaunchKernel boxes: their
  // lines of weight 0 (sub-microsecond self time) drew zero-width boxes of the same name.
  TraceBuilder b;
  TraceData& d = sampleTrace(b);
  const std::string host = foldedText(d, FoldWeight::HostTime);
  INFO(host);
  REQUIRE(problems(host).empty());
  REQUIRE(host ==
          "step 500\n"
          "step;cudaLaunchKernel;void ns::scale<float>(float*, int) 200\n"
          "step;cudaLaunchKernel;void ns::scale<float>(float*, int);cuLaunchKernel 200\n"
          "step;cudaMalloc 100\n");

  // A call that spent no time of its own is left out of the time file (its child keeps the
  // box drawn) and stays in the calls file.
  TraceBuilder c;
  c.launch(5, test::kCudaLaunchKernel, 0, 300, 700, "k");
  c.launch(5, test::kCuLaunchKernel, 1, 300, 700, nullptr);
  TraceData& covered = c.finish(1000);
  REQUIRE(foldedText(covered, FoldWeight::HostTime) == "cudaLaunchKernel;k;cuLaunchKernel 400\n");
  REQUIRE(foldedText(covered, FoldWeight::Calls) == "cudaLaunchKernel;k 1\ncudaLaunchKernel;k;cuLaunchKernel 1\n");
  REQUIRE(foldedText(covered, FoldWeight::GpuTime).empty());
}

TEST_CASE("a folded file of sub-microsecond ranges still has something to draw", "[folded][viewers]") {
  // All weights rounded to 0 made flamegraph.pl stop with "No stack counts found".
  TraceBuilder b;
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t t = i * 1000;
    b.push(1, 2 * i, t, 0, "quick");
    b.push(1, 2 * i + 1, t + 50, 1, "quicker");
    b.pop(1, t + 250, 1);
    b.pop(1, t + 300, 0);
  }
  const std::string host = foldedText(b.finish(3000), FoldWeight::HostTime);
  INFO(host);
  REQUIRE(problems(host).empty());
  REQUIRE(host == "quick 300\nquick;quicker 600\n");
  REQUIRE(test::checkFoldedRules(host).total == 900);
}

TEST_CASE("frame names never end a line in two numbers", "[folded][viewers]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"epoch 1", "epoch #1"},
      {"iter 12", "iter #12"},
      {"lr 0.5", "lr #0.5"},
      {"v 2.", "v #2."},
      {"step 0 3", "step 0 #3"},
      {"tab\t7", "tab #7"},
      {"nbsp\xc2\xa0" "1", "nbsp\xc2\xa0#1"},
      {"wide\xe3\x80\x80" "2", "wide\xe3\x80\x80#2"},  // U+3000
      {"thin\xe2\x80\x89" "3", "thin\xe2\x80\x89#3"},  // U+2009
      // Not read as a number after whitespace: unchanged.
      {"layer12", "layer12"},
      {"42", "42"},
      {"v 1.2.3", "v 1.2.3"},
      {"a .5", "a .5"},
      {"x -1", "x -1"},
      {"dots 1..", "dots 1.."},
      {"e\xc3\xa9" "1", "e\xc3\xa9" "1"},
      {"forward (model.py:42)", "forward (model.py:42)"},
  };
  for (const auto& [name, folded] : cases) {
    INFO(name);
    REQUIRE(foldedFrame(name) == folded);
  }

  // As written files: ranges named like counters and values, leaves and parents alike.
  TraceBuilder b;
  b.push(1, 0, 0, 0, "epoch 1");
  b.push(1, 1, 100, 1, "iter 12");
  b.api(1, test::kCudaDeviceSynchronize, 2, 200, 300);
  b.pop(1, 400, 1);
  b.push(1, 3, 500, 1, "lr 0.5");
  b.pop(1, 600, 1);
  b.pop(1, 700, 0);
  TraceData& d = b.finish(1000);
  for (FoldWeight w : {FoldWeight::HostTime, FoldWeight::Calls}) {
    const std::string text = foldedText(d, w);
    INFO(text);
    REQUIRE(problems(text).empty());
  }
  REQUIRE(foldedText(d, FoldWeight::Calls) ==
          "epoch #1 1\nepoch #1;iter #12 1\nepoch #1;iter #12;cudaDeviceSynchronize 1\nepoch #1;lr #0.5 1\n");
}

TEST_CASE("folded lines come out in bytewise order whatever the frame names", "[folded]") {
  // Names where the order of the lines is not the order of their frames: ' ' and '!' sort
  // before ';', 'b' and '~' after it, and one name is a prefix of others.
  const std::vector<std::string> names = {"a", "a b", "a!", "ab", "a~", "b", " a", "a;x", "~"};
  TraceBuilder b;
  std::set<std::string> expected;
  std::vector<std::string> open;
  uint64_t x = 0x2545f4914f6cdd1dull, t = 0, seq = 0;
  for (int i = 0; i < 3000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t += 10;
    if (!open.empty() && (open.size() >= 5 || x % 3 == 0)) {
      b.pop(1, t, static_cast<uint16_t>(open.size() - 1));
      open.pop_back();
      continue;
    }
    const std::string& name = names[(x >> 8) % names.size()];
    b.push(1, seq++, t, static_cast<uint16_t>(open.size()), name);
    open.push_back(foldedFrame(name));
    std::string path;
    for (const std::string& f : open) path += (path.empty() ? "" : ";") + f;
    expected.insert(path);
  }
  while (!open.empty()) {
    t += 10;
    b.pop(1, t, static_cast<uint16_t>(open.size() - 1));
    open.pop_back();
  }
  std::vector<std::string> got;
  for (const auto& [stack, w] : foldStacks(b.finish(t + 10))) got.push_back(stack);
  REQUIRE(got == std::vector<std::string>(expected.begin(), expected.end()));
}

namespace {

// A range pushed every step and never popped, with a CUDA call in each step.
TraceData& unpoppedTrace(TraceBuilder& b, int steps) {
  for (int i = 0; i < steps; ++i) {
    const uint64_t t = 100 * static_cast<uint64_t>(i);
    b.push(1, 2 * i, t, static_cast<uint16_t>(i), "step " + std::to_string(i));
    b.api(1, test::kCudaDeviceSynchronize, 2 * i + 1, t + 10, t + 60);
  }
  return b.finish(100 * static_cast<uint64_t>(steps));
}

}  // namespace

TEST_CASE("folded stacks of unpopped pushes stop at the depth cap, their time kept", "[folded][viewers]") {
  TraceBuilder b;
  const TraceData& d = unpoppedTrace(b, 1000);
  std::size_t lines = 0, maxFrames = 0;
  uint64_t hostNs = 0, calls = 0;
  std::string deepest;
  for (const auto& [stack, w] : foldStacks(d)) {
    ++lines;
    const std::size_t frames = 1 + static_cast<std::size_t>(std::count(stack.begin(), stack.end(), ';'));
    if (frames > maxFrames) maxFrames = frames, deepest = stack;
    hostNs += w.hostNs;
    calls += w.calls;
  }
  // Ranges 1..256 and the calls under the first 255 of them have lines of their own; every
  // deeper range and call is one "[deeper frames]" frame under range 256.
  REQUIRE(maxFrames == 257);
  REQUIRE(deepest.substr(deepest.size() - 16) == ";[deeper frames]");
  REQUIRE(deepest.substr(0, 16) == "step #0;step #1;");
  REQUIRE(lines == 256 + 255 + 1);
  REQUIRE(hostNs == 100000);  // nothing lost: the outermost range's time, all of it
  REQUIRE(calls == 2000);
}

TEST_CASE("the trace metadata counts what the folded depth cap merged; the JSON stays linear", "[folded][chrome][viewers]") {
  TraceBuilder b;
  const TraceData& d = unpoppedTrace(b, 1000);
  const FoldedStacks folded = foldStacks(d);
  REQUIRE(folded.maxFrames() == kFoldedMaxFrames);
  // Ranges 257..1000 (744) and the calls of steps 256..1000 (745).
  REQUIRE(folded.depthCapped() == 744 + 745);
  Sink out;
  writeChromeTrace(d, out, &folded);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(out.text()).get(doc) == simdjson::SUCCESS);
  REQUIRE(uint64_t(doc["metadata"]["folded"]["depth_capped"]) == 1489);
  REQUIRE(uint64_t(doc["metadata"]["folded"]["max_frames"]) == 256);
  REQUIRE(out.text().size() < 2000 * 200);  // bytes per event do not grow with the depth
  Sink plain;
  writeChromeTrace(d, plain);
  REQUIRE(parser.parse(plain.text()).get(doc) == simdjson::SUCCESS);
  REQUIRE(doc["metadata"]["folded"].error() == simdjson::NO_SUCH_FIELD);
}

TEST_CASE("NVTX ranges of a named domain get a track of their own; the default domain's are folded", "[chrome][folded][viewers]") {
  // A library's range opens before the user's range and closes inside it: legal (one stack per
  // domain), but on one track the two overlap without nesting.
  TraceBuilder b;
  const uint32_t lib = b.name("lib");
  b.threadName(11, 11, "main");
  b.push(11, 0, 100, 0, "lib op", lib);  // lib op [100, 500)
  b.mem(11, test::kCudaMalloc, 1, 150, 200, 64);
  b.push(11, 2, 250, 0, "user step");  // user step [250, 800)
  b.mark(11, 3, 260, "lib mark", lib);
  b.api(11, test::kCudaDeviceSynchronize, 4, 300, 400);
  b.pop(11, 500, 0, lib);
  b.api(11, test::kCudaFree, 5, 600, 700);
  b.pop(11, 800, 0);
  b.api(11, test::kCudaDeviceSynchronize, 6, 900, 950);
  TraceData& d = b.finish(1000);

  const uint64_t libTrack = (uint64_t{1} << 31) + (uint64_t{1} << 22) + 11;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string text = chrome(d);
  REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
  std::vector<std::string> events;
  std::map<uint64_t, std::string> trackNames;
  std::map<uint64_t, int64_t> sortIndex;
  for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
    const std::string ph = str(e["ph"]), name = str(e["name"]);
    const uint64_t tid = uint64_t(e["tid"]);
    if (ph == "M" && name == "thread_name") trackNames[tid] = str(e["args"]["name"]);
    if (ph == "M" && name == "thread_sort_index") sortIndex[tid] = int64_t(e["args"]["sort_index"]);
    if (ph == "M") continue;
    events.push_back(ph + " " + name + " @" + (tid == 11 ? "main" : tid == libTrack ? "lib" : std::to_string(tid)));
  }
  REQUIRE(events == std::vector<std::string>{"X lib op @lib", "X cudaMalloc @main", "X user step @main",
                                             "i lib mark @lib", "X cudaDeviceSynchronize @main", "X cudaFree @main",
                                             "X cudaDeviceSynchronize @main"});
  REQUIRE(trackNames == std::map<uint64_t, std::string>{{11, "main"}, {libTrack, "main nvtx domain lib"}});
  REQUIRE(sortIndex == std::map<uint64_t, int64_t>{{11, 0}, {libTrack, 1}});

  // Folded by the default domain: the calls after "lib op" ended keep their "user step" frame.
  REQUIRE(foldedText(d, FoldWeight::HostTime) ==
          "cudaDeviceSynchronize 50\n"
          "cudaMalloc 50\n"
          "user step 350\n"
          "user step;cudaDeviceSynchronize 100\n"
          "user step;cudaFree 100\n");
}

TEST_CASE("domain tracks: ordinals by domain name, sort indices right under their thread", "[chrome][viewers]") {
  TraceBuilder b;
  const uint32_t zeta = b.name("zeta"), alpha = b.name("alpha");
  b.threadName(7, 7, "worker");
  b.threadName(4242, 4242, "main");
  b.push(7, 0, 0, 0, "z", zeta);
  b.pop(7, 10, 0, zeta);
  b.push(4242, 0, 0, 0, "a", alpha);
  b.pop(4242, 10, 0, alpha);
  b.push(4242, 1, 20, 0, "z", zeta);
  b.pop(4242, 30, 0, zeta);
  TraceData& d = b.finish(100);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string text = chrome(d);
  REQUIRE(parser.parse(text).get(doc) == simdjson::SUCCESS);
  std::map<std::string, int64_t> sortByName;
  std::map<uint64_t, std::string> names;
  for (simdjson::dom::object e : doc["traceEvents"].get_array())
    if (str(e["ph"]) == "M" && str(e["name"]) == "thread_name") names[uint64_t(e["tid"])] = str(e["args"]["name"]);
  for (simdjson::dom::object e : doc["traceEvents"].get_array())
    if (str(e["ph"]) == "M" && str(e["name"]) == "thread_sort_index")
      sortByName[names[uint64_t(e["tid"])]] = int64_t(e["args"]["sort_index"]);
  // The main thread (tid = pid) first, then by tid; alpha is ordinal 1, zeta 2 everywhere.
  REQUIRE(sortByName == std::map<std::string, int64_t>{{"main", 0},
                                                       {"main nvtx domain alpha", 1},
                                                       {"main nvtx domain zeta", 2},
                                                       {"worker", 512},
                                                       {"worker nvtx domain zeta", 514}});
  REQUIRE(names.count((uint64_t{1} << 31) + (uint64_t{2} << 22) + 7) == 1);
  REQUIRE(names.count((uint64_t{1} << 31) + (uint64_t{1} << 22) + 4242) == 1);
}

// What `feed` records (calling, with a builder, the pass it is given between its parts), folded
// whole and pass by pass: both must give the same folded text. The weights, by stack.
using FoldFeed = std::function<void(TraceBuilder&, const std::function<void()>&)>;
std::map<std::string, FoldWeights> foldBothWays(const FoldFeed& feed, const FoldOptions& options = {},
                                                uint64_t endTicks = 400) {
  TraceBuilder whole, parts;
  feed(whole, [] {});
  const FoldedStacks expected = foldStacks(whole.finish(endTicks), options);
  FoldBuilder builder(options);
  feed(parts, [&] {
    builder.pass(parts.store().data());
    parts.store().releaseEvents();
  });
  const FoldedStacks got = builder.finish(parts.finish(endTicks));
  Sink a, b;
  for (FoldWeight w : {FoldWeight::HostTime, FoldWeight::Calls}) {
    writeFolded(expected, w, a);
    writeFolded(got, w, b);
  }
  CHECK(b.text() == a.text());
  std::map<std::string, FoldWeights> weights;
  for (const auto& [stack, w] : got) weights[stack] = w;
  return weights;
}

// The folding done as the run goes sees each thread's records in their order, a pass at a time,
// with the events leaving memory after each pass: a range opens at its push and ends passes
// later, a driver call arrives before the runtime call that made it (flagged as recorded inside a
// call) and must not become its parent. It must give exactly what folding the whole trace gives.
TEST_CASE("folded stacks built pass by pass equal the whole trace's", "[folded][builder]") {
  const FoldFeed feed = [](TraceBuilder& b, const std::function<void()>& pass) {
    b.defineStack(1, {"launch_site", "main"});
    b.push(7, 0, 100, 0, "epoch");
    pass();
    b.push(7, 1, 105, 1, "step");
    b.launch(7, test::kCuLaunchKernel, 3, 120, 130, nullptr, kNestedCallBit);
    pass();  // the driver call waits for its runtime call
    b.launch(7, test::kCudaLaunchKernel, 2, 110, 140, "k1", 1);
    b.api(7, test::kCudaDeviceSynchronize, 4, 150, 190, 0, 1);
    pass();
    b.pop(7, 200, 1);
    b.push(7, 5, 210, 1, "step");
    b.launch(7, test::kCudaLaunchKernel, 6, 220, 260, "k1", 1);
    pass();
    b.pop(7, 270, 1);
    b.push(7, 7, 275, 1, "eval");  // another range where "step" was
    b.pop(7, 285, 1);
    b.pop(7, 300, 0);
    b.push(7, 8, 310, 0, "tail");  // never popped: unclosed at the end
    b.api(7, test::kCudaDeviceSynchronize, 9, 320, 330, 0, 1);
  };
  std::map<std::string, FoldWeights> weights = foldBothWays(feed);
  CHECK(weights["epoch"].hostNs == 200 - 95 - 60 - 10);
  CHECK(weights["epoch;step"].calls == 2);
  CHECK(weights["epoch;eval"].calls == 1);
  CHECK(weights["epoch;eval"].hostNs == 10);
  CHECK(weights["epoch;step"].hostNs == 95 - 30 - 40 + 60 - 40);
  CHECK(weights["epoch;step;main;launch_site;cudaLaunchKernel;k1;cuLaunchKernel"].calls == 1);
  CHECK(weights["epoch;step;main;launch_site;cudaLaunchKernel;k1"].hostNs == 30 - 10 + 40);
  CHECK(weights["tail;main;launch_site;cudaDeviceSynchronize"].hostNs == 10);
  CHECK(weights.count("epoch;step;main;launch_site;cuLaunchKernel") == 0);

  // Without NVTX frames (CUTRACE_FOLDED_NVTX=0) the ranges are no frames at all: the calls fold
  // under their own stacks, the same pass by pass as whole.
  std::map<std::string, FoldWeights> plain = foldBothWays(feed, FoldOptions{false});
  CHECK(plain.size() == 3);
  CHECK(plain["main;launch_site;cudaLaunchKernel;k1"].calls == 2);
  CHECK(plain["main;launch_site;cudaLaunchKernel;k1"].hostNs == 30 - 10 + 40);
  CHECK(plain["main;launch_site;cudaLaunchKernel;k1;cuLaunchKernel"].hostNs == 10);
  CHECK(plain["main;launch_site;cudaDeviceSynchronize"].calls == 2);
}

// A loop's calls and ranges are counted a run at a time (FoldBuilder's repeats): the same call
// from the same place, alone or with the driver call recorded inside it, or the same range with
// nothing inside, under a range still open or none. Each
// thing that ends a run must leave the weights as counting call by call does: another call site,
// a range opening inside the loop, a pass between a driver call and its runtime call, an inner
// call clipped to its parent or starting at its end, the range around the loop ending, a range
// ending a frame opened passes before.
TEST_CASE("folded stacks: a loop's repeated calls, launches and ranges weigh as one by one", "[folded][builder]") {
  const FoldFeed feed = [](TraceBuilder& b, const std::function<void()>& pass) {
    b.defineStack(1, {"loop_site", "main"});
    b.defineStack(2, {"other_site", "main"});
    b.push(7, 0, 100, 0, "epoch");
    pass();
    uint64_t seq = 1;
    for (uint64_t k = 0, t = 110; k < 6; ++k, t += 10) {  // 5 ns each, a pass and a range among them
      b.api(7, test::kCudaDeviceSynchronize, seq++, t, t + 5, 0, 1);
      if (k == 0) pass();
      if (k == 5) {
        b.push(7, seq++, t + 6, 1, "sub");
        b.pop(7, t + 8, 1);
      }
    }
    b.api(7, test::kCudaDeviceSynchronize, seq++, 170, 177, 0, 2);
    b.api(7, test::kCudaDeviceSynchronize, seq++, 180, 185, 0, 1);
    for (uint64_t k = 0, t = 190; k < 5; ++k, t += 14) {  // launches of 10 ns, their driver calls 4
      b.launch(7, test::kCuLaunchKernel, seq + 1, t + 2, t + 6, nullptr, kNestedCallBit);
      b.launch(7, test::kCudaLaunchKernel, seq, t, t + 10, "k1", 1);
      seq += 2;
      if (k == 0) pass();
    }
    b.launch(7, test::kCuLaunchKernel, seq + 1, 262, 275, nullptr, kNestedCallBit);  // clipped to 270
    b.launch(7, test::kCudaLaunchKernel, seq, 260, 270, "k1", 1);
    seq += 2;
    b.launch(7, test::kCuLaunchKernel, seq + 1, 290, 292, nullptr, kNestedCallBit);  // starts at its end
    b.launch(7, test::kCudaLaunchKernel, seq, 280, 290, "k1", 1);
    seq += 2;
    b.launch(7, test::kCuLaunchKernel, seq + 1, 294, 296, nullptr, kNestedCallBit);
    pass();
    b.launch(7, test::kCudaLaunchKernel, seq, 293, 299, "k1", 1);
    seq += 2;
    b.pop(7, 300, 0);
    for (uint64_t t = 310; t < 340; t += 10) b.api(7, test::kCudaDeviceSynchronize, seq++, t, t + 5, 0, 1);
    b.push(7, seq++, 340, 0, "step");
    b.api(7, test::kCudaDeviceSynchronize, seq++, 345, 350, 0, 1);
    b.api(7, test::kCudaDeviceSynchronize, seq++, 355, 360, 0, 1);
    // Ranges of 1 ns with nothing inside, their push and pop taken together.
    for (uint64_t t = 361; t < 373; t += 2) b.range(7, seq++, t, t + 1, 1, "tick");
    b.push(7, seq++, 373, 1, "tick");  // open over a pass: its end ends its frame, never a repeat
    pass();
    for (uint64_t t = 374; t < 378; t += 2) b.range(7, seq++, t, t + 1, 2, "tick");
    b.pop(7, 379, 1);
    b.pop(7, 390, 0);
  };
  std::map<std::string, FoldWeights> weights = foldBothWays(feed);
  const auto check = [&](const std::string& stack, uint64_t calls, uint64_t hostNs) {
    INFO(stack);
    CHECK(weights[stack].calls == calls);
    CHECK(weights[stack].hostNs == hostNs);
  };
  check("epoch;main;loop_site;cudaDeviceSynchronize", 7, 35);
  check("epoch;main;other_site;cudaDeviceSynchronize", 1, 7);
  check("epoch;sub", 1, 2);
  check("epoch;main;loop_site;cudaLaunchKernel;k1", 8, 6 * 5 + 2 + 10 + 4);
  check("epoch;main;loop_site;cudaLaunchKernel;k1;cuLaunchKernel", 7, 4 * 5 + 8 + 2);
  check("epoch;cuLaunchKernel", 1, 2);
  check("epoch", 1, 200 - 35 - 7 - 2 - 76 - 2);
  check("main;loop_site;cudaDeviceSynchronize", 3, 15);
  check("step;main;loop_site;cudaDeviceSynchronize", 2, 10);
  check("step;tick", 7, 6 + 6 - 2);
  check("step;tick;tick", 2, 2);
  check("step", 1, 50 - 10 - 6 - 6);
  CHECK(weights.size() == 12);
}

// Programs made at random of what a thread records (pushes and pops, some at a wrong depth;
// ranges around nothing; calls from two places; launches through the runtime with the driver
// call inside; calls made inside a range that then ends), with passes anywhere: folded pass by
// pass as whole, with NVTX frames and without. Each record's time is later than the last one's,
// as two hooks of a thread always read different nanoseconds: where an event starts at the very
// time an earlier one ends or starts (a range pushed and popped in the same nanosecond, then a
// call), times alone do not say which holds which, and the stream's writer, the whole trace's
// order and the run's fold may each nest them otherwise.
TEST_CASE("folded stacks built pass by pass equal the whole trace's for random programs", "[folded][builder]") {
  for (uint32_t program = 0; program < 400; ++program) {
    const FoldFeed feed = [program](TraceBuilder& b, const std::function<void()>& pass) {
      std::mt19937 random(program);
      const auto chance = [&](uint32_t percent) { return random() % 100 < percent; };
      const char* const labels[] = {"step", "tick", "fwd"};
      b.defineStack(1, {"loop_site", "main"});
      b.defineStack(2, {"other_site", "main"});
      uint64_t t = 100, seq = 0;
      uint16_t depth = 0;
      for (int op = 0; op < 60; ++op) {
        const uint32_t what = random() % 8;
        const char* label = labels[random() % 3];
        const uint32_t stack = 1 + random() % 2;
        if (what == 0) {
          b.push(7, seq++, t, depth++, label);
        } else if (what == 1 && depth > 0) {
          b.pop(7, t, chance(10) ? static_cast<uint16_t>(random() % 3) : --depth);
        } else if (what == 2) {
          const uint64_t end = t + 1 + random() % 3;
          b.range(7, seq++, t, end, depth, label);
          t = end;
        } else if (what == 3 || what == 4) {
          const uint64_t end = t + 1 + random() % 5;
          b.api(7, test::kCudaDeviceSynchronize, seq++, t, end, 0, stack);
          t = end;
        } else if (what == 5) {
          // A launch and the driver call it made, recorded first: inside it, at its very end, or
          // ending a little after it (two clocks read apart).
          const uint64_t end = t + 10, innerStart = t + random() % 11, innerEnd = innerStart + random() % 4;
          b.launch(7, test::kCuLaunchKernel, seq + 1, innerStart, innerEnd, nullptr, kNestedCallBit);
          if (chance(20)) pass();
          b.launch(7, test::kCudaLaunchKernel, seq, t, end, "k1", stack);
          seq += 2;
          t = std::max(end, innerEnd);
        } else if (what == 6) {
          pass();
        }
        t += 1 + random() % 4;  // two hooks never read the same nanosecond (see the test's comment)
      }
      while (depth > 0 && chance(50)) b.pop(7, t++, --depth);
    };
    INFO("program " << program);
    foldBothWays(feed, {}, 2000);
    foldBothWays(feed, FoldOptions{false}, 2000);
  }
}

// A thread that exited (ThreadTrack::exited: its last records taken, no range open) is closed
// by the pass that folds its last events and its lists are given back; what it folded, with
// calls still on its stack then and a range around them, is what folding the whole trace gives,
// and the other threads fold on.
TEST_CASE("folded stacks: a thread that exited is closed early, with the same weights", "[folded][builder]") {
  const FoldFeed feed = [](TraceBuilder& b, const std::function<void()>& pass) {
    b.push(7, 0, 100, 0, "step");
    b.launch(7, test::kCuLaunchKernel, 2, 120, 130, nullptr, kNestedCallBit);
    b.launch(7, test::kCudaLaunchKernel, 1, 110, 150, "k1");
    b.api(7, test::kCudaDeviceSynchronize, 3, 160, 170);
    b.pop(7, 180, 0);
    // A launch whose runtime call stays on the fold's stack after the pass (nothing after it).
    b.launch(7, test::kCuLaunchKernel, 5, 192, 194, nullptr, kNestedCallBit);
    b.launch(7, test::kCudaLaunchKernel, 4, 190, 199, "k1");
    b.api(8, test::kCudaDeviceSynchronize, 0, 120, 130);
    b.store().data().threads[0].exited = true;
    pass();
    b.api(8, test::kCudaDeviceSynchronize, 1, 200, 260);
    b.push(8, 2, 270, 0, "step");
    b.pop(8, 290, 0);
    pass();
  };
  std::map<std::string, FoldWeights> weights = foldBothWays(feed);
  CHECK(weights["step"].calls == 2);
  CHECK(weights["step"].hostNs == 80 - 40 - 10 + 20);
  CHECK(weights["step;cudaLaunchKernel;k1"].hostNs == 40 - 10);
  CHECK(weights["step;cudaDeviceSynchronize"].calls == 1);
  CHECK(weights["cudaLaunchKernel;k1"].calls == 1);
  CHECK(weights["cudaLaunchKernel;k1"].hostNs == 9 - 2);
  CHECK(weights["cudaLaunchKernel;k1;cuLaunchKernel"].hostNs == 2);
  CHECK(weights["cudaDeviceSynchronize"].calls == 2);
  CHECK(weights["cudaDeviceSynchronize"].hostNs == 10 + 60);
}

// The JSON size estimate the traced process makes as it runs (chromeTraceSample, scaled to the
// run's events) is close to the Chrome trace written, with device work and flows in it, and
// takes only the sampled events' time (nothing linked).
TEST_CASE("chrome trace sample: scaled, close to the trace's size", "[chrome]") {
  TraceBuilder b;
  TraceData& d = b.store().data();
  const uint32_t kernel = d.strings.intern("_Z6kernelPfi");
  for (uint32_t i = 0; i < 400; ++i) {
    const uint64_t t = 1000 + 1000 * uint64_t{i};
    b.launch(11, test::kCudaLaunchKernel, 2 * i, t, t + 300, "_Z6kernelPfi");
    b.api(11, test::kCudaDeviceSynchronize, 2 * i + 1, t + 400, t + 900);
    d.apiActivity.push_back({t + 10, t + 290, 11, 100 + i});
    DeviceEvent k;
    k.start = t + 350, k.end = t + 800, k.correlation = 100 + i, k.device = 0, k.stream = 7, k.name = kernel;
    d.device.push_back(k);
  }
  b.finish(500000);
  Sink whole;
  writeChromeTrace(d, whole);
  const double real = static_cast<double>(whole.bytesWritten());
  for (std::size_t sampled : {std::size_t{50}, std::size_t{1000}}) {
    CAPTURE(sampled);
    const ChromeTraceSample s = chromeTraceSample(d, sampled);
    CHECK(s.hostEvents == std::min<std::size_t>(sampled, 800));
    CHECK(s.deviceEvents == std::min<std::size_t>(sampled, 400));
    const double estimate = static_cast<double>(s.hostBytes) / static_cast<double>(s.hostEvents) * 800 +
                            static_cast<double>(s.deviceBytes) / static_cast<double>(s.deviceEvents) * 400;
    CHECK(estimate > 0.9 * real);
    CHECK(estimate < 1.02 * real);
  }
}

// A graph launch makes many kernels under one correlation id. Perfetto keeps one flow per
// (id, cat, name): each kernel needs an id of its own for its arrow, the same whatever order
// the device work is stored in (a trace rebuilt from the stream holds it in the writer's order).
TEST_CASE("chrome trace: each kernel of a graph launch has a flow of its own from the launch", "[chrome]") {
  struct Flow {
    int s = 0, f = 0;
    int64_t sTid = 0, fTid = 0;
    double sTs = 0, fTs = 0;
  };
  const auto flowsOf = [](bool reversed) {
    TraceBuilder b;
    TraceData& d = b.store().data();
    const uint32_t kernel = d.strings.intern("_Z4stepv");
    b.api(11, test::kCudaGraphLaunch, 0, 1000, 1200);
    b.launch(11, test::kCudaLaunchKernel, 1, 2000, 2200, "_Z4stepv");
    d.apiActivity = {{1010, 1190, 11, 5}, {2010, 2190, 11, 6}};
    std::vector<DeviceEvent> device;
    DeviceEvent k;
    k.correlation = 5, k.device = 0, k.name = kernel;
    for (uint64_t i = 0; i < 3; ++i) {
      k.start = 1300 + 100 * i, k.end = k.start + 50, k.stream = i == 1 ? 8 : 7;  // one on a stream of the graph's own
      device.push_back(k);
    }
    k.correlation = 6, k.start = 2300, k.end = 2350, k.stream = 7;
    device.push_back(k);
    if (reversed) std::reverse(device.begin(), device.end());
    d.device = device;
    b.threadName(11, 11, "main");
    b.finish(3000);
    Sink out;
    writeChromeTrace(d, out);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(out.text()).get(doc) == simdjson::SUCCESS);
    std::map<uint64_t, Flow> flows;
    for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
      const std::string ph = str(e["ph"]);
      if (ph != "s" && ph != "f") continue;
      REQUIRE(std::string_view(e["cat"]) == "flow");
      REQUIRE(std::string_view(e["name"]) == "launch");
      Flow& f = flows[uint64_t(e["id"])];
      (ph == "s" ? f.s : f.f) += 1;
      (ph == "s" ? f.sTid : f.fTid) = int64_t(e["tid"]);
      (ph == "s" ? f.sTs : f.fTs) = double(e["ts"]);
    }
    return flows;
  };
  const std::map<uint64_t, Flow> flows = flowsOf(false);
  REQUIRE(flows.size() == 4);
  // The graph's first kernel and the plain launch's keep their correlation ids.
  REQUIRE(flows.count(5) == 1);
  REQUIRE(flows.count(6) == 1);
  std::vector<double> graphKernelStarts;
  for (const auto& [id, f] : flows) {
    CAPTURE(id);
    CHECK(id < (uint64_t{1} << 40));  // below PyTorch's flow ids
    CHECK(f.s == 1);
    CHECK(f.f == 1);
    CHECK(f.sTid == 11);
    if (id == 6) {
      CHECK(f.sTs == Approx(2.001));  // 1 ns into the launch
      continue;
    }
    CHECK(f.sTs == Approx(1.001));  // all from the graph launch
    graphKernelStarts.push_back(f.fTs);
  }
  std::sort(graphKernelStarts.begin(), graphKernelStarts.end());
  CHECK(graphKernelStarts == std::vector<double>{1.3, 1.4, 1.5});
  CHECK(flows.at(5).fTs == Approx(1.3));  // the first in time
  // The same ids for the same kernels, stored the other way round.
  const std::map<uint64_t, Flow> reversed = flowsOf(true);
  REQUIRE(reversed.size() == flows.size());
  for (auto i = flows.begin(), j = reversed.begin(); i != flows.end(); ++i, ++j) {
    CHECK(i->first == j->first);
    CHECK(i->second.fTid == j->second.fTid);
    CHECK(i->second.fTs == j->second.fTs);
  }
}

TEST_CASE("timeline order: parents first by start, whether the events are nearly in order or far from it", "[view]") {
  // Stored as a thread's events end: each call after the driver call it made, then ranges
  // wrapping them all after every one of them, together further off than the insertion sort's
  // bound on moves (four per event).
  auto check = [](const std::vector<Event>& events) {
    ThreadTrack t;
    bool stored = true;
    for (const Event& e : events) stored = t.events.push_back(e) && stored;
    REQUIRE(stored);
    std::vector<uint32_t> expected(events.size());
    for (uint32_t i = 0; i < expected.size(); ++i) expected[i] = i;
    std::sort(expected.begin(), expected.end(), [&](uint32_t a, uint32_t b) {
      const Event& x = events[a];
      const Event& y = events[b];
      return std::tuple(x.start, ~x.end, x.seq) < std::tuple(y.start, ~y.end, y.seq);
    });
    CHECK(timelineOrder(t) == expected);
  };
  std::vector<Event> pairs;
  uint64_t seq = 1;
  for (uint64_t i = 0; i < 3000; ++i) {
    Event outer, inner;
    outer.start = 1000 * i + 10;
    outer.end = 1000 * i + 500;
    outer.seq = seq++;
    inner.start = 1000 * i + 20;
    inner.end = i % 7 == 0 ? outer.end : 1000 * i + 400;  // some end with their caller
    inner.seq = seq++;
    pairs.push_back(inner);
    pairs.push_back(outer);
  }
  check(pairs);
  std::vector<Event> wrapped = pairs;
  Event range;
  range.kind = EventKind::NvtxRange;
  wrapped.push_back(range);  // one range: within the bound
  wrapped.back().start = 9;
  wrapped.back().end = 1000 * 3000;
  check(wrapped);
  for (uint64_t r = 1; r <= 8; ++r) {  // eight nested ranges, innermost first: past it
    range.start = 9 - r;
    range.end = 1000 * 3000 + r;
    range.seq = 0;
    wrapped.push_back(range);
  }
  check(wrapped);
  Event sameStart = range;  // starts with the outermost range, shorter: after it
  sameStart.end = 700;
  sameStart.seq = seq++;
  wrapped.insert(wrapped.begin() + 1000, sameStart);
  check(wrapped);
}
