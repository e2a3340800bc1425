#include "collector/own_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/collector.h"

namespace cutrace {

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
