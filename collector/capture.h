#pragma once
// Capture control (CUTRACE_CAPTURE): when events are recorded.
//
//   all                     everything (default)
//   cuda-profiler-api       between cudaProfilerStart/cuProfilerStart and the matching Stop,
//                           as nvprof --profile-from-start off
//   nvtx:NAME               while a push/pop range with that message is open (its thread's)
//   time:DELAY[,DURATION]   from DELAY seconds after start, for DURATION seconds (or to the end)
//   schedule:W,U,A,R[:M]    torch.profiler.schedule(wait=W, warmup=U, active=A, repeat=R) counted
//                           on push ranges whose message starts with M (default "ProfilerStep#"):
//                           recording during the A active steps of each cycle; R = 0 repeats
//   signal                  starts paused; each SIGUSR2 toggles
//
// Outside a capture window nothing is recorded and no sequence number is used, so gaps in seq
// still mean drops only. The hooks still feed the controls below while paused.
//
// Concurrency: the state is one atomic flag read with relaxed order on the hot path; the
// controls run on application threads (profiler API, NVTX), the drain thread (time) or a signal
// handler (SIGUSR2), each updating the flag with atomic stores only.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "collector/config.h"
#include "collector/trace_data.h"

namespace cutrace::capture {

namespace detail {
extern std::atomic<bool> g_on;
extern bool g_watchNvtx;  // written once by initialize()
}

inline bool on() { return detail::g_on.load(std::memory_order_relaxed); }
inline bool watchesNvtx() { return detail::g_watchNvtx; }

// Once, at start-up (from Collector::initialize). `hooks` gives the profiler start/stop calls.
void initialize(const CaptureSpec& spec, const HookDescriptor* hooks, std::size_t hookCount);
const char* describe();  // the mode, for metadata

// A profiler API call (ApiKind::Profiler) is about to run.
void onProfilerCall(uint16_t hook);
// A push/pop range on thread `tid` at nesting `depth` (before the push / after the pop).
void onNvtxPush(const char* text, std::size_t length, uint32_t tid, uint16_t depth);
void onNvtxPop(uint32_t tid, uint16_t depth);
// The drain thread's periodic tick. Returns the milliseconds until recording next turns on or off
// by time (CUTRACE_CAPTURE=time), at least 1; UINT32_MAX when nothing changes by time: the drain
// waits no longer than that, so a window's edges do not wait for the next timed pass.
uint32_t onTick();

}  // namespace cutrace::capture
