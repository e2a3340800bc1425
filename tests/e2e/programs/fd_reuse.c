/* A program that closes every descriptor after its first CUDA calls, as daemons and sandboxes
 * do, and opens files of its own, which get the low numbers (0, 1, 2 and whatever cutrace's
 * stream had). It goes on making CUDA calls for many drain intervals and exits. Its files must
 * hold only its own bytes: cutrace never writes to a descriptor it did not open just now, and its
 * exit line goes only to the stderr it found at start (run_e2e.sh compares the files of the bare
 * and the traced run, @FILES@).
 *   usage: fd_reuse DIR */
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "noop_ptx.h"

enum { kFiles = 16 };

static void sleepMs(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int fail(const char* what) {
  /* stderr may be gone: the exit status tells. */
  (void)what;
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuModuleLoadData(&mod, kPtx) != CUDA_SUCCESS || cuModuleGetFunction(&f, mod, "noop") != CUDA_SUCCESS)
    return fail("setup");
  nvtxRangePushA("before");
  for (int i = 0; i < 3; ++i) cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
  nvtxRangePop();
  sleepMs(100); /* many drain intervals: cutrace has files of its own open or written by now */

  char dir[4096];
  snprintf(dir, sizeof(dir), "%s", argv[1]);
  for (int fd = 0; fd < 1024; ++fd) close(fd);
  for (int i = 0; i < kFiles; ++i) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/file%02d", dir, i);
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd != i) return fail("open"); /* the lowest free number, as POSIX says */
    char line[64];
    const int n = snprintf(line, sizeof(line), "file %d: opened as fd %d\n", i, fd);
    if (write(fd, line, (size_t)n) != n) return fail("write");
  }

  for (int round = 0; round < 12; ++round) {
    nvtxRangePushA("after");
    cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    cuCtxSynchronize();
    nvtxRangePop();
    sleepMs(5);
  }

  for (int fd = 0; fd < kFiles; ++fd) {
    char line[64];
    const int n = snprintf(line, sizeof(line), "file %d: done\n", fd);
    if (write(fd, line, (size_t)n) != n) return fail("write");
  }
  return 0;
}
