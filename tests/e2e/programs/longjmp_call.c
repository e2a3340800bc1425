/* Calls the program never returns from: a SIGALRM handler siglongjmps out of a CUDA call that
 * hangs, as a program with a timeout around a hung launch or synchronisation does. The stand-in
 * driver hangs in its call log's write: STANDIN_DRIVER_LOG is a FIFO this program fills. First
 * in the launch itself: the calls after it are outermost calls again (each takes its stack, a
 * launch names its kernel, the range around them holds them in every output; before, all were
 * taken as nested in the call that never returned). Then in the driver call cutrace makes to
 * name a new kernel, before the launch: the calls after it are recorded, and the driver's
 * functions looked up with dlsym are the traced ones (before, neither).
 *   usage: longjmp_call DIR   (DIR: where the FIFO goes) */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "noop_ptx.h"

static sigjmp_buf timedOut;
static void onAlarm(int sig) {
  (void)sig;
  siglongjmp(timedOut, 1);
}

static void drain(int fd) {
  char buf[4096];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
}

static __attribute__((noinline)) void launch(CUfunction f) {
  cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL);
}

/* Full: the driver's next write of a line waits for room. */
static int fill(int fd) {
  char filler[4096];
  memset(filler, 'x', sizeof(filler));
  while (write(fd, filler, sizeof(filler)) > 0) {
  }
  while (write(fd, filler, 1) > 0) {
  }
  return errno == EAGAIN;
}

/* f launched with the driver hung: the timeout ends the wait. */
static int timesOut(CUfunction f) {
  if (sigsetjmp(timedOut, 1) != 0) return 1;
  const struct itimerval once = {{0, 0}, {0, 100000}};
  setitimer(ITIMER_REAL, &once, NULL);
  launch(f); /* never returns */
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  char fifo[4096];
  snprintf(fifo, sizeof(fifo), "%s/driver-log", argv[1]);
  if (mkfifo(fifo, 0600) != 0) return 2;
  /* A reader first, so that the driver's open of its log does not wait for one. */
  const int in = open(fifo, O_RDONLY | O_NONBLOCK);
  const int out = open(fifo, O_WRONLY | O_NONBLOCK);
  if (in < 0 || out < 0) return 2;
  setenv("STANDIN_DRIVER_LOG", fifo, 1);
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f, g;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuModuleLoadData(&mod, kPtx) != CUDA_SUCCESS || cuModuleGetFunction(&f, mod, "noop") != CUDA_SUCCESS ||
      cuModuleGetFunction(&g, mod, "other") != CUDA_SUCCESS)
    return 3;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = onAlarm;
  sigaction(SIGALRM, &sa, NULL);
  launch(f);
  if (!fill(out) || !timesOut(f)) return 4;
  drain(in);
  nvtxRangePushA("after");
  launch(f);
  cuCtxSynchronize();
  nvtxRangePop();
  drain(in);
  /* g was never launched: its launch first asks the driver for its name. */
  if (!fill(out) || !timesOut(g)) return 5;
  drain(in);
  /* Looked up first, before any other event: the tracer's function, not the driver's. */
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == NULL) return 6;
  CUresult (*synchronize)(void);
  *(void**)&synchronize = dlsym(driver, "cuCtxSynchronize");
  if (synchronize == NULL) return 6;
  nvtxRangePushA("after the name");
  launch(g);
  synchronize();
  nvtxRangePop();
  drain(in);
  printf("two launches timed out\n");
  unlink(fifo);
  return 0;
}
