/* Pitched volumes, as simulations and image pipelines lay out 3D data: made with cudaMalloc3D, set
 * whole and in part with cudaMemset3D and cudaMemset3DAsync, copied between devices' memory with
 * cudaMemcpy3DPeer, cudaMemcpy3DPeerAsync and the driver's cuMemcpy3DPeer, cuMemcpy3DPeerAsync (one
 * device here: its own memory on both sides), each with its bytes and stream, the data checked
 * against a model of every step; a set wider than the pitch and a copy from a device that does not
 * exist are refused; the device is reset at the end.
 *
 *   usage: pitched */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

typedef struct cudaPos cudaPos;
typedef struct cudaExtent cudaExtent;
typedef struct cudaPitchedPtr cudaPitchedPtr;
typedef struct cudaMemcpy3DPeerParms cudaMemcpy3DPeerParms;

enum { W = 48, H = 5, D = 3 }; /* bytes a row, rows a slice, slices */

static cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) {
  cudaExtent e = {w, h, d};
  return e;
}
static cudaPos make_cudaPos(size_t x, size_t y, size_t z) {
  cudaPos p = {x, y, z};
  return p;
}

typedef unsigned char Volume[D][H][W];

static void modelSet(Volume v, cudaPos at, cudaExtent e, unsigned char value) {
  for (size_t z = 0; z < e.depth; ++z)
    for (size_t y = 0; y < e.height; ++y) memset(&v[at.z + z][at.y + y][at.x], value, e.width);
}

static void modelCopy(Volume dst, cudaPos to, Volume src, cudaPos from, cudaExtent e) {
  for (size_t z = 0; z < e.depth; ++z)
    for (size_t y = 0; y < e.height; ++y)
      memmove(&dst[to.z + z][to.y + y][to.x], &src[from.z + z][from.y + y][from.x], e.width);
}

/* The device's volume, read back, against the model (the pitch's padding excluded). */
static void compare(cudaPitchedPtr p, Volume model, const char* what) {
  static unsigned char host[D * H * 1024];
  if (p.pitch * H * D > sizeof(host)) {
    fprintf(stderr, "%s: pitch %zu too wide\n", what, p.pitch);
    ++failures;
    return;
  }
  checkRuntime(cudaMemcpy(host, p.ptr, p.pitch * H * D, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (size_t z = 0; z < D; ++z)
    for (size_t y = 0; y < H; ++y)
      if (memcmp(host + (z * H + y) * p.pitch, model[z][y], W) != 0) {
        fprintf(stderr, "%s: slice %zu row %zu differs\n", what, z, y);
        ++failures;
        return;
      }
}

static cudaMemcpy3DPeerParms peerCopy(cudaPitchedPtr dst, cudaPos to, cudaPitchedPtr src, cudaPos from, cudaExtent e) {
  cudaMemcpy3DPeerParms p;
  memset(&p, 0, sizeof(p));
  p.dstPtr = dst, p.dstPos = to, p.dstDevice = 0;
  p.srcPtr = src, p.srcPos = from, p.srcDevice = 0;
  p.extent = e;
  return p;
}

static CUDA_MEMCPY3D_PEER driverPeerCopy(CUcontext ctx, cudaPitchedPtr dst, cudaPos to, cudaPitchedPtr src,
                                         cudaPos from, cudaExtent e) {
  CUDA_MEMCPY3D_PEER p;
  memset(&p, 0, sizeof(p));
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE, p.dstDevice = (CUdeviceptr)dst.ptr, p.dstContext = ctx;
  p.dstPitch = dst.pitch, p.dstHeight = dst.ysize;
  p.dstXInBytes = to.x, p.dstY = to.y, p.dstZ = to.z;
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE, p.srcDevice = (CUdeviceptr)src.ptr, p.srcContext = ctx;
  p.srcPitch = src.pitch, p.srcHeight = src.ysize;
  p.srcXInBytes = from.x, p.srcY = from.y, p.srcZ = from.z;
  p.WidthInBytes = e.width, p.Height = e.height, p.Depth = e.depth;
  return p;
}

int main(void) {
  static Volume ma, mb;
  /* A blocking stream: it waits for the legacy stream's work, and that for its. */
  cudaStream_t s;
  checkRuntime(cudaStreamCreate(&s), "cudaStreamCreate");
  const cudaExtent whole = make_cudaExtent(W, H, D);
  const cudaPos origin = make_cudaPos(0, 0, 0);
  cudaPitchedPtr a, b;
  checkRuntime(cudaMalloc3D(&a, whole), "cudaMalloc3D");
  checkRuntime(cudaMalloc3D(&b, whole), "cudaMalloc3D");

  checkRuntime(cudaMemset3D(a, 0x11, whole), "cudaMemset3D");
  modelSet(ma, origin, whole, 0x11);
  checkRuntime(cudaMemset3D(b, 0x33, whole), "cudaMemset3D");
  modelSet(mb, origin, whole, 0x33);
  /* Slices 1 and 2, their first two rows, 16 bytes of each. */
  cudaPitchedPtr inner = a;
  inner.ptr = (char*)a.ptr + a.pitch * a.ysize;
  checkRuntime(cudaMemset3DAsync(inner, 0x22, make_cudaExtent(16, 2, 2), s), "cudaMemset3DAsync");
  modelSet(ma, make_cudaPos(0, 0, 1), make_cudaExtent(16, 2, 2), 0x22);

  cudaMemcpy3DPeerParms p = peerCopy(b, make_cudaPos(0, 0, 1), a, make_cudaPos(8, 1, 0), make_cudaExtent(24, 3, 2));
  checkRuntime(cudaMemcpy3DPeer(&p), "cudaMemcpy3DPeer");
  modelCopy(mb, p.dstPos, ma, p.srcPos, p.extent);
  p = peerCopy(a, make_cudaPos(0, 3, 2), b, make_cudaPos(0, 0, 1), make_cudaExtent(W, 2, 1));
  checkRuntime(cudaMemcpy3DPeerAsync(&p, s), "cudaMemcpy3DPeerAsync");
  modelCopy(ma, p.dstPos, mb, p.srcPos, p.extent);

  CUcontext ctx;
  check(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  CUDA_MEMCPY3D_PEER dp = driverPeerCopy(ctx, b, origin, a, make_cudaPos(16, 0, 0), make_cudaExtent(32, H, 1));
  check(cuMemcpy3DPeer(&dp), "cuMemcpy3DPeer");
  modelCopy(mb, origin, ma, make_cudaPos(16, 0, 0), make_cudaExtent(32, H, 1));
  dp = driverPeerCopy(ctx, a, origin, b, make_cudaPos(0, 0, 2), make_cudaExtent(W, H, 1));
  check(cuMemcpy3DPeerAsync(&dp, (CUstream)s), "cuMemcpy3DPeerAsync");
  modelCopy(ma, origin, mb, make_cudaPos(0, 0, 2), make_cudaExtent(W, H, 1));

  /* Refused: a set wider than the pitch; a copy from device 99. */
  if (cudaMemset3D(a, 0, make_cudaExtent(a.pitch + 1, 1, 1)) != cudaErrorInvalidValue) ++failures;
  p = peerCopy(b, origin, a, origin, whole);
  p.srcDevice = 99;
  if (cudaMemcpy3DPeer(&p) != cudaErrorInvalidDevice) ++failures;
  cudaGetLastError();

  checkRuntime(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  compare(a, ma, "a");
  compare(b, mb, "b");
  checkRuntime(cudaFree(a.ptr), "cudaFree");
  checkRuntime(cudaFree(b.ptr), "cudaFree");
  checkRuntime(cudaStreamDestroy(s), "cudaStreamDestroy");
  checkRuntime(cudaDeviceReset(), "cudaDeviceReset");
  printf("pitched\n");
  return failures == 0 ? 0 : 1;
}
