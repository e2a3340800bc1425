#include "collector/config.h"

#include <cstdio>
#include <cstring>

namespace cutrace {

namespace {

using Parser = bool (*)(const char* value, Config& config);

bool parseBool(const char* v, bool& out) {
  if (!strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "yes") || !strcmp(v, "true")) {
    out = true;
    return true;
  }
  if (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "false")) {
    out = false;
    return true;
  }
  return false;
}

bool parseEnable(const char* v, Config& c) { return parseBool(v, c.enabled); }
bool parseNvtx(const char* v, Config& c) { return parseBool(v, c.nvtx); }

bool parseLog(const char* v, Config& c) {
  static constexpr struct { const char* name; LogLevel level; } kLevels[] = {
      {"off", LogLevel::Off}, {"error", LogLevel::Error}, {"warn", LogLevel::Warn},
      {"info", LogLevel::Info}, {"debug", LogLevel::Debug}};
  for (const auto& l : kLevels) {
    if (!strcmp(v, l.name)) {
      c.log = l.level;
      return true;
    }
  }
  return false;
}

bool parseClock(const char* v, Config& c) {
  if (!strcmp(v, "auto")) c.clock = ClockSource::Auto;
  else if (!strcmp(v, "tsc")) c.clock = ClockSource::Tsc;
  else if (!strcmp(v, "monotonic")) c.clock = ClockSource::Monotonic;
  else return false;
  return true;
}

bool parseCupti(const char* v, Config& c) {
  if (!strcmp(v, "auto")) c.cupti = 0;
  else if (!strcmp(v, "on")) c.cupti = 1;
  else if (!strcmp(v, "off")) c.cupti = 2;
  else return false;
  return true;
}

bool parseRingSize(const char* v, Config& c) {
  uint64_t n = 0;
  if (!parseSize(v, n)) return false;
  if (n < (16u << 10) || n > (1ull << 30) || (n & (n - 1)) != 0) return false;
  c.ringBytes = n;
  return true;
}

bool parseDrain(const char* v, Config& c) {
  uint64_t n = 0;
  if (!parseSize(v, n) || n < 1 || n > 10000) return false;
  c.drainIntervalMs = static_cast<uint32_t>(n);
  return true;
}

bool parseOutput(const char* v, Config& c) {
  const std::size_t len = strlen(v);
  if (len == 0 || len >= sizeof(c.outputDir)) return false;
  memcpy(c.outputDir, v, len + 1);
  return true;
}

bool parseDebugDirs(const char* v, Config& c) {
  const std::size_t len = strlen(v);
  if (len >= sizeof(c.debugDirs)) return false;
  // Absolute: the drain looks files up long after start, wherever the program has gone since.
  for (const char* p = v; *p != '\0'; p = strchrnul(p, ':'), p += *p == ':')
    if (*p != '/') return false;
  if (len != 0 && v[len - 1] == ':') return false;
  memcpy(c.debugDirs, v, len + 1);
  return true;
}

bool parseStacks(const char* v, Config& c) {
  if (!strcmp(v, "off") || !strcmp(v, "0")) c.stacks = StackMode::Off;
  else if (!strcmp(v, "launches")) c.stacks = StackMode::Launches;
  else if (!strcmp(v, "calls") || !strcmp(v, "1") || !strcmp(v, "on")) c.stacks = StackMode::Calls;
  else return false;
  return true;
}

bool parseStackDepth(const char* v, Config& c) {
  uint64_t n = 0;
  if (!parseSize(v, n) || n < 1 || n > 128) return false;
  c.stackDepth = static_cast<uint32_t>(n);
  return true;
}

bool parseUnwind(const char* v, Config& c) {
  if (!strcmp(v, "auto")) c.unwinder = Unwinder::Auto;
  else if (!strcmp(v, "dwarf")) c.unwinder = Unwinder::Dwarf;
  else if (!strcmp(v, "libunwind")) c.unwinder = Unwinder::Libunwind;
  else if (!strcmp(v, "fp")) c.unwinder = Unwinder::FramePointer;
  else if (!strcmp(v, "verify")) c.unwinder = Unwinder::Verify;
  else return false;
  return true;
}

bool parsePython(const char* v, Config& c) {
  if (!strcmp(v, "auto")) c.python = true;
  else if (!strcmp(v, "off")) c.python = false;
  else return false;
  return true;
}

bool parseFoldedNvtx(const char* v, Config& c) { return parseBool(v, c.foldedNvtx); }

// Digits with an optional fraction, in seconds -> milliseconds.
bool parseSeconds(const char*& v, uint64_t& ms) {
  if (*v < '0' || *v > '9') return false;
  uint64_t whole = 0;
  for (; *v >= '0' && *v <= '9'; ++v) {
    if (whole > 1000000000) return false;
    whole = whole * 10 + static_cast<uint64_t>(*v - '0');
  }
  uint64_t frac = 0, scale = 1000;
  if (*v == '.') {
    for (++v; *v >= '0' && *v <= '9'; ++v) {
      if (scale > 1) frac += static_cast<uint64_t>(*v - '0') * (scale /= 10);
    }
  }
  ms = whole * 1000 + frac;
  return true;
}

bool parseCount(const char*& v, uint32_t& out) {
  if (*v < '0' || *v > '9') return false;
  uint64_t n = 0;
  for (; *v >= '0' && *v <= '9'; ++v) {
    n = n * 10 + static_cast<uint64_t>(*v - '0');
    if (n > 1000000000) return false;
  }
  out = static_cast<uint32_t>(n);
  return true;
}

bool copyName(const char* v, char (&out)[128]) {
  const std::size_t len = strlen(v);
  if (len == 0 || len >= sizeof(out)) return false;
  memcpy(out, v, len + 1);
  return true;
}

bool parseCapture(const char* v, Config& c) {
  CaptureSpec s;
  if (!strcmp(v, "all")) {
    s.mode = CaptureMode::All;
  } else if (!strcmp(v, "cuda-profiler-api")) {
    s.mode = CaptureMode::ProfilerApi;
  } else if (!strcmp(v, "signal")) {
    s.mode = CaptureMode::Signal;
  } else if (!strncmp(v, "nvtx:", 5)) {
    s.mode = CaptureMode::Nvtx;
    if (!copyName(v + 5, s.name)) return false;
  } else if (!strncmp(v, "time:", 5)) {
    s.mode = CaptureMode::Time;
    const char* p = v + 5;
    if (!parseSeconds(p, s.delayMs)) return false;
    if (*p == ',') {
      ++p;
      if (!parseSeconds(p, s.durationMs) || s.durationMs == 0) return false;
    }
    if (*p != '\0') return false;
  } else if (!strncmp(v, "schedule:", 9)) {
    s.mode = CaptureMode::Schedule;
    const char* p = v + 9;
    if (!parseCount(p, s.wait) || *p++ != ',' || !parseCount(p, s.warmup) || *p++ != ',' || !parseCount(p, s.active) ||
        *p++ != ',' || !parseCount(p, s.repeat) || s.active == 0)
      return false;
    if (*p == ':') {
      if (!copyName(p + 1, s.name)) return false;
    } else if (*p != '\0') {
      return false;
    } else {
      memcpy(s.name, "ProfilerStep#", sizeof("ProfilerStep#"));
    }
  } else {
    return false;
  }
  c.capture = s;
  return true;
}

bool parseJsonLimit(const char* v, Config& c) { return parseSize(v, c.jsonLimit); }

bool parseMaxMemory(const char* v, Config& c) {
  uint64_t n = 0;
  if (!parseSize(v, n) || n < (1u << 20)) return false;
  c.maxMemory = n;
  return true;
}

struct Entry {
  ConfigVariable doc;
  Parser parse;
};

constexpr Entry kEntries[] = {
    {{"CUTRACE_ENABLE", "1|0|on|off", "record anything at all (default 1)"}, parseEnable},
    {{"CUTRACE_OUTPUT", "a directory path", "where trace files go (default ./cutrace-out)"}, parseOutput},
    {{"CUTRACE_LOG", "off|error|warn|info|debug", "what cutrace writes on stderr (default info: one summary line at exit)"}, parseLog},
    {{"CUTRACE_RING_SIZE", "a power of two from 16K to 1G bytes", "per-thread ring (default 16M for the first threads, 4M once rings hold a quarter of CUTRACE_MAX_MEMORY, 1M past half)"}, parseRingSize},
    {{"CUTRACE_DRAIN_MS", "1 to 10000", "how often the drain thread empties the rings (default 100)"}, parseDrain},
    {{"CUTRACE_CLOCK", "auto|tsc|monotonic", "host clock source (default auto: TSC when invariant)"}, parseClock},
    {{"CUTRACE_NVTX", "1|0|on|off", "receive NVTX ranges through NVTX_INJECTION64_PATH (default 1)"}, parseNvtx},
    {{"CUTRACE_CUPTI", "auto|on|off", "device timeline through CUPTI (default auto: when libcupti and a GPU are there)"}, parseCupti},
    {{"CUTRACE_STACKS", "off|launches|calls", "call stacks at launches only, or at every recorded CUDA call (default calls)"}, parseStacks},
    {{"CUTRACE_STACK_DEPTH", "1 to 128", "frames kept per stack, innermost first (default 32)"}, parseStackDepth},
    {{"CUTRACE_UNWIND", "auto|dwarf|libunwind|fp|verify",
      "stack unwinder (default auto, the same as dwarf: .eh_frame rules cached per address, libunwind.so.8 for the stacks they cannot follow; "
      "verify: both walks, libunwind's stack kept, disagreements counted in metadata.stacks.unwind_mismatches)"},
     parseUnwind},
    {{"CUTRACE_DEBUG_DIR", "absolute directories separated by ':', or empty for none",
      "where the separate debug files of stripped objects are looked for, to name their frames (default /usr/lib/debug)"},
     parseDebugDirs},
    {{"CUTRACE_PYTHON", "auto|off", "Python frames in stacks when the process is CPython 3.10 to 3.15 (default auto)"}, parsePython},
    {{"CUTRACE_MAX_MEMORY", "a size of at least 1M", "cap, each, on the per-thread rings, on the events kept per process and on those read back at exit for the Chrome trace; past it a new thread gets no ring, the newest events are dropped and counted, and no Chrome trace is written at exit (default 2G)"}, parseMaxMemory},
    {{"CUTRACE_CAPTURE", "all|cuda-profiler-api|nvtx:NAME|time:DELAY[,DURATION]|schedule:W,U,A,R[:MARKER]|signal",
      "when to record (default all); see the README"}, parseCapture},
    {{"CUTRACE_JSON_LIMIT", "a size, 0 for none",
      "the largest Chrome trace written at exit (default 1G, about what Perfetto UI opens); a larger one is not written, the .pftrace holds every event"},
     parseJsonLimit},
    {{"CUTRACE_FOLDED_NVTX", "1|0|on|off", "NVTX ranges as frames in the folded stacks (default 1)"}, parseFoldedNvtx},
};


void fail(ConfigError& error, const char* entry, const char* why) {
  // The value is echoed raw but bounded, so one line stays one line.
  char shown[96];
  std::size_t n = 0;
  for (const char* p = entry; *p && n + 1 < sizeof(shown); ++p)
    shown[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
  shown[n] = '\0';
  snprintf(error.message, sizeof(error.message), "cutrace: %s: %s; tracing disabled", shown, why);
}

}  // namespace

bool parseSize(const char* v, uint64_t& out) {
  if (*v < '0' || *v > '9') return false;
  uint64_t n = 0;
  for (; *v >= '0' && *v <= '9'; ++v) {
    if (n > (UINT64_MAX - 9) / 10) return false;
    n = n * 10 + static_cast<uint64_t>(*v - '0');
  }
  unsigned shift = 0;
  if (*v == 'k' || *v == 'K') shift = 10, ++v;
  else if (*v == 'm' || *v == 'M') shift = 20, ++v;
  else if (*v == 'g' || *v == 'G') shift = 30, ++v;
  if (*v == 'i' || *v == 'I') ++v;  // accept KiB-style spelling "4Mi"
  if (*v == 'b' || *v == 'B') ++v;
  if (*v != '\0') return false;
  if (shift && n > (UINT64_MAX >> shift)) return false;
  out = n << shift;
  return true;
}


Config parseConfig(const char* const* env, ConfigError& error) {
  Config config;
  error.message[0] = '\0';
  if (env == nullptr) return config;
  for (const char* const* e = env; *e != nullptr; ++e) {
    const char* entry = *e;
    if (strncmp(entry, "CUTRACE_", 8) != 0) continue;
    const char* eq = strchr(entry, '=');
    if (eq == nullptr) continue;
    const std::size_t nameLen = static_cast<std::size_t>(eq - entry);
    const Entry* match = nullptr;
    for (const auto& candidate : kEntries) {
      if (strlen(candidate.doc.name) == nameLen && !strncmp(candidate.doc.name, entry, nameLen)) {
        match = &candidate;
        break;
      }
    }
    char why[192];
    if (match == nullptr) {
      fail(error, entry, "unknown variable (see the README for the accepted CUTRACE_* names)");
      config.enabled = false;
      return config;
    }
    if (!match->parse(eq + 1, config)) {
      snprintf(why, sizeof(why), "bad value, expected %s", match->doc.accepted);
      fail(error, entry, why);
      config = Config{};
      config.enabled = false;
      return config;
    }
  }
  return config;
}

std::size_t configVariableCount() { return sizeof(kEntries) / sizeof(kEntries[0]); }

const ConfigVariable& configVariable(std::size_t i) { return kEntries[i].doc; }

}  // namespace cutrace
