#include "collector/own_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>

#include "collector/collector.h"
#include "collector/private_files.h"

namespace cutrace {

namespace {

// Where an OwnFile's descriptor is moved: the lowest free number from here (F_DUPFD), half the
// soft RLIMIT_NOFILE at most, so that a program using every descriptor up to its limit meets
// cutrace's only near the end. Far from the low numbers a program closes and expects back.
int highFdFloor() {
  struct rlimit r {};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 1000;
  return static_cast<int>(std::min<rlim_t>(1000, r.rlim_cur / 2));
}

}  // namespace

int moveHigh(int fd) {
  const int floor = highFdFloor();
  if (fd >= floor) return fd;
  const int err = errno;
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
  errno = err;
  if (high < 0) return fd;
  close(fd);
  return high;
}

bool OwnFile::create(const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name;  // here: a job allocates nothing (private_files.h)
  bool made = false;
  int err = 0;
  privateFiles::run([&] {
    closeDescriptor();
    made = createIn(dir.c_str(), name.c_str());
    err = errno;
  });
  if (!made) {
    errno = err;
    return false;
  }
  path_ = std::move(path);
  stopped_ = false;
  reservedTo_ = 0;
  return true;
}

bool OwnFile::createIn(const char* dir, const char* name) {
  const int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) return false;
  const int fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  int err = errno;
  struct stat st {};
  const bool ok = fd >= 0 && fstat(fd, &st) == 0;
  if (fd >= 0) {
    err = errno;
    struct statfs fs {};
    constexpr long kExt4Magic = 0xEF53;  // EXT4_SUPER_MAGIC (ext2 and ext3 too, run by the ext4 driver)
    reserves_ = ok && fstatfs(fd, &fs) == 0 && fs.f_type == kExt4Magic;
    if (!ok) {
      close(fd);
      unlinkat(dirfd, name, 0);
    }
  }
  close(dirfd);
  errno = err;
  if (!ok) return false;
  fd_ = moveHigh(fd);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  return true;
}

bool OwnFile::ours(int fd, struct stat& st) const {
  return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev_ && st.st_ino == ino_;
}

int OwnFile::descriptor(struct stat& st) {
  // The path must still name the file (a stream removed or renamed away is not written on
  // unseen), then the descriptor must still be it.
  struct stat named {};
  if (lstat(path_.c_str(), &named) != 0) return -1;
  if (!S_ISREG(named.st_mode) || named.st_dev != dev_ || named.st_ino != ino_) {
    errno = ESTALE;
    return -1;
  }
  if (ours(fd_, st)) return fd_;
  fd_ = -1;  // closed, or a number the program reuses: not closed here
  const int fd = open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  if (!ours(fd, st)) {
    close(fd);
    errno = ESTALE;
    return -1;
  }
  fd_ = moveHigh(fd);
  return fd_;
}

void OwnFile::closeDescriptor() {
  struct stat st {};
  if (ours(fd_, st)) close(fd_);
  fd_ = -1;
}

void OwnFile::reserve(int fd, uint64_t size, std::size_t adding) {
  if (!reserves_ || size + adding <= reservedTo_) return;
  // Never past the file-size limit: blocks there could never be written.
  const uint64_t limit = fileSizeLimit();
  if (size >= limit) return;
  const uint64_t length = std::min<uint64_t>(kReserveBytes + adding, limit - size);
  const int err = errno;
  if (fallocate(fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(size), static_cast<off_t>(length)) == 0) {
    reservedTo_ = size + length;
  } else if (errno == EOPNOTSUPP || errno == ENOSYS) {
    reserves_ = false;
  }
  // Anything else (ENOSPC, EDQUOT): the write below says what it says, with no reserve.
  errno = err;
}

void OwnFile::releaseReserve() {
  if (path_.empty() || stopped_ || reservedTo_ == 0) return;
  const uint64_t reservedTo = reservedTo_;
  reservedTo_ = 0;
  const int err = errno;
  privateFiles::run([&] {
    struct stat st {};
    const int fd = descriptor(st);
    // Truncating to the size it has keeps every byte and frees the blocks past the end.
    if (fd >= 0 && static_cast<uint64_t>(st.st_size) < reservedTo) (void)ftruncate(fd, st.st_size);
  });
  errno = err;
}

WriteStatus OwnFile::append(const void* data, std::size_t size) {
  if (path_.empty() || stopped_) return WriteStatus::Error;
  WriteStatus status = WriteStatus::NotOurs;
  int err = 0;
  privateFiles::run([&] {
    struct stat st {};
    const int fd = descriptor(st);
    err = errno;
    if (fd >= 0) {
      reserve(fd, static_cast<uint64_t>(st.st_size), size);
      status = writeFully(fd, data, size);
      err = errno;
    } else if (err != ENOENT && err != ESTALE && err != ELOOP) {
      status = WriteStatus::Error;  // the file is there but could not be opened (EMFILE, EACCES)
    }
    if (status != WriteStatus::Ok) closeDescriptor();
  });
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
  privateFiles::run([&] {
    struct stat st {};
    if (!path_.empty() && lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
      unlink(path_.c_str());
    closeDescriptor();
  });
  forget();
}

void OwnFile::forget() {
  // In a fork child this table is the program's, inherited: the descriptor is in it only where
  // the parent had no table of its own, and is closed then if it is still the file.
  closeDescriptor();
  path_.clear();
  dev_ = 0;
  ino_ = 0;
  stopped_ = false;
  reservedTo_ = 0;
}

}  // namespace cutrace
