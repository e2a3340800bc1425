/* A timer's SIGALRM handler siglongjmps out of whatever runs, thousands of times, while the
 * program makes CUDA calls back to back: some jumps leave cutrace's hooks in the middle of
 * recording an event (its record section open). Then the timer stops and the program makes
 * 100 calls inside a range. Each of those must be recorded: before, a section left open made
 * cutrace drop every later event of the thread, and count none of them as dropped.
 *   usage: longjmp_storm */
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static sigjmp_buf jumped;
static volatile sig_atomic_t jumps;

static void onAlarm(int sig) {
  (void)sig;
  ++jumps;
  siglongjmp(jumped, 1);
}

static long elapsedMs(const struct timespec* t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return 3;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = onAlarm;
  sigaction(SIGALRM, &sa, NULL);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* Every 20 us; the jump lands back here, timer still running. The mask is not restored by the
   * jump (SIGALRM stays blocked, as in the handler) but here, once the stack is back at this
   * frame: a signal pending when siglongjmp restored it would run its handler on top of the
   * frames the jump was leaving, and in a slow build those piled up until the stack ran out. */
  const struct itimerval every = {{0, 20}, {0, 20}};
  sigset_t alarm;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  sigsetjmp(jumped, 0);
  sigprocmask(SIG_UNBLOCK, &alarm, NULL);
  if (jumps == 0) setitimer(ITIMER_REAL, &every, NULL);
  while (jumps < 3000 && elapsedMs(&t0) < 3000) cuCtxSynchronize();
  const struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  /* The storm may end with the ring full (its drops are allowed): time for the drain to empty
   * it, even on a loaded machine, before the calls that must all be recorded (without this
   * pause, 0 of 100 were once, on 2 busy cores). */
  const struct timespec pause = {1, 0};
  nanosleep(&pause, NULL);
  nvtxRangePushA("after");
  for (int i = 0; i < 100; ++i) cuStreamSynchronize(0);
  nvtxRangePop();
  return 0;
}
