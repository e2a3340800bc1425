/* Fault injection for interrupted_write.sh: preloaded ahead of libtrace.so, this write(2)
 * kills the process with SIGKILL at the KILL_ON_WRITE_AT-th write (default 2) into the directory
 * KILL_ON_WRITE_DIR, before that write happens. Files cutrace writes there at exit are then cut
 * off part way, as by an OOM kill or a job scheduler. Writes to the stream (*.pftrace), which
 * the drain thread appends while the program runs, are not counted. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  static int count;
  if (real == NULL) {
    void* p = dlsym(RTLD_NEXT, "write");
    memcpy(&real, &p, sizeof(p)); /* object to function pointer, as POSIX allows */
  }
  const char* dir = getenv("KILL_ON_WRITE_DIR");
  if (dir != NULL && dir[0] != '\0') {
    char link[64], target[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    const ssize_t len = readlink(link, target, sizeof(target) - 1);
    const size_t dirLen = strlen(dir);
    if (len > 0) {
      target[len] = '\0';
      const char* at = getenv("KILL_ON_WRITE_AT");
      const int stream = len > 8 && strcmp(target + len - 8, ".pftrace") == 0;
      if (!stream && strncmp(target, dir, dirLen) == 0 && target[dirLen] == '/' &&
          __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) == (at != NULL ? atoi(at) : 2))
        kill(getpid(), SIGKILL);
    }
  }
  return real(fd, buf, n);
}
