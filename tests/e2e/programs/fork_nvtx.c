/* fork: the child gets fresh rings and files of its own; the parent's events are never copied
 * into the child's trace, and a range the parent opened before the fork stays the parent's. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  nvtxRangePushA("parent before fork");
  nvtxMarkA("parent mark");
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    nvtxRangePushA("child work");
    nvtxMarkA("child mark");
    nvtxRangePop();
    exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  nvtxRangePop();
  nvtxRangePushA("parent after fork");
  nvtxRangePop();
  printf("fork_nvtx: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
