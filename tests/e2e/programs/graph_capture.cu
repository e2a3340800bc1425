// A CUDA graph as torch.compile's CUDA graphs make one: kernels captured from a stream, the graph
// instantiated, then replayed. The capture and the instantiation are host work a user pays for
// once per graph; both are recorded, with the stream and the graph.
//   usage: graph_capture
#include <cstdio>

__global__ void captured_fill(float* p, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}
__global__ void captured_scale(float* p, float f, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= f;
}

#define CHECK(call)                                                              \
  do {                                                                           \
    const cudaError_t e_ = (call);                                               \
    if (e_ != cudaSuccess) {                                                     \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int main() {
  const int n = 1 << 12;
  float* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  captured_fill<<<n / 256, 256, 0, s>>>(p, 1.0f, n);
  captured_scale<<<n / 256, 256, 0, s>>>(p, 2.0f, n);
  CHECK(cudaStreamEndCapture(s, &graph));
  // Ending a capture that is not running is refused (and recorded with its result).
  cudaGraph_t none;
  if (cudaStreamEndCapture(s, &none) == cudaSuccess) return 1;
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 2; ++i) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(p));
  printf("graph replayed\n");
  return 0;
}
