/* The program's descriptor table is the program's: nothing cutrace opens while the program runs
 * (its stream, the files it reads, the pipe libunwind opens to probe memory) may take one of its
 * low numbers, and a program that closes every descriptor it did not open and opens its own
 * files must never have cutrace (or the libraries it loads) read or write them. The program
 * lists its low descriptors before its first CUDA call and after calls from two threads (each a
 * stack walk) and a few drain passes; then closes every descriptor from 3 up, as a daemon does,
 * opens a file of its own, walks more stacks and reads the file back. run_e2e.sh compares what
 * it prints, and the file, bare and under the preload. Run with each unwinder.
 * usage: fd_table DIR */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Below the numbers cutrace keeps its own descriptors at (own_file.cpp: from half the soft
 * RLIMIT_NOFILE, at most 1000). */
enum { kLow = 64 };

static void list(const char* when) {
  int open[kLow] = {0};
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) exit(2);
  const int own = dirfd(d);
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    const int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd != own && fd < kLow) open[fd] = 1;
  }
  closedir(d);
  printf("%s:", when);
  for (int fd = 0; fd < kLow; ++fd)
    if (open[fd]) printf(" %d", fd);
  printf("\n");
}

static void calls(void) {
  void* p = NULL;
  cudaMalloc(&p, 64);
  cudaMemset(p, 0, 64);
  cudaDeviceSynchronize();
  cudaFree(p);
  cuCtxSynchronize();
}

static void* thread(void* arg) {
  (void)arg;
  calls();
  return NULL;
}

static void callsTwice(void) {
  calls();
  pthread_t t;
  if (pthread_create(&t, NULL, thread, NULL) != 0 || pthread_join(t, NULL) != 0) exit(1);
  const struct timespec passes = {0, 30 * 1000 * 1000};
  nanosleep(&passes, NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  list("before");
  callsTwice();
  list("after calls");
  for (int fd = 3; fd < kLow; ++fd) close(fd);
  char path[4096];
  snprintf(path, sizeof(path), "%s/own.txt", argv[1]);
  const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  static const char kText[] = "0123456789abcdefghijklmnopqrstuvwxyz\n";
  if (fd < 0 || write(fd, kText, strlen(kText)) != (ssize_t)strlen(kText) || lseek(fd, 0, SEEK_SET) != 0) return 1;
  printf("own file at %d\n", fd);
  callsTwice();
  char back[64] = {0};
  const ssize_t n = read(fd, back, sizeof(back) - 1);
  printf("read back %zd bytes: %s", n, back);
  close(fd);
  list("after closing");
  return 0;
}
