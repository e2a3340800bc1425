#pragma once
// Merging the Chrome traces of several processes and ranks into one timeline: shared by
// `cutrace merge` and `cutrace run --merge`.

#include <cstdint>
#include <string>
#include <vector>

#include "collector/config.h"

namespace cutrace::tools {

struct MergeSummary {
  uint64_t events = 0;
  std::vector<std::string> notes;  // what was changed beyond timestamps (remapped pids)
};

// What a trace's metadata says about its process (read by `cutrace run` for its summary).
struct TraceInfo {
  std::string exe;
  std::string host;
  int64_t pid = 0;
  int64_t rank = -1;  // from the metadata, else the file name's -rank<R>; -1 without
  uint64_t events = 0;
  uint64_t dropped = 0;
};
// False with a message naming the file when it is not a readable cutrace trace.
bool readTraceInfo(const std::string& path, TraceInfo& info, std::string& error);

// Writes the merge of `inputs` to `output` (through a temp file renamed into place, so a
// failure leaves nothing behind). Returns an exit code of commands.h: kExitOk, kExitBadInput
// with `error` naming the file, or kExitOutput.
// `maxJson`: a .pftrace input is merged as its Chrome trace up to this size (loadTraceAsJson).
int mergeTraces(const std::vector<std::string>& inputs, const std::string& output, MergeSummary& summary, std::string& error,
                uint64_t maxJson = kDefaultJsonLimit);

}  // namespace cutrace::tools
