/* The calls that order work across streams without blocking, as PyTorch makes them around its
 * streams and collectives: event records (with flags too), stream waits on events, event and
 * stream queries, host functions queued on streams, through the runtime (each with the driver
 * call it makes) and through the driver.
 *
 *   usage: stream_order */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "cuda_check.h"

static int hostCalls;
static void CUDA_CB hostFunction(void* counter) { ++*(int*)counter; }

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
  checkRuntime(cudaEventRecordWithFlags(done, producer, cudaEventRecordDefault), "cudaEventRecordWithFlags");
  check(cuEventRecordWithFlags((CUevent)done, (CUstream)consumer, CU_EVENT_RECORD_DEFAULT), "cuEventRecordWithFlags");
  checkRuntime(cudaLaunchHostFunc(consumer, hostFunction, &hostCalls), "cudaLaunchHostFunc");
  check(cuLaunchHostFunc((CUstream)producer, hostFunction, &hostCalls), "cuLaunchHostFunc");
  /* Refused: no such flag. */
  if (cudaStreamWaitEvent(consumer, done, 0x80) == cudaSuccess) ++failures;

  checkRuntime(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (hostCalls != 2) ++failures;
  checkRuntime(cudaEventDestroy(done), "cudaEventDestroy");
  checkRuntime(cudaStreamDestroy(consumer), "cudaStreamDestroy");
  checkRuntime(cudaStreamDestroy(producer), "cudaStreamDestroy");
  printf("ordered\n");
  return failures == 0 ? 0 : 1;
}
