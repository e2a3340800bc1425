/* CUDA arrays (the memory of textures and surfaces) made, filled, copied and read back every way:
 * the driver's linear copies at a byte offset (from and to the host, at once and in stream order,
 * from and to device memory, array to array) and the runtime's 2D copies (a rectangle at a byte and
 * row offset, at once and in stream order, array to array; and their deprecated first versions,
 * bytes from an offset on, which old binaries call); 3D copies whose extents count the array's
 * elements (the runtime's cudaMemcpy3D and cudaMemcpy3DAsync, and batches of the driver and the
 * runtime: an array's elements are 2 and 4 bytes here). Each copy is one event with its bytes,
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

  /* 3D: 4x4x2 pixels (128 bytes) into the cube and back, then out again in a batch; 8x8x4 shorts
   * (512 bytes) into the driver's volume and back, in batches. */
  unsigned texels[2][4][4], texelsBack[2][4][4];
  for (int i = 0; i < 32; ++i) texels[i / 16][i / 4 % 4][i % 4] = 7000u + (unsigned)i;
  struct cudaMemcpy3DParms p3;
  memset(&p3, 0, sizeof(p3));
  p3.srcPtr.ptr = texels, p3.srcPtr.pitch = 16, p3.srcPtr.xsize = 4, p3.srcPtr.ysize = 4;
  p3.dstArray = cube;
  p3.extent = extent;
  p3.kind = cudaMemcpyHostToDevice;
  checkRuntime(cudaMemcpy3D(&p3), "cudaMemcpy3D");
  memset(&p3, 0, sizeof(p3));
  p3.srcArray = cube;
  p3.dstPtr.ptr = texelsBack, p3.dstPtr.pitch = 16, p3.dstPtr.xsize = 4, p3.dstPtr.ysize = 4;
  p3.extent = extent;
  p3.kind = cudaMemcpyDeviceToHost;
  memset(texelsBack, 0, sizeof(texelsBack));
  checkRuntime(cudaMemcpy3DAsync(&p3, (cudaStream_t)s), "cudaMemcpy3DAsync");
  checkRuntime(cudaStreamSynchronize((cudaStream_t)s), "cudaStreamSynchronize");
  if (memcmp(texels, texelsBack, sizeof(texels)) != 0) ++failures;
  struct cudaMemcpy3DBatchOp out;
  memset(&out, 0, sizeof(out));
  out.src.type = cudaMemcpyOperandTypeArray, out.src.op.array.array = cube;
  out.dst.type = cudaMemcpyOperandTypePointer, out.dst.op.ptr.ptr = texelsBack;
  out.dst.op.ptr.rowLength = 4, out.dst.op.ptr.layerHeight = 4;
  out.extent = extent;
  out.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  memset(texelsBack, 0, sizeof(texelsBack));
  checkRuntime(cudaMemcpy3DBatchAsync(1, &out, 0, (cudaStream_t)s), "cudaMemcpy3DBatchAsync");
  checkRuntime(cudaStreamSynchronize((cudaStream_t)s), "cudaStreamSynchronize");
  if (memcmp(texels, texelsBack, sizeof(texels)) != 0) ++failures;

  unsigned short voxels[4][8][8], voxelsBack[4][8][8];
  for (int i = 0; i < 256; ++i) voxels[i / 64][i / 8 % 8][i % 8] = (unsigned short)(300 + i);
  CUDA_MEMCPY3D_BATCH_OP in, back3D;
  memset(&in, 0, sizeof(in));
  in.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER, in.src.op.ptr.ptr = (CUdeviceptr)voxels;
  in.src.op.ptr.rowLength = 8, in.src.op.ptr.layerHeight = 8;
  in.dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY, in.dst.op.array.array = volume;
  in.extent.width = 8, in.extent.height = 8, in.extent.depth = 4;
  in.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  back3D = in;
  back3D.src = in.dst, back3D.dst = in.src;
  back3D.dst.op.ptr.ptr = (CUdeviceptr)voxelsBack;
  memset(voxelsBack, 0, sizeof(voxelsBack));
  check(cuMemcpy3DBatchAsync(1, &in, 0, s), "cuMemcpy3DBatchAsync");
  check(cuMemcpy3DBatchAsync(1, &back3D, 0, s), "cuMemcpy3DBatchAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  if (memcmp(voxels, voxelsBack, sizeof(voxels)) != 0) ++failures;

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
