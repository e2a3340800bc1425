#include "exporters/output_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

#include "collector/own_file.h"
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

std::string numberedStem(const std::string& stem, int attempt) {
  return attempt == 0 ? stem : stem + "." + std::to_string(attempt);
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

namespace {

constexpr const char* kTraceSuffix = ".trace.json";
constexpr const char* kFoldedSuffix = ".folded";

// An output file: its suffix after the stem, and what writes its contents.
using OutputFile = std::pair<const char*, std::function<void(Sink&)>>;

// One output file's contents, written before it gets a name.
struct Pending {
  const char* suffix;
  int fd = -1;
};

// Writes one file's contents; `worst` keeps the first failure of a set of files.
bool writeTo(int fd, const std::function<void(Sink&)>& write, WriteStatus& worst) {
  Sink out(fd);
  write(out);
  out.flush();
  if (worst == WriteStatus::Ok) worst = out.status();
  return out.ok();
}

// Gives the unnamed file `fd` (O_TMPFILE) the name `name` in `dirfd`; EEXIST when taken.
bool nameTmpFile(int fd, int dirfd, const std::string& name) {
  char proc[64];
  snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
  return linkat(AT_FDCWD, proc, dirfd, name.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

// The fallback: each file created under its final name and written there; the first two files
// (the trace and the host-time folded file, or the two folded files without a trace) take the
// first stem free for both. A set that could
// not be written completely is removed again.
bool writeInPlace(int dirfd, const std::string& dir, const std::string& base,
                  const std::vector<OutputFile>& files, std::string& stem,
                  OutputResult& result, bool& ok, WriteStatus& worst) {
  int traceFd = -1, foldedFd = -1;
  for (int attempt = 0; attempt < kStemAttempts && traceFd < 0; ++attempt) {
    stem = numberedStem(base, attempt);
    traceFd = createExclusive(dirfd, stem + files[0].first);
    if (traceFd < 0 && errno != EEXIST && errno != ELOOP) break;
    if (traceFd < 0) continue;
    foldedFd = createExclusive(dirfd, stem + files[1].first);
    if (foldedFd < 0) {
      // Keep the pair's names matched: give up this stem and try the next one.
      const int err = errno;
      close(traceFd);
      unlinkat(dirfd, (stem + files[0].first).c_str(), 0);
      traceFd = -1;
      errno = err;
      if (err != EEXIST && err != ELOOP) break;
    }
  }
  if (traceFd < 0) return false;
  std::vector<std::string> created = {stem + files[0].first, stem + files[1].first};
  ok = writeTo(traceFd, files[0].second, worst) && ok;
  ok = writeTo(foldedFd, files[1].second, worst) && ok;
  ok = (close(traceFd) == 0) && ok;
  ok = (close(foldedFd) == 0) && ok;
  for (std::size_t i = 2; i < files.size() && ok; ++i) {
    const int fd = createExclusive(dirfd, stem + files[i].first);
    if (fd < 0) {
      ok = false;
      continue;
    }
    created.push_back(stem + files[i].first);
    ok = writeTo(fd, files[i].second, worst) && ok;
    ok = (close(fd) == 0) && ok;
    result.extraPaths.push_back(dir + "/" + stem + files[i].first);
  }
  if (!ok) {
    for (const std::string& name : created) unlinkat(dirfd, name.c_str(), 0);
    result.extraPaths.clear();
  }
  return true;
}

}  // namespace

OutputResult writeOutputFiles(const TraceData& data, const char* directory, const FoldOptions& fold,
                              const std::string& stem0, uint64_t jsonLimit, const FoldedStacks* runFolded,
                              uint64_t jsonEstimate, bool withoutJson) {
  OutputResult result;
  const std::string dir = directory;
  if (!makeDirectories(dir, result.error)) return result;
  const int dirfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    result.error = "cannot open " + dir + ": " + strerror(errno);
    return result;
  }
  // A Chrome trace larger than the limit would not open in the viewers it is for: a run with more
  // events than the smallest events fit, or whose estimate passes it, is not written at all (no
  // time spent at exit), and one that turns out larger once written is discarded before it gets a name.
  result.jsonWithheld = withoutJson && runFolded != nullptr;
  result.jsonSkipped = !result.jsonWithheld && jsonKnownTooLarge(data.eventCount(), jsonEstimate, jsonLimit);
  if (result.jsonSkipped) result.jsonBytes = std::max(jsonEstimate, data.eventCount() * kMinJsonBytesPerEvent);
  const bool noJson = result.jsonSkipped || result.jsonWithheld;
  // Folding the events of `data` is needed for the trace (its metadata.folded) and for GPU time,
  // which only they link; host time and calls come from the run's own folding when given.
  FoldedStacks folded;
  if (!noJson || runFolded == nullptr) folded = foldStacks(data, fold);
  const FoldedStacks& hostFolded = runFolded != nullptr ? *runFolded : folded;
  const bool anyGpu = folded.anyGpu();
  uint64_t jsonBytes = 0;
  std::vector<OutputFile> files;
  if (!noJson)
    files.emplace_back(kTraceSuffix, [&](Sink& out) {
      writeChromeTrace(data, out, &folded);
      jsonBytes = out.bytesWritten();
    });
  files.emplace_back(kFoldedSuffix, [&](Sink& out) { writeFolded(hostFolded, FoldWeight::HostTime, out); });
  files.emplace_back(".calls.folded", [&](Sink& out) { writeFolded(hostFolded, FoldWeight::Calls, out); });
  if (anyGpu) files.emplace_back(".gpu.folded", [&](Sink& out) { writeFolded(folded, FoldWeight::GpuTime, out); });

  // Files are written unnamed (O_TMPFILE) and named only once complete, so a process killed
  // while writing (or a full disk) leaves no truncated trace behind that would not open: the
  // stream (<stem>.pftrace) holds everything until then. Where the file
  // system has no O_TMPFILE or /proc is missing, files are written in place as before.
  const std::string base = stem0.empty() ? outputStem(data.meta) : stem0;
  std::vector<Pending> pending;
  bool ok = true;
  WriteStatus worst = WriteStatus::Ok;
  auto failure = [&](const std::string& what) {
    result.fileSizeLimit = worst == WriteStatus::FileSizeLimit;
    if (result.fileSizeLimit)
      result.error = "the trace would pass the file-size limit (RLIMIT_FSIZE, " + std::to_string(fileSizeLimit()) +
                     " bytes); nothing written";
    else
      result.error = "write error in " + dir + what;
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    const int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) break;
    pending.push_back({files[i].first, fd});
    ok = writeTo(fd, files[i].second, worst) && ok;
    if (!ok) break;  // the set is not named: writing the rest would be wasted
    if (strcmp(files[i].first, kTraceSuffix) == 0 && jsonLimit != 0 && jsonBytes > jsonLimit) {
      close(fd);  // unnamed: it vanishes
      pending.pop_back();
      files.erase(files.begin() + static_cast<std::ptrdiff_t>(i--));
      result.jsonSkipped = true;
      result.jsonBytes = jsonBytes;
      result.jsonMeasured = true;
    }
  }
  std::string stem;
  bool named = pending.size() == files.size();
  if (!ok) {
    // Nothing incomplete gets a name: the unnamed files vanish as they are closed.
    for (const Pending& p : pending) close(p.fd);
    close(dirfd);
    failure(" (nothing written; a full disk?)");
    return result;
  }
  if (named) {
    // The first two (the trace and the host-time folded file) take the first stem free for both; the other
    // weightings share it (a file in their way is an error, never overwritten).
    named = false;
    for (int attempt = 0; attempt < kStemAttempts && !named; ++attempt) {
      stem = numberedStem(base, attempt);
      if (!nameTmpFile(pending[0].fd, dirfd, stem + pending[0].suffix)) {
        if (errno == EEXIST) continue;
        break;
      }
      if (!nameTmpFile(pending[1].fd, dirfd, stem + pending[1].suffix)) {
        const int err = errno;
        unlinkat(dirfd, (stem + pending[0].suffix).c_str(), 0);
        if (err == EEXIST) continue;
        break;
      }
      named = true;
    }
    if (named) {
      for (std::size_t i = 2; i < pending.size(); ++i) {
        if (nameTmpFile(pending[i].fd, dirfd, stem + pending[i].suffix))
          result.extraPaths.push_back(dir + "/" + stem + pending[i].suffix);
        else
          ok = false;
      }
    }
  }
  for (const Pending& p : pending) ok = (close(p.fd) == 0) && ok;
  if (!named) {
    ok = true;
    worst = WriteStatus::Ok;
    result.extraPaths.clear();
    if (!writeInPlace(dirfd, dir, base, files, stem, result, ok, worst)) {
      result.error = "cannot create a trace file in " + dir + ": " + strerror(errno);
      close(dirfd);
      return result;
    }
  }
  close(dirfd);
  if (!result.jsonSkipped && !result.jsonWithheld) result.tracePath = dir + "/" + stem + kTraceSuffix;
  result.foldedPath = dir + "/" + stem + kFoldedSuffix;
  if (!ok) {
    failure(named ? "" : " (nothing written)");
    if (!named) {  // writeInPlace removed what it had created
      result.tracePath.clear();
      result.foldedPath.clear();
    }
  }
  result.ok = ok;
  return result;
}

}  // namespace cutrace
