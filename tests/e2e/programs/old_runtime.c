/* A program built against CUDA 11's runtime instantiates a graph with the five-parameter
 * cudaGraphInstantiate (its log buffer and size last), updates it with the four-parameter
 * cudaGraphExecUpdate (the result out last) and prefetches with a device ordinal before the stream;
 * built against 12.8's, copies in batches with the index of a failed copy before the stream, and
 * advises on managed memory with a device ordinal and (12.2's second version) a location, and adds
 * a graph's edges without their data; built against 11.2-12.9's, calls the names those headers and
 * runtimes have and 13's not (below).
 * Under cutrace the calls must reach the runtime whole: the log written where the program asked,
 * the result written, the copies made, the stream the one passed, and be recorded (the prefetches
 * and batches with their streams).
 *
 *   usage: old_runtime */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cudart11.h"

/* Programs built with CUDA 11.2-12.9's headers: external semaphores signalled and waited for on
 * two streams and the per-thread one (the _ptsz names), one wait of none (refused); a capture's
 * dependencies, a node and edges given with edge data (12.3's second versions); the device
 * synchronised, reset and set up (a stack size, one refused; a cache preference) by their pre-4.0
 * names; a cooperative kernel launched on two devices, and a launch of an empty list (refused). */
static int newerCalls(void) {
  static int semA, semB, graph, nodeParams;
  void* const sems[] = {&semA, &semB};
  char params[2][144] = {{0}};
  void* const s1 = (void*)0x5200, *s2 = (void*)0x5210, *perThread = (void*)0x2;
  if (cudaSignalExternalSemaphoresAsync_v2(sems, params, 2, s1) != 0 || lastSemaphore != &semA || lastCount != 2 ||
      lastStream != s1 || cudaWaitExternalSemaphoresAsync_v2(sems + 1, params, 1, s2) != 0 ||
      lastSemaphore != &semB || lastStream != s2 ||
      cudaSignalExternalSemaphoresAsync_v2_ptsz(sems + 1, params, 1, perThread) != 0 || lastStream != perThread ||
      cudaWaitExternalSemaphoresAsync_v2_ptsz(sems, params, 2, s1) != 0 || lastStream != s1 ||
      cudaWaitExternalSemaphoresAsync_v2(sems, params, 0, s2) != 1) {
    printf("semaphores: %p on %p\n", lastSemaphore, lastStream);
    return 1;
  }
  void* const nodes[] = {&graph, &nodeParams, &graph};
  const struct EdgeData edges[3] = {{0}};
  void* node = NULL;
  if (cudaStreamUpdateCaptureDependencies_v2(s2, nodes, edges, 2, 1) != 0 || lastStream != s2 || lastCount != 2 ||
      cudaStreamUpdateCaptureDependencies_v2_ptsz(perThread, nodes, edges, 3, 0) != 0 || lastStream != perThread ||
      lastCount != 3 || cudaGraphAddNode_v2(&node, &graph, nodes, edges, 1, &nodeParams) != 0 ||
      node != &nodeParams || lastCount != 1 || cudaGraphAddDependencies_v2(&graph, nodes, nodes + 1, edges, 2) != 0 ||
      lastEdges != 2 || cudaGraphRemoveDependencies_v2(&graph, nodes, nodes + 1, edges, 1) != 0 || lastEdges != 1) {
    printf("edges: %zu, %zu\n", lastCount, lastEdges);
    return 1;
  }
  if (cudaThreadSynchronize() != 0 || cudaThreadExit() != 0 || synchronized != 1 || exited != 1 ||
      cudaThreadSetLimit(0, 8192) != 0 || lastLimit != 8192 || cudaThreadSetCacheConfig(2) != 0 || lastCacheConfig != 2 ||
      cudaThreadSetLimit(9, 1) != 1) {
    printf("thread calls: %d %d %zu %d\n", synchronized, exited, lastLimit, lastCacheConfig);
    return 1;
  }
  static char stub;
  __cudaRegisterFunction(NULL, &stub, &stub, "cooperative_step", -1, NULL, NULL, NULL, NULL, NULL);
  struct LaunchParams list[2] = {{&stub, {4, 2, 1}, {128, 1, 1}, NULL, 256, s1},
                                 {&stub, {4, 2, 1}, {128, 1, 1}, NULL, 256, s2}};
  if (cudaLaunchCooperativeKernelMultiDevice(list, 2, 0) != 0 || lastCount != 2 || lastStream != s1 ||
      cudaLaunchCooperativeKernelMultiDevice(NULL, 0, 0) != 1) {
    printf("cooperative launch: %zu devices\n", lastCount);
    return 1;
  }
  return 0;
}

int main(void) {
  static int graph;
  void* exec = NULL;
  char log[64];
  memset(log, 'x', sizeof(log));
  const int rc = cudaGraphInstantiate(&exec, &graph, NULL, log, sizeof(log));
  if (rc != 0 || exec != &graph || strcmp(log, "instantiated") != 0) {
    printf("cudaGraphInstantiate: %d\n", rc);
    return 1;
  }
  printf("log: %s\n", log);
  void* errorNode = &graph;
  int result = -1;
  if (cudaGraphExecUpdate(exec, &graph, &errorNode, &result) != 0 || errorNode != NULL || result != 0) {
    printf("cudaGraphExecUpdate: result %d\n", result);
    return 1;
  }
  /* Two streams, the legacy one, the first again: the trace must show that pattern. */
  static char managed[4096];
  void* const streams[] = {(void*)0x5170, (void*)0x5180, NULL, (void*)0x5170};
  for (int i = 0; i < 4; ++i) {
    if (cudaMemPrefetchAsync(managed, sizeof(managed), 0, streams[i]) != 0 || lastPrefetchStream != streams[i]) {
      printf("cudaMemPrefetchAsync: stream %p\n", lastPrefetchStream);
      return 1;
    }
  }
  /* A batch of two copies, then of one 3D copy, each on its own stream. */
  char from[8] = "batched", to[8] = "", again[8] = "";
  void* dsts[] = {to, again};
  const void* srcs[] = {from, from};
  size_t sizes[] = {sizeof(from), sizeof(from)}, attrsIdxs[] = {0}, failIdx = 0;
  char attrs[64] = {0};
  if (cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, attrs, attrsIdxs, 1, &failIdx, (void*)0x5190) != 0 ||
      strcmp(to, "batched") != 0 || strcmp(again, "batched") != 0 || failIdx != (size_t)-1 ||
      lastPrefetchStream != (void*)0x5190) {
    printf("cudaMemcpyBatchAsync: stream %p\n", lastPrefetchStream);
    return 1;
  }
  /* One operation of an empty extent (zeros; larger than CUDA's cudaMemcpy3DBatchOp, which cutrace
   * reads for the extent). */
  static char op[256];
  failIdx = 0;
  if (cudaMemcpy3DBatchAsync(1, op, &failIdx, 0, (void*)0x51a0) != 0 || failIdx != (size_t)-1 ||
      lastPrefetchStream != (void*)0x51a0) {
    printf("cudaMemcpy3DBatchAsync: stream %p\n", lastPrefetchStream);
    return 1;
  }
  /* Preferred on device 3 (cudaMemAdviseSetPreferredLocation), read by device 5 (SetAccessedBy). */
  static char managedToo[8192];
  const struct Location device5 = {1, 5};
  if (cudaMemAdvise(managedToo, sizeof(managedToo), 3, 3) != 0 || lastAdvice != 3 || lastAdviceDevice != 3 ||
      cudaMemAdvise_v2(managedToo, 4096, 5, device5) != 0 || lastAdvice != 5 || lastAdviceDevice != 5) {
    printf("cudaMemAdvise: advice %d device %d\n", lastAdvice, lastAdviceDevice);
    return 1;
  }
  void* const nodes[] = {&graph, &graph, &graph, &graph};
  if (cudaGraphAddDependencies(&graph, nodes, nodes + 2, 2) != 0 || lastEdges != 2) {
    printf("cudaGraphAddDependencies: %zu edges\n", lastEdges);
    return 1;
  }
  return newerCalls();
}
