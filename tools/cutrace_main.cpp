// The `cutrace` command: one table of subcommands drives dispatch and the help text.

#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "tools/commands.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"run", cutrace::tools::runCommand, "trace a command: cutrace run [options] -- cmd args..."},
    {"report", cutrace::tools::reportCommand, "tables by CUDA API, kernel and NVTX range from traces"},
    {"diff", cutrace::tools::diffCommand, "compare two traces or reports; exit 1 past a threshold"},
    {"merge", cutrace::tools::mergeCommand, "merge traces of several processes and ranks into one"},
    {"flame", cutrace::tools::flameCommand, "render folded stacks as an SVG flamegraph"},
    {"export", cutrace::tools::exportCommand, "Chrome trace and folded stacks from a .pftrace (a killed process's too)"},
};

void usage(std::FILE* out) {
  std::fprintf(out, "usage: cutrace <command> [options] ...\n\ncommands:\n");
  for (const Subcommand& c : kSubcommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'cutrace <command> --help' describes each command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Diagnostics go to stderr: stdout carries what subcommands produce (tables, SVG).
  spdlog::set_default_logger(spdlog::stderr_logger_st("cutrace"));
  spdlog::set_pattern("cutrace: %l: %v");
  if (argc < 2) {
    usage(stderr);
    return cutrace::tools::kExitUsage;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return cutrace::tools::kExitOk;
  }
  if (name == "--version") {
    std::printf("cutrace %s\n", CUTRACE_VERSION);
    return cutrace::tools::kExitOk;
  }
  for (const Subcommand& c : kSubcommands) {
    if (name != c.name) continue;
    // Memory running out (an input past what the readers' limits foresee, or a small ulimit)
    // is one message and the bad-input status, as every other input the tools cannot take.
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::bad_alloc&) {
      std::fputs("cutrace: error: out of memory\n", stderr);
      return cutrace::tools::kExitBadInput;
    }
  }
  spdlog::error("unknown command '{}'", name);
  usage(stderr);
  return cutrace::tools::kExitUsage;
}
