/* errno is the program's: every first call that makes cutrace do work of its own (initialising,
 * loading CUPTI and symbols, creating a thread's ring, starting the drain thread, the first
 * stack walk, NVTX injection) must leave errno as the program set it. Before each call errno is
 * set to a sentinel; what it holds afterwards is printed, so the run under the preload must
 * print exactly what the bare run printed (run_e2e.sh compares stdout). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>

#include "noop_ptx.h"

enum { kSentinel = 1234 };

/* The CUDA result is printed too; NVTX's is not (a push returns a level only when a tool is
 * attached). */
#define KEEP(what, call)                                         \
  do {                                                           \
    errno = kSentinel;                                           \
    const int rc_ = (int)(call);                                 \
    const int seen_ = errno;                                     \
    printf("%-28s rc=%d errno=%d\n", what, rc_, seen_);          \
  } while (0)
#define KEEP_NVTX(what, call)                                    \
  do {                                                           \
    errno = kSentinel;                                           \
    (void)(call);                                                \
    const int seen_ = errno;                                     \
    printf("%-28s errno=%d\n", what, seen_);                     \
  } while (0)

static CUcontext ctx;
static CUfunction f;

static void* worker(void* arg) {
  (void)arg;
  KEEP("thread cuCtxSetCurrent", cuCtxSetCurrent(ctx));
  KEEP("thread cuCtxSynchronize", cuCtxSynchronize());
  KEEP("thread cudaDeviceSynchronize", cudaDeviceSynchronize());
  KEEP_NVTX("thread nvtx push", nvtxRangePushA("worker"));
  KEEP("thread launch", cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  KEEP_NVTX("thread nvtx pop", nvtxRangePop());
  return NULL;
}

static int onThread(void) {
  pthread_t t;
  return pthread_create(&t, NULL, worker, NULL) == 0 && pthread_join(t, NULL) == 0;
}

static void* threadFirst(void* arg) {
  (void)arg;
  KEEP("thread-first cuInit", cuInit(0));
  KEEP("thread-first cudaGetDeviceCount", cudaGetDeviceCount(&(int){0}));
  return NULL;
}

/* usage: errno_kept driver|runtime|nvtx|thread: which call is the process's first. */
int main(int argc, char** argv) {
  const char* first = argc > 1 ? argv[1] : "driver";
  if (first[0] == 'r') KEEP("first cudaGetDeviceCount", cudaGetDeviceCount(&(int){0}));
  if (first[0] == 'n') KEEP_NVTX("first nvtx push", nvtxRangePushA("first"));
  if (first[0] == 't') {
    pthread_t t;
    if (pthread_create(&t, NULL, threadFirst, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
  }
  CUdevice dev;
  CUmodule mod;
  KEEP("cuInit", cuInit(0));
  KEEP("cuDeviceGet", cuDeviceGet(&dev, 0));
  KEEP("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
  KEEP("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
  KEEP("cudaDeviceSynchronize", cudaDeviceSynchronize());
  KEEP_NVTX("nvtx push", nvtxRangePushA("outer"));
  KEEP("cuModuleLoadData", cuModuleLoadData(&mod, kPtx));
  KEEP("cuModuleGetFunction", cuModuleGetFunction(&f, mod, "noop"));
  KEEP("first launch", cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  KEEP("second launch", cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
  KEEP_NVTX("nvtx pop", nvtxRangePop());
  if (!onThread()) return 1;
  KEEP("cuCtxSynchronize", cuCtxSynchronize());
  if (first[0] == 'n') KEEP_NVTX("nvtx pop", nvtxRangePop());
  return 0;
}
