// In a process with no interpreter the module must stay off and say why.
#include <cstdio>
#include <cstring>

#include "collector/python_frames.h"

int main() {
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
  check(std::strcmp(status(), "not a Python process") == 0, "status() says not a Python process");
  RawFrame frames[8];
  check(captureRaw(frames, 8) == 0, "captureRaw returns 0");
  check(internFrame(RawFrame{1, 0, 1}) == 0, "internFrame returns 0");
  FrameInfo info;
  check(!describe(1, info), "describe fails");
  std::printf("status: %s\n", status());
  return failed ? 1 : 0;
}
