#include "collector/graph_capture.h"

namespace cutrace::graph_capture {

namespace detail {
std::atomic<uint32_t> g_active{0};
__thread uint8_t t_defaultStreams __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace detail

namespace {

// Stream handles, 0 where free.
std::atomic<uint64_t> g_slots[kMaxStreams];

// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and cudaErrorStreamCaptureInvalidated.
constexpr int kCaptureInvalidated = 901;

}  // namespace

bool detail::capturingShared(uint64_t stream) {
  for (const auto& slot : g_slots)
    if (slot.load(std::memory_order_acquire) == stream) return true;
  return false;
}

void began(uint64_t stream) {
  if (stream <= 2) {
    detail::t_defaultStreams = static_cast<uint8_t>(detail::t_defaultStreams | 1u << stream);
    return;
  }
  // A runtime begin and the driver begin it made both report the same capture.
  if (detail::capturingShared(stream)) return;
  for (auto& slot : g_slots) {
    uint64_t free = 0;
    if (slot.compare_exchange_strong(free, stream, std::memory_order_acq_rel)) {
      detail::g_active.fetch_add(1, std::memory_order_release);
      return;
    }
  }
}

void ended(uint64_t stream, int result) {
  if (result != 0 && result != kCaptureInvalidated) return;
  if (stream <= 2) {
    detail::t_defaultStreams = static_cast<uint8_t>(detail::t_defaultStreams & ~(1u << stream));
    return;
  }
  for (auto& slot : g_slots) {
    uint64_t held = stream;
    if (slot.compare_exchange_strong(held, 0, std::memory_order_acq_rel)) {
      detail::g_active.fetch_sub(1, std::memory_order_release);
      return;
    }
  }
}

void reset() {
  for (auto& slot : g_slots) slot.store(0, std::memory_order_relaxed);
  detail::g_active.store(0, std::memory_order_release);
  detail::t_defaultStreams = 0;
}

}  // namespace cutrace::graph_capture
