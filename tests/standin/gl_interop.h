#pragma once
// The OpenGL interop calls of cudaGL.h (driver) and cuda_gl_interop.h (runtime), whose headers need
// OpenGL's, which a machine without a GPU may not have: GLuint and GLenum are unsigned int. For
// the stand-ins and the programs that test them; included after cuda.h or cuda_runtime_api.h.
#ifdef __cplusplus
extern "C" {
#endif
#ifdef CUDA_VERSION
CUresult CUDAAPI cuGraphicsGLRegisterBuffer(CUgraphicsResource* pCudaResource, unsigned buffer, unsigned Flags);
CUresult CUDAAPI cuGraphicsGLRegisterImage(CUgraphicsResource* pCudaResource, unsigned image, unsigned target,
                                           unsigned Flags);
#endif
#ifdef CUDART_VERSION
cudaError_t CUDARTAPI cudaGraphicsGLRegisterBuffer(struct cudaGraphicsResource** resource, unsigned buffer,
                                                   unsigned flags);
cudaError_t CUDARTAPI cudaGraphicsGLRegisterImage(struct cudaGraphicsResource** resource, unsigned image,
                                                  unsigned target, unsigned flags);
#endif
#ifdef __cplusplus
}
#endif
