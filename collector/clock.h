#pragma once
// One clock for every host timestamp of a process.
//
// The hot path reads raw ticks: the TSC where the CPU promises an invariant one (constant_tsc and
// nonstop_tsc), else CLOCK_MONOTONIC in nanoseconds. Ticks become CLOCK_MONOTONIC nanoseconds
// off the hot path through a linear fit between two (ticks, monotonic) anchor pairs: one taken
// at start-up and the latest one taken by the drain thread or at exit. The offset to
// CLOCK_REALTIME is kept so traces of several processes and hosts can be merged.

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace cutrace {

enum class ClockSource : uint8_t { Auto, Tsc, Monotonic };

struct ClockAnchor {
  uint64_t ticks = 0;
  uint64_t monotonicNs = 0;
};

class Clock {
 public:
  // Chooses the source and takes the first anchor. Not thread-safe; called once at start-up
  // (and again in a fork child, which keeps the parent's source).
  static void init(ClockSource source);

  static inline uint64_t now() {
#if defined(__x86_64__)
    if (useTsc_) return __rdtsc();
#endif
    return monotonicNs();
  }

  static inline uint64_t monotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }

  static bool usesTsc() { return useTsc_; }
  static const char* sourceName() { return useTsc_ ? "tsc" : "clock_monotonic"; }

  // A fresh (ticks, monotonic) pair, sampled so the two reads are as close as possible.
  static ClockAnchor sampleAnchor();

  static const ClockAnchor& startAnchor() { return start_; }
  static int64_t realtimeMinusMonotonicNs() { return realtimeOffsetNs_; }

 private:
  static inline bool useTsc_ = false;
  static inline ClockAnchor start_{};
  static inline int64_t realtimeOffsetNs_ = 0;
};

// Maps ticks to CLOCK_MONOTONIC nanoseconds with the fit between two anchors.
class TickConverter {
 public:
  TickConverter() = default;
  TickConverter(ClockAnchor a, ClockAnchor b, bool ticksAreNs);

  uint64_t toMonotonicNs(uint64_t ticks) const {
    const double d = static_cast<double>(static_cast<int64_t>(ticks - a_.ticks));
    return a_.monotonicNs + static_cast<int64_t>(d * nsPerTick_);
  }
  double nsPerTick() const { return nsPerTick_; }

 private:
  ClockAnchor a_{};
  double nsPerTick_ = 1.0;
};

}  // namespace cutrace
