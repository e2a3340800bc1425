#pragma once
// Writes one process's files at the end of a run: <dir>/<exe>-<pid>.trace.json, .folded (host
// time), .calls.folded and, when CUPTI linked device work to launches, .gpu.folded.
// Files are created with O_EXCL|O_NOFOLLOW: an existing file or a symlink at the path is never
// written through; the name gets a .1, .2 ... suffix instead. A file is named only once it is
// complete: a write error or the file-size limit (RLIMIT_FSIZE, never passed: see
// collector/own_file.h) leaves no file under any of these names.

#include <string>
#include <vector>

#include "collector/config.h"
#include "collector/trace_data.h"
#include "exporters/folded.h"

namespace cutrace {

struct OutputResult {
  bool ok = false;
  std::string tracePath;
  std::string foldedPath;              // host time
  std::vector<std::string> extraPaths;  // the calls and GPU-time weightings
  std::string error;
  bool fileSizeLimit = false;  // the error: a file would have passed RLIMIT_FSIZE
  bool jsonSkipped = false;    // the Chrome trace would pass the JSON limit: not written, no tracePath
  bool jsonWithheld = false;   // writeOutputFiles' withoutJson: not written, no tracePath
  // Where skipped: its size, as written and discarded (jsonMeasured), or as estimated before
  // writing (the run's estimate, at least kMinJsonBytesPerEvent an event).
  uint64_t jsonBytes = 0;
  bool jsonMeasured = false;
};

// The smallest a Chrome trace event gets (an NVTX range, ~110 bytes): a run with more events than
// the JSON limit holds at this size skips the trace before writing any of it.
inline constexpr uint64_t kMinJsonBytesPerEvent = 100;

// Whether a Chrome trace of `events` host events, estimated at `estimate` bytes (0: none), is
// known to pass `jsonLimit` (0: no limit) before anything is written.
inline bool jsonKnownTooLarge(uint64_t events, uint64_t estimate, uint64_t jsonLimit) {
  return jsonLimit != 0 && (events > jsonLimit / kMinJsonBytesPerEvent || estimate > jsonLimit);
}

// `stem`: the stem the process's stream file took (its files share it); empty: outputStem().
// `jsonLimit`: the Chrome trace is not written when it would be larger (0: no limit); also not
// when `jsonEstimate` (its size as estimated while the run went; 0: none) passes it.
// `runFolded`: the run's folded stacks built as it went (FoldBuilder) for the host-time and
// calls files; none: folded from the events of `data`. `withoutJson`: no Chrome trace whatever
// its size (the events could not be read back), only the folded files of `runFolded`.
OutputResult writeOutputFiles(const TraceData& data, const char* directory, const FoldOptions& fold = {},
                              const std::string& stem = {}, uint64_t jsonLimit = 0,
                              const FoldedStacks* runFolded = nullptr, uint64_t jsonEstimate = 0,
                              bool withoutJson = false);


// "<exe>" reduced to [A-Za-z0-9._-] so it is always a safe file name.
std::string safeFileStem(const std::string& exe);
// "<exe>-<pid>[-rank<R>]": the stem of a process's files.
std::string outputStem(const TraceMeta& meta);
// Where a stem is taken, the next candidates are "<stem>.1", "<stem>.2", ...: candidate
// `attempt` for attempt 0 to kStemAttempts - 1 (0 is the stem itself).
inline constexpr int kStemAttempts = 100;
std::string numberedStem(const std::string& stem, int attempt);
// mkdir -p; false with a message.
bool makeDirectories(const std::string& path, std::string& error);
// openat(O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0644).
int createExclusive(int dirfd, const std::string& name);

}  // namespace cutrace
