/* CUDA arrays (the memory of textures and surfaces) made, filled, copied and read back every way:
 * the driver's linear copies at a byte offset (from and to the host, at once and in stream order,
 * from and to device memory, array to array) and the runtime's 2D copies (a rectangle at a byte and
 * row offset, at once and in stream order, array to array; and their deprecated first versions,
 * bytes from an offset on, which old binaries call). Each copy is one event with its bytes,
 * direction and stream; each array an allocation of its elements' bytes, then its release. Copies
 * past an array's end are refused and recorded with their result. The data is checked after each
 * round trip.
 *
 *   usage: arrays */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

int main(void) {
  useFirstDevice();
  CUstream s;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  /* The driver's: two 1D arrays of 256 floats (1 KiB each), a 3D one of 8x8x4 shorts (512 bytes). */
  CUDA_ARRAY_DESCRIPTOR line = {256, 0, CU_AD_FORMAT_FLOAT, 1};
  CUDA_ARRAY3D_DESCRIPTOR box = {8, 8, 4, CU_AD_FORMAT_UNSIGNED_INT16, 1, 0};
  CUarray a, b, volume;
  check(cuArrayCreate(&a, &line), "cuArrayCreate");
  check(cuArrayCreate(&b, &line), "cuArrayCreate");
  check(cuArray3DCreate(&volume, &box), "cuArray3DCreate");
  float values[256], back[256];
  for (int i = 0; i < 256; ++i) values[i] = (float)i;
  CUdeviceptr dev;
  check(cuMemAlloc(&dev, 1024), "cuMemAlloc");
  check(cuMemcpyHtoA(a, 0, values, 1024), "cuMemcpyHtoA");
  check(cuMemcpyAtoA(b, 0, a, 0, 1024), "cuMemcpyAtoA");
  check(cuMemcpyAtoD(dev, b, 0, 1024), "cuMemcpyAtoD");
  check(cuMemcpyDtoA(a, 512, dev, 512), "cuMemcpyDtoA"); /* the second half: the first again */
  check(cuMemcpyAtoH(back, a, 0, 1024), "cuMemcpyAtoH");
  for (int i = 0; i < 256; ++i)
    if (back[i] != (float)(i % 128)) ++failures;
  memset(back, 0, sizeof(back));
  check(cuMemcpyHtoAAsync(b, 0, values, 1024, s), "cuMemcpyHtoAAsync");
  check(cuMemcpyAtoHAsync(back, b, 0, 1024, s), "cuMemcpyAtoHAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  if (memcmp(back, values, sizeof(back)) != 0) ++failures;
  /* Refused: eight bytes from four before the end. */
  if (cuMemcpyHtoA(a, 1020, values, 8) != CUDA_ERROR_INVALID_VALUE) ++failures;

  /* The runtime's: two 2D arrays of 32x8 four-byte pixels (1 KiB each), a 3D one of 4x4x2 (128 bytes). */
  struct cudaChannelFormatDesc rgba = {8, 8, 8, 8, cudaChannelFormatKindUnsigned};
  struct cudaExtent extent = {4, 4, 2};
  cudaArray_t image, copy, cube;
  checkRuntime(cudaMallocArray(&image, &rgba, 32, 8, 0), "cudaMallocArray");
  checkRuntime(cudaMallocArray(&copy, &rgba, 32, 8, 0), "cudaMallocArray");
  checkRuntime(cudaMalloc3DArray(&cube, &rgba, extent, 0), "cudaMalloc3DArray");
  unsigned pixels[8][32], read[8][32];
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 32; ++x) pixels[y][x] = (unsigned)(y * 32 + x);
  checkRuntime(cudaMemcpy2DToArray(image, 0, 0, pixels, 128, 128, 8, cudaMemcpyHostToDevice), "cudaMemcpy2DToArray");
  checkRuntime(cudaMemcpy2DArrayToArray(copy, 0, 0, image, 0, 0, 128, 8, cudaMemcpyDeviceToDevice),
               "cudaMemcpy2DArrayToArray");
  checkRuntime(cudaMemcpy2DFromArray(read, 128, copy, 0, 0, 128, 8, cudaMemcpyDeviceToHost), "cudaMemcpy2DFromArray");
  if (memcmp(read, pixels, sizeof(read)) != 0) ++failures;
  /* A 16x4 rectangle (256 bytes) at pixel 16 of row 2, into the top left of the copy and back. */
  checkRuntime(cudaMemcpy2DToArrayAsync(copy, 0, 0, &pixels[2][16], 128, 64, 4, cudaMemcpyHostToDevice, (cudaStream_t)s),
               "cudaMemcpy2DToArrayAsync");
  memset(read, 0, sizeof(read));
  checkRuntime(cudaMemcpy2DFromArrayAsync(read, 128, copy, 0, 0, 64, 4, cudaMemcpyDeviceToHost, (cudaStream_t)s),
               "cudaMemcpy2DFromArrayAsync");
  checkRuntime(cudaStreamSynchronize((cudaStream_t)s), "cudaStreamSynchronize");
  for (int y = 0; y < 4; ++y)
    if (memcmp(read[y], &pixels[2 + y][16], 64) != 0) ++failures;
  /* The first versions: 256 bytes at byte 32 of row 1 and back, 128 of them into the copy's last
   * row; 64 bytes in stream order at the start, and back. */
  float line1[64];
  checkRuntime(cudaMemcpyToArray(image, 32, 1, values, 256, cudaMemcpyHostToDevice), "cudaMemcpyToArray");
  checkRuntime(cudaMemcpyFromArray(line1, image, 32, 1, 256, cudaMemcpyDeviceToHost), "cudaMemcpyFromArray");
  if (memcmp(line1, values, 256) != 0) ++failures;
  checkRuntime(cudaMemcpyArrayToArray(copy, 0, 7, image, 32, 1, 128, cudaMemcpyDeviceToDevice), "cudaMemcpyArrayToArray");
  checkRuntime(cudaMemcpyFromArray(line1, copy, 0, 7, 128, cudaMemcpyDeviceToHost), "cudaMemcpyFromArray");
  if (memcmp(line1, values, 128) != 0) ++failures;
  checkRuntime(cudaMemcpyToArrayAsync(image, 0, 0, &values[64], 64, cudaMemcpyHostToDevice, (cudaStream_t)s),
               "cudaMemcpyToArrayAsync");
  checkRuntime(cudaMemcpyFromArrayAsync(line1, image, 0, 0, 64, cudaMemcpyDeviceToHost, (cudaStream_t)s),
               "cudaMemcpyFromArrayAsync");
  checkRuntime(cudaStreamSynchronize((cudaStream_t)s), "cudaStreamSynchronize");
  if (memcmp(line1, &values[64], 64) != 0) ++failures;
  /* Refused: four rows from row 6 of eight. */
  if (cudaMemcpy2DToArray(image, 0, 6, pixels, 128, 128, 4, cudaMemcpyHostToDevice) == cudaSuccess) ++failures;
  (void)cudaGetLastError();

  checkRuntime(cudaFreeArray(cube), "cudaFreeArray");
  checkRuntime(cudaFreeArray(copy), "cudaFreeArray");
  checkRuntime(cudaFreeArray(image), "cudaFreeArray");
  check(cuMemFree(dev), "cuMemFree");
  check(cuArrayDestroy(volume), "cuArrayDestroy");
  check(cuArrayDestroy(b), "cuArrayDestroy");
  check(cuArrayDestroy(a), "cuArrayDestroy");
  check(cuStreamDestroy(s), "cuStreamDestroy");
  printf("arrays copied\n");
  return failures == 0 ? 0 : 1;
}
