/* The main thread ends with pthread_exit while a second thread goes on making CUDA calls: the
 * process ends when that thread does, with status 0 and its exit handlers run, as without
 * cutrace (whose drain thread must not keep it alive), and the trace holds both threads' calls. */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void atExit(void) { printf("exit handlers ran\n"); }

static void* worker(void* arg) {
  (void)arg;
  const struct timespec pause = {0, 30 * 1000 * 1000};
  nanosleep(&pause, NULL);  // the main thread has ended by now
  nvtxRangePushA("worker");
  for (int i = 0; i < 10; ++i) {
    void* p = NULL;
    cudaMalloc(&p, 256);
    cudaFree(p);
  }
  nvtxRangePop();
  printf("worker done\n");
  return NULL;
}

int main(void) {
  atexit(atExit);
  void* p = NULL;
  nvtxRangePushA("main");
  cudaMalloc(&p, 16);
  cudaFree(p);
  nvtxRangePop();
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  printf("main thread exits\n");
  fflush(stdout);
  pthread_exit(NULL);
}
