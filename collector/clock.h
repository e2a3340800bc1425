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

// Maps ticks to CLOCK_MONOTONIC nanoseconds through the chain of anchors the drain takes pass by
// pass: a tick between two anchors by the segment joining them (before the oldest kept, or after
// the newest, by the nearest segment). A tick then maps to the same nanosecond whichever pass maps
// it, as long as its anchors are kept (kAnchors passes). The chord from the start to the latest
// anchor, used before, moved with every pass: the same tick came out a few to tens of ns apart in
// two passes (anchor noise in a VM), enough to end a call after the range it ran in.
// Default: ticks are nanoseconds already.
class TickTimeline {
 public:
  TickTimeline() = default;
  TickTimeline(ClockAnchor start, bool ticksAreNs) : ticksAreNs_(ticksAreNs) { anchors_[0] = start, count_ = 1; }
  // A newer anchor (ticks and ns past the last one's; one that is not is ignored).
  void add(ClockAnchor a);
  uint64_t toMonotonicNs(uint64_t ticks) const {
    if (ticksAreNs_) return ticks;
    // Nearly every tick a pass maps is past the previous pass's anchor: the last segment, kept
    // apart (its start, start ns and slope) so that the common case reads no anchor array.
    if (ticks >= lastSegTicks_) {
      // Through int64_t: the same double (the difference is below 2^63), converted in one
      // instruction where an unsigned one takes a branch and several.
      const double x = static_cast<double>(static_cast<int64_t>(ticks - lastSegTicks_)) * lastSegSlope_;
      return lastSegNs_ + static_cast<uint64_t>(static_cast<int64_t>(x + 0.5));
    }
    if (count_ == 0) return ticks;
    if (count_ == 1) return anchors_[0].monotonicNs + (ticks - anchors_[0].ticks);  // no rate yet
    std::size_t seg = count_ - 2;
    while (seg > 0 && ticks < at(seg).ticks) --seg;
    const ClockAnchor& a = at(seg);
    // Rounded to the nearest ns, so that the segment's own end anchor maps to itself exactly,
    // as the next segment maps it.
    const double x = static_cast<double>(static_cast<int64_t>(ticks - a.ticks)) * slope_[(first_ + seg) % kAnchors];
    return a.monotonicNs + static_cast<int64_t>(x < 0 ? x - 0.5 : x + 0.5);
  }

  static constexpr std::size_t kAnchors = 1024;

 private:
  const ClockAnchor& at(std::size_t i) const { return anchors_[(first_ + i) % kAnchors]; }
  bool ticksAreNs_ = true;
  ClockAnchor anchors_[kAnchors];
  double slope_[kAnchors] = {};  // ns per tick from the anchor at the same slot to the next one
  std::size_t first_ = 0, count_ = 0;
  // The last segment (anchors count_ - 2 and count_ - 1); no ticks are past UINT64_MAX while
  // there is none.
  uint64_t lastSegTicks_ = UINT64_MAX;
  uint64_t lastSegNs_ = 0;
  double lastSegSlope_ = 0;
};

}  // namespace cutrace
