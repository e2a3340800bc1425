/* POSIX gives open() the lowest free descriptor, and daemons rely on it: close(0), then
 * open("/dev/null") is the new stdin. While other threads make CUDA calls and cutrace's drain
 * thread appends to its stream every millisecond, the main thread does that again and again:
 * every open must land on 0, as without cutrace. Each call comes from a new thread, whose name
 * the drain reads (/proc/self/task/N/comm) when it first meets its events: cutrace opened that
 * file, an object's file to name a stack's frames, and its stream again after the program closed
 * it, in the program's descriptor table, taking the lowest free number for a moment. */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_int called;

static void* caller(void* arg) {
  (void)arg;
  void* p = NULL;
  cudaMalloc(&p, 16);
  cudaFree(p);
  atomic_store(&called, 1);
  return NULL;
}

static void* worker(void* arg) {
  (void)arg;
  // A new thread every millisecond: a pass, a name read and an append every millisecond. Few of
  // them: the trace is checked and exported afterwards, which under TSan takes about a second
  // per 10,000 events.
  const struct timespec pause = {0, 1000 * 1000};
  while (!atomic_load(&stop)) {
    pthread_t t;
    if (pthread_create(&t, NULL, caller, NULL) == 0) pthread_join(t, NULL);
    nanosleep(&pause, NULL);
  }
  return NULL;
}

// Whether a thread may have a descriptor table of its own (cutrace opens its files there):
// Docker's default seccomp profile refuses unshare without CAP_SYS_ADMIN.
static void* tryUnshare(void* arg) {
  *(int*)arg = unshare(CLONE_FILES) == 0;
  return NULL;
}

int main(void) {
  int ownTable = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, tryUnshare, &ownTable) != 0 || pthread_join(t, NULL) != 0) return 1;
  if (!ownTable) {
    printf("opens not at the lowest free descriptor: not checked (no descriptor table of cutrace's own here)\n");
    return 0;
  }
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  // cutrace's start loads libraries (dlopen, in the program's table): past it once a call is in.
  // Then a second more: under UBSan, its vptr check's first look at each type (the drain's first
  // passes) opens a pipe of its own. Thread names are read all along.
  const struct timespec pause = {0, 1000 * 1000}, settle = {1, 0};
  while (!atomic_load(&called)) nanosleep(&pause, NULL);
  nanosleep(&settle, NULL);
  int elsewhere = 0;
  for (int i = 0; i < 200000; ++i) {
    close(0);
    const int fd = open("/dev/null", O_RDONLY);
    if (fd != 0) {
      ++elsewhere;
      if (fd > 0) close(fd);
    }
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("opens not at the lowest free descriptor: %d\n", elsewhere);
  return 0;
}
