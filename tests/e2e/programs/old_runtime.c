/* A program built against CUDA 11's runtime instantiates a graph with the five-parameter
 * cudaGraphInstantiate (its log buffer and size last). Under cutrace the call must reach the
 * runtime whole: the log written where the program asked, the call recorded.
 *
 *   usage: old_runtime */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

int cudaGraphInstantiate(void** exec, void* graph, void* errorNode, char* logBuffer, size_t bufferSize);

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
  return 0;
}
