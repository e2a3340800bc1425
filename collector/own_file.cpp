#include "collector/own_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>

#include "collector/collector.h"

namespace cutrace {

bool OwnFile::create(int dirfd, const std::string& dir, const std::string& name) {
  const int fd = openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  struct stat st {};
  const bool ok = fstat(fd, &st) == 0;
  const int err = errno;
  struct statfs fs {};
  constexpr long kExt4Magic = 0xEF53;  // EXT4_SUPER_MAGIC (ext2 and ext3 too, run by the ext4 driver)
  reserves_ = fstatfs(fd, &fs) == 0 && fs.f_type == kExt4Magic;
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
  reservedTo_ = 0;
  return true;
}

int OwnFile::reopen(int flags, struct stat& st) const {
  const int fd = open(path_.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev_ && st.st_ino == ino_) return fd;
  close(fd);
  return -1;
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
  struct stat st {};
  const int fd = reopen(O_WRONLY, st);
  if (fd < 0) return;
  // Truncating to the size it has keeps every byte and frees the blocks past the end.
  if (static_cast<uint64_t>(st.st_size) < reservedTo) (void)ftruncate(fd, st.st_size);
  close(fd);
}

WriteStatus OwnFile::append(const void* data, std::size_t size) {
  if (path_.empty() || stopped_) return WriteStatus::Error;
  WriteStatus status = WriteStatus::NotOurs;
  int err = 0;
  // By path, every time: a descriptor kept open between appends could be closed by the program
  // and its number reused for one of the program's files.
  struct stat st {};
  const int fd = reopen(O_WRONLY | O_APPEND, st);
  if (fd >= 0) {
    reserve(fd, static_cast<uint64_t>(st.st_size), size);
    status = writeFully(fd, data, size);
    err = errno;
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
  reservedTo_ = 0;
}

}  // namespace cutrace
