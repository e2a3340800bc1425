/* Fault injection for out-of-memory tests (limited_run.sh --preload): preloaded ahead of
 * libtrace.so, this malloc fails (NULL, ENOMEM) where FAIL_ALLOC says:
 *   thread:NAME   every allocation on a thread named NAME (prctl), e.g. cutrace-drain
 *   exit:BYTES    allocations of at least BYTES once the program has called exit()
 * operator new and the C++ containers allocate through malloc, so they see the same failures. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

extern void* __libc_malloc(size_t size);

static int mode; /* 0 off, 1 thread, 2 exit */
static char threadName[16];
static size_t exitBytes;
static volatile int exiting;

__attribute__((constructor)) static void configure(void) {
  const char* spec = getenv("FAIL_ALLOC");
  if (spec == NULL) return;
  if (strncmp(spec, "thread:", 7) == 0) {
    strncpy(threadName, spec + 7, sizeof(threadName) - 1);
    mode = 1;
  } else if (strncmp(spec, "exit:", 5) == 0) {
    exitBytes = strtoull(spec + 5, NULL, 10);
    mode = 2;
  }
}

static int shouldFail(size_t size) {
  if (mode == 1) {
    char name[16] = {0};
    return prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && strcmp(name, threadName) == 0;
  }
  return mode == 2 && exiting && size >= exitBytes;
}

void* malloc(size_t size) {
  if (shouldFail(size)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_malloc(size);
}

void exit(int status) {
  static void (*real)(int);
  if (real == NULL) {
    void* p = dlsym(RTLD_NEXT, "exit");
    memcpy(&real, &p, sizeof(p));
  }
  exiting = 1;
  real(status);
  __builtin_unreachable();
}
