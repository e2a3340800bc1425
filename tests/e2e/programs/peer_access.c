/* Direct access to peer devices' memory, as multi-GPU processes enable it (PyTorch's copies between
 * devices): for each device this one can reach, access enabled and disabled through the driver
 * (the peer's context) and through the runtime (the peer's ordinal); each way refused for this
 * device's own context and ordinal, which is no peer of itself. With one device, only the refusals
 * are made.
 *
 *   usage: peer_access */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "cuda_check.h"

int main(void) {
  const CUdevice dev = useFirstDevice();
  CUcontext own;
  int devices = 0, peers = 0;
  check(cuCtxGetCurrent(&own), "cuCtxGetCurrent");
  check(cuDeviceGetCount(&devices), "cuDeviceGetCount");
  for (int peer = 0; peer < devices; ++peer) {
    int can = 0;
    check(cuDeviceCanAccessPeer(&can, dev, peer), "cuDeviceCanAccessPeer");
    if (!can) continue;
    CUcontext peerContext;
    check(cuDevicePrimaryCtxRetain(&peerContext, peer), "cuDevicePrimaryCtxRetain");
    check(cuCtxEnablePeerAccess(peerContext, 0), "cuCtxEnablePeerAccess");
    check(cuCtxDisablePeerAccess(peerContext), "cuCtxDisablePeerAccess");
    checkRuntime(cudaDeviceEnablePeerAccess(peer, 0), "cudaDeviceEnablePeerAccess");
    checkRuntime(cudaDeviceDisablePeerAccess(peer), "cudaDeviceDisablePeerAccess");
    check(cuDevicePrimaryCtxRelease(peer), "cuDevicePrimaryCtxRelease");
    ++peers;
  }
  if (cuCtxEnablePeerAccess(own, 0) == CUDA_SUCCESS) ++failures;
  if (cuCtxDisablePeerAccess(own) == CUDA_SUCCESS) ++failures;
  if (cudaDeviceEnablePeerAccess(dev, 0) == cudaSuccess) ++failures;
  if (cudaDeviceDisablePeerAccess(dev) == cudaSuccess) ++failures;
  printf("peer access with %d peers\n", peers);
  return failures == 0 ? 0 : 1;
}
