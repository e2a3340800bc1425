// `cutrace run`: trace a command without the user spelling LD_PRELOAD and CUTRACE_* by hand.
// Everything cutrace itself says goes to stderr: the command's stdout stays byte-identical.

#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "collector/config.h"
#include "tools/commands.h"
#include "tools/merge_traces.h"
#include "tools/report_model.h"

extern char** environ;

namespace cutrace::tools {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr std::size_t kTopRows = 5;

// Every CUTRACE_* variable of the preload's own table is an option of the same name:
// CUTRACE_STACK_DEPTH is --stack-depth. Values are checked by the preload's own parser, so run
// can neither accept what the preload would refuse nor refuse what it takes. CUTRACE_OUTPUT is
// -o/--output (run reads the directory afterwards); CUTRACE_ENABLE=0 would make run pointless.
bool isOption(const ConfigVariable& v) {
  return std::string_view(v.name) != "CUTRACE_OUTPUT" && std::string_view(v.name) != "CUTRACE_ENABLE";
}

std::string optionOf(const ConfigVariable& v) {
  std::string option = "--";
  for (const char* p = v.name + std::strlen("CUTRACE_"); *p != '\0'; ++p)
    option += *p == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  return option;
}

const ConfigVariable* variableOfOption(std::string_view option) {
  for (std::size_t i = 0; i < configVariableCount(); ++i) {
    const ConfigVariable& v = configVariable(i);
    if (isOption(v) && optionOf(v) == option) return &v;
  }
  return nullptr;
}

bool preloadAccepts(const ConfigVariable& v, const std::string& value) {
  const std::string entry = fmt::format("{}={}", v.name, value);
  const char* env[] = {entry.c_str(), nullptr};
  ConfigError error;
  parseConfig(env, error);
  return !error.failed();
}

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: cutrace run [options] [--] COMMAND [ARGS...]\n"
               "Run COMMAND with the cutrace preload, then say on stderr which files it wrote,\n"
               "what each process recorded and where the time went.\n\n"
               "options:\n"
               "  -o, --output DIR   where the traces go (default $CUTRACE_OUTPUT or ./cutrace-out)\n");
  for (std::size_t i = 0; i < configVariableCount(); ++i) {
    const ConfigVariable& v = configVariable(i);
    if (!isOption(v)) continue;
    std::fprintf(out, "  %-18s %s\n  %-18s V: %s\n", fmt::format("{} V", optionOf(v)).c_str(), v.meaning, "", v.accepted);
  }
  std::fprintf(out,
               "  --libtrace PATH    the preload library (default: found beside this cutrace)\n"
               "  --merge            also merge this run's traces into DIR/merged-<pid>.trace.json\n"
               "  -q, --quiet        no top-5 tables in the summary\n"
               "  -h, --help         this text\n\n"
               "Each option sets the CUTRACE_* variable of the same name; ones already in the\n"
               "environment are kept unless an option overrides them. Existing LD_PRELOAD entries\n"
               "stay, after libtrace.so. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent\n"
               "to cutrace are passed to COMMAND.\n\n"
               "exit status: COMMAND's (128+N when a signal N killed it), 127 COMMAND not found,\n"
               "126 not executable, 2 usage or a bad option value (COMMAND not run).\n");
}

struct RunOptions {
  std::string libtrace;
  std::string output;
  std::vector<std::pair<std::string, std::string>> env;  // variable, value
  bool quiet = false;
  bool merge = false;
  std::vector<char*> command;
  bool help = false;
};

bool parseRunOptions(int argc, char** argv, RunOptions& opts, std::string& error) {
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    // The command starts at the first word that is not an option: `cutrace run prog -x`.
    if (arg.size() < 2 || arg[0] != '-') break;
    std::string_view name = arg;
    std::string value;
    bool inlineValue = false;
    if (const std::size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    const auto flag = [&](bool& target) {
      if (inlineValue) {
        error = fmt::format("option '{}' takes no value", name);
        return false;
      }
      target = true;
      return true;
    };
    if (name == "-h" || name == "--help") {
      if (!flag(opts.help)) return false;
      continue;
    }
    if (name == "-q" || name == "--quiet") {
      if (!flag(opts.quiet)) return false;
      continue;
    }
    if (name == "--merge") {
      if (!flag(opts.merge)) return false;
      continue;
    }
    const ConfigVariable* variable = variableOfOption(name);
    const bool known = variable != nullptr || name == "-o" || name == "--output" || name == "--libtrace";
    if (!known) {
      error = fmt::format("unknown option '{}' (options go before the command; '--' ends them)", name);
      return false;
    }
    if (!inlineValue) {
      if (i + 1 >= argc) {
        error = fmt::format("option '{}' needs a value", name);
        return false;
      }
      value = argv[++i];
    }
    if (variable != nullptr) {
      if (!preloadAccepts(*variable, value)) {
        error = fmt::format("{} '{}': expected {}", name, value, variable->accepted);
        return false;
      }
      std::erase_if(opts.env, [&](const auto& kv) { return kv.first == variable->name; });  // the last one wins
      opts.env.emplace_back(variable->name, value);
    } else if (name == "--libtrace") {
      opts.libtrace = value;
    } else {
      if (value.empty()) {
        error = fmt::format("option '{}' needs a non-empty directory", name);
        return false;
      }
      opts.output = value;
    }
  }
  for (; i < argc; ++i) opts.command.push_back(argv[i]);
  return true;
}

bool isFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

std::string canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : absolute(path);
}

// --libtrace, else where a build tree or an install puts it relative to this executable.
bool findLibtrace(const std::string& given, std::string& out, std::string& error) {
  if (!given.empty()) {
    if (!isFile(given)) {
      error = fmt::format("--libtrace {}: no such file", given);
      return false;
    }
    out = canonical(given);
    return true;
  }
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    error = "cannot find this executable (/proc/self/exe) to locate libtrace.so; pass --libtrace PATH";
    return false;
  }
  std::string dir(self, static_cast<std::size_t>(n));
  dir.resize(dir.rfind('/'));
  static constexpr const char* kCandidates[] = {"../preload/libtrace.so", "../lib/x86_64-linux-gnu/libtrace.so", "../lib/libtrace.so",
                                                "../lib64/libtrace.so"};
  std::string tried;
  for (const char* c : kCandidates) {
    const std::string path = dir + "/" + c;
    if (isFile(path)) {
      out = canonical(path);
      return true;
    }
    tried += "\n  " + path;
  }
  error = fmt::format("libtrace.so not found beside {}; tried:{}\npass --libtrace PATH", dir, tried);
  return false;
}

// Ours first, the others after in their order; an entry that already names our library is
// dropped rather than preloaded twice.
std::string preloadValue(const std::string& libtrace, const char* existing) {
  if (existing == nullptr || *existing == '\0') return libtrace;
  std::vector<std::string> kept;
  bool hadOurs = false;
  std::string_view rest = existing;
  while (!rest.empty()) {
    const std::size_t sep = rest.find_first_of(" :");
    const std::string entry(rest.substr(0, sep));
    rest.remove_prefix(sep == std::string_view::npos ? rest.size() : sep + 1);
    if (entry.empty()) continue;
    if (entry == libtrace || canonical(entry) == libtrace) {
      hadOurs = true;
    } else {
      kept.push_back(entry);
    }
  }
  if (!hadOurs) return libtrace + ":" + existing;
  std::string value = libtrace;
  for (const std::string& e : kept) value += ":" + e;
  return value;
}

bool makeDirectories(const std::string& path, std::string& error) {
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    const std::string partial = path.substr(0, i);
    if (mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) {
      error = fmt::format("cannot create {}: {}", partial, std::strerror(errno));
      return false;
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = fmt::format("{} is not a directory", path);
    return false;
  }
  return true;
}

std::set<std::string> listFiles(const std::string& dir) {
  std::set<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != ".." && isFile(dir + "/" + name)) names.insert(name);
    }
    closedir(d);
  }
  return names;
}

bool endsWith(std::string_view s, std::string_view suffix) { return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix; }

std::vector<std::string> buildEnvironment(const RunOptions& opts, const std::string& libtrace, const std::string& outputDir) {
  std::vector<std::pair<std::string, std::string>> set = opts.env;
  set.emplace_back("CUTRACE_OUTPUT", outputDir);
  set.emplace_back("LD_PRELOAD", preloadValue(libtrace, std::getenv("LD_PRELOAD")));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const std::string_view name = entry.substr(0, entry.find('='));
    if (std::none_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; })) env.emplace_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

struct Outcome {
  int exitStatus = 0;
  int signal = 0;  // the signal that killed the command, or 0
};

// Spawns the command with the forwarded signals blocked here and waited for synchronously, so
// no signal can arrive between the spawn and knowing the child's pid.
int spawnAndWait(const RunOptions& opts, std::vector<std::string>& env, pid_t& child, Outcome& outcome) {
  sigset_t waited, original;
  sigemptyset(&waited);
  for (int s : kForwarded) sigaddset(&waited, s);
  sigaddset(&waited, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &waited, &original);

  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv = opts.command;
  argv.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &original);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  const int rc = posix_spawnp(&child, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    pthread_sigmask(SIG_SETMASK, &original, nullptr);
    if (rc == ENOENT) {
      spdlog::error("run: {}: command not found", argv[0]);
      return 127;
    }
    spdlog::error("run: {}: cannot execute: {}", argv[0], std::strerror(rc));
    return 126;
  }
  for (;;) {
    siginfo_t info{};
    const int s = sigwaitinfo(&waited, &info);
    if (s < 0) {
      if (errno == EINTR) continue;
      spdlog::error("run: waiting for the command: {}", std::strerror(errno));
      return 1;
    }
    if (s == SIGCHLD) {
      int status = 0;
      const pid_t r = waitpid(child, &status, WNOHANG);
      if (r != child) continue;
      if (WIFSIGNALED(status)) {
        outcome.signal = WTERMSIG(status);
        outcome.exitStatus = 128 + outcome.signal;
      } else {
        outcome.exitStatus = WEXITSTATUS(status);
      }
      // The forwarded signals stay blocked: a second Ctrl-C must not cut the summary short.
      return -1;
    }
    // A terminal's Ctrl-C or hangup (si_code SI_KERNEL) already reached the command, which
    // shares our process group; passing it on would deliver it twice.
    if (info.si_code == SI_KERNEL) continue;
    kill(child, s);
  }
}

void printSummary(const std::string& dir, const std::vector<std::string>& created, const std::vector<std::string>& traces, bool quiet) {
  if (created.empty()) {
    std::fprintf(stderr,
                 "cutrace: no files were written to %s (the command made no CUDA or NVTX calls, or tracing was off: see "
                 "the lines above)\n",
                 dir.c_str());
    return;
  }
  std::string out = fmt::format("cutrace: {} new file{} in {}:\n", created.size(), created.size() == 1 ? "" : "s", dir);
  for (const std::string& name : created) out += "  " + dir + "/" + name + "\n";
  std::vector<std::vector<std::string>> processRows;
  std::vector<std::string> readable;
  for (const std::string& name : traces) {
    TraceInfo info;
    std::string error;
    if (!readTraceInfo(dir + "/" + name, info, error)) {
      out += fmt::format("cutrace: cannot read {}\n", error);
      continue;
    }
    readable.push_back(dir + "/" + name);
    processRows.push_back({info.exe, fmt::format("{}", info.pid), info.rank >= 0 ? fmt::format("{}", info.rank) : "-",
                           fmt::format("{}", info.events), fmt::format("{}", info.dropped), name});
  }
  if (!processRows.empty()) {
    out += "cutrace: processes:\n";
    out += renderTable({"exe", "pid", "rank", "events", "dropped", "trace"}, processRows);
  }
  Report report;
  std::string error;
  if (!quiet && !readable.empty()) {
    if (!readTraces(readable, report, error)) {
      out += fmt::format("cutrace: no summary: {}\n", error);
    } else {
      std::vector<Row>& api = report.sections[static_cast<std::size_t>(Section::Api)];
      sortRows(api, SortKey::Total, report.deviceKernels);
      std::vector<std::vector<std::string>> rows;
      for (std::size_t i = 0; i < api.size() && i < kTopRows; ++i) {
        const Row& r = api[i];
        rows.push_back({r.name, fmt::format("{}", r.calls), formatDuration(r.totalNs), formatDuration(r.avgNs()),
                        r.percent >= 0 ? fmt::format("{:.1f}", r.percent) : "-"});
      }
      if (!rows.empty()) {
        out += fmt::format("cutrace: top CUDA API calls by total time (of {}):\n", api.size());
        out += renderTable({"api", "calls", "total", "avg", "% wall"}, rows);
      }
      std::vector<Row>& kernels = report.sections[static_cast<std::size_t>(Section::Kernel)];
      sortRows(kernels, SortKey::Total, report.deviceKernels);
      rows.clear();
      for (std::size_t i = 0; i < kernels.size() && i < kTopRows; ++i) {
        const Row& r = kernels[i];
        if (report.deviceKernels) {
          rows.push_back({r.name, fmt::format("{}", r.calls), formatDuration(r.totalNs), formatDuration(r.avgNs()),
                          r.percent >= 0 ? fmt::format("{:.1f}", r.percent) : "-"});
        } else {
          rows.push_back({r.name, fmt::format("{}", r.launches), formatDuration(r.hostNs)});
        }
      }
      if (!rows.empty() && report.deviceKernels) {
        out += fmt::format("cutrace: top kernels by GPU time (of {}):\n", kernels.size());
        out += renderTable({"kernel", "calls", "total", "avg", "% gpu"}, rows);
      } else if (!rows.empty()) {
        out += fmt::format("cutrace: top kernels by host launch time (of {}; no device events):\n", kernels.size());
        out += renderTable({"kernel", "launches", "launch total"}, rows);
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stderr);
}

// A name no earlier run used: merges are never overwritten, like the traces themselves.
std::string mergedName(const std::string& dir, pid_t child) {
  std::string name = fmt::format("merged-{}.trace.json", child);
  for (int i = 1; isFile(dir + "/" + name) && i < 1000; ++i) name = fmt::format("merged-{}.{}.trace.json", child, i);
  return name;
}

}  // namespace

int runCommand(int argc, char** argv) {
  RunOptions opts;
  std::string error;
  if (!parseRunOptions(argc, argv, opts, error)) {
    spdlog::error("run: {}", error);
    return kExitUsage;
  }
  if (opts.help) {
    usage(stdout);
    return kExitOk;
  }
  if (opts.command.empty()) {
    spdlog::error("run: no command given");
    usage(stderr);
    return kExitUsage;
  }
  std::string libtrace;
  if (!findLibtrace(opts.libtrace, libtrace, error)) {
    spdlog::error("run: {}", error);
    return kExitUsage;
  }
  if (opts.output.empty()) {
    const char* fromEnv = std::getenv("CUTRACE_OUTPUT");
    opts.output = fromEnv != nullptr && *fromEnv != '\0' ? fromEnv : "cutrace-out";
  }
  const std::string dir = absolute(opts.output);
  std::vector<std::string> env = buildEnvironment(opts, libtrace, dir);

  // The preload turns tracing off on any unknown CUTRACE_* name or bad value, with one line
  // the user may miss; the same parser, run here on the exact environment, refuses up front.
  std::vector<const char*> envp;
  for (const std::string& e : env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  ConfigError configError;
  parseConfig(envp.data(), configError);
  if (configError.failed()) {
    std::string_view message = configError.message;
    if (message.starts_with("cutrace: ")) message.remove_prefix(9);
    spdlog::error("run: {} (the preload would record nothing; command not run)", message);
    return kExitUsage;
  }
  if (!makeDirectories(dir, error)) {
    spdlog::error("run: output directory: {}", error);
    return kExitOutput;
  }

  const std::set<std::string> before = listFiles(dir);
  pid_t child = 0;
  Outcome outcome;
  if (const int failed = spawnAndWait(opts, env, child, outcome); failed >= 0) return failed;

  // A process killed before its end wrote no Chrome trace; its stream holds what it recorded.
  const std::set<std::string> after = listFiles(dir);
  for (const std::string& name : after) {
    if (before.count(name) || !endsWith(name, ".pftrace")) continue;
    const std::string stem = name.substr(0, name.size() - 8);
    if (!after.count(stem + ".trace.json"))
      std::fprintf(stderr,
                   "cutrace: %s ended before writing its Chrome trace; its events are in %s/%s (opens in Perfetto UI; "
                   "'cutrace export' writes the Chrome trace and folded stacks from it)\n",
                   stem.c_str(), dir.c_str(), name.c_str());
  }
  std::vector<std::string> traces;
  for (const std::string& name : listFiles(dir)) {
    if (!before.count(name) && endsWith(name, ".trace.json") && !name.starts_with("merged-")) traces.push_back(name);
  }
  if (opts.merge && !traces.empty()) {
    std::vector<std::string> paths;
    for (const std::string& t : traces) paths.push_back(dir + "/" + t);
    const std::string merged = dir + "/" + mergedName(dir, child);
    MergeSummary summary;
    if (mergeTraces(paths, merged, summary, error) != kExitOk) {
      spdlog::error("run: --merge: {}", error);
    } else {
      for (const std::string& note : summary.notes) spdlog::warn("run: --merge: {}", note);
    }
  }
  std::vector<std::string> created;
  for (const std::string& name : listFiles(dir)) {
    if (!before.count(name)) created.push_back(name);
  }
  if (outcome.signal != 0) std::fprintf(stderr, "cutrace: the command was killed by signal %d (%s)\n", outcome.signal, strsignal(outcome.signal));
  printSummary(dir, created, traces, opts.quiet);
  return outcome.exitStatus;
}

}  // namespace cutrace::tools
