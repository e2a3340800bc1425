/* Memory pools shared with another process (stream-ordered IPC, as RAPIDS and UCX share them):
 * this process (the exporter) starts a second one (itself, "import") before either uses CUDA;
 * it makes two pools exportable to file descriptors (runtime and driver), allocates from each in
 * stream order and fills the allocation, exports each pool's descriptor and each allocation's
 * export data, and sends them over a Unix socket; the importer imports each pool, opens each
 * allocation through it, checks its bytes and frees it in stream order, then destroys the pools.
 * Refused: a pool exported that was made without a handle type, and an allocation opened
 * through a pool of the importer's own. Each process's trace shows its own calls, pools as
 * handles, allocations with their address and bytes; the memory counters count the exporter's
 * allocations only.
 *
 *   usage: pool_ipc
 *          pool_ipc import SOCKET_FD */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_check.h"

enum { kRuntimeBytes = 4096, kDriverBytes = 8192 };

struct Exported {
  struct cudaMemPoolPtrExportData runtimeData;
  CUmemPoolPtrExportData driverData;
};

/* `data` and two descriptors over `sock` (SCM_RIGHTS), or received from it: 0 when whole. */
static int sendAll(int sock, struct Exported* data, int fds[2]) {
  char control[CMSG_SPACE(2 * sizeof(int))];
  memset(control, 0, sizeof(control));
  struct iovec iov = {data, sizeof(*data)};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control)};
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  memcpy(CMSG_DATA(c), fds, 2 * sizeof(int));
  return sendmsg(sock, &msg, 0) == (ssize_t)sizeof(*data) ? 0 : -1;
}
static int receiveAll(int sock, struct Exported* data, int fds[2]) {
  char control[CMSG_SPACE(2 * sizeof(int))];
  struct iovec iov = {data, sizeof(*data)};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control)};
  if (recvmsg(sock, &msg, MSG_WAITALL) != (ssize_t)sizeof(*data)) return -1;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == NULL || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int))) return -1;
  memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
  return 0;
}

static int importer(int sock) {
  struct Exported e;
  int fds[2];
  if (receiveAll(sock, &e, fds) != 0) return 2;
  useFirstDevice();
  static unsigned char host[kDriverBytes];
  cudaMemPool_t runtimePool;
  void* runtimeMemory = NULL;
  checkRuntime(cudaMemPoolImportFromShareableHandle(&runtimePool, (void*)(intptr_t)fds[0],
                                                    cudaMemHandleTypePosixFileDescriptor, 0),
               "cudaMemPoolImportFromShareableHandle");
  checkRuntime(cudaMemPoolImportPointer(&runtimeMemory, runtimePool, &e.runtimeData), "cudaMemPoolImportPointer");
  checkRuntime(cudaMemcpy(host, runtimeMemory, kRuntimeBytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  expectBytes(host, kRuntimeBytes, 42, "runtime allocation");
  checkRuntime(cudaFreeAsync(runtimeMemory, 0), "cudaFreeAsync");

  CUmemoryPool driverPool, ownPool;
  CUdeviceptr driverMemory = 0, refused = 0;
  check(cuMemPoolImportFromShareableHandle(&driverPool, (void*)(intptr_t)fds[1], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                           0),
        "cuMemPoolImportFromShareableHandle");
  check(cuMemPoolImportPointer(&driverMemory, driverPool, &e.driverData), "cuMemPoolImportPointer");
  check(cuMemcpyDtoH(host, driverMemory, kDriverBytes), "cuMemcpyDtoH");
  expectBytes(host, kDriverBytes, 7, "driver allocation");
  check(cuMemFreeAsync(driverMemory, NULL), "cuMemFreeAsync");
  check(cuDeviceGetDefaultMemPool(&ownPool, 0), "cuDeviceGetDefaultMemPool");
  if (cuMemPoolImportPointer(&refused, ownPool, &e.driverData) == CUDA_SUCCESS) ++failures;
  check(cuStreamSynchronize(NULL), "cuStreamSynchronize");
  checkRuntime(cudaMemPoolDestroy(runtimePool), "cudaMemPoolDestroy");
  check(cuMemPoolDestroy(driverPool), "cuMemPoolDestroy");
  close(fds[0]);
  close(fds[1]);
  const char status = failures == 0 ? 0 : 1;
  if (write(sock, &status, 1) != 1) return 2;
  return status;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "import") == 0) return importer(atoi(argv[2]));

  int socks[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, socks) != 0) return 2;
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    char arg[16];
    close(socks[0]);
    snprintf(arg, sizeof(arg), "%d", socks[1]);
    execl(argv[0], argv[0], "import", arg, (char*)NULL);
    _exit(127);
  }
  close(socks[1]);

  const CUdevice dev = useFirstDevice();
  cudaStream_t stream;
  checkRuntime(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  struct Exported e;
  int fds[2] = {-1, -1};

  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cudaMemPool_t runtimePool, plain;
  void* runtimeMemory = NULL;
  checkRuntime(cudaMemPoolCreate(&runtimePool, &props), "cudaMemPoolCreate");
  checkRuntime(cudaMallocFromPoolAsync(&runtimeMemory, kRuntimeBytes, runtimePool, stream), "cudaMallocFromPoolAsync");
  checkRuntime(cudaMemsetAsync(runtimeMemory, 42, kRuntimeBytes, stream), "cudaMemsetAsync");
  checkRuntime(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  checkRuntime(cudaMemPoolExportToShareableHandle(&fds[0], runtimePool, cudaMemHandleTypePosixFileDescriptor, 0),
               "cudaMemPoolExportToShareableHandle");
  checkRuntime(cudaMemPoolExportPointer(&e.runtimeData, runtimeMemory), "cudaMemPoolExportPointer");
  int none = -1;
  checkRuntime(cudaDeviceGetDefaultMemPool(&plain, dev), "cudaDeviceGetDefaultMemPool");
  if (cudaMemPoolExportToShareableHandle(&none, plain, cudaMemHandleTypePosixFileDescriptor, 0) == cudaSuccess)
    ++failures;

  CUmemPoolProps driverProps;
  memset(&driverProps, 0, sizeof(driverProps));
  driverProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  driverProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  driverProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  driverProps.location.id = dev;
  CUmemoryPool driverPool;
  CUdeviceptr driverMemory = 0;
  check(cuMemPoolCreate(&driverPool, &driverProps), "cuMemPoolCreate");
  check(cuMemAllocFromPoolAsync(&driverMemory, kDriverBytes, driverPool, (CUstream)stream), "cuMemAllocFromPoolAsync");
  check(cuStreamSynchronize((CUstream)stream), "cuStreamSynchronize");  /* allocated before another stream uses it */
  check(cuMemsetD8(driverMemory, 7, kDriverBytes), "cuMemsetD8");
  check(cuMemPoolExportToShareableHandle(&fds[1], driverPool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemPoolExportToShareableHandle");
  check(cuMemPoolExportPointer(&e.driverData, driverMemory), "cuMemPoolExportPointer");

  /* The importer has freed what it opened before the memory goes. */
  char status = 1;
  if (sendAll(socks[0], &e, fds) != 0 || read(socks[0], &status, 1) != 1) ++failures;
  int waited = 0;
  if (waitpid(child, &waited, 0) != child || !WIFEXITED(waited) || WEXITSTATUS(waited) != 0 || status != 0) {
    fprintf(stderr, "importer failed (status %d)\n", waited);
    ++failures;
  }
  close(fds[0]);
  close(fds[1]);
  checkRuntime(cudaFreeAsync(runtimeMemory, stream), "cudaFreeAsync");
  check(cuMemFreeAsync(driverMemory, (CUstream)stream), "cuMemFreeAsync");
  checkRuntime(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  checkRuntime(cudaMemPoolDestroy(runtimePool), "cudaMemPoolDestroy");
  check(cuMemPoolDestroy(driverPool), "cuMemPoolDestroy");
  checkRuntime(cudaStreamDestroy(stream), "cudaStreamDestroy");
  printf("memory pools shared with another process\n");
  return failures == 0 ? 0 : 1;
}
