/* Many threads, one CUDA call each: the tracer's memory must follow what is used, not the
 * number of threads.
 *   many_threads live N RSS_FILE ISSUED_FILE   N threads alive at once, each makes its call and
 *                                              waits until all have made theirs
 *   many_threads churn N RSS_FILE ISSUED_FILE  N short-lived threads, 4 alive at a time
 *   many_threads gate N RSS_FILE ISSUED_FILE   N threads alive at once, all released together
 *                                              to make their call (they attach at one moment)
 * RSS_FILE gets the peak resident set (VmHWM, KiB) at the end of main, ISSUED_FILE the number
 * of CUDA calls made. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_barrier_t allCalled;
static pthread_barrier_t allStarted;
static int live = 0;
static int gate = 0;

static void* worker(void* arg) {
  (void)arg;
  if (gate) pthread_barrier_wait(&allStarted);
  cuCtxSynchronize();
  if (live) pthread_barrier_wait(&allCalled);
  return NULL;
}

static long peakRssKb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static int start(pthread_t* t, const pthread_attr_t* attr) {
  if (pthread_create(t, attr, worker, NULL) != 0) {
    fprintf(stderr, "many_threads: pthread_create failed\n");
    return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  gate = strcmp(argv[1], "gate") == 0;
  live = gate || strcmp(argv[1], "live") == 0;
  const int n = atoi(argv[2]);
  long issued = 0;
  cuInit(0);
  ++issued;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  if (live) {
    pthread_t* threads = calloc((size_t)n, sizeof *threads);
    pthread_barrier_init(&allCalled, NULL, (unsigned)n);
    pthread_barrier_init(&allStarted, NULL, (unsigned)n);
    for (int i = 0; i < n; ++i)
      if (!start(&threads[i], &attr)) return 2;
    for (int i = 0; i < n; ++i) pthread_join(threads[i], NULL);
    free(threads);
  } else {
    enum { kAtOnce = 4 };
    for (int i = 0; i < n; i += kAtOnce) {
      pthread_t batch[kAtOnce];
      const int m = n - i < kAtOnce ? n - i : kAtOnce;
      for (int j = 0; j < m; ++j)
        if (!start(&batch[j], &attr)) return 2;
      for (int j = 0; j < m; ++j) pthread_join(batch[j], NULL);
    }
  }
  issued += n;
  FILE* f = fopen(argv[4], "w");
  if (f == NULL) return 2;
  fprintf(f, "%ld\n", issued);
  fclose(f);
  f = fopen(argv[3], "w");
  if (f == NULL) return 2;
  fprintf(f, "%ld\n", peakRssKb());
  fclose(f);
  printf("many_threads: %d threads\n", n);
  return 0;
}
