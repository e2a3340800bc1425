// `cutrace merge`: the traces of several processes and ranks on one timeline.

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "tools/commands.h"
#include "tools/merge_traces.h"
#include "tools/report_model.h"

namespace cutrace::tools {
namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: cutrace merge -o OUT.trace.json INPUT...\n"
               "Merge the Chrome traces of several processes or ranks into one file, aligned on\n"
               "wall-clock time from each trace's clock metadata. An INPUT that is a directory\n"
               "stands for its *.trace.json files (earlier merges excluded).\n\n"
               "Each process is named \"exe rank R @host\" (viewers show the pid beside it). A pid\n"
               "seen twice (two hosts) is given a free number, listed in the output's\n"
               "metadata.pid_remaps, and the name says \"(real pid P)\".\n"
               "INPUT '-' reads standard input; pipes such as <(zcat t.json.gz) are read as streams.\n"
               "An INPUT may be a stream (<stem>.pftrace, told apart from JSON by content): it is\n"
               "merged as the Chrome trace its process writes (rebuilt in memory, one input at a\n"
               "time), so a killed process's stream merges too, up to --max-json: a stream whose\n"
               "Chrome trace is larger is refused (merge the .trace.json of a part of it, made by\n"
               "`cutrace export --from/--to` or `--steps`). The output is Chrome JSON.\n\n"
               "options:\n"
               "  -o, --output FILE  where the merged trace goes (required)\n"
               "  --max-json SIZE    the largest Chrome trace a stream is merged as (K/M/G; default\n"
               "                     1G, CUTRACE_JSON_LIMIT's default, about what Perfetto UI opens)\n"
               "  -h, --help         this text\n\n"
               "exit status: 0 written, 2 usage, 3 an input is unreadable or not a cutrace trace\n"
               "(nothing written), 4 the output could not be written.\n");
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A directory's traces, sorted so the merge does not depend on readdir order.
bool expandDirectory(const std::string& dir, std::vector<std::string>& out, std::string& error) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    error = dir + ": cannot read the directory";
    return false;
  }
  std::vector<std::string> found;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (endsWith(name, ".trace.json") && name.rfind("merged-", 0) != 0) found.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

}  // namespace

int mergeCommand(int argc, char** argv) {
  Options opts;
  std::string error;
  if (!parseOptions(argc, argv, {"-o", "--output", "--max-json"}, opts, error)) {
    spdlog::error("merge: {}", error);
    usage(stderr);
    return kExitUsage;
  }
  if (opts.help) {
    usage(stdout);
    return kExitOk;
  }
  std::string output;
  uint64_t maxJson = kDefaultJsonLimit;
  for (const auto& [name, value] : opts.values) {
    if (name != "--max-json") {
      output = value;
    } else if (!parseSize(value.c_str(), maxJson) || maxJson == 0) {
      spdlog::error("merge: --max-json wants a size such as 512M or 2G, not '{}'", value);
      return kExitUsage;
    }
  }
  if (output.empty()) {
    spdlog::error("merge: -o OUT is required");
    usage(stderr);
    return kExitUsage;
  }
  if (opts.positional.empty()) {
    spdlog::error("merge: no input traces");
    usage(stderr);
    return kExitUsage;
  }
  std::vector<std::string> inputs;
  for (const std::string& p : opts.positional) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (!expandDirectory(p, inputs, error)) {
        spdlog::error("merge: {}", error);
        return kExitBadInput;
      }
    } else {
      inputs.push_back(p);
    }
  }
  if (inputs.empty()) {
    spdlog::error("merge: no *.trace.json files in the given directories");
    return kExitBadInput;
  }
  MergeSummary summary;
  const int status = mergeTraces(inputs, output, summary, error, maxJson);
  if (status != kExitOk) {
    spdlog::error("merge: {}", error);
    return status;
  }
  for (const std::string& note : summary.notes) spdlog::warn("merge: {}", note);
  spdlog::info("merge: wrote {}: {} processes, {} events", output, inputs.size(), summary.events);
  return kExitOk;
}

}  // namespace cutrace::tools
