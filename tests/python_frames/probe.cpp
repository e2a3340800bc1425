// Test library loaded by frames_test.py through ctypes (which releases the GIL around the call):
// reports what cutrace::python sees, and how many _PyEval_EvalFrameDefault calls the native
// stack holds, so the entry flags can be checked against the C stack itself.
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "collector/python_frames.h"

namespace {

// The part of the eval loop a profile-guided build split off, as link-time addresses in the
// symbol's file: set by the test (probe_split_part) from binutils' view of the file, not
// cutrace's. [0, 0): none.
uintptr_t splitBegin = 0, splitEnd = 0;

// Native frames inside _PyEval_EvalFrameDefault, by symbol extent (dladdr alone would also
// name static functions placed after it), and inside its split part.
int countEvalFrames() {
  void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  if (eval == nullptr) return -1;
  Dl_info info;
  void* entry = nullptr;
  if (dladdr1(eval, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return -1;
  link_map* map = nullptr;
  if (dladdr1(eval, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 || map == nullptr) return -1;
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  const auto begin = reinterpret_cast<uintptr_t>(eval);
  const uintptr_t end = begin + sym->st_size;
  void* pcs[512];
  const int n = backtrace(pcs, 512);
  int count = 0;
  for (int i = 0; i < n; ++i) {
    const auto pc = reinterpret_cast<uintptr_t>(pcs[i]) - 1;  // return address -> call site
    if ((pc >= begin && pc < end) || (pc >= map->l_addr + splitBegin && pc < map->l_addr + splitEnd)) ++count;
  }
  return count;
}

// The last probe's ids and descriptions, described again after Python has finalised (at exit,
// when its code objects are gone) to show describe() needs only the copied data.
struct Remembered {
  uint32_t id;
  char text[512];
};
Remembered remembered[128];
int rememberedCount = 0;

__attribute__((destructor)) void describeAfterFinalize() {
  auto isInitialized = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  if (rememberedCount == 0 || isInitialized == nullptr || isInitialized() != 0) return;
  for (int i = 0; i < rememberedCount; ++i) {
    cutrace::python::FrameInfo info;
    char text[512] = "(describe failed)";
    const bool described = cutrace::python::describe(remembered[i].id, info);
    if (described)
      std::snprintf(text, sizeof text, "%s\t%s\t%d", info.function.c_str(), info.file.c_str(), info.line);
    if (!described || std::strcmp(text, remembered[i].text) != 0) {
      std::fprintf(stderr, "FAIL describe(%u) after finalize: '%s' != '%s'\n", remembered[i].id, text,
                   remembered[i].text);
      std::fflush(stderr);
      _exit(3);
    }
  }
  cutrace::python::RawFrame frames[8];
  if (cutrace::python::captureRaw(frames, 8) != 0) {
    std::fprintf(stderr, "FAIL captureRaw after finalize returned frames\n");
    _exit(3);
  }
  std::printf("ok   %d frames described the same after Python finalised\n", rememberedCount);
  std::fflush(stdout);
}

// Preloaded with CUTRACE_PROBE_EARLY_INIT set, initialises before the interpreter exists, as a
// preload constructor would.
__attribute__((constructor)) void earlyInitialize() {
  if (std::getenv("CUTRACE_PROBE_EARLY_INIT") != nullptr) cutrace::python::initialize();
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* probe_status() {
  cutrace::python::initialize();
  return cutrace::python::status();
}

__attribute__((visibility("default"))) void probe_split_part(uintptr_t begin, uintptr_t end) {
  splitBegin = begin;
  splitEnd = end;
}

// Writes "function\tfile\tline\tentry" per frame, innermost first, then "native_eval\tN" and
// "gil\tG" (PyGILState_Check(): 0 when the calling thread does not hold the GIL).
// Returns the number of frames, or -1 when a frame could not be interned or described.
__attribute__((visibility("default"))) int probe(char* buf, int len) {
  using namespace cutrace::python;
  initialize();
  RawFrame frames[128];
  const int n = captureRaw(frames, 128);
  const int evals = countEvalFrames();
  int used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n; ++i) {
    const uint32_t id = internFrame(frames[i]);
    FrameInfo info;
    if (id == 0 || !describe(id, info)) return -1;
    if (i < 128) {
      remembered[i].id = id;
      std::snprintf(remembered[i].text, sizeof remembered[i].text, "%s\t%s\t%d", info.function.c_str(),
                    info.file.c_str(), info.line);
      rememberedCount = i + 1;
    }
    used += std::snprintf(buf + used, used < len ? len - used : 0, "%s\t%s\t%d\t%u\n",
                          info.function.c_str(), info.file.c_str(), info.line, frames[i].entry);
  }
  auto gilCheck = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Check"));
  used += std::snprintf(buf + used, used < len ? len - used : 0, "native_eval\t%d\n", evals);
  std::snprintf(buf + used, used < len ? len - used : 0, "gil\t%d\n", gilCheck ? gilCheck() : -1);
  return n;
}

// Nanoseconds per captureRaw call (innermost `max` frames), over `iterations` calls.
__attribute__((visibility("default"))) double probe_bench(int iterations, int max) {
  using namespace cutrace::python;
  initialize();
  RawFrame frames[256];
  if (max > 256) max = 256;
  volatile int sink = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) sink = sink + captureRaw(frames, max);
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() / iterations;
}

// Frames the last capture saw (for the benchmark's sanity check).
__attribute__((visibility("default"))) int probe_depth() {
  cutrace::python::RawFrame frames[256];
  return cutrace::python::captureRaw(frames, 256);
}

}  // extern "C"
