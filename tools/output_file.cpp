#include "tools/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace cutrace::tools {

namespace {

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

bool openOutput(const std::string& path, OutputTarget& target, std::string& error) {
  target = OutputTarget{path, {}, -1};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      error = fmt::format("{}: is a directory", path);
      return false;
    }
    target.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (target.fd < 0) {
      error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
      return false;
    }
    return true;
  }
  target.tmp = path + ".tmp.XXXXXX";
  target.fd = ::mkstemp(target.tmp.data());
  if (target.fd < 0) {
    error = fmt::format("{}: cannot create a temporary file beside it: {}", path, std::strerror(errno));
    target.tmp.clear();
    return false;
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(target.fd, 0666 & ~mask);
  return true;
}

bool commitOutput(OutputTarget& target, std::string& error) {
  if (target.tmp.empty()) return true;
  if (::rename(target.tmp.c_str(), target.path.c_str()) != 0) {
    error = fmt::format("{}: cannot rename {} into place: {}", target.path, target.tmp, std::strerror(errno));
    abandonOutput(target);
    return false;
  }
  target.tmp.clear();
  return true;
}

void abandonOutput(OutputTarget& target) {
  if (!target.tmp.empty()) ::unlink(target.tmp.c_str());
  target.tmp.clear();
}

bool writeOutputText(const std::string& path, std::string_view text, std::string& error) {
  if (path.empty()) {
    if (writeAll(STDOUT_FILENO, text)) return true;
    error = fmt::format("cannot write standard output: {}", std::strerror(errno));
    return false;
  }
  OutputTarget target;
  if (!openOutput(path, target, error)) return false;
  bool ok = writeAll(target.fd, text);
  int err = errno;
  if (::close(target.fd) != 0 && ok) ok = false, err = errno;
  if (!ok) {
    error = fmt::format("{}: cannot write: {}", path, std::strerror(err));
    abandonOutput(target);
    return false;
  }
  return commitOutput(target, error);
}

}  // namespace cutrace::tools
