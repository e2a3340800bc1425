#pragma once
// Recovery of journals left by processes that ended before writing their trace (shared by
// `cutrace recover` and `cutrace run`).

#include <string>
#include <vector>

namespace cutrace::tools {

// The *.journal files of a directory, sorted.
std::vector<std::string> journalsIn(const std::string& dir);
// Writes the trace of one journal (into outputDir, or next to it when empty) and removes the
// journal unless `keep`. Returns an exit code of commands.h; `written` is the trace's path.
int recoverJournal(const std::string& journal, const std::string& outputDir, bool keep, std::string& written);

}  // namespace cutrace::tools
