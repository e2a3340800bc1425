// Smoke test of the stand-in runtime and driver, built with nvcc -cudart=shared (and again with
// --default-stream per-thread, which must print the same). Kernels do not run on the stand-in,
// so every value printed comes from copies and sets the stand-in really performs; every error
// code printed is one the real runtime gives for the same mistake.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

__device__ int deviceCounter;
__constant__ float coefficients[4];
__managed__ int managedValue;

__global__ void scale(float* p, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= factor;
}

__global__ void noArgs() {}

namespace smoke {
template <typename T>
__global__ void fillKernel(T* p, T value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}
}  // namespace smoke

static void notAKernel() {}

static int failures = 0;

// A call that must succeed; only failures print, with the line.
#define CHECK(call) check((call), #call, __LINE__)
static void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    printf("FAIL line %d: %s -> %s\n", line, what, cudaGetErrorName(e));
    ++failures;
  }
}

// A call whose result is part of the expected output.
static void expect(const char* what, cudaError_t got, cudaError_t want) {
  printf("%s: %s\n", what, cudaGetErrorName(got));
  if (got != want) ++failures;
}

static void printBytes(const char* what, const unsigned char* p, size_t n) {
  printf("%s:", what);
  for (size_t i = 0; i < n; ++i) printf(" %02x", p[i]);
  printf("\n");
}

static void printInts(const char* what, const int* p, size_t n) {
  printf("%s:", what);
  for (size_t i = 0; i < n; ++i) printf(" %d", p[i]);
  printf("\n");
}

static void versions() {
  int n = 0, driver = 0, runtime = 0;
  CHECK(cudaGetDeviceCount(&n));
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  printf("devices %d driver %d runtime %d\n", n, driver, runtime);
  int device = -1, warp = 0;
  CHECK(cudaSetDevice(0));
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0));
  printf("device %d warp %d\n", device, warp);
  expect("cudaSetDevice(1)", cudaSetDevice(1), cudaErrorInvalidDevice);
  expect("last error", cudaGetLastError(), cudaErrorInvalidDevice);
  printf("string: %s\n", cudaGetErrorString(cudaErrorInvalidValue));
}

static void linearCopies() {
  unsigned char* a = nullptr;
  unsigned char* b = nullptr;
  unsigned char host[16];
  CHECK(cudaMalloc(&a, 16));
  CHECK(cudaMalloc(&b, 16));
  CHECK(cudaMemset(a, 0xab, 16));
  CHECK(cudaMemset(a + 4, 0x01, 4));
  CHECK(cudaMemcpy(host, a, 16, cudaMemcpyDeviceToHost));
  printBytes("memset", host, 16);
  for (int i = 0; i < 16; ++i) host[i] = static_cast<unsigned char>(i * 3);
  CHECK(cudaMemcpy(a, host, 16, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, a, 8, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy(b + 8, a, 8, cudaMemcpyDefault));
  memset(host, 0, sizeof(host));
  CHECK(cudaMemcpy(host, b, 16, cudaMemcpyDeviceToHost));
  printBytes("copies", host, 16);
  expect("past the end", cudaMemcpy(host, b, 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  expect("bad kind", cudaMemcpy(host, b, 4, static_cast<cudaMemcpyKind>(7)), cudaErrorInvalidMemcpyDirection);
  CHECK(cudaMemcpyPeer(b, 0, a + 8, 0, 4));
  CHECK(cudaMemcpy(host, b, 4, cudaMemcpyDeviceToHost));
  printBytes("peer", host, 4);
  expect("peer device 1", cudaMemcpyPeer(b, 1, a, 0, 4), cudaErrorInvalidDevice);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  expect("double free", cudaFree(b), cudaErrorInvalidValue);
  expect("free(nullptr)", cudaFree(nullptr), cudaSuccess);
  cudaGetLastError();
}

static void streamOrdered() {
  cudaStream_t s = nullptr;
  int* d = nullptr;
  int host[4] = {};
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMallocAsync(&d, 4 * sizeof(int), s));
  CHECK(cudaMemsetAsync(d, 0x02, 4 * sizeof(int), s));
  CHECK(cudaMemcpyAsync(host, d, sizeof(host), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  printInts("async", host, 4);
  int values[4] = {10, 20, 30, 40};
  CHECK(cudaMemcpyAsync(d, values, sizeof(values), cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(d, d + 2, 2 * sizeof(int), cudaMemcpyDeviceToDevice, s));
  CHECK(cudaMemcpyPeerAsync(d + 3, 0, d, 0, sizeof(int), s));
  CHECK(cudaMemcpyAsync(host, d, sizeof(host), cudaMemcpyDefault, s));
  expect("cudaStreamQuery", cudaStreamQuery(s), cudaSuccess);
  printInts("async copies", host, 4);
  CHECK(cudaFreeAsync(d, s));
  void* pooled = nullptr;
  CHECK(cudaMallocFromPoolAsync(&pooled, 64, reinterpret_cast<cudaMemPool_t>(0x1), s));
  CHECK(cudaFreeAsync(pooled, s));
  expect("graph launch", cudaGraphLaunch(reinterpret_cast<cudaGraphExec_t>(0x1), s), cudaSuccess);
  expect("graph launch(nullptr)", cudaGraphLaunch(nullptr, s), cudaErrorInvalidValue);
  CHECK(cudaStreamDestroy(s));
  expect("destroyed stream", cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
}

static void pitched() {
  unsigned char* d = nullptr;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&d), &pitch, 10, 3));
  printf("pitch %zu\n", pitch);
  CHECK(cudaMemset2D(d, pitch, 0x11, 10, 3));
  const unsigned char block[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  CHECK(cudaMemcpy2D(d + pitch + 2, pitch, block, 4, 4, 2, cudaMemcpyHostToDevice));
  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMemset2DAsync(d + 8, pitch, 0x22, 2, 3, s));
  unsigned char host[3][10];
  CHECK(cudaMemcpy2DAsync(host, 10, d, pitch, 10, 3, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  for (int row = 0; row < 3; ++row) printBytes("row", host[row], 10);
  expect("width > pitch", cudaMemcpy2D(host, 4, d, pitch, 10, 3, cudaMemcpyDeviceToHost), cudaErrorInvalidPitchValue);

  // 3D: two 2x4-byte slices into a pitched 3D extent, then back.
  unsigned char cube[2][2][4];
  for (int i = 0; i < 16; ++i) (&cube[0][0][0])[i] = static_cast<unsigned char>(0x40 + i);
  cudaPitchedPtr volume{};
  CHECK(cudaMalloc(&volume.ptr, 64 * 2 * 2));
  volume.pitch = 64, volume.xsize = 4, volume.ysize = 2;
  cudaMemcpy3DParms up{};
  up.srcPtr = make_cudaPitchedPtr(cube, 4, 4, 2);
  up.dstPtr = volume;
  up.extent = make_cudaExtent(4, 2, 2);
  up.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&up));
  unsigned char back[2][2][4] = {};
  cudaMemcpy3DParms down{};
  down.srcPtr = volume;
  down.dstPtr = make_cudaPitchedPtr(back, 4, 4, 2);
  down.extent = make_cudaExtent(4, 2, 2);
  down.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3DAsync(&down, s));
  CHECK(cudaStreamSynchronize(s));
  printBytes("3d", &back[0][0][0], 16);
  unsigned char corner = 0;
  CHECK(cudaMemcpy(&corner, static_cast<unsigned char*>(volume.ptr) + 128 + 64 + 3, 1, cudaMemcpyDeviceToHost));
  printf("3d corner %02x\n", corner);
  CHECK(cudaFree(volume.ptr));
  CHECK(cudaFree(d));
  CHECK(cudaStreamDestroy(s));
}

static void symbols() {
  const int counter = 42;
  int back = 0;
  CHECK(cudaMemcpyToSymbol(deviceCounter, &counter, sizeof(counter)));
  CHECK(cudaMemcpyFromSymbol(&back, deviceCounter, sizeof(back)));
  printf("deviceCounter %d\n", back);
  const float values[2] = {1.5f, 2.5f};
  float table[4] = {};
  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMemcpyToSymbolAsync(coefficients, values, sizeof(values), 2 * sizeof(float), cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyFromSymbolAsync(table, coefficients, sizeof(table), 0, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  printf("coefficients %g %g %g %g\n", table[0], table[1], table[2], table[3]);
  size_t size = 0;
  void* address = nullptr;
  CHECK(cudaGetSymbolSize(&size, coefficients));
  CHECK(cudaGetSymbolAddress(&address, coefficients));
  printf("coefficients size %zu address %s\n", size, address != nullptr ? "set" : "null");
  expect("past the symbol", cudaMemcpyToSymbol(coefficients, values, sizeof(values), 3 * sizeof(float)),
         cudaErrorInvalidValue);
  expect("not a symbol", cudaMemcpyToSymbol(counter, values, sizeof(int)), cudaErrorInvalidSymbol);
  expect("wrong direction", cudaMemcpyToSymbol(deviceCounter, &counter, sizeof(int), 0, cudaMemcpyDeviceToHost),
         cudaErrorInvalidMemcpyDirection);
  cudaGetLastError();

  // A __managed__ variable is host-accessible memory that is also a symbol.
  managedValue = 5;
  CHECK(cudaMemcpyFromSymbol(&back, managedValue, sizeof(back)));
  printf("managedValue %d\n", back);
  int* managed = nullptr;
  CHECK(cudaMallocManaged(&managed, 4 * sizeof(int)));
  for (int i = 0; i < 4; ++i) managed[i] = i * i;
  int copy[4] = {};
  CHECK(cudaMemcpy(copy, managed, sizeof(copy), cudaMemcpyDeviceToHost));
  printInts("managed", copy, 4);
  CHECK(cudaFree(managed));
  CHECK(cudaStreamDestroy(s));
}

static void hostMemory() {
  int* pinned = nullptr;
  int* mapped = nullptr;
  int* d = nullptr;
  CHECK(cudaMallocHost(&pinned, 4 * sizeof(int)));
  CHECK(cudaHostAlloc(&mapped, 4 * sizeof(int), cudaHostAllocPortable));
  CHECK(cudaMalloc(&d, 4 * sizeof(int)));
  for (int i = 0; i < 4; ++i) pinned[i] = 100 + i;
  CHECK(cudaMemcpy(d, pinned, 4 * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(mapped, d, 4 * sizeof(int), cudaMemcpyDeviceToHost));
  printInts("pinned", mapped, 4);
  expect("cudaFree(host memory)", cudaFree(pinned), cudaErrorInvalidValue);
  expect("cudaFreeHost(device memory)", cudaFreeHost(d), cudaErrorInvalidValue);
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFreeHost(mapped));
  CHECK(cudaFree(d));
  cudaGetLastError();
}

static void kernels() {
  const int n = 64;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  scale<<<2, 32>>>(d, 2.0f, n);
  expect("scale<<<2, 32>>>", cudaGetLastError(), cudaSuccess);
  noArgs<<<1, 2048>>>();
  expect("noArgs<<<1, 2048>>>", cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  expect("after peek", cudaGetLastError(), cudaErrorInvalidConfiguration);
  expect("after get", cudaGetLastError(), cudaSuccess);
  noArgs<<<dim3(1, 70000), 1>>>();
  expect("noArgs<<<(1, 70000), 1>>>", cudaGetLastError(), cudaErrorInvalidConfiguration);

  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreate(&s));
  smoke::fillKernel<int><<<1, 32, 0, s>>>(reinterpret_cast<int*>(d), 3, n);
  expect("fillKernel<int> on a stream", cudaGetLastError(), cudaSuccess);

  cudaKernel_t k = nullptr;
  const char* name = nullptr;
  CHECK(cudaGetKernel(&k, scale));
  CHECK(cudaFuncGetName(&name, reinterpret_cast<const void*>(scale)));
  printf("name %s\n", name);
  const char* byKernel = nullptr;
  CHECK(cudaFuncGetName(&byKernel, k));
  printf("name by kernel %s\n", byKernel);
  CHECK(cudaFuncGetName(&name, reinterpret_cast<const void*>(smoke::fillKernel<int>)));
  printf("name %s\n", name);
  expect("cudaGetKernel(not a kernel)", cudaGetKernel(&k, notAKernel), cudaErrorInvalidDeviceFunction);

  float factor = 0.5f;
  int count = n;
  void* args[] = {&d, &factor, &count};
  expect("cudaLaunchKernel", cudaLaunchKernel(reinterpret_cast<const void*>(scale), dim3(2), dim3(32), args, 0, s),
         cudaSuccess);
  expect("cudaLaunchKernel(not a kernel)",
         cudaLaunchKernel(reinterpret_cast<const void*>(notAKernel), dim3(1), dim3(1), nullptr, 0, nullptr),
         cudaErrorInvalidDeviceFunction);
  expect("cudaLaunchCooperativeKernel",
         cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(scale), dim3(2), dim3(32), args, 0, s), cudaSuccess);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributePriority;
  attribute.val.priority = 0;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4);
  config.blockDim = dim3(16, 2);
  config.stream = s;
  config.attrs = &attribute;
  config.numAttrs = 1;
  expect("cudaLaunchKernelExC", cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(scale), args), cudaSuccess);
  config.blockDim = dim3(64, 32);
  expect("cudaLaunchKernelExC(2048 threads)", cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(scale), args),
         cudaErrorInvalidConfiguration);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaStreamDestroy(s));
  scale<<<1, 1, 0, s>>>(d, 1.0f, 1);
  expect("launch on a destroyed stream", cudaGetLastError(), cudaErrorInvalidResourceHandle);

  // Kernels do not run on the stand-in: the buffer keeps what cudaMalloc gave it.
  float host[2] = {-1, -1};
  CHECK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
  printf("after kernels %g %g\n", host[0], host[1]);
  CHECK(cudaFree(d));
}

static void events() {
  cudaEvent_t start = nullptr, stop = nullptr, untimed = nullptr, never = nullptr;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  CHECK(cudaEventCreate(&never));
  CHECK(cudaEventRecord(start, nullptr));
  CHECK(cudaEventRecord(stop, nullptr));
  CHECK(cudaEventRecord(untimed, nullptr));
  CHECK(cudaEventSynchronize(stop));
  expect("cudaEventQuery", cudaEventQuery(stop), cudaSuccess);
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  printf("elapsed %s\n", ms >= 0 && ms < 1000 ? "ok" : "wrong");
  expect("elapsed without timing", cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  expect("elapsed unrecorded", cudaEventElapsedTime(&ms, start, never), cudaErrorInvalidResourceHandle);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaEventDestroy(untimed));
  CHECK(cudaEventDestroy(never));
  expect("destroyed event", cudaEventDestroy(never), cudaErrorInvalidResourceHandle);
  CHECK(cudaProfilerStart());
  CHECK(cudaProfilerStop());
  cudaGetLastError();
}

// Runs first: several threads make the process's first CUDA calls at the same moment, so they
// race through the runtime's lazy start and the first use of a kernel. Each thread binds the
// context on its first call and keeps its own launch configuration stack and last error.
static void threads() {
  const int kThreads = 4;
  const int n = 256;
  std::vector<int> ok(kThreads, 0);
  std::vector<std::thread> pool;
  std::atomic<int> waiting{kThreads};
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([t, &ok, &waiting] {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      unsigned char* d = nullptr;
      cudaStream_t s = nullptr;
      std::vector<unsigned char> host(n);
      bool good = cudaStreamCreate(&s) == cudaSuccess && cudaMalloc(&d, n) == cudaSuccess;
      for (int round = 0; good && round < 20; ++round) {
        good = cudaMemsetAsync(d, t + round, n, s) == cudaSuccess;
        scale<<<4, 64, 0, s>>>(reinterpret_cast<float*>(d), 1.0f, n / 4);
        good = good && cudaGetLastError() == cudaSuccess;
        good = good && cudaMemcpyAsync(host.data(), d, n, cudaMemcpyDeviceToHost, s) == cudaSuccess;
        good = good && cudaStreamSynchronize(s) == cudaSuccess;
        for (int i = 0; good && i < n; ++i) good = host[i] == static_cast<unsigned char>(t + round);
      }
      good = good && cudaFree(d) == cudaSuccess && cudaStreamDestroy(s) == cudaSuccess;
      ok[t] = good ? 1 : 0;
    });
  for (auto& thread : pool) thread.join();
  int good = 0;
  for (int v : ok) good += v;
  printf("threads %d/%d\n", good, kThreads);
  if (good != kThreads) ++failures;
}

int main() {
  threads();
  versions();
  linearCopies();
  streamOrdered();
  pitched();
  symbols();
  hostMemory();
  kernels();
  events();
  CHECK(cudaDeviceReset());
  printf("smoke: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
