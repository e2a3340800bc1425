#pragma once
// Settings of one traced process, read once from a whitelist of CUTRACE_* variables.
//
// Parsing allocates nothing and throws nothing: it can run inside the first hooked call,
// before the preload's constructor. Any unknown CUTRACE_* name or bad value makes the whole
// configuration invalid; the caller then turns tracing off and warns once.

#include <cstddef>
#include <cstdint>
#include <limits.h>

#include "collector/clock.h"

namespace cutrace {

enum class LogLevel : uint8_t { Off, Error, Warn, Info, Debug };
enum class StackMode : uint8_t { Off, Launches, Calls };
enum class Unwinder : uint8_t { Auto, Dwarf, Libunwind, FramePointer, Verify };

// CUTRACE_CAPTURE: when events are recorded (collector/capture.h).
enum class CaptureMode : uint8_t { All, ProfilerApi, Nvtx, Time, Schedule, Signal };
struct CaptureSpec {
  CaptureMode mode = CaptureMode::All;
  char name[128] = {};          // Nvtx: the range; Schedule: the step marker prefix
  uint64_t delayMs = 0;         // Time
  uint64_t durationMs = 0;      // Time; 0 = until the end
  uint32_t wait = 0, warmup = 0, active = 0, repeat = 0;  // Schedule, as torch.profiler.schedule
};

// CUTRACE_JSON_LIMIT's default: about the largest JSON Perfetto UI opens in a browser.
inline constexpr uint64_t kDefaultJsonLimit = uint64_t{1} << 30;

// The default rings, by tier: kAutoRingLargeBytes while the rings hold at most a quarter of the
// memory cap (the threads that start first, a program's main and worker threads, are the busy
// ones as a rule), kAutoRingBytes up to half of it, then kAutoRingSmallBytes. A ring covers the
// time the drain is kept from a core: at 20 M events/s a 4 MiB ring lasts 3.3 ms, and 3 runs in 6
// lost 3.6-16.4 % of their events; a 16 MiB ring lasts 13 ms, and none in 6 lost any
// (bench_events --sustained --sync, 2-core VM, 2026-11-24). Pages are touched on use, so a ring
// costs what its thread writes (a busy thread's first lap of 16 MiB: ~4,100 page faults, a few
// ms once); a thousand threads still get rings under the default cap.
inline constexpr uint64_t kAutoRingLargeBytes = uint64_t{16} << 20;
inline constexpr uint64_t kAutoRingBytes = uint64_t{4} << 20;
inline constexpr uint64_t kAutoRingSmallBytes = uint64_t{1} << 20;

// CUTRACE_DEBUG_DIR's default: where distributions install separate debug files.
inline constexpr char kDefaultDebugDirs[] = "/usr/lib/debug";

struct Config {
  bool enabled = true;
  bool nvtx = true;
  uint8_t cupti = 0;  // CuptiMode: 0 auto, 1 on, 2 off
  LogLevel log = LogLevel::Info;
  ClockSource clock = ClockSource::Auto;
  // Per-thread ring; 0 (the default): the tiers above, by how much of maxMemory the rings
  // already hold (Collector's reserveRing).
  uint64_t ringBytes = 0;
  uint32_t drainIntervalMs = 100;
  StackMode stacks = StackMode::Calls;
  Unwinder unwinder = Unwinder::Auto;
  uint32_t stackDepth = 32;
  uint32_t maxStacks = 1u << 16;  // distinct stacks per process; more are counted, not stored
  bool python = true;             // Python frames in stacks when the process is CPython
  bool foldedNvtx = true;         // NVTX ranges as frames in the folded outputs
  CaptureSpec capture;
  uint64_t jsonLimit = kDefaultJsonLimit;  // a Chrome trace larger than this is not written (0: no limit)
  uint64_t maxMemory = 2ull << 30;  // cap on stored events per process; newer ones are dropped
  char outputDir[PATH_MAX] = "cutrace-out";
  char debugDirs[PATH_MAX] = {};  // CUTRACE_DEBUG_DIR: absolute directories, ':' between them
  constexpr Config() {
    for (std::size_t i = 0; i < sizeof(kDefaultDebugDirs); ++i) debugDirs[i] = kDefaultDebugDirs[i];
  }
};

// A size: digits with an optional K/M/G binary suffix (KiB/MiB/GiB spellings too); rejects
// overflow, signs and trailing junk. Also the tools' size options.
bool parseSize(const char* v, uint64_t& out);

struct ConfigError {
  char message[384] = {};
  bool failed() const { return message[0] != '\0'; }
};

// Reads `env` (a NULL-terminated environ-style array). On failure, `error` holds one line
// naming the variable, the value and what is accepted, and the returned Config is disabled.
Config parseConfig(const char* const* env, ConfigError& error);

// The table of accepted variables, for --help texts and documentation tests.
struct ConfigVariable {
  const char* name;
  const char* accepted;
  const char* meaning;
};
std::size_t configVariableCount();
const ConfigVariable& configVariable(std::size_t i);

}  // namespace cutrace
