#pragma once
// The subcommands of the `cutrace` command. Each takes the arguments after its own name
// (argv[0] is the subcommand name) and returns the process exit status:
// 0 success, 1 a check failed (diff found a regression), 2 usage error, 3 unreadable or
// malformed input, 4 an output could not be written.

namespace cutrace::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBadInput = 3;
inline constexpr int kExitOutput = 4;

int runCommand(int argc, char** argv);
int mergeCommand(int argc, char** argv);
int flameCommand(int argc, char** argv);
int reportCommand(int argc, char** argv);
int diffCommand(int argc, char** argv);
int exportCommand(int argc, char** argv);

}  // namespace cutrace::tools
