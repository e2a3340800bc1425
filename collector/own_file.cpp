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

#include "collector/collector.h"

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

void writeDiagnostic(const char* text) {
  ErrnoKeeper keepErrno;
  if (!stderrIdentity.known.load(std::memory_order_acquire)) return;
  struct stat st {};
  // A program that closed fd 2 and opened a file of its own there gets none of our lines. (The
  // program could swap fd 2 between this check and the write; nothing short of holding a
  // descriptor of our own, which the program could close as well, would rule that out.)
  if (fstat(STDERR_FILENO, &st) != 0 || st.st_dev != stderrIdentity.dev || st.st_ino != stderrIdentity.ino) return;
  writeFully(STDERR_FILENO, text, strlen(text));
}

bool OwnFile::create(int dirfd, const std::string& dir, const std::string& name) {
  const int fd = openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  struct stat st {};
  const bool ok = fstat(fd, &st) == 0;
  const int err = errno;
  close(fd);
  if (!ok) {
    unlinkat(dirfd, name.c_str(), 0);
    errno = err;
    return false;
  }
  path_ = dir + "/" + name;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  stopped_ = false;
  return true;
}

bool OwnFile::isOurs(int fd) const {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev_ && st.st_ino == ino_;
}

WriteStatus OwnFile::append(const void* data, std::size_t size) {
  if (path_.empty() || stopped_) return WriteStatus::Error;
  WriteStatus status = WriteStatus::NotOurs;
  int err = 0;
  // By path, every time: a descriptor kept open between appends could be closed by the program
  // and its number reused for one of the program's files.
  const int fd = open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    if (isOurs(fd)) {
      status = writeFully(fd, data, size);
      err = errno;
    }
    close(fd);
  }
  if (status == WriteStatus::Ok) return status;
  stopped_ = true;
  char line[PATH_MAX + 200];
  switch (status) {
    case WriteStatus::FileSizeLimit:
      snprintf(line, sizeof(line),
               "cutrace: stopped writing %s: it would pass the file-size limit (RLIMIT_FSIZE, %llu bytes); no more "
               "trace files are written\n",
               path_.c_str(), static_cast<unsigned long long>(fileSizeLimit()));
      break;
    case WriteStatus::NotOurs:
      snprintf(line, sizeof(line), "cutrace: %s was removed or replaced; stopped writing it\n", path_.c_str());
      break;
    default:
      snprintf(line, sizeof(line), "cutrace: could not write %s (%s); stopped writing it\n", path_.c_str(), strerror(err));
      break;
  }
  Collector::warnOnce(line);
  return status;
}

void OwnFile::remove() {
  struct stat st {};
  if (!path_.empty() && lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) unlink(path_.c_str());
  forget();
}

void OwnFile::forget() {
  path_.clear();
  dev_ = 0;
  ino_ = 0;
  stopped_ = false;
}

}  // namespace cutrace
