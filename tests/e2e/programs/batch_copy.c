/* Copies in batches, as KV-cache offloading and PyTorch's grouped pinned-memory copies make them
 * with CUDA 13's cuMemcpyBatchAsync: one call, one event, the bytes of all its copies; a batch
 * the driver refuses (on the legacy stream) is recorded with its result and no bytes. The same
 * with CUDA 12.8's first version (the index of a failed copy out), with the 3D batches of both
 * versions (boxes of pitched memory), and with the runtime's batches, each nesting the driver's;
 * buffers decompressed in one call (CUDA 12.8). The data of every copy is checked.
 *
 *   usage: batch_copy */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

/* The first versions' symbols: cuda.h names the second ones cuMemcpyBatchAsync, cuMemcpy3DBatchAsync. */
CUresult copyBatchV1(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
                     size_t* attrsIdxs, size_t numAttrs, size_t* failIdx, CUstream s) __asm__("cuMemcpyBatchAsync");
CUresult copy3DBatchV1(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* failIdx, unsigned long long flags,
                       CUstream s) __asm__("cuMemcpy3DBatchAsync");

/* An operand of linear memory whose rows are 256 bytes apart and slices `rows` rows. */
static CUmemcpy3DOperand pointerOperand(CUdeviceptr p, size_t rows) {
  CUmemcpy3DOperand o;
  memset(&o, 0, sizeof(o));
  o.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  o.op.ptr.ptr = p;
  o.op.ptr.rowLength = 256;
  o.op.ptr.layerHeight = rows;
  return o;
}
/* A box of 64 x 4 x 2 bytes. */
static CUDA_MEMCPY3D_BATCH_OP boxCopy(CUdeviceptr dst, size_t dstRows, CUdeviceptr src, size_t srcRows) {
  CUDA_MEMCPY3D_BATCH_OP op;
  memset(&op, 0, sizeof(op));
  op.src = pointerOperand(src, srcRows);
  op.dst = pointerOperand(dst, dstRows);
  op.extent.width = 64, op.extent.height = 4, op.extent.depth = 2;
  op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  return op;
}

/* Whether rows (z * rows + y) of `box`, z < 2 and y < 4, start with 64 bytes of the source row's
 * number (z * 8 + y) followed by a 0. */
static int boxCopied(const unsigned char* box, size_t rows) {
  for (unsigned z = 0; z < 2; ++z)
    for (unsigned y = 0; y < 4; ++y) {
      const unsigned char* row = box + (z * rows + y) * 256;
      if (row[0] != z * 8 + y || row[63] != z * 8 + y || row[64] != 0) return 0;
    }
  return 1;
}

/* CUDA 12.8's batch decompression, where the device has an engine that takes LZ4 (the stand-in's;
 * H100 and H200 have none): a 13-byte block into "abcdabcdabcdefghi", read back; the same into a
 * buffer too small for it, refused. The call shows as a copy of the compressed bytes. */
static void decompress(CUdevice dev, CUstream s) {
  int algorithms = 0;
  check(cuDeviceGetAttribute(&algorithms, CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK, dev), "cuDeviceGetAttribute");
  if (!(algorithms & CU_MEM_DECOMPRESS_ALGORITHM_LZ4)) return;
  static const unsigned char block[] = {0x44, 'a', 'b', 'c', 'd', 4, 0, 0x50, 'e', 'f', 'g', 'h', 'i'};
  static const char expected[] = "abcdabcdabcdefghi";
  CUdeviceptr src, dst, actual;
  check(cuMemAlloc(&src, sizeof(block)), "cuMemAlloc");
  check(cuMemAlloc(&dst, 64), "cuMemAlloc");
  check(cuMemAlloc(&actual, sizeof(cuuint32_t)), "cuMemAlloc");
  check(cuMemcpyHtoD(src, block, sizeof(block)), "cuMemcpyHtoD");
  CUmemDecompressParams p;
  memset(&p, 0, sizeof(p));
  p.src = (const void*)src, p.srcNumBytes = sizeof(block);
  p.dst = (void*)dst, p.dstNumBytes = 64;
  p.dstActBytes = (cuuint32_t*)actual;
  p.algo = CU_MEM_DECOMPRESS_ALGORITHM_LZ4;
  size_t errorIndex = 0;
  CUmemDecompressParams small = p;
  small.dstNumBytes = 8;
  if (cuMemBatchDecompressAsync(&small, 1, 0, &errorIndex, s) == CUDA_SUCCESS) ++failures;
  if (cuMemBatchDecompressAsync(&p, 1, 0, &errorIndex, s) == CUDA_SUCCESS) { /* the engine may want other memory */
    char out[sizeof(expected)] = {0};
    cuuint32_t written = 0;
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
    check(cuMemcpyDtoH(out, dst, sizeof(expected) - 1), "cuMemcpyDtoH");
    check(cuMemcpyDtoH(&written, actual, sizeof(written)), "cuMemcpyDtoH");
    if (written != sizeof(expected) - 1 || memcmp(out, expected, sizeof(expected) - 1) != 0) ++failures;
  }
  check(cuMemFree(src), "cuMemFree");
  check(cuMemFree(dst), "cuMemFree");
  check(cuMemFree(actual), "cuMemFree");
}

int main(void) {
  const CUdevice dev = useFirstDevice();
  CUstream s;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  unsigned* host;
  CUdeviceptr a, b;
  check(cuMemAllocHost((void**)&host, 4096), "cuMemAllocHost");
  check(cuMemAlloc(&a, 4096), "cuMemAlloc");
  check(cuMemAlloc(&b, 4096), "cuMemAlloc");
  for (unsigned i = 0; i < 1024; ++i) host[i] = i;
  /* host -> a (4 KiB), a -> b (1 KiB), b -> the host's second half (1 KiB): 6 KiB in one call. */
  CUdeviceptr dsts[] = {a, b, (CUdeviceptr)(host + 512)};
  CUdeviceptr srcs[] = {(CUdeviceptr)host, a, b};
  size_t sizes[] = {4096, 1024, 1024};
  CUmemcpyAttributes attrs;
  memset(&attrs, 0, sizeof(attrs));
  attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t attrsIdxs[] = {0};
  check(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attrs, attrsIdxs, 1, s), "cuMemcpyBatchAsync");
  if (cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &attrs, attrsIdxs, 1, CU_STREAM_LEGACY) != CUDA_ERROR_INVALID_VALUE)
    ++failures;
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  for (unsigned i = 0; i < 256; ++i)
    if (host[512 + i] != i) ++failures;

  /* CUDA 12.8's: the host's first 2 KiB to b's second half, b's first KiB (the first batch's) to
   * the host's last; refused on the legacy stream, for no copy in particular. */
  for (unsigned i = 0; i < 512; ++i) host[i] = 5000 + i;
  CUdeviceptr dsts1[] = {b + 2048, (CUdeviceptr)(host + 768)};
  CUdeviceptr srcs1[] = {(CUdeviceptr)host, b};
  size_t sizes1[] = {2048, 1024};
  size_t failIdx = 7;
  check(copyBatchV1(dsts1, srcs1, sizes1, 2, &attrs, attrsIdxs, 1, &failIdx, s), "cuMemcpyBatchAsync (first version)");
  failIdx = 7;
  if (copyBatchV1(dsts1, srcs1, sizes1, 2, &attrs, attrsIdxs, 1, &failIdx, CU_STREAM_LEGACY) != CUDA_ERROR_INVALID_VALUE ||
      failIdx != SIZE_MAX)
    ++failures;
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  for (unsigned i = 0; i < 256; ++i)
    if (host[768 + i] != i) ++failures;

  /* 3D: c holds 16 rows of 256 bytes, each its number's; a box of it to d (8-row slices, as c's)
   * and to the host's second half (4-row slices), 512 bytes each; both versions. */
  CUdeviceptr c, d;
  check(cuMemAlloc(&c, 4096), "cuMemAlloc");
  check(cuMemAlloc(&d, 4096), "cuMemAlloc");
  unsigned char pattern[4096], back[4096];
  for (unsigned i = 0; i < sizeof(pattern); ++i) pattern[i] = (unsigned char)(i / 256);
  check(cuMemcpyHtoD(c, pattern, sizeof(pattern)), "cuMemcpyHtoD");
  check(cuMemsetD8(d, 0, 4096), "cuMemsetD8");
  memset((char*)host + 2048, 0, 2048);
  CUDA_MEMCPY3D_BATCH_OP ops[] = {boxCopy(d, 8, c, 8), boxCopy((CUdeviceptr)host + 2048, 4, c, 8)};
  check(cuMemcpy3DBatchAsync(2, ops, 0, s), "cuMemcpy3DBatchAsync");
  failIdx = 7;
  check(copy3DBatchV1(2, ops, &failIdx, 0, s), "cuMemcpy3DBatchAsync (first version)");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuMemcpyDtoH(back, d, sizeof(back)), "cuMemcpyDtoH");
  if (!boxCopied(back, 8) || !boxCopied((const unsigned char*)host + 2048, 4)) ++failures;

  /* The runtime's: the host's first 2 KiB to a and b's second half (the first version's copy) back
   * to the host; a box of 128 x 2 x 2 bytes of a (2-row slices) to d. */
  for (unsigned i = 0; i < 512; ++i) host[i] = 9000 + i;
  void* rdsts[] = {(void*)a, (void*)(host + 768)};
  const void* rsrcs[] = {host, (const void*)(b + 2048)};
  size_t rsizes[] = {2048, 1024};
  struct cudaMemcpyAttributes rattrs;
  memset(&rattrs, 0, sizeof(rattrs));
  rattrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  checkRuntime(cudaMemcpyBatchAsync(rdsts, rsrcs, rsizes, 2, &rattrs, attrsIdxs, 1, (cudaStream_t)s),
               "cudaMemcpyBatchAsync");
  struct cudaMemcpy3DBatchOp rop;
  memset(&rop, 0, sizeof(rop));
  rop.src.type = rop.dst.type = cudaMemcpyOperandTypePointer;
  rop.src.op.ptr.ptr = (void*)a, rop.src.op.ptr.rowLength = 256, rop.src.op.ptr.layerHeight = 2;
  rop.dst.op.ptr.ptr = (void*)d, rop.dst.op.ptr.rowLength = 256, rop.dst.op.ptr.layerHeight = 2;
  rop.extent.width = 128, rop.extent.height = 2, rop.extent.depth = 2;
  rop.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  checkRuntime(cudaMemcpy3DBatchAsync(1, &rop, 0, (cudaStream_t)s), "cudaMemcpy3DBatchAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  for (unsigned i = 0; i < 256; ++i)
    if (host[768 + i] != 5000 + i) ++failures;
  unsigned words[1024];
  check(cuMemcpyDtoH(words, d, sizeof(words)), "cuMemcpyDtoH");
  for (unsigned row = 0; row < 4; ++row)
    for (unsigned j = 0; j < 32; ++j)
      if (words[row * 64 + j] != 9000 + row * 64 + j) ++failures;
  decompress(dev, s);
  check(cuMemFree(c), "cuMemFree");
  check(cuMemFree(d), "cuMemFree");
  check(cuMemFree(a), "cuMemFree");
  check(cuMemFree(b), "cuMemFree");
  check(cuMemFreeHost(host), "cuMemFreeHost");
  check(cuStreamDestroy(s), "cuStreamDestroy");
  printf("batched\n");
  return failures == 0 ? 0 : 1;
}
