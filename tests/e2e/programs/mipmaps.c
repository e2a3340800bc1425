/* Mipmapped arrays (textures' levels of detail) made through the runtime and the driver (one
 * refused: more levels than the extent has), a level of each asked for and filled by the
 * runtime's 3D copies, whose extents count the level's elements (4 and 2 bytes here), read back
 * and checked, each mipmapped array freed. Each shows as one allocation of all its levels' bytes,
 * then its release, in the memory counter too; each copy with its bytes.
 *
 *   usage: mipmaps */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

/* `w` x `h` x `d` elements of `element` bytes from `src` into `level`, then back into `back`. */
static void roundTrip(cudaArray_t level, const void* src, void* back, size_t w, size_t h, size_t d, size_t element) {
  struct cudaMemcpy3DParms to;
  memset(&to, 0, sizeof(to));
  const struct cudaExtent extent = {w, h, d};
  to.srcPtr.ptr = (void*)src, to.srcPtr.pitch = w * element, to.srcPtr.xsize = w, to.srcPtr.ysize = h;
  to.dstArray = level;
  to.extent = extent;
  to.kind = cudaMemcpyHostToDevice;
  checkRuntime(cudaMemcpy3D(&to), "cudaMemcpy3D");
  struct cudaMemcpy3DParms from;
  memset(&from, 0, sizeof(from));
  from.srcArray = level;
  from.dstPtr = to.srcPtr;
  from.dstPtr.ptr = back;
  from.extent = extent;
  from.kind = cudaMemcpyDeviceToHost;
  checkRuntime(cudaMemcpy3D(&from), "cudaMemcpy3D");
  if (memcmp(src, back, w * h * d * element) != 0) {
    fprintf(stderr, "a level read back differs\n");
    ++failures;
  }
}

int main(void) {
  useFirstDevice();

  /* The runtime's: 256 x 256 floats, 9 levels down to 1 x 1 (87381 elements); 10 are too many. */
  const struct cudaChannelFormatDesc floats = {32, 0, 0, 0, cudaChannelFormatKindFloat};
  const struct cudaExtent square = {256, 256, 0};
  cudaMipmappedArray_t texture, refused;
  if (cudaMallocMipmappedArray(&refused, &floats, square, 10, 0) == cudaSuccess) ++failures;
  checkRuntime(cudaMallocMipmappedArray(&texture, &floats, square, 9, 0), "cudaMallocMipmappedArray");
  cudaArray_t level2;
  checkRuntime(cudaGetMipmappedArrayLevel(&level2, texture, 2), "cudaGetMipmappedArrayLevel");
  static float values[64 * 64], back[64 * 64];
  for (int i = 0; i < 64 * 64; ++i) values[i] = (float)i;
  roundTrip(level2, values, back, 64, 64, 1, sizeof(float));

  /* The driver's: 32 x 16 x 8 pairs of bytes, 4 levels (4096 + 512 + 64 + 8 elements). */
  CUDA_ARRAY3D_DESCRIPTOR box;
  memset(&box, 0, sizeof(box));
  box.Width = 32, box.Height = 16, box.Depth = 8;
  box.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  box.NumChannels = 2;
  CUmipmappedArray volume;
  CUarray level1;
  check(cuMipmappedArrayCreate(&volume, &box, 4), "cuMipmappedArrayCreate");
  check(cuMipmappedArrayGetLevel(&level1, volume, 1), "cuMipmappedArrayGetLevel");
  static unsigned char bytes[16 * 8 * 4 * 2], bytesBack[16 * 8 * 4 * 2];
  for (size_t i = 0; i < sizeof(bytes); ++i) bytes[i] = (unsigned char)(i * 7);
  roundTrip((cudaArray_t)level1, bytes, bytesBack, 16, 8, 4, 2);

  check(cuMipmappedArrayDestroy(volume), "cuMipmappedArrayDestroy");
  checkRuntime(cudaFreeMipmappedArray(texture), "cudaFreeMipmappedArray");
  printf("mipmapped arrays made, filled, read back and freed\n");
  return failures == 0 ? 0 : 1;
}
