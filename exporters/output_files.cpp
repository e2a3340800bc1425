#include "exporters/output_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exporters/chrome_trace.h"
#include "exporters/folded.h"

#ifndef CUTRACE_VERSION
#define CUTRACE_VERSION "unknown"
#endif

namespace cutrace {

bool makeDirectories(const std::string& path, std::string& error) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create " + partial + ": " + strerror(errno);
      return false;
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = path + " is not a directory";
    return false;
  }
  return true;
}

int createExclusive(int dirfd, const std::string& name) {
  return openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

std::string outputStem(const TraceMeta& meta) {
  std::string base = safeFileStem(meta.exe) + "-" + std::to_string(meta.pid);
  if (meta.rank >= 0) base += "-rank" + std::to_string(meta.rank);
  return base;
}

std::string safeFileStem(const std::string& exe) {
  std::string out;
  for (char c : exe) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), 'p');
  return out;
}

OutputResult writeOutputFiles(const TraceData& data, const char* directory, const FoldOptions& fold) {
  OutputResult result;
  const std::string dir = directory;
  if (!makeDirectories(dir, result.error)) return result;
  const int dirfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    result.error = "cannot open " + dir + ": " + strerror(errno);
    return result;
  }
  const std::string base = outputStem(data.meta);
  int traceFd = -1, foldedFd = -1;
  std::string stem;
  for (int attempt = 0; attempt < 100 && traceFd < 0; ++attempt) {
    stem = attempt == 0 ? base : base + "." + std::to_string(attempt);
    traceFd = createExclusive(dirfd, stem + ".trace.json");
    if (traceFd < 0 && errno != EEXIST && errno != ELOOP) break;
    if (traceFd < 0) continue;
    foldedFd = createExclusive(dirfd, stem + ".folded");
    if (foldedFd < 0) {
      // Keep the pair's names matched: give up this stem and try the next one.
      const int err = errno;
      close(traceFd);
      unlinkat(dirfd, (stem + ".trace.json").c_str(), 0);
      traceFd = -1;
      errno = err;
      if (err != EEXIST && err != ELOOP) break;
    }
  }
  if (traceFd < 0) {
    result.error = "cannot create a trace file in " + dir + ": " + strerror(errno);
    close(dirfd);
    return result;
  }
  result.tracePath = dir + "/" + stem + ".trace.json";
  result.foldedPath = dir + "/" + stem + ".folded";
  bool ok = true;
  {
    Sink out(traceFd);
    writeChromeTrace(data, out);
    ok = out.flush() && ok;
  }
  const auto folded = foldStacks(data, fold);
  {
    Sink out(foldedFd);
    writeFolded(folded, FoldWeight::HostTime, out);
    ok = out.flush() && ok;
  }
  ok = (close(traceFd) == 0) && ok;
  ok = (close(foldedFd) == 0) && ok;
  // The other weightings share the stem, which the pair above already made unique; a file in
  // the way (or a symlink) is an error, not something to write through.
  bool anyGpu = false;
  for (const auto& entry : folded) anyGpu |= entry.second.gpuNs != 0;
  for (const auto& [suffix, weight] : {std::pair{".calls.folded", FoldWeight::Calls}, std::pair{".gpu.folded", FoldWeight::GpuTime}}) {
    if (weight == FoldWeight::GpuTime && !anyGpu) continue;
    const int fd = createExclusive(dirfd, stem + suffix);
    if (fd < 0) {
      ok = false;
      continue;
    }
    Sink out(fd);
    writeFolded(folded, weight, out);
    ok = out.flush() && ok;
    ok = (close(fd) == 0) && ok;
    result.extraPaths.push_back(dir + "/" + stem + suffix);
  }
  close(dirfd);
  if (!ok) result.error = std::string("write error in ") + dir;
  result.ok = ok;
  return result;
}

}  // namespace cutrace
