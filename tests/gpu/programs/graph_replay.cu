// A CUDA graph of three kernels, captured from a stream, replayed 100 times, between an eager
// launch before and after. On a GPU every kernel of every replay must be on the device track,
// linked to the cudaGraphLaunch that ran it (tests/gpu/gpu_checks.py graph).
// Prints "GRAPH REPLAYS KERNELS_PER_REPLAY EAGER" for the check.
#include <cstdio>

__global__ void graph_fill(float* p, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}
__global__ void graph_scale(float* p, float f, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= f;
}
__global__ void graph_add(float* p, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += a;
}
__global__ void eager_kernel(float* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 0.0f;
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
  const int n = 1 << 16, replays = 100;
  float* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  eager_kernel<<<n / 256, 256, 0, s>>>(p, n);
  CHECK(cudaGetLastError());
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  graph_fill<<<n / 256, 256, 0, s>>>(p, 1.0f, n);
  graph_scale<<<n / 256, 256, 0, s>>>(p, 2.0f, n);
  graph_add<<<n / 256, 256, 0, s>>>(p, 3.0f, n);
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < replays; ++i) CHECK(cudaGraphLaunch(exec, s));
  eager_kernel<<<n / 256, 256, 0, s>>>(p, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(p));
  printf("GRAPH %d 3 2\n", replays);
  return 0;
}
