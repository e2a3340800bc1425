/* Another API's memory and semaphores imported by file descriptor, as Vulkan interop and DALI
 * use them: memory imported through the runtime and the driver (one import refused: no
 * descriptor), a buffer mapped from each and read (one mapping refused: past the memory's end),
 * freed, a mipmapped array mapped from each and freed, the memory destroyed; semaphores imported, signalled and waited for on a stream (one
 * signal refused: no semaphores), as nodes of graphs built by hand whose parameters are set in
 * the graph and in its exec, and destroyed (one twice: refused). Each import shows its handle
 * made, destroyed with the same; a buffer or a mipmapped array with its bytes; a signal or a wait with its first
 * semaphore and its stream. The memory counter follows the program's own allocation only: the
 * buffers and mipmapped arrays are the other API's memory.
 *
 * The stand-in driver imports any file's descriptor; NVIDIA's refuses a plain file's, and the
 * program then goes on without what the import would have made.
 *
 *   usage: external_interop */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_check.h"

enum { kMemoryBytes = 1 << 20, kBufferBytes = 1 << 16, kBufferOffset = 4096 };

/* A file of kMemoryBytes whose byte at kBufferOffset is `mark`: what the import stands for. */
static int memoryFile(unsigned char mark) {
  const int fd = memfd_create("external_interop", 0);
  if (fd < 0 || ftruncate(fd, kMemoryBytes) != 0 || pwrite(fd, &mark, 1, kBufferOffset) != 1) {
    perror("memfd");
    ++failures;
  }
  return fd;
}

/* Runtime: memory imported, a buffer mapped and read, freed, the memory destroyed. */
static void runtimeMemory(void) {
  const int fd = memoryFile(0x5a);
  struct cudaExternalMemoryHandleDesc desc;
  memset(&desc, 0, sizeof(desc));
  desc.type = cudaExternalMemoryHandleTypeOpaqueFd;
  desc.handle.fd = fd;
  desc.size = kMemoryBytes;
  cudaExternalMemory_t memory;
  struct cudaExternalMemoryHandleDesc none = desc;
  none.handle.fd = -1;
  if (cudaImportExternalMemory(&memory, &none) == cudaSuccess) ++failures;
  if (cudaImportExternalMemory(&memory, &desc) != cudaSuccess) {
    close(fd);
    printf("runtime: memory not imported\n");
    return;
  }
  struct cudaExternalMemoryBufferDesc buffer;
  memset(&buffer, 0, sizeof(buffer));
  buffer.offset = kBufferOffset;
  buffer.size = kBufferBytes;
  void* p = NULL;
  struct cudaExternalMemoryBufferDesc past = buffer;
  past.offset = kMemoryBytes - 4096;
  if (cudaExternalMemoryGetMappedBuffer(&p, memory, &past) == cudaSuccess) ++failures;
  checkRuntime(cudaExternalMemoryGetMappedBuffer(&p, memory, &buffer), "cudaExternalMemoryGetMappedBuffer");
  unsigned char first = 0;
  checkRuntime(cudaMemcpy(&first, p, 1, cudaMemcpyDeviceToHost), "cudaMemcpy");
  printf("runtime: buffer reads 0x%02x\n", first);
  checkRuntime(cudaFree(p), "cudaFree");
  /* A mipmapped array over the memory: 64 x 64 floats, 3 levels (5376 elements). */
  struct cudaExternalMemoryMipmappedArrayDesc texture;
  memset(&texture, 0, sizeof(texture));
  texture.offset = kBufferOffset;
  texture.formatDesc.x = 32;
  texture.formatDesc.f = cudaChannelFormatKindFloat;
  texture.extent.width = texture.extent.height = 64;
  texture.numLevels = 3;
  cudaMipmappedArray_t mipmap;
  checkRuntime(cudaExternalMemoryGetMappedMipmappedArray(&mipmap, memory, &texture),
               "cudaExternalMemoryGetMappedMipmappedArray");
  checkRuntime(cudaFreeMipmappedArray(mipmap), "cudaFreeMipmappedArray");
  checkRuntime(cudaDestroyExternalMemory(memory), "cudaDestroyExternalMemory");
}

/* Driver: the same. */
static void driverMemory(void) {
  const int fd = memoryFile(0xa5);
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc;
  memset(&desc, 0, sizeof(desc));
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  desc.size = kMemoryBytes;
  CUexternalMemory memory;
  if (cuImportExternalMemory(&memory, &desc) != CUDA_SUCCESS) {
    close(fd);
    printf("driver: memory not imported\n");
    return;
  }
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC buffer;
  memset(&buffer, 0, sizeof(buffer));
  buffer.offset = kBufferOffset;
  buffer.size = kBufferBytes / 2;
  CUdeviceptr p = 0;
  check(cuExternalMemoryGetMappedBuffer(&p, memory, &buffer), "cuExternalMemoryGetMappedBuffer");
  unsigned char first = 0;
  check(cuMemcpyDtoH(&first, p, 1), "cuMemcpyDtoH");
  printf("driver: buffer reads 0x%02x\n", first);
  check(cuMemFree(p), "cuMemFree");
  /* A mipmapped array over the memory: 16 x 16 x 16 bytes, 2 levels (4608 elements). */
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC volume;
  memset(&volume, 0, sizeof(volume));
  volume.arrayDesc.Width = volume.arrayDesc.Height = volume.arrayDesc.Depth = 16;
  volume.arrayDesc.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  volume.arrayDesc.NumChannels = 1;
  volume.numLevels = 2;
  CUmipmappedArray mipmap;
  check(cuExternalMemoryGetMappedMipmappedArray(&mipmap, memory, &volume), "cuExternalMemoryGetMappedMipmappedArray");
  check(cuMipmappedArrayDestroy(mipmap), "cuMipmappedArrayDestroy");
  check(cuDestroyExternalMemory(memory), "cuDestroyExternalMemory");
}

/* Runtime: a semaphore signalled and waited for on `stream`, and as nodes of a graph. */
static void runtimeSemaphores(cudaStream_t stream) {
  const int fd = memoryFile(0);
  struct cudaExternalSemaphoreHandleDesc desc;
  memset(&desc, 0, sizeof(desc));
  desc.type = cudaExternalSemaphoreHandleTypeOpaqueFd;
  desc.handle.fd = fd;
  cudaExternalSemaphore_t semaphore;
  if (cudaImportExternalSemaphore(&semaphore, &desc) != cudaSuccess) {
    close(fd);
    printf("runtime: semaphore not imported\n");
    return;
  }
  struct cudaExternalSemaphoreSignalParams signal;
  memset(&signal, 0, sizeof(signal));
  signal.params.fence.value = 1;
  struct cudaExternalSemaphoreWaitParams wait;
  memset(&wait, 0, sizeof(wait));
  wait.params.fence.value = 1;
  checkRuntime(cudaSignalExternalSemaphoresAsync(&semaphore, &signal, 1, stream), "cudaSignalExternalSemaphoresAsync");
  if (cudaSignalExternalSemaphoresAsync(&semaphore, &signal, 0, stream) == cudaSuccess) ++failures;
  checkRuntime(cudaWaitExternalSemaphoresAsync(&semaphore, &wait, 1, stream), "cudaWaitExternalSemaphoresAsync");
  checkRuntime(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  cudaGraph_t graph;
  cudaGraphNode_t signalNode, waitNode;
  cudaGraphExec_t exec;
  struct cudaExternalSemaphoreSignalNodeParams signalParams = {&semaphore, &signal, 1};
  struct cudaExternalSemaphoreWaitNodeParams waitParams = {&semaphore, &wait, 1};
  checkRuntime(cudaGraphCreate(&graph, 0), "cudaGraphCreate");
  checkRuntime(cudaGraphAddExternalSemaphoresSignalNode(&signalNode, graph, NULL, 0, &signalParams),
               "cudaGraphAddExternalSemaphoresSignalNode");
  checkRuntime(cudaGraphAddExternalSemaphoresWaitNode(&waitNode, graph, &signalNode, 1, &waitParams),
               "cudaGraphAddExternalSemaphoresWaitNode");
  signal.params.fence.value = wait.params.fence.value = 2;
  checkRuntime(cudaGraphExternalSemaphoresSignalNodeSetParams(signalNode, &signalParams),
               "cudaGraphExternalSemaphoresSignalNodeSetParams");
  checkRuntime(cudaGraphExternalSemaphoresWaitNodeSetParams(waitNode, &waitParams),
               "cudaGraphExternalSemaphoresWaitNodeSetParams");
  checkRuntime(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  signal.params.fence.value = wait.params.fence.value = 3;
  checkRuntime(cudaGraphExecExternalSemaphoresSignalNodeSetParams(exec, signalNode, &signalParams),
               "cudaGraphExecExternalSemaphoresSignalNodeSetParams");
  checkRuntime(cudaGraphExecExternalSemaphoresWaitNodeSetParams(exec, waitNode, &waitParams),
               "cudaGraphExecExternalSemaphoresWaitNodeSetParams");
  checkRuntime(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  checkRuntime(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  checkRuntime(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  checkRuntime(cudaGraphDestroy(graph), "cudaGraphDestroy");
  checkRuntime(cudaDestroyExternalSemaphore(semaphore), "cudaDestroyExternalSemaphore");
  if (cudaDestroyExternalSemaphore(semaphore) == cudaSuccess) ++failures;
  printf("runtime: semaphore signalled and waited for\n");
}

/* Driver: the same on `stream`, the graph's nodes added and its exec's wait set. */
static void driverSemaphores(CUstream stream) {
  const int fd = memoryFile(0);
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc;
  memset(&desc, 0, sizeof(desc));
  desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
  desc.handle.fd = fd;
  CUexternalSemaphore semaphore;
  if (cuImportExternalSemaphore(&semaphore, &desc) != CUDA_SUCCESS) {
    close(fd);
    printf("driver: semaphore not imported\n");
    return;
  }
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal;
  memset(&signal, 0, sizeof(signal));
  signal.params.fence.value = 7;
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait;
  memset(&wait, 0, sizeof(wait));
  wait.params.fence.value = 7;
  check(cuSignalExternalSemaphoresAsync(&semaphore, &signal, 1, stream), "cuSignalExternalSemaphoresAsync");
  check(cuWaitExternalSemaphoresAsync(&semaphore, &wait, 1, stream), "cuWaitExternalSemaphoresAsync");

  CUgraph graph;
  CUgraphNode signalNode, waitNode;
  CUgraphExec exec;
  CUDA_EXT_SEM_SIGNAL_NODE_PARAMS signalParams = {&semaphore, &signal, 1};
  CUDA_EXT_SEM_WAIT_NODE_PARAMS waitParams = {&semaphore, &wait, 1};
  check(cuGraphCreate(&graph, 0), "cuGraphCreate");
  check(cuGraphAddExternalSemaphoresSignalNode(&signalNode, graph, NULL, 0, &signalParams),
        "cuGraphAddExternalSemaphoresSignalNode");
  check(cuGraphAddExternalSemaphoresWaitNode(&waitNode, graph, &signalNode, 1, &waitParams),
        "cuGraphAddExternalSemaphoresWaitNode");
  check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  wait.params.fence.value = 8;
  check(cuGraphExecExternalSemaphoresWaitNodeSetParams(exec, waitNode, &waitParams),
        "cuGraphExecExternalSemaphoresWaitNodeSetParams");
  check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  check(cuGraphDestroy(graph), "cuGraphDestroy");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(cuDestroyExternalSemaphore(semaphore), "cuDestroyExternalSemaphore");
  printf("driver: semaphore signalled and waited for\n");
}

int main(void) {
  useFirstDevice();
  cudaStream_t stream;
  checkRuntime(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  void* own = NULL;
  checkRuntime(cudaMalloc(&own, 2 << 20), "cudaMalloc");
  runtimeMemory();
  driverMemory();
  runtimeSemaphores(stream);
  driverSemaphores((CUstream)stream);
  checkRuntime(cudaFree(own), "cudaFree");
  checkRuntime(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return failures == 0 ? 0 : 1;
}
