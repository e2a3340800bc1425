#pragma once
// How every cutrace command writes a file it was asked to write (-o PATH).
//
// A new name or an existing regular file (or symlink) is written to a temporary file beside it
// and renamed into place once complete: readers never see half a file, and a failed run leaves
// the old file as it was. Anything else at the path — a device such as /dev/null, a FIFO, a
// terminal — is written in place and never replaced (renaming over /dev/null would turn it into
// a regular file for the whole machine).

#include <string>
#include <string_view>

namespace cutrace::tools {

struct OutputTarget {
  std::string path;  // the name asked for
  std::string tmp;   // the temporary beside it; empty when written in place
  int fd = -1;       // to write to; the caller closes it before commitOutput()
};

// Opens `path` for writing as above. False with a message naming the path.
bool openOutput(const std::string& path, OutputTarget& target, std::string& error);
// After the caller wrote and closed target.fd: renames the temporary into place.
bool commitOutput(OutputTarget& target, std::string& error);
// Removes the temporary (a failed run); nothing to do for a file written in place.
void abandonOutput(OutputTarget& target);

// The whole `text` to `path` ("" = standard output). False with a message.
bool writeOutputText(const std::string& path, std::string_view text, std::string& error);

}  // namespace cutrace::tools
