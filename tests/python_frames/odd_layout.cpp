// A process that looks like CPython 3.14 but whose own debug offsets (_PyRuntime.debug_offsets)
// disagree with the layout cutrace measured: the module must stay off and say why, without
// reading a frame. `odd_layout free-threaded`: the debug offsets say free-threaded instead.
#include <cstdint>
#include <cstring>

#include "expect_off.h"

// What the module looks up with dlsym(RTLD_DEFAULT), exported from this executable.
extern "C" {
__attribute__((visibility("default"))) extern const unsigned long Py_Version;
const unsigned long Py_Version = 0x030e0af0;  // 3.14.10
__attribute__((visibility("default"))) uint64_t _PyRuntime[128];
}

int main(int argc, char** argv) {
  const bool freeThreaded = argc > 1 && std::strcmp(argv[1], "free-threaded") == 0;
  // 3.14's _Py_DebugOffsets: the cookie, PY_VERSION_HEX, free_threaded (at 16), and where the
  // thread state's current_frame is (at 208): 72 in the layout measured.
  std::memcpy(_PyRuntime, "xdebugpy", 8);
  _PyRuntime[1] = Py_Version;
  _PyRuntime[2] = freeThreaded ? 1 : 0;
  _PyRuntime[208 / 8] = 80;
  return expectOff(freeThreaded ? "CPython 3.14.10: free-threaded build unsupported"
                                 : "CPython 3.14.10: layout differs from the interpreter's debug offsets, frames off");
}
