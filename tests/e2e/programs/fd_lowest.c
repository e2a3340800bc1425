/* POSIX gives open() the lowest free descriptor, and daemons rely on it: close(0), then
 * open("/dev/null") is the new stdin. While a second thread makes CUDA calls and cutrace's drain
 * thread appends to its stream every millisecond, the main thread does that again and again:
 * every open must land on 0, as without cutrace (which reopened its stream by path for each
 * append and so held the lowest free number for a moment, and had its own descriptor closed). */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static void* worker(void* arg) {
  (void)arg;
  // Calls every millisecond: a pass, and an append, every millisecond. Few of them: the trace
  // is checked and exported afterwards, which under TSan takes about a second per 10,000 events.
  const struct timespec pause = {0, 1000 * 1000};
  while (!atomic_load(&stop)) {
    void* p = NULL;
    cudaMalloc(&p, 16);
    cudaFree(p);
    nanosleep(&pause, NULL);
  }
  return NULL;
}

int main(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  // cutrace's start (its libraries, its files) and the naming of each new stack's frames (an
  // object's file, opened for a moment) open files: past, the worker's stacks all named by then
  // (under TSan the first pass's naming took more than 200 ms: its open took descriptor 0).
  const struct timespec settle = {1, 0};
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
