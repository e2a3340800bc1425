// writeFully, the file-size limit and cutrace's stderr (collector/own_file.h): no dependency on
// the collector, so every writer of the project (the tools' Sink too) can link them alone.
#include "collector/own_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

namespace cutrace {

namespace {

std::atomic<bool> limitReached{false};

// fd 2 as it was at initialisation. Written once before any diagnostic can be written (the
// collector's initialisation, single-threaded for it) and in a new image; read anywhere.
struct StderrIdentity {
  std::atomic<bool> known{false};
  dev_t dev = 0;
  ino_t ino = 0;
};
StderrIdentity stderrIdentity;

__thread HeldDiagnostics* t_held __attribute__((tls_model("initial-exec"))) = nullptr;

// Where the next write to `fd` lands, for a regular file; -1 when unknown.
off_t writePosition(int fd, const struct stat& st) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return -1;
  return (flags & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
}

}  // namespace

uint64_t fileSizeLimit() {
  struct rlimit rl {};
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<uint64_t>(rl.rlim_cur);
}

bool fileSizeLimitReached() { return limitReached.load(std::memory_order_relaxed); }

WriteStatus writeFully(int fd, const void* data, std::size_t size) {
  if (size == 0) return WriteStatus::Ok;
  // The limit is read at every write: the program may change it while it runs. Only regular
  // files are subject to it.
  const uint64_t limit = fileSizeLimit();
  if (limit != UINT64_MAX) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return WriteStatus::Error;
    if (S_ISREG(st.st_mode)) {
      const off_t at = writePosition(fd, st);
      if (at < 0) return WriteStatus::Error;
      if (static_cast<uint64_t>(at) >= limit || size > limit - static_cast<uint64_t>(at)) {
        limitReached.store(true, std::memory_order_relaxed);
        return WriteStatus::FileSizeLimit;
      }
    }
  }
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return WriteStatus::Error;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return WriteStatus::Ok;
}

void rememberStderr() {
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) {
    stderrIdentity.known.store(false, std::memory_order_release);
    return;
  }
  stderrIdentity.dev = st.st_dev;
  stderrIdentity.ino = st.st_ino;
  stderrIdentity.known.store(true, std::memory_order_release);
}

void holdDiagnostics(HeldDiagnostics* into) { t_held = into; }

void writeDiagnostic(const char* text) {
  if (HeldDiagnostics* held = t_held) {
    const std::size_t n = strlen(text);
    if (n <= sizeof(held->text) - held->size) {
      memcpy(held->text + held->size, text, n);
      held->size += n;
    }
    return;
  }
  const int savedErrno = errno;
  struct stat st {};
  // A program that closed fd 2 and opened a file of its own there gets none of our lines. (The
  // program could swap fd 2 between this check and the write; nothing short of holding a
  // descriptor of our own, which the program could close as well, would rule that out.)
  if (stderrIdentity.known.load(std::memory_order_acquire) && fstat(STDERR_FILENO, &st) == 0 &&
      st.st_dev == stderrIdentity.dev && st.st_ino == stderrIdentity.ino)
    writeFully(STDERR_FILENO, text, strlen(text));
  errno = savedErrno;
}

}  // namespace cutrace
