#pragma once
// The journal: what a traced process has collected, appended to <dir>/<stem>.journal by the
// drain thread on every pass, so a process that is killed (SIGKILL, a crash, an OOM kill) still
// leaves everything older than the drain interval on disk. At a normal end the Chrome trace is
// written and the journal removed; a journal left behind is turned into the usual files by
// `cutrace recover` (and by `cutrace run` automatically).
//
// Format (host byte order; read back on the machine that wrote it): the 8 bytes "CUTJRNL1",
// then chunks [u32 type][u32 payload bytes][payload]. A chunk cut short by the end of the
// process is ignored, so a reader sees the state of some drain pass. Chunk types:
//   1 process: pid, rank, clock origin and realtime offset, clock source, exe, host, command
//     line, hook table (written once)
//   2 strings appended to the string pool since the last pass
//   3 a thread: index, tid, pthread id, name, dropped, lost ends (written when it changes)
//   4 events of one thread appended since the last pass (raw Event records)
//   5 stacks resolved since the last pass (frame string ids)
//   6 the clock anchors (start and latest) that map ticks to CLOCK_MONOTONIC
//   7 NVTX category names
//
// One writer per process; it runs under the collector's drain mutex.

#include <cstdint>
#include <string>
#include <vector>

#include "collector/clock.h"
#include "collector/own_file.h"
#include "collector/trace_data.h"

namespace cutrace {

class JournalWriter {
 public:
  JournalWriter() = default;
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Appends what `data` gained since the last call. Creates the file on the first call (in
  // `directory`, named after data.meta). False after an error (then it stays off): the file
  // was removed or replaced, a write failed or would pass the file-size limit (OwnFile warns).
  bool append(const TraceData& data, const char* directory, ClockAnchor start, ClockAnchor last, bool ticksAreNs);
  // Removes the file (the final trace was written).
  void discard();
  // In a forked child: forgets the parent's file without touching it.
  void forget();
  const std::string& path() const { return file_.path(); }
  // The journal stopped (an error, the file-size limit, the file removed or replaced): it holds
  // the passes before that only.
  bool failed() const { return failed_; }

 private:
  OwnFile file_;
  bool failed_ = false;
  bool wroteProcess_ = false;
  std::size_t strings_ = 0;
  std::size_t stacks_ = 0;
  std::size_t categories_ = 0;
  struct ThreadMark {
    std::size_t events = 0;
    std::string name;
    uint64_t dropped = 0;
    uint64_t lostEnds = 0;
    uint64_t seqEnd = 0;
    bool written = false;
  };
  std::vector<ThreadMark> threads_;
  std::string buffer_;
};

// Reads a journal into `out` (threads, events, strings, stacks, metadata). False with a message
// when the file is not a journal; a truncated last chunk is not an error.
bool readJournal(const std::string& path, TraceData& out, std::string& error);

}  // namespace cutrace
