// The pipe libunwind opens (for the stacks the .eh_frame walk hands it) is cutrace's: libunwind
// probes an address by writing one byte from it into the pipe and reading one back, on the
// thread that walks, so the pipe has to be in the program's descriptor table. Opened as pipes
// are, at the lowest free numbers, it would sit among the program's descriptors, and a program
// that closed it (a daemon closing every descriptor it did not open) and opened its own file
// under that number would have bytes read from and written to that file by libunwind. While a
// thread is inside libunwind for cutrace (stacks::inLibunwind), the pipe it opens goes to
// cutrace's high numbers instead (moveHigh, as an OwnFile's where cutrace has no table of its
// own). A signal handler that opens a pipe while its thread is inside libunwind gets the same:
// the flag cannot tell the two apart.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>

#include "collector/own_file.h"
#include "collector/stack_capture.h"
#include "preload/next_symbol.h"

extern "C" {

__attribute__((visibility("default"))) int pipe2(int fds[2], int flags) {
  static std::atomic<void*> next{nullptr};
  const auto real = cutrace::nextSymbol<int (*)(int*, int)>(next, "pipe2");
  const int rc = real(fds, flags);
  if (rc == 0 && cutrace::stacks::inLibunwind()) {
    fds[0] = cutrace::moveHigh(fds[0]);
    fds[1] = cutrace::moveHigh(fds[1]);
  }
  return rc;
}

}  // extern "C"
