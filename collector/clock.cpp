#include "collector/clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace cutrace {

namespace {

bool cpuHasInvariantTsc() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;  // invariant TSC: constant rate, runs in every C-state
#else
  return false;
#endif
}

}  // namespace

void Clock::init(ClockSource source) {
  switch (source) {
    case ClockSource::Auto: useTsc_ = cpuHasInvariantTsc(); break;
    case ClockSource::Tsc: useTsc_ = cpuHasInvariantTsc(); break;
    case ClockSource::Monotonic: useTsc_ = false; break;
  }
  start_ = sampleAnchor();
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  const uint64_t mono = monotonicNs();
  const uint64_t real = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + static_cast<uint64_t>(rt.tv_nsec);
  realtimeOffsetNs_ = static_cast<int64_t>(real - mono);
}

ClockAnchor Clock::sampleAnchor() {
  // The narrowest of a few bracketed reads bounds the error of the pair by its width.
  ClockAnchor best{};
  uint64_t bestWidth = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = now();
    const uint64_t mono = monotonicNs();
    const uint64_t after = now();
    if (after - before < bestWidth) {
      bestWidth = after - before;
      best.ticks = before + (after - before) / 2;
      best.monotonicNs = mono;
    }
  }
  return best;
}

void TickTimeline::add(ClockAnchor a) {
  if (count_ == 0) {
    anchors_[0] = a, count_ = 1;
    return;
  }
  const ClockAnchor& last = at(count_ - 1);
  if (a.ticks <= last.ticks || a.monotonicNs < last.monotonicNs) return;
  slope_[(first_ + count_ - 1) % kAnchors] = static_cast<double>(a.monotonicNs - last.monotonicNs) /
                                             static_cast<double>(a.ticks - last.ticks);
  if (count_ == kAnchors) {
    first_ = (first_ + 1) % kAnchors;  // the oldest goes; its slot takes the new anchor
    --count_;
  }
  anchors_[(first_ + count_) % kAnchors] = a;
  ++count_;
  const ClockAnchor& segStart = at(count_ - 2);
  lastSegTicks_ = segStart.ticks;
  lastSegNs_ = segStart.monotonicNs;
  lastSegSlope_ = slope_[(first_ + count_ - 2) % kAnchors];
}

}  // namespace cutrace
