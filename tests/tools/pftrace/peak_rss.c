// peak_rss FILE COMMAND ARGS...: runs COMMAND and writes its peak resident set size (KiB,
// getrusage's ru_maxrss) to FILE; exits with its status. A process forked from a large one (a
// Python test) would count its parent's pages in ru_maxrss: this one is small.
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fputs("usage: peak_rss FILE COMMAND ARGS...\n", stderr);
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  if (wait4(pid, &status, 0, &usage) != pid) return 2;
  FILE* f = fopen(argv[1], "w");
  if (f == NULL || fprintf(f, "%ld\n", usage.ru_maxrss) < 0 || fclose(f) != 0) return 2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
