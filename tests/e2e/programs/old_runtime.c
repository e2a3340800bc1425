/* A program built against CUDA 11's runtime instantiates a graph with the five-parameter
 * cudaGraphInstantiate (its log buffer and size last), updates it with the four-parameter
 * cudaGraphExecUpdate (the result out last) and prefetches with a device ordinal before the stream;
 * built against 12.8's, copies in batches with the index of a failed copy before the stream, and
 * advises on managed memory with a device ordinal and (12.2's second version) a location, and adds
 * a graph's edges without their data.
 * Under cutrace the calls must reach the runtime whole: the log written where the program asked,
 * the result written, the copies made, the stream the one passed, and be recorded (the prefetches
 * and batches with their streams).
 *
 *   usage: old_runtime */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

int cudaGraphInstantiate(void** exec, void* graph, void* errorNode, char* logBuffer, size_t bufferSize);
int cudaGraphExecUpdate(void* exec, void* graph, void** errorNode, int* result);
int cudaMemPrefetchAsync(const void* p, size_t count, int dstDevice, void* stream);
int cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count, void* attrs,
                         size_t* attrsIdxs, size_t numAttrs, size_t* failIdx, void* stream);
int cudaMemcpy3DBatchAsync(size_t count, void* ops, size_t* failIdx, unsigned long long flags, void* stream);
extern void* lastPrefetchStream;
int cudaMemAdvise(const void* p, size_t count, int advice, int device);
struct Location {
  int type, id;
};
int cudaMemAdvise_v2(const void* p, size_t count, int advice, struct Location location);
extern int lastAdvice, lastAdviceDevice;
int cudaGraphAddDependencies(void* graph, void* const* from, void* const* to, size_t count);
extern size_t lastEdges;

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
  return 0;
}
