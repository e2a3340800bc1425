#pragma once
// What every process the module must stay off in checks: initialize() refuses (and again), the
// status says `why`, no frame is captured, interned or described. Returns the exit status.
#include <cstdio>
#include <cstring>

#include "collector/python_frames.h"

inline int expectOff(const char* why) {
  using namespace cutrace::python;
  int failed = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "FAIL: %s\n", what);
      ++failed;
    }
  };
  check(!initialize(), "initialize() returns false");
  check(!initialize(), "initialize() stays false on a second call");
  check(std::strcmp(status(), why) == 0, "status() says why");
  RawFrame frames[8];
  check(captureRaw(frames, 8) == 0, "captureRaw returns 0");
  check(internFrame(RawFrame{1, 0, 1}) == 0, "internFrame returns 0");
  FrameInfo info;
  check(!describe(1, info), "describe fails");
  std::printf("status: %s\n", status());
  return failed ? 1 : 0;
}
