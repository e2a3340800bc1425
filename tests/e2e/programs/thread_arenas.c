/* A thread that never allocates makes CUDA driver calls and NVTX ranges: under cutrace it must
 * still never allocate. glibc gives a thread its own malloc arena at its first allocation (64 MB
 * of address space reserved: in a program under RLIMIT_AS, room its own mappings lose), and an
 * allocation in a hook can deadlock a program that calls CUDA from a signal handler. This
 * program replaces malloc and its kin to count the worker thread's allocations and prints the
 * count: it must be what it is without cutrace (0 on the stand-in libraries). Stacks are on (the
 * default): the thread's first recorded call finds its stack's bounds. */
#include <cuda.h>
#include <errno.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);

static __thread int inWorker;
static int workerAllocations; /* read after the join */

static void count(void) {
  if (inWorker) ++workerAllocations;
}
void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  count();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }
int posix_memalign(void** out, size_t alignment, size_t size) {
  void* p = memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

static void* worker(void* arg) {
  inWorker = 1;
  cuCtxSetCurrent((CUcontext)arg);
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("worker step");
    cuCtxSynchronize();
    nvtxRangePop();
  }
  inWorker = 0;
  return NULL;
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) {
    printf("no CUDA device\n");
    return 1;
  }
  nvtxRangePushA("main");
  cuCtxSynchronize();
  pthread_t t;
  if (pthread_create(&t, NULL, worker, ctx) != 0) return 1;
  pthread_join(t, NULL);
  nvtxRangePop();
  printf("the worker thread allocated %d times\n", workerAllocations);
  return 0;
}
