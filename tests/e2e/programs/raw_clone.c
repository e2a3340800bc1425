/* A child made by the raw clone system call with fork semantics (no CLONE_VM): glibc's fork
 * handlers do not run in it, so the preload's fork handling never sees it. It must still be
 * able to record NVTX and end with exit() (which runs the preload's exit handler), without
 * hanging and without writing or disturbing the parent's trace. The wait is bounded: a child
 * that has not exited after 10 s is killed and reported. */
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void) {
  nvtxRangePushA("parent before clone");
  nvtxMarkA("parent mark");
  fflush(stdout);
  const long child = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
  if (child < 0) {
    perror("clone");
    return 2;
  }
  if (child == 0) {
    nvtxRangePushA("child work");
    nvtxMarkA("child mark");
    nvtxRangePop();
    exit(3);
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1000 && done == 0; ++i) {
    done = waitpid((pid_t)child, &status, WNOHANG);
    if (done == 0) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  if (done == 0) {
    kill((pid_t)child, SIGKILL);
    waitpid((pid_t)child, &status, 0);
    printf("raw_clone: child did not exit within 10 s\n");
    return 1;
  }
  nvtxRangePop();
  nvtxRangePushA("parent after clone");
  nvtxRangePop();
  printf("raw_clone: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
