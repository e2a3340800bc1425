#include <catch2/catch.hpp>

#include <thread>

#include "collector/graph_capture.h"

using namespace cutrace;

namespace {
bool capturingOnAnotherThread(uint64_t stream) {
  bool seen = false;
  std::thread([&] { seen = graph_capture::capturing(stream); }).join();
  return seen;
}
}  // namespace

TEST_CASE("a stream's capture is the process's, from a begin to an end that ends it", "[graph_capture]") {
  graph_capture::reset();
  constexpr uint64_t kStream = 0x7f00aa, kOther = 0x7f00bb;
  REQUIRE_FALSE(graph_capture::capturing(kStream));
  graph_capture::began(kStream);
  graph_capture::began(kStream);  // the driver begin the runtime's made
  CHECK(graph_capture::capturing(kStream));
  CHECK(capturingOnAnotherThread(kStream));  // an autograd thread launching into it
  CHECK_FALSE(graph_capture::capturing(kOther));
  graph_capture::ended(kStream, 908);  // from the wrong thread: the capture goes on
  CHECK(graph_capture::capturing(kStream));
  graph_capture::ended(kStream, 901);  // invalidated: ended all the same
  CHECK_FALSE(graph_capture::capturing(kStream));
  graph_capture::began(kStream);
  graph_capture::ended(kStream, 0);
  graph_capture::ended(kStream, 0);  // the runtime end after the driver's
  CHECK_FALSE(graph_capture::capturing(kStream));
  CHECK_FALSE(capturingOnAnotherThread(kStream));
}

TEST_CASE("the default streams' captures are their thread's", "[graph_capture]") {
  graph_capture::reset();
  graph_capture::began(0);  // cudaStreamBeginCapture_ptsz(0): this thread's per-thread stream
  graph_capture::began(2);  // the driver call it made, with CU_STREAM_PER_THREAD
  CHECK(graph_capture::capturing(0));
  CHECK(graph_capture::capturing(2));
  CHECK_FALSE(graph_capture::capturing(1));
  CHECK_FALSE(capturingOnAnotherThread(0));
  CHECK_FALSE(capturingOnAnotherThread(2));
  graph_capture::ended(2, 0);
  graph_capture::ended(0, 0);
  CHECK_FALSE(graph_capture::capturing(0));
  CHECK_FALSE(graph_capture::capturing(2));
}

TEST_CASE("past the slots, a capture is not followed until one ends", "[graph_capture]") {
  graph_capture::reset();
  for (uint64_t i = 0; i < graph_capture::kMaxStreams; ++i) graph_capture::began(0x1000 + i);
  const uint64_t extra = 0x1000 + graph_capture::kMaxStreams;
  graph_capture::began(extra);
  CHECK_FALSE(graph_capture::capturing(extra));
  CHECK(graph_capture::capturing(0x1000 + graph_capture::kMaxStreams - 1));
  graph_capture::ended(0x1000, 0);
  graph_capture::began(extra);
  CHECK(graph_capture::capturing(extra));
  graph_capture::reset();
  CHECK_FALSE(graph_capture::capturing(extra));
}
