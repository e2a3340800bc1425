/* fork while another thread is inside dlopen with the loader's state "being changed" (held
 * there by an audit module, see stall_audit.c), before the process made any CUDA call: the
 * child makes the process's first driver call (the tracer finds the driver, and would start
 * CUPTI), looks a driver function up with dlsym(RTLD_NEXT) (which the tracer answers), then ends
 * with exit() (the tracer's last pass names the stacks' frames). No dlopen can be made in such a
 * child (ld.so's consistency assertion ends it with 127), and a link map is no dlsym handle for
 * an object loaded at start-up (glibc crashes on it).
 *   fork_during_dlopen AUDIT PLUGIN   (re-executes itself with LD_AUDIT=AUDIT) */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char* plugin;

static void* load(void* arg) {
  (void)arg;
  if (dlopen(plugin, RTLD_NOW) == NULL) fprintf(stderr, "fork_during_dlopen: %s\n", dlerror());
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  if (getenv("FORK_DURING_DLOPEN_AUDITED") == NULL) {
    setenv("LD_AUDIT", argv[1], 1);
    setenv("FORK_DURING_DLOPEN_AUDITED", "1", 1);
    execv("/proc/self/exe", argv);
    return 2;
  }
  unsetenv("LD_AUDIT");  /* not for the child's own children, if any */
  plugin = argv[2];
  int fds[2];
  if (pipe(fds) != 0 || dup2(fds[1], 100) != 100) return 2;
  alarm(30);
  pthread_t loader;
  if (pthread_create(&loader, NULL, load, NULL) != 0) return 2;
  char c;
  if (read(fds[0], &c, 1) != 1) return 2;  /* the plugin is being added: fork now */
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    const CUresult rc = cuCtxSynchronize();
    CUresult (*init)(unsigned) = NULL;
    void* found = dlsym(RTLD_NEXT, "cuInit");
    memcpy(&init, &found, sizeof init); /* (ISO C has no cast from void* to a function pointer) */
    printf("child: cuCtxSynchronize %d, cuInit through dlsym(RTLD_NEXT) %d\n", (int)rc,
           init != NULL ? (int)init(0) : -1);
    exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return 2;
  pthread_join(loader, NULL);
  if (WIFEXITED(status)) printf("child exited %d\n", WEXITSTATUS(status));
  else printf("child killed by signal %d\n", WTERMSIG(status));
  cuCtxSynchronize();
  return 0;
}
