/* Device memory and events shared with another process, as CUDA-aware MPI, vLLM's custom
 * all-reduce and PyTorch's CUDA tensors sent to another process share them: this process (the
 * exporter) starts a second one (itself, "import"), before either uses CUDA; it fills two
 * allocations (runtime and driver), records two interprocess events, makes a handle of each and
 * sends the handles; the importer opens each allocation, checks its bytes and closes it, opens
 * each event and waits for it. One open is refused: a handle opened in the process that made it.
 * Each process's trace shows its own calls; the memory counters count the exporter's allocations
 * only.
 *
 *   usage: ipc
 *          ipc import READ_FD WRITE_FD */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_check.h"

enum { kRuntimeBytes = 4096, kDriverBytes = 8192 };

struct Handles {
  cudaIpcMemHandle_t runtimeMemory;
  CUipcMemHandle driverMemory;
  cudaIpcEventHandle_t runtimeEvent;
  CUipcEventHandle driverEvent;
};

static int readAll(int fd, void* data, size_t n) {
  for (size_t done = 0; done < n;) {
    const ssize_t r = read(fd, (char*)data + done, n - done);
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

static int importer(int in, int out) {
  struct Handles h;
  if (readAll(in, &h, sizeof(h)) != 0) return 2;
  useFirstDevice();
  static unsigned char host[kDriverBytes];
  void* runtimeMemory = NULL;
  checkRuntime(cudaIpcOpenMemHandle(&runtimeMemory, h.runtimeMemory, cudaIpcMemLazyEnablePeerAccess),
               "cudaIpcOpenMemHandle");
  checkRuntime(cudaMemcpy(host, runtimeMemory, kRuntimeBytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  expectBytes(host, kRuntimeBytes, 42, "runtime allocation");
  checkRuntime(cudaIpcCloseMemHandle(runtimeMemory), "cudaIpcCloseMemHandle");

  CUdeviceptr driverMemory = 0;
  check(cuIpcOpenMemHandle(&driverMemory, h.driverMemory, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
  check(cuMemcpyDtoH(host, driverMemory, kDriverBytes), "cuMemcpyDtoH");
  expectBytes(host, kDriverBytes, 7, "driver allocation");
  check(cuIpcCloseMemHandle(driverMemory), "cuIpcCloseMemHandle");

  cudaEvent_t runtimeEvent;
  CUevent driverEvent;
  checkRuntime(cudaIpcOpenEventHandle(&runtimeEvent, h.runtimeEvent), "cudaIpcOpenEventHandle");
  checkRuntime(cudaEventSynchronize(runtimeEvent), "cudaEventSynchronize");
  checkRuntime(cudaEventDestroy(runtimeEvent), "cudaEventDestroy");
  check(cuIpcOpenEventHandle(&driverEvent, h.driverEvent), "cuIpcOpenEventHandle");
  check(cuEventSynchronize(driverEvent), "cuEventSynchronize");
  check(cuEventDestroy(driverEvent), "cuEventDestroy");
  const char status = failures == 0 ? 0 : 1;
  if (write(out, &status, 1) != 1) return 2;
  return status;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "import") == 0) return importer(atoi(argv[2]), atoi(argv[3]));

  int toImporter[2], fromImporter[2];
  if (pipe(toImporter) != 0 || pipe(fromImporter) != 0) return 2;
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    char in[16], out[16];
    close(toImporter[1]);
    close(fromImporter[0]);
    snprintf(in, sizeof(in), "%d", toImporter[0]);
    snprintf(out, sizeof(out), "%d", fromImporter[1]);
    execl(argv[0], argv[0], "import", in, out, (char*)NULL);
    _exit(127);
  }
  close(toImporter[0]);
  close(fromImporter[1]);

  useFirstDevice();
  struct Handles h;
  void* runtimeMemory = NULL;
  CUdeviceptr driverMemory = 0;
  cudaEvent_t runtimeEvent;
  CUevent driverEvent;
  checkRuntime(cudaMalloc(&runtimeMemory, kRuntimeBytes), "cudaMalloc");
  checkRuntime(cudaMemset(runtimeMemory, 42, kRuntimeBytes), "cudaMemset");
  checkRuntime(cudaIpcGetMemHandle(&h.runtimeMemory, runtimeMemory), "cudaIpcGetMemHandle");
  check(cuMemAlloc(&driverMemory, kDriverBytes), "cuMemAlloc");
  check(cuMemsetD8(driverMemory, 7, kDriverBytes), "cuMemsetD8");
  check(cuIpcGetMemHandle(&h.driverMemory, driverMemory), "cuIpcGetMemHandle");
  checkRuntime(cudaEventCreateWithFlags(&runtimeEvent, cudaEventInterprocess | cudaEventDisableTiming),
               "cudaEventCreateWithFlags");
  checkRuntime(cudaEventRecord(runtimeEvent, 0), "cudaEventRecord");
  checkRuntime(cudaIpcGetEventHandle(&h.runtimeEvent, runtimeEvent), "cudaIpcGetEventHandle");
  check(cuEventCreate(&driverEvent, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(cuEventRecord(driverEvent, NULL), "cuEventRecord");
  check(cuIpcGetEventHandle(&h.driverEvent, driverEvent), "cuIpcGetEventHandle");
  void* own = NULL;
  if (cudaIpcOpenMemHandle(&own, h.runtimeMemory, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess) ++failures;

  /* The importer has closed what it opened before the memory goes. */
  char status = 1;
  if (write(toImporter[1], &h, sizeof(h)) != (ssize_t)sizeof(h) || readAll(fromImporter[0], &status, 1) != 0)
    ++failures;
  int waited = 0;
  if (waitpid(child, &waited, 0) != child || !WIFEXITED(waited) || WEXITSTATUS(waited) != 0 || status != 0) {
    fprintf(stderr, "importer failed (status %d)\n", waited);
    ++failures;
  }
  checkRuntime(cudaEventDestroy(runtimeEvent), "cudaEventDestroy");
  check(cuEventDestroy(driverEvent), "cuEventDestroy");
  checkRuntime(cudaFree(runtimeMemory), "cudaFree");
  check(cuMemFree(driverMemory), "cuMemFree");
  printf("memory and events shared with another process\n");
  return failures == 0 ? 0 : 1;
}
