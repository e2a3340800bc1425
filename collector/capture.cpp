#include "collector/capture.h"

#include <algorithm>

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "collector/collector.h"

namespace cutrace::capture {

namespace detail {
std::atomic<bool> g_on{true};
bool g_watchNvtx = false;
}  // namespace detail

namespace {

struct State {
  CaptureSpec spec;
  std::size_t nameLength = 0;
  uint8_t profiler[1024] = {};  // by hook id: 1 start, 2 stop
  uint64_t startNs = 0;
  // nvtx:NAME: the thread and depth of the open range that turned recording on (0 = none).
  std::atomic<uint64_t> owner{0};
  std::atomic<uint64_t> steps{0};  // schedule: markers seen
  char text[160] = {};
};

State g_state;

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void set(bool on) { detail::g_on.store(on, std::memory_order_relaxed); }

void onUsr2(int) {
  // Async-signal-safe: one atomic read and store.
  set(!detail::g_on.load(std::memory_order_relaxed));
}

// Whether step `k` (0-based) of a schedule is recorded, as torch.profiler.schedule: each cycle
// is wait + warmup + active steps; warm-up steps are not kept; after `repeat` cycles (0 =
// forever) nothing more is recorded.
bool scheduleActive(const CaptureSpec& s, uint64_t k) {
  const uint64_t cycle = uint64_t{s.wait} + s.warmup + s.active;
  if (s.repeat != 0 && k >= cycle * s.repeat) return false;
  return k % cycle >= uint64_t{s.wait} + s.warmup;
}

}  // namespace

void initialize(const CaptureSpec& spec, const HookDescriptor* hooks, std::size_t hookCount) {
  State& st = g_state;
  st.spec = spec;
  st.nameLength = strlen(spec.name);
  st.startNs = monotonicNs();
  for (std::size_t i = 0; i < hookCount && i < sizeof(st.profiler); ++i) {
    if (hooks[i].kind != ApiKind::Profiler) continue;
    if (strstr(hooks[i].displayName, "ProfilerStart") != nullptr) st.profiler[i] = 1;
    if (strstr(hooks[i].displayName, "ProfilerStop") != nullptr) st.profiler[i] = 2;
  }
  detail::g_watchNvtx = spec.mode == CaptureMode::Nvtx || spec.mode == CaptureMode::Schedule;
  switch (spec.mode) {
    case CaptureMode::All:
      set(true);
      snprintf(st.text, sizeof(st.text), "all");
      break;
    case CaptureMode::ProfilerApi:
      set(false);
      snprintf(st.text, sizeof(st.text), "cuda-profiler-api");
      break;
    case CaptureMode::Nvtx:
      set(false);
      snprintf(st.text, sizeof(st.text), "nvtx:%s", spec.name);
      break;
    case CaptureMode::Time:
      set(spec.delayMs == 0);
      snprintf(st.text, sizeof(st.text), "time:%llu.%03llu,%llu.%03llu", static_cast<unsigned long long>(spec.delayMs / 1000),
               static_cast<unsigned long long>(spec.delayMs % 1000), static_cast<unsigned long long>(spec.durationMs / 1000),
               static_cast<unsigned long long>(spec.durationMs % 1000));
      break;
    case CaptureMode::Schedule:
      set(false);
      snprintf(st.text, sizeof(st.text), "schedule:%u,%u,%u,%u:%s", spec.wait, spec.warmup, spec.active, spec.repeat,
               spec.name);
      break;
    case CaptureMode::Signal: {
      set(false);
      snprintf(st.text, sizeof(st.text), "signal");
      struct sigaction old {};
      if (sigaction(SIGUSR2, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
        struct sigaction sa {};
        sa.sa_handler = onUsr2;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR2, &sa, nullptr);
      } else {
        Collector::warnOnce("cutrace: CUTRACE_CAPTURE=signal but the program handles SIGUSR2 itself; recording stays off\n");
      }
      break;
    }
  }
}

const char* describe() { return g_state.text; }

void onProfilerCall(uint16_t hook) {
  if (g_state.spec.mode != CaptureMode::ProfilerApi || hook >= sizeof(g_state.profiler)) return;
  if (g_state.profiler[hook] == 1) set(true);
  if (g_state.profiler[hook] == 2) set(false);
}

void onNvtxPush(const char* text, std::size_t length, uint32_t tid, uint16_t depth) {
  const State& st = g_state;
  if (text == nullptr) return;
  if (st.spec.mode == CaptureMode::Nvtx) {
    if (length != st.nameLength || memcmp(text, st.spec.name, length) != 0) return;
    uint64_t none = 0;
    const uint64_t me = uint64_t{tid} << 16 | depth | uint64_t{1} << 63;
    if (g_state.owner.compare_exchange_strong(none, me, std::memory_order_relaxed)) set(true);
  } else if (st.spec.mode == CaptureMode::Schedule) {
    if (length < st.nameLength || memcmp(text, st.spec.name, st.nameLength) != 0) return;
    const uint64_t k = g_state.steps.fetch_add(1, std::memory_order_relaxed);
    set(scheduleActive(st.spec, k));
  }
}

void onNvtxPop(uint32_t tid, uint16_t depth) {
  if (g_state.spec.mode != CaptureMode::Nvtx) return;
  uint64_t me = uint64_t{tid} << 16 | depth | uint64_t{1} << 63;
  if (g_state.owner.compare_exchange_strong(me, 0, std::memory_order_relaxed)) set(false);
}

uint32_t onTick() {
  const CaptureSpec& s = g_state.spec;
  if (s.mode != CaptureMode::Time) return UINT32_MAX;
  const uint64_t elapsedMs = (monotonicNs() - g_state.startNs) / 1000000;
  const uint64_t endMs = s.delayMs + s.durationMs;
  const bool inside = elapsedMs >= s.delayMs && (s.durationMs == 0 || elapsedMs < endMs);
  set(inside);
  const uint64_t nextMs = elapsedMs < s.delayMs ? s.delayMs : (s.durationMs != 0 && elapsedMs < endMs ? endMs : 0);
  if (nextMs == 0) return UINT32_MAX;
  return static_cast<uint32_t>(std::min<uint64_t>(nextMs - elapsedMs, UINT32_MAX - 1));
}

}  // namespace cutrace::capture
