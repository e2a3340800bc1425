/* The calls that order work across streams without blocking, as PyTorch makes them around its
 * streams and collectives: event records (with flags too), stream waits on events, event and
 * stream queries, host functions and stream callbacks queued on streams (one refused: flags are
 * reserved), through the runtime (each with the driver call it makes) and through the driver; the
 * driver's stream memory operations (a stream writes a value, waits for one, both in a batch; the
 * first version of one too, as a program built for CUDA 11 looks it up); a stream and an event
 * destroyed through the driver's first versions, as programs built before CUDA 4.0 call them.
 *
 *   usage: stream_order */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

static int hostCalls;
static void CUDA_CB hostFunction(void* counter) { ++*(int*)counter; }
static void CUDA_CB runtimeCallback(cudaStream_t s, cudaError_t status, void* counter) {
  (void)s;
  if (status == cudaSuccess) ++*(int*)counter;
}
static void CUDA_CB driverCallback(CUstream s, CUresult status, void* counter) {
  (void)s;
  if (status == CUDA_SUCCESS) ++*(int*)counter;
}

/* The first versions' symbols: cuda.h names the second ones cuStreamDestroy and cuEventDestroy. */
CUresult streamDestroyV1(CUstream s) __asm__("cuStreamDestroy");
CUresult eventDestroyV1(CUevent e) __asm__("cuEventDestroy");

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
  checkRuntime(cudaStreamAddCallback(consumer, runtimeCallback, &hostCalls, 0), "cudaStreamAddCallback");
  check(cuStreamAddCallback((CUstream)producer, driverCallback, &hostCalls, 0), "cuStreamAddCallback");
  if (cuStreamAddCallback((CUstream)producer, driverCallback, &hostCalls, 1) != CUDA_ERROR_INVALID_VALUE) ++failures;
  /* Refused: no such flag. */
  if (cudaStreamWaitEvent(consumer, done, 0x80) == cudaSuccess) ++failures;

  CUdeviceptr flag;
  check(cuMemAlloc(&flag, 16), "cuMemAlloc");
  check(cuStreamWriteValue32((CUstream)producer, flag, 7, CU_STREAM_WRITE_VALUE_DEFAULT), "cuStreamWriteValue32");
  check(cuStreamWaitValue32((CUstream)consumer, flag, 7, CU_STREAM_WAIT_VALUE_EQ), "cuStreamWaitValue32");
  check(cuStreamWriteValue64((CUstream)producer, flag + 8, 1ull << 40, CU_STREAM_WRITE_VALUE_DEFAULT),
        "cuStreamWriteValue64");
  check(cuStreamWaitValue64((CUstream)consumer, flag + 8, 1ull << 40, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue64");
  CUstreamBatchMemOpParams ops[2];
  memset(ops, 0, sizeof(ops));
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = flag + 4;
  ops[0].writeValue.value = 9;
  ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[1].waitValue.address = flag + 4;
  ops[1].waitValue.value = 9;
  ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  check(cuStreamBatchMemOp((CUstream)consumer, 2, ops, 0), "cuStreamBatchMemOp");
  /* The first version, as cuGetProcAddress answers a program built for CUDA 11.0. */
  CUresult (*waitValueV1)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = NULL;
  CUdriverProcAddressQueryResult found;
  check(cuGetProcAddress("cuStreamWaitValue32", (void**)&waitValueV1, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &found),
        "cuGetProcAddress");
  if (waitValueV1 == NULL) return 1;
  check(waitValueV1((CUstream)consumer, flag, 7, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32 (first version)");
  checkRuntime(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (hostCalls != 4) ++failures;
  unsigned values[4];
  check(cuMemcpyDtoH(values, flag, sizeof(values)), "cuMemcpyDtoH");
  if (values[0] != 7 || values[1] != 9 || values[2] != 0 || values[3] != 1u << 8) ++failures;
  check(cuMemFree(flag), "cuMemFree");
  checkRuntime(cudaEventDestroy(done), "cudaEventDestroy");
  checkRuntime(cudaStreamDestroy(consumer), "cudaStreamDestroy");
  checkRuntime(cudaStreamDestroy(producer), "cudaStreamDestroy");
  CUstream old;
  CUevent oldEvent;
  check(cuStreamCreate(&old, CU_STREAM_DEFAULT), "cuStreamCreate");
  check(cuEventCreate(&oldEvent, CU_EVENT_DEFAULT), "cuEventCreate");
  check(eventDestroyV1(oldEvent), "cuEventDestroy (first version)");
  check(streamDestroyV1(old), "cuStreamDestroy (first version)");
  printf("ordered\n");
  return failures == 0 ? 0 : 1;
}
