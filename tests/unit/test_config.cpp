#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "collector/config.h"

using namespace cutrace;

namespace {

Config parse(std::vector<const char*> env, ConfigError& error) {
  env.push_back(nullptr);
  return parseConfig(env.data(), error);
}

}  // namespace

TEST_CASE("defaults apply when no CUTRACE_ variable is set", "[config]") {
  ConfigError error;
  const Config c = parse({"PATH=/usr/bin", "HOME=/root"}, error);
  REQUIRE_FALSE(error.failed());
  REQUIRE(c.enabled);
  REQUIRE(c.nvtx);
  REQUIRE(c.ringBytes == 0);  // automatic: the tiers of config.h
  REQUIRE(c.drainIntervalMs == 100);
  REQUIRE(std::string(c.outputDir) == "cutrace-out");
  REQUIRE(c.log == LogLevel::Info);
  REQUIRE(c.stacks == StackMode::Calls);
  REQUIRE(c.stackDepth == 32);
  REQUIRE(c.unwinder == Unwinder::Auto);
}

// The table's texts (--help, the README's settings, checked against them in test_run.py) state the
// defaults Config has, where a default is a number.
TEST_CASE("the table of variables states Config's numeric defaults", "[config]") {
  const Config c;
  const auto meaning = [](const char* name) {
    for (std::size_t i = 0; i < configVariableCount(); ++i)
      if (std::string(configVariable(i).name) == name) return std::string(configVariable(i).meaning);
    return std::string();
  };
  CHECK_THAT(meaning("CUTRACE_DRAIN_MS"), Catch::Contains("(default " + std::to_string(c.drainIntervalMs) + ")"));
  CHECK_THAT(meaning("CUTRACE_STACK_DEPTH"), Catch::Contains("(default " + std::to_string(c.stackDepth) + ")"));
  CHECK_THAT(meaning("CUTRACE_MAX_MEMORY"), Catch::Contains("(default " + std::to_string(c.maxMemory >> 30) + "G)"));
}

TEST_CASE("every accepted variable is parsed", "[config]") {
  ConfigError error;
  const Config c = parse({"CUTRACE_OUTPUT=/tmp/x y", "CUTRACE_RING_SIZE=4M", "CUTRACE_DRAIN_MS=5", "CUTRACE_LOG=debug",
                          "CUTRACE_CLOCK=monotonic", "CUTRACE_NVTX=off", "CUTRACE_ENABLE=1", "CUTRACE_CUPTI=off",
                          "CUTRACE_STACKS=launches", "CUTRACE_STACK_DEPTH=12", "CUTRACE_UNWIND=fp", "CUTRACE_PYTHON=off",
                          "CUTRACE_FOLDED_NVTX=0"},
                         error);
  REQUIRE_FALSE(error.failed());
  REQUIRE(std::string(c.outputDir) == "/tmp/x y");
  REQUIRE(c.ringBytes == (4u << 20));
  REQUIRE(c.drainIntervalMs == 5);
  REQUIRE(c.log == LogLevel::Debug);
  REQUIRE(c.clock == ClockSource::Monotonic);
  REQUIRE_FALSE(c.nvtx);
  REQUIRE(c.enabled);
  REQUIRE(c.cupti == 2);
  REQUIRE(c.stacks == StackMode::Launches);
  REQUIRE(c.stackDepth == 12);
  REQUIRE(c.unwinder == Unwinder::FramePointer);
  REQUIRE_FALSE(c.python);
  REQUIRE_FALSE(c.foldedNvtx);
  for (const auto& [value, unwinder] : {std::pair{"dwarf", Unwinder::Dwarf}, std::pair{"libunwind", Unwinder::Libunwind},
                                        std::pair{"auto", Unwinder::Auto}, std::pair{"verify", Unwinder::Verify}}) {
    const std::string entry = std::string("CUTRACE_UNWIND=") + value;
    const char* one[] = {entry.c_str(), nullptr};
    REQUIRE(parseConfig(one, error).unwinder == unwinder);
    REQUIRE_FALSE(error.failed());
  }
}

TEST_CASE("a bad value disables tracing with one line naming it", "[config]") {
  const char* bad[] = {"CUTRACE_RING_SIZE=3M",  "CUTRACE_RING_SIZE=1K",    "CUTRACE_RING_SIZE=-4",
                       "CUTRACE_RING_SIZE=4Mx", "CUTRACE_RING_SIZE=99999999999999999999",
                       "CUTRACE_DRAIN_MS=0",    "CUTRACE_DRAIN_MS=abc",    "CUTRACE_LOG=verbose",
                       "CUTRACE_CLOCK=rdtsc",   "CUTRACE_NVTX=maybe",      "CUTRACE_OUTPUT=",
                       "CUTRACE_CUPTI=yes",     "CUTRACE_STACKS=all",      "CUTRACE_STACK_DEPTH=0",
                       "CUTRACE_STACK_DEPTH=129", "CUTRACE_UNWIND=gcc",    "CUTRACE_PYTHON=on",
                       "CUTRACE_FOLDED_NVTX=x",  "CUTRACE_MAX_MEMORY=10K", "CUTRACE_CAPTURE=nvtx:",
                       "CUTRACE_CAPTURE=sometimes", "CUTRACE_CAPTURE=time:x", "CUTRACE_CAPTURE=time:1,0",
                       "CUTRACE_CAPTURE=schedule:1,1,0,1", "CUTRACE_CAPTURE=schedule:1,1,2", "CUTRACE_CAPTURE=schedule:1,1,2,1:"};
  for (const char* entry : bad) {
    INFO(entry);
    ConfigError error;
    const Config c = parse({entry}, error);
    REQUIRE(error.failed());
    REQUIRE_FALSE(c.enabled);
    const std::string msg = error.message;
    REQUIRE(msg.rfind("cutrace: ", 0) == 0);
    REQUIRE(msg.find(std::string(entry).substr(0, std::string(entry).find('='))) != std::string::npos);
    REQUIRE(msg.find("tracing disabled") != std::string::npos);
    REQUIRE(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("an unknown CUTRACE_ name is an error, other prefixes are ignored", "[config]") {
  ConfigError error;
  Config c = parse({"CUTRACE_OUPUT=/tmp/typo"}, error);
  REQUIRE(error.failed());
  REQUIRE_FALSE(c.enabled);
  REQUIRE(std::string(error.message).find("unknown variable") != std::string::npos);

  ConfigError none;
  c = parse({"CUTRACEX=1", "MY_CUTRACE_OUTPUT=/x"}, none);
  REQUIRE_FALSE(none.failed());
  REQUIRE(c.enabled);
}

TEST_CASE("control bytes in a bad value never reach stderr raw", "[config]") {
  ConfigError error;
  parse({"CUTRACE_LOG=\x1b[31mred\n"}, error);
  REQUIRE(error.failed());
  for (const char* p = error.message; *p; ++p) REQUIRE(static_cast<unsigned char>(*p) >= 0x20);
}

TEST_CASE("the documented variable table matches what the parser accepts", "[config]") {
  REQUIRE(configVariableCount() == 17);
  for (std::size_t i = 0; i < configVariableCount(); ++i) {
    const std::string name = configVariable(i).name;
    REQUIRE(name.rfind("CUTRACE_", 0) == 0);
  }
}

TEST_CASE("debug directories: absolute, ':' between them, empty for none", "[config]") {
  ConfigError error;
  Config c = parse({}, error);
  REQUIRE(std::string(c.debugDirs) == "/usr/lib/debug");
  c = parse({"CUTRACE_DEBUG_DIR=/opt/debug:/usr/lib/debug"}, error);
  REQUIRE_FALSE(error.failed());
  REQUIRE(std::string(c.debugDirs) == "/opt/debug:/usr/lib/debug");
  c = parse({"CUTRACE_DEBUG_DIR="}, error);
  REQUIRE_FALSE(error.failed());
  REQUIRE(std::string(c.debugDirs).empty());
  for (const char* bad : {"CUTRACE_DEBUG_DIR=debug", "CUTRACE_DEBUG_DIR=/a:b", "CUTRACE_DEBUG_DIR=/a::/b",
                          "CUTRACE_DEBUG_DIR=/a:", "CUTRACE_DEBUG_DIR=:/a"}) {
    c = parse({bad}, error);
    INFO(bad);
    REQUIRE(error.failed());
    REQUIRE_FALSE(c.enabled);
  }
}

TEST_CASE("capture specifications", "[config]") {
  ConfigError error;
  Config c = parse({"CUTRACE_CAPTURE=schedule:1,2,3,4"}, error);
  REQUIRE_FALSE(error.failed());
  REQUIRE(c.capture.mode == CaptureMode::Schedule);
  REQUIRE((c.capture.wait == 1 && c.capture.warmup == 2 && c.capture.active == 3 && c.capture.repeat == 4));
  REQUIRE(std::string(c.capture.name) == "ProfilerStep#");
  c = parse({"CUTRACE_CAPTURE=schedule:0,0,1,0:step "}, error);
  REQUIRE(std::string(c.capture.name) == "step ");
  c = parse({"CUTRACE_CAPTURE=time:1.5,0.25"}, error);
  REQUIRE((c.capture.mode == CaptureMode::Time && c.capture.delayMs == 1500 && c.capture.durationMs == 250));
  c = parse({"CUTRACE_CAPTURE=time:2"}, error);
  REQUIRE((c.capture.delayMs == 2000 && c.capture.durationMs == 0));
  c = parse({"CUTRACE_CAPTURE=nvtx:train step"}, error);
  REQUIRE((c.capture.mode == CaptureMode::Nvtx && std::string(c.capture.name) == "train step"));
  c = parse({"CUTRACE_CAPTURE=cuda-profiler-api", "CUTRACE_MAX_MEMORY=64M"}, error);
  REQUIRE((c.capture.mode == CaptureMode::ProfilerApi && c.maxMemory == (64u << 20)));
  REQUIRE_FALSE(error.failed());
}
