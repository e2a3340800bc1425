/* OpenGL buffers and images used by CUDA, as a rendering or visualisation loop uses them: a buffer
 * and an image registered through the runtime and the driver (one refused: no buffer), both
 * mapped on a stream at once, the buffer's memory written through its mapped pointer and read
 * back, unmapped, and unregistered (one twice: refused); a mapped resource mapped again and an
 * unmapped one unmapped are refused. Each registration shows the resource made, its map, unmap
 * and unregistration the same resource (the first of a list), the maps and unmaps their streams.
 *
 * There is no OpenGL here: the stand-in driver takes any object but 0 (NVIDIA's needs the object
 * of a current OpenGL context); cudaGL.h's declarations come from the stand-ins' gl_interop.h.
 * The toolkit's stub libcuda has no OpenGL entry points to link to: the driver's registrations
 * are looked up with cuGetProcAddress, as a program loading the driver at run time does.
 *
 *   usage: graphics_interop */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"
#include "gl_interop.h"

/* cuda.h declares the per-thread-stream twin only for the driver's own build. */
CUresult CUDAAPI cuGraphicsMapResources_ptsz(unsigned count, CUgraphicsResource* resources, CUstream stream);

enum { kBuffer = 7, kImage = 9, kTexture2D = 0x0DE1 /* GL_TEXTURE_2D */ };

/* Runtime: a buffer and an image mapped together on `stream`, the buffer written and read. */
static void runtimeInterop(cudaStream_t stream) {
  cudaGraphicsResource_t resources[2], refused = NULL;
  checkRuntime(cudaGraphicsGLRegisterBuffer(&resources[0], kBuffer, cudaGraphicsRegisterFlagsNone),
               "cudaGraphicsGLRegisterBuffer");
  if (cudaGraphicsGLRegisterBuffer(&refused, 0, cudaGraphicsRegisterFlagsNone) == cudaSuccess) ++failures;
  checkRuntime(cudaGraphicsGLRegisterImage(&resources[1], kImage, kTexture2D, cudaGraphicsRegisterFlagsNone),
               "cudaGraphicsGLRegisterImage");
  checkRuntime(cudaGraphicsMapResources(2, resources, stream), "cudaGraphicsMapResources");
  if (cudaGraphicsMapResources(1, resources, stream) != cudaErrorAlreadyMapped) ++failures;
  void* memory = NULL;
  size_t bytes = 0;
  checkRuntime(cudaGraphicsResourceGetMappedPointer(&memory, &bytes, resources[0]),
               "cudaGraphicsResourceGetMappedPointer");
  unsigned char back[16] = {0};
  checkRuntime(cudaMemsetAsync(memory, 0x5a, bytes, stream), "cudaMemsetAsync");
  checkRuntime(cudaMemcpyAsync(back, memory, sizeof(back), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  checkRuntime(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (back[0] != 0x5a || back[15] != 0x5a) ++failures;
  checkRuntime(cudaGraphicsUnmapResources(2, resources, stream), "cudaGraphicsUnmapResources");
  if (cudaGraphicsUnmapResources(1, &resources[1], stream) != cudaErrorNotMapped) ++failures;
  checkRuntime(cudaGraphicsUnregisterResource(resources[0]), "cudaGraphicsUnregisterResource");
  checkRuntime(cudaGraphicsUnregisterResource(resources[1]), "cudaGraphicsUnregisterResource");
  if (cudaGraphicsUnregisterResource(resources[0]) == cudaSuccess) ++failures;
}

/* Driver: the same, the buffer mapped through the per-thread default stream's twin. */
static void driverInterop(CUstream stream) {
  __typeof__(&cuGraphicsGLRegisterBuffer) registerBuffer = NULL;
  __typeof__(&cuGraphicsGLRegisterImage) registerImage = NULL;
  check(cuGetProcAddress("cuGraphicsGLRegisterBuffer", (void**)&registerBuffer, 3000, CU_GET_PROC_ADDRESS_DEFAULT,
                         NULL),
        "cuGetProcAddress");
  check(cuGetProcAddress("cuGraphicsGLRegisterImage", (void**)&registerImage, 3000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
        "cuGetProcAddress");
  if (registerBuffer == NULL || registerImage == NULL) {
    ++failures;
    return;
  }
  CUgraphicsResource buffer, image;
  check(registerBuffer(&buffer, kBuffer, CU_GRAPHICS_REGISTER_FLAGS_NONE), "cuGraphicsGLRegisterBuffer");
  check(registerImage(&image, kImage, kTexture2D, CU_GRAPHICS_REGISTER_FLAGS_NONE), "cuGraphicsGLRegisterImage");
  check(cuGraphicsMapResources_ptsz(1, &buffer, CU_STREAM_PER_THREAD), "cuGraphicsMapResources_ptsz");
  check(cuGraphicsMapResources(1, &image, stream), "cuGraphicsMapResources");
  CUdeviceptr memory = 0;
  size_t bytes = 0;
  check(cuGraphicsResourceGetMappedPointer(&memory, &bytes, buffer), "cuGraphicsResourceGetMappedPointer");
  if (cuGraphicsResourceGetMappedPointer(&memory, &bytes, image) != CUDA_ERROR_NOT_MAPPED_AS_POINTER) ++failures;
  check(cuMemsetD8(memory, 0xa5, bytes), "cuMemsetD8");
  unsigned char back = 0;
  check(cuMemcpyDtoH(&back, memory + bytes - 1, 1), "cuMemcpyDtoH");
  if (back != 0xa5) ++failures;
  CUgraphicsResource both[] = {buffer, image};
  check(cuGraphicsUnmapResources(2, both, stream), "cuGraphicsUnmapResources");
  check(cuGraphicsUnregisterResource(image), "cuGraphicsUnregisterResource");
  check(cuGraphicsUnregisterResource(buffer), "cuGraphicsUnregisterResource");
}

int main(void) {
  useFirstDevice();
  cudaStream_t stream;
  checkRuntime(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  runtimeInterop(stream);
  driverInterop((CUstream)stream);
  checkRuntime(cudaStreamDestroy(stream), "cudaStreamDestroy");
  printf("graphics resources registered, mapped, used, unmapped and unregistered\n");
  return failures == 0 ? 0 : 1;
}
