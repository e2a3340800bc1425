#pragma once
// Streams being captured into CUDA graphs, as the hooks see the captures begin and end.
//
// Work made into a stream while it is captured (a launch, copy, set or graph launch) does not
// run at its call: it becomes a node of the graph, run by the graph's launches. Capture belongs
// to the stream, not to the thread that began it: PyTorch's autograd threads launch a captured
// backward pass into the stream the main thread captures. So the state is the process's, and a
// hook flags its record at the call (kCapturedBit), in real time, whatever the drain decodes
// first and whatever records the rings drop.
//
// The default streams (handle 0, CU_STREAM_LEGACY 1, CU_STREAM_PER_THREAD 2) name a different
// stream on each thread (the per-thread one; the legacy stream cannot be captured): they are
// kept per thread.
//
// Concurrency: any thread may begin, end or test at any time; the slots are atomics written
// with compare-exchange, so two captures never share one. A capture is followed from when its
// begin has returned to when its end has (the hooks' post-call step): work another thread makes
// into the stream while either call is still returning may be taken for the other state, a
// window the program cannot order its own work against either. Allocation-free and lock-free:
// the hooks call it.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cutrace::graph_capture {

// More streams captured at once than this are not followed (their work is not flagged).
inline constexpr std::size_t kMaxStreams = 64;

namespace detail {
extern std::atomic<uint32_t> g_active;  // streams in the slots
extern __thread uint8_t t_defaultStreams __attribute__((tls_model("initial-exec")));  // bit per handle 0..2
bool capturingShared(uint64_t stream);
}  // namespace detail

// A capture of `stream` began (the begin returned success).
void began(uint64_t stream);
// A capture's end returned `result`: the capture is over when it succeeded or reported the
// capture invalidated (CUDA ends it then too); any other error (the wrong thread, a stream not
// capturing) leaves it as it was.
void ended(uint64_t stream, int result);

// Whether work made now into `stream` on this thread is captured.
inline bool capturing(uint64_t stream) {
  if (stream <= 2) return (detail::t_defaultStreams >> stream) & 1;
  return detail::g_active.load(std::memory_order_acquire) != 0 && detail::capturingShared(stream);
}

// Forgets every capture (tests; a forked child, whose parent's captures are not its own).
void reset();

}  // namespace cutrace::graph_capture
