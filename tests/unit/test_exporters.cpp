#include <catch2/catch.hpp>
#include <simdjson.h>

#include <map>
#include <string>
#include <vector>

#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
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
  const auto weights = foldStacks(sampleTrace(b));
  const std::map<std::string, uint64_t> expected{
      {"step", 1000 - 100 - 400},
      {"step;cudaMalloc", 100},
      {"step;cudaLaunchKernel;void ns::scale<float>(float*, int)", 400 - 200},
      {"step;cudaLaunchKernel;void ns::scale<float>(float*, int);cuLaunchKernel", 200},
  };
  REQUIRE(weights == expected);
}

TEST_CASE("folded file: sorted lines, one space, integer microseconds, zero weights kept", "[folded]") {
  TraceBuilder b;
  b.push(1, 0, 0, 0, "a;b\nc");    // ';' and newline cannot appear inside a frame
  b.api(1, test::kCudaDeviceSynchronize, 1, 1000, 3600);
  b.api(1, test::kCudaFree, 2, 4000, 4100);
  b.pop(1, 5000, 0);
  Sink out;
  writeFolded(b.finish(5000), out);
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
