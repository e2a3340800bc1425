/* CUDA calls from a signal handler running on an 8 KiB alternate signal stack (SA_ONSTACK)
 * with a guard page below it: as without cutrace, the program runs to its end (a stack walk
 * there overflowed the stack: SIGSEGV), and every call is in the trace, with no stack. */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

enum { kAltStackBytes = 8192, kSignals = 20 };

static volatile sig_atomic_t handled;

static void onSignal(int sig) {
  (void)sig;
  void* p = NULL;
  cudaMalloc(&p, 64);
  cudaFree(p);
  ++handled;
}

int main(void) {
  void* p = NULL;
  cudaMalloc(&p, 16);  // the thread's first calls (its ring, the library) on its own stack
  cudaFree(p);
  char* base = mmap(NULL, kAltStackBytes + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED || mprotect(base, 4096, PROT_NONE) != 0) return 1;
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = base + 4096;
  ss.ss_size = kAltStackBytes;
  if (sigaltstack(&ss, NULL) != 0) return 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = onSignal;
  sa.sa_flags = SA_ONSTACK | SA_RESTART;
  if (sigaction(SIGUSR1, &sa, NULL) != 0) return 1;
  for (int i = 0; i < kSignals; ++i) raise(SIGUSR1);
  printf("handled %d signals\n", (int)handled);
  return 0;
}
