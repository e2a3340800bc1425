// The bundled example that scripts/demo.sh traces: a small "training loop" with a data loader
// thread and two worker streams. NVTX ranges mark the phases, so the trace and the flamegraph
// show kernels, copies and allocations inside the step that issued them.
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

#include <cstdio>
#include <thread>
#include <vector>

namespace model {
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void relu(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] < 0) x[i] = 0;
}
}  // namespace model

__global__ void normalize(float* x, float scale, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= scale;
}

int main() {
  constexpr int n = 1 << 16;
  constexpr int steps = 4;
  float *x = nullptr, *y = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  std::vector<float> host(n, 1.0f);

  std::thread loader([&] {
    pthread_setname_np(pthread_self(), "loader");
    for (int s = 0; s < steps; ++s) {
      nvtxRangePushA("load batch");
      float* staging = nullptr;
      cudaMallocHost(&staging, n * sizeof(float));
      cudaFreeHost(staging);
      nvtxRangePop();
    }
  });

  cudaStream_t stream;
  cudaStreamCreate(&stream);
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA("step");
    nvtxRangePushA("copy in");
    cudaMemcpyAsync(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream);
    nvtxRangePop();
    nvtxRangePushA("forward");
    model::axpy<float><<<n / 256, 256, 0, stream>>>(2.0f, x, y, n);
    model::relu<<<n / 256, 256, 0, stream>>>(y, n);
    nvtxRangePop();
    nvtxRangePushA("backward");
    normalize<<<n / 256, 256, 0, stream>>>(y, 0.5f, n);
    cudaMemsetAsync(x, 0, n * sizeof(float), stream);
    nvtxRangePop();
    cudaStreamSynchronize(stream);
    nvtxRangePop();
  }
  loader.join();
  cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(y);
  printf("pipeline: %d steps done\n", steps);
  return 0;
}
