// A CUDA graph as torch.compile's CUDA graphs make one: kernels captured from a stream, the graph
// instantiated, uploaded, then replayed; and one captured into a graph the program made,
// instantiated with parameters. The capture and the instantiation are host work a user pays for
// once per graph; both are recorded, with the stream and the graph. The work made while a stream
// is captured is flagged as captured (it runs in the replays), whichever thread made it, and
// only that work.
//   usage: graph_capture
#include <cstdio>
#include <thread>

#include "cuda_check.h"

__global__ void captured_fill(float* p, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}
__global__ void captured_scale(float* p, float f, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= f;
}

int main() {
  const int n = 1 << 12;
  float* p = nullptr;
  checkRuntime(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc");
  cudaStream_t s;
  checkRuntime(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaGraph_t graph;
  checkRuntime(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  checkRuntime(cudaMemsetAsync(p, 0, n * sizeof(float), s), "cudaMemsetAsync");
  captured_fill<<<n / 256, 256, 0, s>>>(p, 1.0f, n);
  captured_scale<<<n / 256, 256, 0, s>>>(p, 2.0f, n);
  // Another thread's work into the captured stream is captured too (PyTorch's autograd thread
  // launching a captured backward pass); its work into another stream is not.
  cudaStream_t other;
  checkRuntime(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  std::thread autograd([&] {
    captured_scale<<<n / 256, 256, 0, s>>>(p, 4.0f, n);
    captured_fill<<<n / 256, 256, 0, other>>>(p, 5.0f, n);
  });
  autograd.join();
  checkRuntime(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
  // Ending a capture that is not running is refused (and recorded with its result).
  cudaGraph_t none;
  if (cudaStreamEndCapture(s, &none) == cudaSuccess) ++failures;
  cudaGraphExec_t exec;
  checkRuntime(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  checkRuntime(cudaGraphUpload(exec, s), "cudaGraphUpload");
  for (int i = 0; i < 2; ++i) checkRuntime(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
  cudaGraph_t made, captured = nullptr;
  checkRuntime(cudaGraphCreate(&made, 0), "cudaGraphCreate");
  checkRuntime(cudaStreamBeginCaptureToGraph(s, made, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal),
               "cudaStreamBeginCaptureToGraph");
  captured_scale<<<n / 256, 256, 0, s>>>(p, 0.5f, n);
  // The first graph launched into the capture: a child graph node, replayed with `made`.
  checkRuntime(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
  checkRuntime(cudaStreamEndCapture(s, &captured), "cudaStreamEndCapture");
  if (captured != made) ++failures;
  cudaGraphInstantiateParams params = {};
  cudaGraphExec_t madeExec;
  checkRuntime(cudaGraphInstantiateWithParams(&madeExec, made, &params), "cudaGraphInstantiateWithParams");
  if (params.result_out != cudaGraphInstantiateSuccess) ++failures;
  checkRuntime(cudaGraphLaunch(madeExec, s), "cudaGraphLaunch");
  // Launched, not captured: the capture ended.
  captured_fill<<<n / 256, 256, 0, s>>>(p, 3.0f, n);
  checkRuntime(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  checkRuntime(cudaFree(p), "cudaFree");
  printf("graph replayed\n");
  return failures == 0 ? 0 : 1;
}
