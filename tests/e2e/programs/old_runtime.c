/* A program built against CUDA 11's runtime instantiates a graph with the five-parameter
 * cudaGraphInstantiate (its log buffer and size last), updates it with the four-parameter
 * cudaGraphExecUpdate (the result out last) and prefetches with a device ordinal before the stream.
 * Under cutrace the calls must reach the runtime whole: the log written where the program asked,
 * the result written, the stream the one passed, and be recorded (the prefetch with its stream).
 *
 *   usage: old_runtime */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

int cudaGraphInstantiate(void** exec, void* graph, void* errorNode, char* logBuffer, size_t bufferSize);
int cudaGraphExecUpdate(void* exec, void* graph, void** errorNode, int* result);
int cudaMemPrefetchAsync(const void* p, size_t count, int dstDevice, void* stream);
extern void* lastPrefetchStream;

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
  return 0;
}
