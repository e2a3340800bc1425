// Several kernels (templated, namespaced, plain) launched from four threads inside nested NVTX
// ranges, with allocations, sets and copies. The trace must show exactly these calls, on the
// thread that made them. argv[1]: file that receives "thread-name tid" lines.
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ns {
template <typename T>
__global__ void scale(T* p, T factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= factor;
}
}  // namespace ns

namespace other {
__global__ void fill(int* p, int value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}
}  // namespace other

extern "C" __global__ void plain_kernel() {}

static std::mutex tidMutex;
static FILE* tidFile = nullptr;

static void recordThread(const char* name) {
  pthread_setname_np(pthread_self(), name);
  std::lock_guard<std::mutex> lock(tidMutex);
  if (tidFile) fprintf(tidFile, "%s %ld\n", name, static_cast<long>(syscall(SYS_gettid)));
}

static int check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(rc));
    return 1;
  }
  return 0;
}

static int worker(int id) {
  const std::string name = "worker-" + std::to_string(id);
  recordThread(name.c_str());
  int failures = 0;
  const int n = 1024;
  nvtxRangePushA("worker");
  float* data = nullptr;
  int* ints = nullptr;
  cudaStream_t stream;
  failures += check(cudaStreamCreate(&stream), "cudaStreamCreate");
  failures += check(cudaMalloc(&data, n * sizeof(float)), "cudaMalloc");
  failures += check(cudaMalloc(&ints, n * sizeof(int)), "cudaMalloc");
  failures += check(cudaMemset(data, 0, n * sizeof(float)), "cudaMemset");
  nvtxRangePushA("compute");
  for (int r = 0; r < 3; ++r) ns::scale<float><<<4, 256>>>(data, 2.0f, n);
  other::fill<<<2, 512, 0, stream>>>(ints, id, n);
  failures += check(cudaMemcpyAsync(data, ints, 64, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  failures += check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  nvtxRangePop();
  std::vector<float> host(n);
  failures += check(cudaMemcpy(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  failures += check(cudaFree(ints), "cudaFree");
  failures += check(cudaFree(data), "cudaFree");
  failures += check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  nvtxRangePop();
  return failures;
}

int main(int argc, char** argv) {
  if (argc > 1) tidFile = fopen(argv[1], "w");
  recordThread("main");
  nvtxRangePushA("main");
  double* d = nullptr;
  int failures = check(cudaMalloc(&d, 256 * sizeof(double)), "cudaMalloc");
  ns::scale<double><<<1, 256>>>(d, 3.0, 256);
  plain_kernel<<<dim3(2, 2, 1), dim3(8, 8, 1)>>>();
  std::vector<std::thread> threads;
  std::vector<int> results(3);
  for (int i = 0; i < 3; ++i) threads.emplace_back([i, &results] { results[i] = worker(i); });
  for (auto& t : threads) t.join();
  for (int r : results) failures += r;
  failures += check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  failures += check(cudaFree(d), "cudaFree");
  nvtxRangePop();
  if (tidFile) fclose(tidFile);
  printf("mt_kernels: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
