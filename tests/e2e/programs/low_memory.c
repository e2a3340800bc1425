/* A program that fits in little address space (small thread stacks, no big buffers of its own)
 * and makes many CUDA calls on several threads, for runs under RLIMIT_AS (prlimit --as) where
 * cutrace's own memory runs out: the program must run on and end as it would without cutrace.
 *   usage: low_memory THREADS CALLS_PER_THREAD [wait-stream]
 * It ends with exit(0) (fail_alloc.c's exit mode watches for it). wait-stream: before that, it
 * waits (10 s at most) for a stream file (.pftrace) in $CUTRACE_OUTPUT, when that is set: the
 * drain thread took a pass during the run, so a failure injected at exit hits the writing of the
 * trace (on a loaded machine the drain thread may not run within this short run at all). */
#include <cuda.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long calls;
static pthread_barrier_t started;

static void sleepMs(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void* worker(void* arg) {
  CUcontext ctx = (CUcontext)arg;
  cuCtxSetCurrent(ctx);
  cuCtxSynchronize();
  pthread_barrier_wait(&started);
  for (long i = 1; i < calls; ++i) {
    cuCtxSynchronize();
    if (i % 2000 == 0) sleepMs(1);
  }
  return NULL;
}

static int streamWritten(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return 0;
  int found = 0;
  for (struct dirent* e; !found && (e = readdir(d)) != NULL;) {
    const size_t n = strlen(e->d_name);
    found = n > 8 && strcmp(e->d_name + n - 8, ".pftrace") == 0;
  }
  closedir(d);
  return found;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int threads = atoi(argv[1]);
  calls = atol(argv[2]);
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) {
    printf("no CUDA device\n");
    return 1;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_barrier_init(&started, NULL, (unsigned)threads + 1);
  pthread_t* tids = calloc((size_t)threads, sizeof(pthread_t));
  for (int t = 0; t < threads; ++t)
    if (pthread_create(&tids[t], &attr, worker, ctx) != 0) {
      printf("pthread_create failed\n");
      return 1;
    }
  pthread_barrier_wait(&started);
  for (int t = 0; t < threads; ++t) pthread_join(tids[t], NULL);
  printf("%d threads made %ld calls each\n", threads, calls);
  const char* out = getenv("CUTRACE_OUTPUT");
  if (argc > 3 && strcmp(argv[3], "wait-stream") == 0 && out != NULL)
    for (int i = 0; i < 2000 && !streamWritten(out); ++i) sleepMs(5);
  exit(0); /* through the PLT, so that fail_alloc.c sees the end coming */
}
