/* Green contexts (CUDA 12.4, torch.cuda.green_contexts): a device's SMs described as a resource,
 * a green context made of them (one refused: the default stream is required), a stream of its
 * own that work goes into; the work of the green context recorded into an event that the primary
 * context waits for, and the primary context's recorded into one the green context waits for
 * (CUDA 12.5's context-wide event calls); the green context destroyed. Each event call shows its
 * event, each stream made and used its stream, the green context its handle from creation to
 * destruction.
 *
 *   usage: green_contexts */
#include <cuda.h>
#include <stdio.h>

#include "cuda_check.h"

int main(void) {
  const CUdevice dev = useFirstDevice();
  CUcontext primary;
  check(cuCtxGetCurrent(&primary), "cuCtxGetCurrent");
  CUdevResource sms;
  CUdevResourceDesc desc;
  CUgreenCtx green, refused;
  check(cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  check(cuDevResourceGenerateDesc(&desc, &sms, 1), "cuDevResourceGenerateDesc");
  check(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  if (cuGreenCtxCreate(&refused, desc, dev, 0) == CUDA_SUCCESS) ++failures;

  enum { kBytes = 1 << 16 };
  CUstream stream;
  CUdeviceptr buffer;
  CUevent greenDone, primaryDone;
  check(cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate");
  check(cuMemAlloc(&buffer, kBytes), "cuMemAlloc");
  check(cuEventCreate(&greenDone, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(cuEventCreate(&primaryDone, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(cuMemsetD8Async(buffer, 7, kBytes, stream), "cuMemsetD8Async");
  check(cuGreenCtxRecordEvent(green, greenDone), "cuGreenCtxRecordEvent");
  check(cuCtxWaitEvent(primary, greenDone), "cuCtxWaitEvent");
  check(cuCtxRecordEvent(primary, primaryDone), "cuCtxRecordEvent");
  check(cuGreenCtxWaitEvent(green, primaryDone), "cuGreenCtxWaitEvent");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(cuEventSynchronize(primaryDone), "cuEventSynchronize");

  unsigned char back[kBytes];
  check(cuMemcpyDtoH(back, buffer, kBytes), "cuMemcpyDtoH");
  for (int i = 0; i < kBytes; ++i)
    if (back[i] != 7) {
      fprintf(stderr, "byte %d is %d, not 7\n", i, back[i]);
      ++failures;
      break;
    }
  check(cuEventDestroy(greenDone), "cuEventDestroy");
  check(cuEventDestroy(primaryDone), "cuEventDestroy");
  check(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cuMemFree(buffer), "cuMemFree");
  check(cuGreenCtxDestroy(green), "cuGreenCtxDestroy");
  printf("green context used\n");
  return failures == 0 ? 0 : 1;
}
