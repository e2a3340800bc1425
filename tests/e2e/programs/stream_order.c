/* The calls that order work across streams without blocking, as PyTorch makes them around its
 * streams and collectives: event records, stream waits on events, event and stream queries,
 * through the runtime (each with the driver call it makes) and through the driver.
 *
 *   usage: stream_order */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "cuda_check.h"

int main(void) {
  cudaStream_t producer, consumer;
  cudaEvent_t done;
  checkRuntime(cudaStreamCreate(&producer), "cudaStreamCreate");
  checkRuntime(cudaStreamCreate(&consumer), "cudaStreamCreate");
  checkRuntime(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags");

  checkRuntime(cudaEventRecord(done, producer), "cudaEventRecord");
  checkRuntime(cudaStreamWaitEvent(consumer, done, 0), "cudaStreamWaitEvent");
  checkRuntime(cudaEventQuery(done), "cudaEventQuery");
  checkRuntime(cudaStreamQuery(consumer), "cudaStreamQuery");

  check(cuEventRecord((CUevent)done, (CUstream)consumer), "cuEventRecord");
  check(cuStreamWaitEvent((CUstream)producer, (CUevent)done, 0), "cuStreamWaitEvent");
  check(cuEventQuery((CUevent)done), "cuEventQuery");
  check(cuStreamQuery((CUstream)producer), "cuStreamQuery");
  /* Refused: no such flag. */
  if (cudaStreamWaitEvent(consumer, done, 0x80) == cudaSuccess) ++failures;

  checkRuntime(cudaEventDestroy(done), "cudaEventDestroy");
  checkRuntime(cudaStreamDestroy(consumer), "cudaStreamDestroy");
  checkRuntime(cudaStreamDestroy(producer), "cudaStreamDestroy");
  printf("ordered\n");
  return failures == 0 ? 0 : 1;
}
