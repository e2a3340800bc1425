// `cutrace recover`: turns the journal a process left behind (it was killed, or crashed, before
// it could write its trace) into the usual files: <stem>.trace.json, .folded, .calls.folded.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "exporters/journal.h"
#include "exporters/output_files.h"
#include "tools/commands.h"
#include "tools/input_file.h"
#include "tools/recover.h"

namespace cutrace::tools {

namespace {

constexpr const char* kUsage = R"(usage: cutrace recover [-o DIR] [--keep] JOURNAL|DIR...

A traced process writes <exe>-<pid>.journal while it runs and removes it once its trace is
written. A journal left behind means the process was killed or crashed first: this command
writes its trace (everything up to the last drain pass, host side; device records are not
journaled) and removes the journal. A directory stands for every *.journal in it.

options:
  -o DIR     write the files there (default: next to the journal)
  --keep     keep the journal
exit: 0 ok, 2 usage, 3 a journal could not be read, 4 a trace could not be written.
)";

bool isDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::vector<std::string> journalsIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".journal") == 0) out.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

int recoverJournal(const std::string& journal, const std::string& outputDir, bool keep, std::string& written) {
  TraceData data;
  std::string error;
  // The journal reader holds the whole file: a stream (/dev/zero, a pipe) or a file past the
  // cap is refused before it is read.
  if (!checkRegularFile(journal, wholeInputCap(), error) || !readJournal(journal, data, error)) {
    spdlog::error("{}", error);
    return kExitBadInput;
  }
  std::string dir = outputDir;
  if (dir.empty()) {
    const std::size_t slash = journal.rfind('/');
    dir = slash == std::string::npos ? "." : journal.substr(0, slash);
  }
  data.meta.version = CUTRACE_VERSION;
  const OutputResult r = writeOutputFiles(data, dir.c_str());
  if (!r.ok) {
    spdlog::error("{}: {}", journal, r.error);
    return kExitOutput;
  }
  if (!keep) unlink(journal.c_str());
  written = r.tracePath;
  return kExitOk;
}

int recoverCommand(int argc, char** argv) {
  std::string outputDir;
  bool keep = false;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (a == "-o" && i + 1 < argc) {
      outputDir = argv[++i];
    } else if (a == "--keep") {
      keep = true;
    } else if (!a.empty() && a[0] == '-') {
      spdlog::error("recover: unknown option '{}'", a);
      std::fputs(kUsage, stderr);
      return kExitUsage;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  int status = kExitOk;
  std::size_t done = 0;
  for (const std::string& input : inputs) {
    const std::vector<std::string> journals = isDirectory(input) ? journalsIn(input) : std::vector<std::string>{input};
    for (const std::string& j : journals) {
      std::string written;
      const int rc = recoverJournal(j, outputDir, keep, written);
      if (rc != kExitOk) {
        status = status == kExitOk ? rc : status;
        continue;
      }
      ++done;
      std::fprintf(stderr, "cutrace: recovered %s -> %s\n", j.c_str(), written.c_str());
    }
  }
  if (done == 0 && status == kExitOk) std::fprintf(stderr, "cutrace: no journal to recover\n");
  return status;
}

}  // namespace cutrace::tools
