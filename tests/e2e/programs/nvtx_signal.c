/* NVTX from a signal handler: a fast interval timer's SIGALRM handler pushes a range, marks and
 * pops, while the main thread loops push / cuCtxSynchronize / pop, on a ring small enough to
 * drop (the test sets CUTRACE_RING_SIZE). The handler often lands in the middle of the
 * tracer's own recording of the interrupted call. Every event must still be a whole event of
 * its own: ranges with dur >= 0 that nest on the thread's track, marks as instants, and the
 * recorded plus the dropped events exactly what was issued.
 *
 * usage: nvtx_signal ISSUED_FILE  (writes the number of events issued that carry a sequence
 * number: pushes, marks and driver calls; pops close ranges and are not counted) */
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t handlerRuns = 0;

static void onAlarm(int sig) {
  (void)sig;
  nvtxRangePushA("handler");
  nvtxMarkA("handler_mark");
  nvtxRangePop();
  handlerRuns = handlerRuns + 1;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  long issued = 0;
  /* The thread's first events, before any signal can arrive: NVTX initialises itself on its
   * first call (a handler interrupting that would wait for itself), the tracer sets up the
   * thread on its first event. */
  cuInit(0);
  nvtxMarkA("start");
  issued += 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = onAlarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval every = {{0, 20}, {0, 20}};
  setitimer(ITIMER_REAL, &every, NULL);
  long loops = 0;
  const double end = seconds() + 0.3;
  while (seconds() < end || loops < 1000) {
    nvtxRangePushA("main");
    cuCtxSynchronize();
    nvtxRangePop();
    ++loops;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  /* A last event that fits once the ring has been drained (a pass comes every 100 ms by
   * default): no drop hides after it. */
  struct timespec pause = {0, 250 * 1000 * 1000};
  nanosleep(&pause, NULL);
  nvtxMarkA("end");
  issued += loops * 2 + (long)handlerRuns * 2 + 1;
  FILE* f = fopen(argv[1], "w");
  if (f == NULL) return 2;
  fprintf(f, "%ld\n", issued);
  fclose(f);
  printf("nvtx_signal: %s\n", loops >= 1000 && handlerRuns > 0 ? "ok" : "too few iterations or signals");
  return 0;
}
