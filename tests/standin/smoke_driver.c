/* Smoke test of the stand-in driver from a driver-API program linked against NVIDIA's stub
 * libcuda.so and run on the stand-in. Prints values the stand-in computes (sets, copies, names)
 * and the error codes the real driver gives for the same mistakes; checks every cuGetProcAddress
 * answer against dlsym of the exported name.
 *   smoke_driver [COVERAGE_FILE]   COVERAGE_FILE receives every export the lookup test reached */
#include <cuda.h>
#include <cudaProfiler.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

static const char* errorName(CUresult r) {
  const char* name = NULL;
  return cuGetErrorName(r, &name) == CUDA_SUCCESS && name != NULL ? name : "(unknown CUresult)";
}

/* A call that must succeed; only failures print, with the line. */
#define CHECK(call) check((call), #call, __LINE__)
static void check(CUresult r, const char* what, int line) {
  if (r != CUDA_SUCCESS) {
    printf("FAIL line %d: %s -> %s\n", line, what, errorName(r));
    ++failures;
  }
}

/* A call whose result is part of the expected output. */
static void expect(const char* what, CUresult got, CUresult want) {
  printf("%s: %s\n", what, errorName(got));
  if (got != want) ++failures;
}

static void printBytes(const char* what, const unsigned char* p, size_t n) {
  size_t i;
  printf("%s:", what);
  for (i = 0; i < n; ++i) printf(" %02x", p[i]);
  printf("\n");
}

static void printUints(const char* what, const unsigned* p, size_t n) {
  size_t i;
  printf("%s:", what);
  for (i = 0; i < n; ++i) printf(" %x", p[i]);
  printf("\n");
}

static const char kPtx[] =
    "// stand-in smoke test\n"
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry vecAdd(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "  ret;\n"
    "}\n";

static CUcontext context;

static void devices(void) {
  int version = 0, count = 0, warp = 0, major = 0, minor = 0, threads = 0;
  CUdevice dev = -1;
  char name[64];
  CUcontext current = NULL;
  CUdeviceptr p = 0;
  expect("cuDeviceGetCount before cuInit", cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CHECK(cuDriverGetVersion(&version));
  expect("cuInit(1)", cuInit(1), CUDA_ERROR_INVALID_VALUE);
  CHECK(cuInit(0));
  CHECK(cuDeviceGetCount(&count));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDeviceGetName(name, sizeof(name), dev));
  CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CHECK(cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
  printf("driver %d devices %d device %d name \"%s\" warp %d sm_%d%d threads %d\n", version, count, dev, name, warp,
         major, minor, threads);
  expect("cuDeviceGet(1)", cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  expect("cuDeviceGetAttribute(MAX)", cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK(cuCtxGetCurrent(&current));
  printf("current context before retain: %s\n", current == NULL ? "none" : "set");
  expect("cuMemAlloc without a context", cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuDevicePrimaryCtxRetain(&context, 0));
  CHECK(cuCtxSetCurrent(context));
  CHECK(cuCtxGetCurrent(&current));
  CHECK(cuCtxGetDevice(&dev));
  printf("current context is primary: %s, device %d\n", current == context ? "yes" : "no", dev);
  /* The driver takes any pointer as the current context; the next call that uses it fails. */
  expect("cuCtxSetCurrent(bogus)", cuCtxSetCurrent((CUcontext)&dev), CUDA_SUCCESS);
  expect("cuMemAlloc in a bogus context", cuMemAlloc(&p, 16), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  CHECK(cuCtxSetCurrent(context));
  CHECK(cuCtxSynchronize());
}

static void memory(void) {
  CUdeviceptr a = 0, b = 0, pitched = 0, managed = 0, async = 0, pooled = 0;
  size_t pitch = 0;
  unsigned char bytes[16];
  unsigned rows[4][4];
  unsigned char* pinned = NULL;
  void* mapped = NULL;
  CUstream s = NULL;
  CUDA_MEMCPY2D c2;
  CUDA_MEMCPY3D c3;
  unsigned char cube[2][2][4], back[2][2][4];
  int i;

  CHECK(cuMemAlloc(&a, 64));
  CHECK(cuMemAlloc(&b, 64));
  CHECK(cuMemsetD32(a, 0xdeadbeefu, 16));
  CHECK(cuMemsetD16(a + 8, 0x1234, 2));
  CHECK(cuMemsetD8(a + 12, 0x77, 2));
  CHECK(cuMemcpyDtoH(bytes, a, 16));
  printBytes("sets", bytes, 16);
  expect("cuMemsetD32 misaligned", cuMemsetD32(a + 1, 0, 1), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemsetD8 past the end", cuMemsetD8(a + 60, 0, 8), CUDA_ERROR_INVALID_VALUE);
  for (i = 0; i < 16; ++i) bytes[i] = (unsigned char)(i + 1);
  CHECK(cuMemcpyHtoD(a, bytes, 16));
  CHECK(cuMemcpyDtoD(b, a, 8));
  CHECK(cuMemcpy(b + 8, a + 8, 8));
  memset(bytes, 0, sizeof(bytes));
  CHECK(cuMemcpyDtoH(bytes, b, 16));
  printBytes("copies", bytes, 16);
  expect("cuMemcpyDtoH past the end", cuMemcpyDtoH(bytes, b + 56, 16), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemcpyHtoD(NULL)", cuMemcpyHtoD(b, NULL, 4), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemcpyDtoH(from address 16)", cuMemcpyDtoH(bytes, (CUdeviceptr)16, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyPeer(b, context, a + 12, context, 4));
  CHECK(cuMemcpyDtoH(bytes, b, 4));
  printBytes("peer", bytes, 4);
  expect("cuMemcpyPeer(no context)", cuMemcpyPeer(b, NULL, a, context, 4), CUDA_ERROR_INVALID_CONTEXT);

  CHECK(cuMemAllocPitch(&pitched, &pitch, 16, 4, 4));
  printf("pitch %zu\n", pitch);
  CHECK(cuMemsetD2D32(pitched, pitch, 7, 4, 4));
  CHECK(cuMemsetD2D8(pitched + pitch, pitch, 0xff, 2, 2));
  CHECK(cuMemsetD2D16(pitched + 3 * pitch + 8, pitch, 0xabcd, 4, 1));
  memset(&c2, 0, sizeof(c2));
  c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c2.srcDevice = pitched;
  c2.srcPitch = pitch;
  c2.dstMemoryType = CU_MEMORYTYPE_HOST;
  c2.dstHost = rows;
  c2.dstPitch = sizeof(rows[0]);
  c2.WidthInBytes = sizeof(rows[0]);
  c2.Height = 4;
  CHECK(cuMemcpy2D(&c2));
  for (i = 0; i < 4; ++i) printUints("row", rows[i], 4);
  c2.dstPitch = 4;
  expect("cuMemcpy2D(width > pitch)", cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
  c2.dstPitch = sizeof(rows[0]);
  CHECK(cuMemcpy2DUnaligned(&c2));

  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemsetD8Async(a, 0x5a, 4, s));
  CHECK(cuMemsetD16Async(a + 4, 0x0102, 2, s));
  CHECK(cuMemsetD32Async(a + 8, 0x0a0b0c0du, 2, s));
  CHECK(cuMemsetD2D8Async(pitched, pitch, 1, 4, 4, s));
  CHECK(cuMemsetD2D16Async(pitched + 4, pitch, 2, 2, 4, s));
  CHECK(cuMemsetD2D32Async(pitched + 8, pitch, 3, 2, 4, s));
  CHECK(cuMemcpyDtoDAsync(b, a, 16, s));
  CHECK(cuMemcpyAsync(b + 16, a, 4, s));
  CHECK(cuMemcpyPeerAsync(b + 20, context, a + 4, context, 4, s));
  CHECK(cuMemcpyDtoHAsync(bytes, b, 16, s));
  CHECK(cuStreamSynchronize(s));
  printBytes("async", bytes, 16);
  CHECK(cuMemcpyDtoHAsync(bytes, b + 16, 8, s));
  CHECK(cuMemcpyHtoDAsync(b + 32, bytes, 8, s));
  CHECK(cuMemcpy2DAsync(&c2, s));
  CHECK(cuStreamSynchronize(s));
  printBytes("async peer", bytes, 8);
  for (i = 0; i < 4; ++i) printUints("async row", rows[i], 4);

  for (i = 0; i < 16; ++i) (&cube[0][0][0])[i] = (unsigned char)(0x40 + i);
  memset(&c3, 0, sizeof(c3));
  c3.srcMemoryType = CU_MEMORYTYPE_HOST;
  c3.srcHost = cube;
  c3.srcPitch = 4;
  c3.srcHeight = 2;
  c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c3.dstDevice = pitched;
  c3.dstPitch = pitch;
  c3.dstHeight = 2;
  c3.WidthInBytes = 4;
  c3.Height = 2;
  c3.Depth = 2;
  CHECK(cuMemcpy3D(&c3));
  memset(&c3, 0, sizeof(c3));
  c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c3.srcDevice = pitched;
  c3.srcPitch = pitch;
  c3.srcHeight = 2;
  c3.dstMemoryType = CU_MEMORYTYPE_HOST;
  c3.dstHost = back;
  c3.dstPitch = 4;
  c3.dstHeight = 2;
  c3.WidthInBytes = 4;
  c3.Height = 2;
  c3.Depth = 2;
  CHECK(cuMemcpy3DAsync(&c3, s));
  CHECK(cuStreamSynchronize(s));
  printBytes("3d", &back[0][0][0], 16);

  CHECK(cuMemAllocManaged(&managed, 16, CU_MEM_ATTACH_GLOBAL));
  ((unsigned*)(size_t)managed)[1] = 0xc0ffee;
  CHECK(cuMemcpyDtoH(rows[0], managed, 16));
  printUints("managed", rows[0], 4);
  expect("cuMemAllocManaged(flags 4)", cuMemAllocManaged(&managed, 16, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAllocHost((void**)&pinned, 8));
  CHECK(cuMemHostAlloc(&mapped, 8, CU_MEMHOSTALLOC_PORTABLE));
  memcpy(pinned, "pinned!", 8);
  CHECK(cuMemcpyHtoD(a, pinned, 8));
  CHECK(cuMemcpyDtoH(mapped, a, 8));
  printf("host: %s\n", (const char*)mapped);
  expect("cuMemFree(host memory)", cuMemFree((CUdeviceptr)(size_t)pinned), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemFreeHost(device memory)", cuMemFreeHost((void*)(size_t)a), CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemFreeHost(pinned));
  CHECK(cuMemFreeHost(mapped));

  CHECK(cuMemAllocAsync(&async, 32, s));
  CHECK(cuMemAllocFromPoolAsync(&pooled, 32, (CUmemoryPool)(size_t)1, s));
  CHECK(cuMemsetD8Async(async, 9, 32, s));
  CHECK(cuMemcpyDtoDAsync(pooled, async, 32, s));
  CHECK(cuMemcpyDtoHAsync(bytes, pooled + 28, 4, s));
  CHECK(cuStreamSynchronize(s));
  printBytes("stream-ordered", bytes, 4);
  CHECK(cuMemFreeAsync(async, s));
  CHECK(cuMemFreeAsync(pooled, s));
  expect("cuMemFreeAsync twice", cuMemFreeAsync(pooled, s), CUDA_ERROR_INVALID_VALUE);

  CHECK(cuStreamDestroy(s));
  CHECK(cuMemFree(managed));
  CHECK(cuMemFree(pitched));
  CHECK(cuMemFree(a));
  CHECK(cuMemFree(b));
  expect("cuMemFree twice", cuMemFree(b), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemFree(0)", cuMemFree(0), CUDA_ERROR_INVALID_VALUE);
}

static void launches(void) {
  CUmodule mod = NULL, fromFile = NULL, bad = NULL, withOptions = NULL, fat = NULL;
  CUfunction f = NULL, again = NULL, kf = NULL;
  CUlibrary lib = NULL, libFromFile = NULL;
  CUkernel k = NULL;
  CUstream s = NULL, gone = NULL;
  CUdeviceptr out = 0;
  unsigned n = 64;
  void* params[2];
  size_t argBytes = 12;
  char argBuffer[12] = {0};
  void* extra[5];
  const char* name = NULL;
  CUlaunchConfig config;
  CUlaunchAttribute attribute;
  char path[] = "/tmp/standin-smoke-XXXXXX";
  int fd;

  CHECK(cuMemAlloc(&out, n * 4));
  params[0] = &out;
  params[1] = &n;
  extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
  extra[1] = argBuffer;
  extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
  extra[3] = &argBytes;
  extra[4] = CU_LAUNCH_PARAM_END;

  CHECK(cuModuleLoadData(&mod, kPtx));
  expect("cuModuleLoadData(garbage)", cuModuleLoadData(&bad, "garbage"), CUDA_ERROR_INVALID_IMAGE);
  expect("cuModuleLoad(missing file)", cuModuleLoad(&bad, "/nonexistent/module.ptx"), CUDA_ERROR_FILE_NOT_FOUND);
  fd = mkstemp(path);
  if (fd < 0 || write(fd, kPtx, sizeof(kPtx) - 1) != (ssize_t)(sizeof(kPtx) - 1)) ++failures;
  if (fd >= 0) close(fd);
  CHECK(cuModuleLoad(&fromFile, path));
  CHECK(cuLibraryLoadFromFile(&libFromFile, path, NULL, NULL, 0, NULL, NULL, 0));
  unlink(path);
  expect("cuLibraryLoadFromFile(missing file)", cuLibraryLoadFromFile(&libFromFile, path, NULL, NULL, 0, NULL, NULL, 0),
         CUDA_ERROR_FILE_NOT_FOUND);
  CHECK(cuLibraryUnload(libFromFile));
  CHECK(cuModuleLoadDataEx(&withOptions, kPtx, 0, NULL, NULL));
  expect("cuModuleLoadDataEx(options without values)", cuModuleLoadDataEx(&bad, kPtx, 1, NULL, NULL),
         CUDA_ERROR_INVALID_VALUE);
  CHECK(cuModuleLoadFatBinary(&fat, kPtx));
  CHECK(cuModuleUnload(withOptions));
  CHECK(cuModuleUnload(fat));
  CHECK(cuModuleGetFunction(&f, mod, "vecAdd"));
  CHECK(cuModuleGetFunction(&again, mod, "vecAdd"));
  CHECK(cuFuncGetName(&name, f));
  printf("function %s, same handle twice: %s\n", name, f == again ? "yes" : "no");

  CHECK(cuStreamCreate(&s, 0));
  CHECK(cuStreamCreateWithPriority(&gone, CU_STREAM_NON_BLOCKING, -1));
  expect("cuStreamCreate(flags 7)", cuStreamCreate(&gone, 7), CUDA_ERROR_INVALID_VALUE);
  CHECK(cuStreamDestroy(gone));
  expect("cuStreamDestroy twice", cuStreamDestroy(gone), CUDA_ERROR_INVALID_HANDLE);
  expect("cuStreamSynchronize(destroyed)", cuStreamSynchronize(gone), CUDA_ERROR_INVALID_HANDLE);
  expect("cuStreamQuery", cuStreamQuery(s), CUDA_SUCCESS);

  expect("cuLaunchKernel", cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params, NULL), CUDA_SUCCESS);
  expect("cuLaunchKernel(extra)", cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, NULL, extra), CUDA_SUCCESS);
  expect("cuLaunchKernel(params and extra)", cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params, extra),
         CUDA_ERROR_INVALID_VALUE);
  expect("cuLaunchKernel(2048 threads)", cuLaunchKernel(f, 1, 1, 1, 64, 32, 1, 0, s, params, NULL),
         CUDA_ERROR_INVALID_VALUE);
  expect("cuLaunchKernel(blockDim.z 65)", cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, s, params, NULL),
         CUDA_ERROR_INVALID_VALUE);
  expect("cuLaunchKernel(gridDim.y 65536)", cuLaunchKernel(f, 1, 65536, 1, 1, 1, 1, 0, s, params, NULL),
         CUDA_ERROR_INVALID_VALUE);
  expect("cuLaunchKernel(300000 bytes shared)", cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 300000, s, params, NULL),
         CUDA_ERROR_INVALID_VALUE);
  expect("cuLaunchKernel(NULL)", cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_HANDLE);
  expect("cuLaunchKernel(destroyed stream)", cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, gone, params, NULL),
         CUDA_ERROR_INVALID_HANDLE);
  expect("cuLaunchKernel(CU_STREAM_PER_THREAD)",
         cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, params, NULL), CUDA_SUCCESS);
  expect("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params), CUDA_SUCCESS);

  memset(&config, 0, sizeof(config));
  memset(&attribute, 0, sizeof(attribute));
  attribute.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  config.gridDimX = 3, config.gridDimY = 1, config.gridDimZ = 1;
  config.blockDimX = 32, config.blockDimY = 2, config.blockDimZ = 1;
  config.hStream = s;
  config.attrs = &attribute;
  config.numAttrs = 1;
  expect("cuLaunchKernelEx", cuLaunchKernelEx(&config, f, params, NULL), CUDA_SUCCESS);
  config.attrs = NULL;
  expect("cuLaunchKernelEx(attrs NULL)", cuLaunchKernelEx(&config, f, params, NULL), CUDA_ERROR_INVALID_VALUE);
  expect("cuGraphLaunch", cuGraphLaunch((CUgraphExec)(size_t)1, s), CUDA_SUCCESS);
  expect("cuGraphLaunch(NULL)", cuGraphLaunch(NULL, s), CUDA_ERROR_INVALID_VALUE);

  CHECK(cuModuleUnload(mod));
  expect("cuModuleUnload twice", cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE);
  expect("cuLaunchKernel(unloaded)", cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_HANDLE);
  expect("cuFuncGetName(unloaded)", cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuModuleUnload(fromFile));

  CHECK(cuLibraryLoadData(&lib, kPtx, NULL, NULL, 0, NULL, NULL, 0));
  CHECK(cuLibraryGetKernel(&k, lib, "_Z6kernelPfi"));
  CHECK(cuKernelGetName(&name, k));
  printf("kernel %s\n", name);
  CHECK(cuKernelGetFunction(&kf, k));
  CHECK(cuFuncGetName(&name, kf));
  printf("kernel function %s\n", name);
  /* The CUDA 13 runtime launches a CUkernel cast to CUfunction. */
  CHECK(cuFuncGetName(&name, (CUfunction)k));
  printf("kernel as function %s\n", name);
  expect("cuLaunchKernel(CUkernel)", cuLaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
         CUDA_SUCCESS);
  expect("cuKernelGetName(CUfunction)", cuKernelGetName(&name, (CUkernel)f), CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuLibraryUnload(lib));
  expect("cuLaunchKernel(unloaded CUkernel)", cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
         CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuStreamDestroy(s));
  CHECK(cuMemFree(out));
}

static void events(void) {
  CUevent start = NULL, stop = NULL, untimed = NULL, never = NULL;
  float ms = -1;
  CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&stop, CU_EVENT_BLOCKING_SYNC));
  CHECK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventCreate(&never, CU_EVENT_DEFAULT));
  expect("cuEventCreate(flags 0x80)", cuEventCreate(&never, 0x80), CUDA_ERROR_INVALID_VALUE);
  CHECK(cuEventRecord(start, NULL));
  CHECK(cuEventRecord(stop, NULL));
  CHECK(cuEventRecord(untimed, NULL));
  CHECK(cuEventSynchronize(stop));
  expect("cuEventQuery", cuEventQuery(stop), CUDA_SUCCESS);
  CHECK(cuEventElapsedTime(&ms, start, stop));
  printf("elapsed %s\n", ms >= 0 && ms < 1000 ? "ok" : "wrong");
  expect("cuEventElapsedTime(no timing)", cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  expect("cuEventElapsedTime(never recorded)", cuEventElapsedTime(&ms, start, never), CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuEventDestroy(start));
  CHECK(cuEventDestroy(stop));
  CHECK(cuEventDestroy(untimed));
  CHECK(cuEventDestroy(never));
  expect("cuEventDestroy twice", cuEventDestroy(never), CUDA_ERROR_INVALID_HANDLE);
  expect("cuEventRecord(destroyed)", cuEventRecord(never, NULL), CUDA_ERROR_INVALID_HANDLE);
}

static void errors(void) {
  const char* text = NULL;
  const void* table = &text;
  CUuuid id;
  CHECK(cuGetErrorString(CUDA_ERROR_INVALID_HANDLE, &text));
  printf("string: %s\n", text);
  expect("cuGetErrorName(9999)", cuGetErrorName((CUresult)9999, &text), CUDA_ERROR_INVALID_VALUE);
  printf("name of 9999: %s\n", text == NULL ? "NULL" : text);
  memset(&id, 0, sizeof(id));
  expect("cuGetExportTable", cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cuProfilerStart());
  CHECK(cuProfilerStop());
  CHECK(cuCtxSynchronize());
  CHECK(cuDevicePrimaryCtxRelease(0));
}

/* ------------------------------------------------------------------ cuGetProcAddress
 * Every export, with the request that must return it: {name asked for, version, per-thread
 * flag, exported symbol}. Versions are those of the PFN_<name>_v<version> typedefs in
 * cudaTypedefs.h. */
struct Lookup {
  const char* name;
  int version;
  int perThread;
  const char* symbol;
};

static const struct Lookup kLookups[] = {
    {"cuInit", 2000, 0, "cuInit"},
    {"cuDriverGetVersion", 2020, 0, "cuDriverGetVersion"},
    {"cuDeviceGetCount", 2000, 0, "cuDeviceGetCount"},
    {"cuDeviceGet", 2000, 0, "cuDeviceGet"},
    {"cuDeviceGetName", 2000, 0, "cuDeviceGetName"},
    {"cuDeviceGetAttribute", 2000, 0, "cuDeviceGetAttribute"},
    {"cuDevicePrimaryCtxRetain", 7000, 0, "cuDevicePrimaryCtxRetain"},
    {"cuCtxCreate", 3020, 0, "cuCtxCreate_v2"},
    {"cuCtxCreate", 11040, 0, "cuCtxCreate_v3"},
    {"cuCtxCreate", 12050, 0, "cuCtxCreate_v4"},
    {"cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease"},
    {"cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2"},
    {"cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset"},
    {"cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2"},
    {"cuCtxGetCurrent", 4000, 0, "cuCtxGetCurrent"},
    {"cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent"},
    {"cuCtxGetDevice", 2000, 0, "cuCtxGetDevice"},
    {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
    {"cuCtxDestroy", 2000, 0, "cuCtxDestroy"},
    {"cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2"},
    {"cuCtxSynchronize", 2000, 0, "cuCtxSynchronize"},
    {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
    {"cuGetErrorName", 6000, 0, "cuGetErrorName"},
    {"cuGetErrorString", 6000, 0, "cuGetErrorString"},
    {"cuGetExportTable", 3000, 0, "cuGetExportTable"},
    {"cuModuleLoadData", 2000, 0, "cuModuleLoadData"},
    {"cuModuleLoad", 2000, 0, "cuModuleLoad"},
    {"cuModuleLoadDataEx", 2010, 0, "cuModuleLoadDataEx"},
    {"cuModuleLoadFatBinary", 2000, 0, "cuModuleLoadFatBinary"},
    {"cuModuleGetFunction", 2000, 0, "cuModuleGetFunction"},
    {"cuModuleUnload", 2000, 0, "cuModuleUnload"},
    {"cuLibraryLoadData", 12000, 0, "cuLibraryLoadData"},
    {"cuLibraryLoadFromFile", 12000, 0, "cuLibraryLoadFromFile"},
    {"cuLinkCreate", 5050, 0, "cuLinkCreate"},
    {"cuLinkAddData", 5050, 0, "cuLinkAddData"},
    {"cuLinkAddFile", 5050, 0, "cuLinkAddFile"},
    {"cuLinkCreate", 6050, 0, "cuLinkCreate_v2"},
    {"cuLinkAddData", 6050, 0, "cuLinkAddData_v2"},
    {"cuLinkAddFile", 6050, 0, "cuLinkAddFile_v2"},
    {"cuLinkComplete", 5050, 0, "cuLinkComplete"},
    {"cuLinkDestroy", 5050, 0, "cuLinkDestroy"},
    {"cuLibraryGetKernel", 12000, 0, "cuLibraryGetKernel"},
    {"cuLibraryUnload", 12000, 0, "cuLibraryUnload"},
    {"cuKernelGetFunction", 12000, 0, "cuKernelGetFunction"},
    {"cuFuncGetName", 12030, 0, "cuFuncGetName"},
    {"cuKernelGetName", 12030, 0, "cuKernelGetName"},
    {"cuLaunchKernel", 4000, 0, "cuLaunchKernel"},
    {"cuLaunchKernel", 7000, 1, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx"},
    {"cuLaunchKernelEx", 11060, 1, "cuLaunchKernelEx_ptsz"},
    {"cuLaunchCooperativeKernel", 9000, 0, "cuLaunchCooperativeKernel"},
    {"cuLaunchCooperativeKernel", 9000, 1, "cuLaunchCooperativeKernel_ptsz"},
    {"cuLaunchCooperativeKernelMultiDevice", 9000, 0, "cuLaunchCooperativeKernelMultiDevice"},
    {"cuFuncSetBlockShape", 2000, 0, "cuFuncSetBlockShape"},
    {"cuFuncSetSharedSize", 2000, 0, "cuFuncSetSharedSize"},
    {"cuParamSetSize", 2000, 0, "cuParamSetSize"},
    {"cuParamSeti", 2000, 0, "cuParamSeti"},
    {"cuParamSetf", 2000, 0, "cuParamSetf"},
    {"cuParamSetv", 2000, 0, "cuParamSetv"},
    {"cuLaunch", 2000, 0, "cuLaunch"},
    {"cuDeviceGetDevResource", 12040, 0, "cuDeviceGetDevResource"},
    {"cuDevResourceGenerateDesc", 12040, 0, "cuDevResourceGenerateDesc"},
    {"cuGreenCtxCreate", 12040, 0, "cuGreenCtxCreate"},
    {"cuGreenCtxDestroy", 12040, 0, "cuGreenCtxDestroy"},
    {"cuGreenCtxStreamCreate", 12050, 0, "cuGreenCtxStreamCreate"},
    {"cuGreenCtxRecordEvent", 12040, 0, "cuGreenCtxRecordEvent"},
    {"cuGreenCtxWaitEvent", 12040, 0, "cuGreenCtxWaitEvent"},
    {"cuCtxRecordEvent", 12050, 0, "cuCtxRecordEvent"},
    {"cuDeviceCanAccessPeer", 4000, 0, "cuDeviceCanAccessPeer"},
    {"cuCtxEnablePeerAccess", 4000, 0, "cuCtxEnablePeerAccess"},
    {"cuCtxDisablePeerAccess", 4000, 0, "cuCtxDisablePeerAccess"},
    {"cuMemGetAddressRange", 3020, 0, "cuMemGetAddressRange_v2"},
    {"cuIpcGetMemHandle", 4010, 0, "cuIpcGetMemHandle"},
    {"cuDeviceGetDefaultMemPool", 11020, 0, "cuDeviceGetDefaultMemPool"},
    {"cuMemPoolCreate", 11020, 0, "cuMemPoolCreate"},
    {"cuMemPoolDestroy", 11020, 0, "cuMemPoolDestroy"},
    {"cuMemPoolTrimTo", 11020, 0, "cuMemPoolTrimTo"},
    {"cuMemPoolSetAttribute", 11020, 0, "cuMemPoolSetAttribute"},
    {"cuMemPoolSetAccess", 11020, 0, "cuMemPoolSetAccess"},
    {"cuDeviceSetMemPool", 11020, 0, "cuDeviceSetMemPool"},
    {"cuMemSetMemPool", 13000, 0, "cuMemSetMemPool"},
    {"cuFuncSetAttribute", 9000, 0, "cuFuncSetAttribute"},
    {"cuKernelSetAttribute", 12000, 0, "cuKernelSetAttribute"},
    {"cuFuncSetCacheConfig", 3000, 0, "cuFuncSetCacheConfig"},
    {"cuKernelSetCacheConfig", 12000, 0, "cuKernelSetCacheConfig"},
    {"cuCtxSetLimit", 3010, 0, "cuCtxSetLimit"},
    {"cuCtxSetCacheConfig", 3020, 0, "cuCtxSetCacheConfig"},
    {"cuCtxResetPersistingL2Cache", 11000, 0, "cuCtxResetPersistingL2Cache"},
    {"cuStreamSetAttribute", 11000, 0, "cuStreamSetAttribute"},
    {"cuStreamSetAttribute", 11000, 1, "cuStreamSetAttribute_ptsz"},
    {"cuMemPoolExportToShareableHandle", 11020, 0, "cuMemPoolExportToShareableHandle"},
    {"cuMemPoolImportFromShareableHandle", 11020, 0, "cuMemPoolImportFromShareableHandle"},
    {"cuMemPoolExportPointer", 11020, 0, "cuMemPoolExportPointer"},
    {"cuMemPoolImportPointer", 11020, 0, "cuMemPoolImportPointer"},
    {"cuGraphicsGLRegisterBuffer", 3000, 0, "cuGraphicsGLRegisterBuffer"},
    {"cuGraphicsGLRegisterImage", 3000, 0, "cuGraphicsGLRegisterImage"},
    {"cuGraphicsUnregisterResource", 3000, 0, "cuGraphicsUnregisterResource"},
    {"cuGraphicsMapResources", 3000, 0, "cuGraphicsMapResources"},
    {"cuGraphicsMapResources", 7000, 1, "cuGraphicsMapResources_ptsz"},
    {"cuGraphicsUnmapResources", 3000, 0, "cuGraphicsUnmapResources"},
    {"cuGraphicsUnmapResources", 7000, 1, "cuGraphicsUnmapResources_ptsz"},
    {"cuGraphicsResourceGetMappedPointer", 3020, 0, "cuGraphicsResourceGetMappedPointer_v2"},
    {"cuImportExternalMemory", 10000, 0, "cuImportExternalMemory"},
    {"cuExternalMemoryGetMappedBuffer", 10000, 0, "cuExternalMemoryGetMappedBuffer"},
    {"cuDestroyExternalMemory", 10000, 0, "cuDestroyExternalMemory"},
    {"cuImportExternalSemaphore", 10000, 0, "cuImportExternalSemaphore"},
    {"cuSignalExternalSemaphoresAsync", 10000, 0, "cuSignalExternalSemaphoresAsync"},
    {"cuSignalExternalSemaphoresAsync", 10000, 1, "cuSignalExternalSemaphoresAsync_ptsz"},
    {"cuWaitExternalSemaphoresAsync", 10000, 0, "cuWaitExternalSemaphoresAsync"},
    {"cuWaitExternalSemaphoresAsync", 10000, 1, "cuWaitExternalSemaphoresAsync_ptsz"},
    {"cuDestroyExternalSemaphore", 10000, 0, "cuDestroyExternalSemaphore"},
    {"cuMemExportToShareableHandle", 10020, 0, "cuMemExportToShareableHandle"},
    {"cuMemImportFromShareableHandle", 10020, 0, "cuMemImportFromShareableHandle"},
    {"cuMemRetainAllocationHandle", 11000, 0, "cuMemRetainAllocationHandle"},
    {"cuMulticastGetGranularity", 12010, 0, "cuMulticastGetGranularity"},
    {"cuMulticastCreate", 12010, 0, "cuMulticastCreate"},
    {"cuMulticastAddDevice", 12010, 0, "cuMulticastAddDevice"},
    {"cuMulticastBindMem", 12010, 0, "cuMulticastBindMem"},
    {"cuMulticastBindAddr", 12010, 0, "cuMulticastBindAddr"},
    {"cuMulticastUnbind", 12010, 0, "cuMulticastUnbind"},
    {"cuIpcOpenMemHandle", 4010, 0, "cuIpcOpenMemHandle"},
    {"cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2"},
    {"cuIpcCloseMemHandle", 4010, 0, "cuIpcCloseMemHandle"},
    {"cuIpcGetEventHandle", 4010, 0, "cuIpcGetEventHandle"},
    {"cuIpcOpenEventHandle", 4010, 0, "cuIpcOpenEventHandle"},
    {"cuCtxWaitEvent", 12050, 0, "cuCtxWaitEvent"},
    {"cuLaunchGrid", 2000, 0, "cuLaunchGrid"},
    {"cuLaunchGridAsync", 2000, 0, "cuLaunchGridAsync"},
    {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"},
    {"cuStreamBeginCapture", 10000, 1, "cuStreamBeginCapture_ptsz"},
    {"cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2"},
    {"cuStreamBeginCapture", 10010, 1, "cuStreamBeginCapture_v2_ptsz"},
    {"cuStreamEndCapture", 10000, 0, "cuStreamEndCapture"},
    {"cuStreamEndCapture", 10000, 1, "cuStreamEndCapture_ptsz"},
    {"cuGraphInstantiate", 10000, 0, "cuGraphInstantiate"},
    {"cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2"},
    {"cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags"},
    {"cuGraphInstantiateWithFlags", 11040, 0, "cuGraphInstantiateWithFlags"},
    {"cuGraphInstantiateWithParams", 12000, 0, "cuGraphInstantiateWithParams"},
    {"cuGraphInstantiateWithParams", 12000, 1, "cuGraphInstantiateWithParams_ptsz"},
    {"cuStreamBeginCaptureToGraph", 12030, 0, "cuStreamBeginCaptureToGraph"},
    {"cuStreamBeginCaptureToGraph", 12030, 1, "cuStreamBeginCaptureToGraph_ptsz"},
    {"cuGraphCreate", 10000, 0, "cuGraphCreate"},
    {"cuGraphAddKernelNode", 10000, 0, "cuGraphAddKernelNode"},
    {"cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2"},
    {"cuGraphAddMemcpyNode", 10000, 0, "cuGraphAddMemcpyNode"},
    {"cuGraphAddMemsetNode", 10000, 0, "cuGraphAddMemsetNode"},
    {"cuGraphAddHostNode", 10000, 0, "cuGraphAddHostNode"},
    {"cuGraphAddChildGraphNode", 10000, 0, "cuGraphAddChildGraphNode"},
    {"cuGraphAddEmptyNode", 10000, 0, "cuGraphAddEmptyNode"},
    {"cuGraphAddEventRecordNode", 11010, 0, "cuGraphAddEventRecordNode"},
    {"cuGraphAddEventWaitNode", 11010, 0, "cuGraphAddEventWaitNode"},
    {"cuGraphAddNode", 12020, 0, "cuGraphAddNode"},
    {"cuGraphAddNode", 12030, 0, "cuGraphAddNode_v2"},
    {"cuGraphAddMemAllocNode", 11040, 0, "cuGraphAddMemAllocNode"},
    {"cuGraphAddMemFreeNode", 11040, 0, "cuGraphAddMemFreeNode"},
    {"cuGraphAddBatchMemOpNode", 11070, 0, "cuGraphAddBatchMemOpNode"},
    {"cuGraphKernelNodeSetParams", 10000, 0, "cuGraphKernelNodeSetParams"},
    {"cuGraphKernelNodeSetParams", 12000, 0, "cuGraphKernelNodeSetParams_v2"},
    {"cuGraphMemcpyNodeSetParams", 10000, 0, "cuGraphMemcpyNodeSetParams"},
    {"cuGraphMemsetNodeSetParams", 10000, 0, "cuGraphMemsetNodeSetParams"},
    {"cuGraphHostNodeSetParams", 10000, 0, "cuGraphHostNodeSetParams"},
    {"cuGraphEventRecordNodeSetEvent", 11010, 0, "cuGraphEventRecordNodeSetEvent"},
    {"cuGraphEventWaitNodeSetEvent", 11010, 0, "cuGraphEventWaitNodeSetEvent"},
    {"cuGraphNodeSetParams", 12020, 0, "cuGraphNodeSetParams"},
    {"cuGraphExecKernelNodeSetParams", 10010, 0, "cuGraphExecKernelNodeSetParams"},
    {"cuGraphExecKernelNodeSetParams", 12000, 0, "cuGraphExecKernelNodeSetParams_v2"},
    {"cuGraphExecMemcpyNodeSetParams", 10020, 0, "cuGraphExecMemcpyNodeSetParams"},
    {"cuGraphExecMemsetNodeSetParams", 10020, 0, "cuGraphExecMemsetNodeSetParams"},
    {"cuGraphExecHostNodeSetParams", 10020, 0, "cuGraphExecHostNodeSetParams"},
    {"cuGraphExecChildGraphNodeSetParams", 11010, 0, "cuGraphExecChildGraphNodeSetParams"},
    {"cuGraphExecEventRecordNodeSetEvent", 11010, 0, "cuGraphExecEventRecordNodeSetEvent"},
    {"cuGraphExecEventWaitNodeSetEvent", 11010, 0, "cuGraphExecEventWaitNodeSetEvent"},
    {"cuStreamUpdateCaptureDependencies", 11030, 0, "cuStreamUpdateCaptureDependencies"},
    {"cuStreamUpdateCaptureDependencies", 11030, 1, "cuStreamUpdateCaptureDependencies_ptsz"},
    {"cuStreamUpdateCaptureDependencies", 12030, 0, "cuStreamUpdateCaptureDependencies_v2"},
    {"cuStreamUpdateCaptureDependencies", 12030, 1, "cuStreamUpdateCaptureDependencies_v2_ptsz"},
    {"cuGraphBatchMemOpNodeSetParams", 11070, 0, "cuGraphBatchMemOpNodeSetParams"},
    {"cuGraphExecBatchMemOpNodeSetParams", 11070, 0, "cuGraphExecBatchMemOpNodeSetParams"},
    {"cuGraphKernelNodeSetAttribute", 11000, 0, "cuGraphKernelNodeSetAttribute"},
    {"cuGraphKernelNodeCopyAttributes", 11000, 0, "cuGraphKernelNodeCopyAttributes"},
    {"cuGraphNodeSetEnabled", 11060, 0, "cuGraphNodeSetEnabled"},
    {"cuGraphConditionalHandleCreate", 12030, 0, "cuGraphConditionalHandleCreate"},
    {"cuDeviceGraphMemTrim", 11040, 0, "cuDeviceGraphMemTrim"},
    {"cuUserObjectCreate", 11030, 0, "cuUserObjectCreate"},
    {"cuUserObjectRetain", 11030, 0, "cuUserObjectRetain"},
    {"cuUserObjectRelease", 11030, 0, "cuUserObjectRelease"},
    {"cuGraphRetainUserObject", 11030, 0, "cuGraphRetainUserObject"},
    {"cuGraphReleaseUserObject", 11030, 0, "cuGraphReleaseUserObject"},
    {"cuGraphAddExternalSemaphoresSignalNode", 11020, 0, "cuGraphAddExternalSemaphoresSignalNode"},
    {"cuGraphAddExternalSemaphoresWaitNode", 11020, 0, "cuGraphAddExternalSemaphoresWaitNode"},
    {"cuGraphExternalSemaphoresSignalNodeSetParams", 11020, 0, "cuGraphExternalSemaphoresSignalNodeSetParams"},
    {"cuGraphExternalSemaphoresWaitNodeSetParams", 11020, 0, "cuGraphExternalSemaphoresWaitNodeSetParams"},
    {"cuGraphExecExternalSemaphoresSignalNodeSetParams", 11020, 0, "cuGraphExecExternalSemaphoresSignalNodeSetParams"},
    {"cuGraphExecExternalSemaphoresWaitNodeSetParams", 11020, 0, "cuGraphExecExternalSemaphoresWaitNodeSetParams"},
    {"cuGraphExecNodeSetParams", 12020, 0, "cuGraphExecNodeSetParams"},
    {"cuGraphExecUpdate", 10020, 0, "cuGraphExecUpdate"},
    {"cuGraphExecUpdate", 12000, 0, "cuGraphExecUpdate_v2"},
    {"cuGraphDestroy", 10000, 0, "cuGraphDestroy"},
    {"cuGraphAddDependencies", 10000, 0, "cuGraphAddDependencies"},
    {"cuGraphAddDependencies", 12030, 0, "cuGraphAddDependencies_v2"},
    {"cuGraphRemoveDependencies", 10000, 0, "cuGraphRemoveDependencies"},
    {"cuGraphRemoveDependencies", 12030, 0, "cuGraphRemoveDependencies_v2"},
    {"cuGraphDestroyNode", 10000, 0, "cuGraphDestroyNode"},
    {"cuGraphClone", 10000, 0, "cuGraphClone"},
    {"cuGraphExecDestroy", 10000, 0, "cuGraphExecDestroy"},
    {"cuGraphUpload", 11010, 0, "cuGraphUpload"},
    {"cuGraphUpload", 11010, 1, "cuGraphUpload_ptsz"},
    {"cuGraphLaunch", 10000, 0, "cuGraphLaunch"},
    {"cuGraphLaunch", 10000, 1, "cuGraphLaunch_ptsz"},
    {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
    {"cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2"},
    {"cuMemAllocManaged", 6000, 0, "cuMemAllocManaged"},
    {"cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2"},
    {"cuMemHostAlloc", 2020, 0, "cuMemHostAlloc"},
    {"cuMemFree", 3020, 0, "cuMemFree_v2"},
    {"cuMemFreeHost", 2000, 0, "cuMemFreeHost"},
    {"cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2"},
    {"cuMemHostUnregister", 4000, 0, "cuMemHostUnregister"},
    {"cuMemGetAllocationGranularity", 10020, 0, "cuMemGetAllocationGranularity"},
    {"cuMemCreate", 10020, 0, "cuMemCreate"},
    {"cuMemRelease", 10020, 0, "cuMemRelease"},
    {"cuMemAddressReserve", 10020, 0, "cuMemAddressReserve"},
    {"cuMemAddressFree", 10020, 0, "cuMemAddressFree"},
    {"cuMemMap", 10020, 0, "cuMemMap"},
    {"cuMemSetAccess", 10020, 0, "cuMemSetAccess"},
    {"cuMemUnmap", 10020, 0, "cuMemUnmap"},
    {"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync"},
    {"cuMemAllocAsync", 11020, 1, "cuMemAllocAsync_ptsz"},
    {"cuMemAllocFromPoolAsync", 11020, 0, "cuMemAllocFromPoolAsync"},
    {"cuMemAllocFromPoolAsync", 11020, 1, "cuMemAllocFromPoolAsync_ptsz"},
    {"cuMemFreeAsync", 11020, 0, "cuMemFreeAsync"},
    {"cuMemFreeAsync", 11020, 1, "cuMemFreeAsync_ptsz"},
    {"cuMemcpy", 4000, 0, "cuMemcpy"},
    {"cuMemcpy", 7000, 1, "cuMemcpy_ptds"},
    {"cuMemcpyAsync", 4000, 0, "cuMemcpyAsync"},
    {"cuMemcpyAsync", 7000, 1, "cuMemcpyAsync_ptsz"},
    {"cuMemBatchDecompressAsync", 12060, 0, "cuMemBatchDecompressAsync"},
    {"cuMemBatchDecompressAsync", 12060, 1, "cuMemBatchDecompressAsync_ptsz"},
    {"cuMemcpyBatchAsync", 12080, 0, "cuMemcpyBatchAsync"},
    {"cuMemcpyBatchAsync", 12080, 1, "cuMemcpyBatchAsync_ptsz"},
    {"cuMemcpyBatchAsync", 13000, 0, "cuMemcpyBatchAsync_v2"},
    {"cuMemcpyBatchAsync", 13000, 1, "cuMemcpyBatchAsync_v2_ptsz"},
    {"cuMemcpy3DBatchAsync", 12080, 0, "cuMemcpy3DBatchAsync"},
    {"cuMemcpy3DBatchAsync", 12080, 1, "cuMemcpy3DBatchAsync_ptsz"},
    {"cuMemcpy3DBatchAsync", 13000, 0, "cuMemcpy3DBatchAsync_v2"},
    {"cuMemcpy3DBatchAsync", 13000, 1, "cuMemcpy3DBatchAsync_v2_ptsz"},
    {"cuMemPrefetchAsync", 8000, 0, "cuMemPrefetchAsync"},
    {"cuMemPrefetchAsync", 8000, 1, "cuMemPrefetchAsync_ptsz"},
    {"cuMemPrefetchAsync", 12020, 0, "cuMemPrefetchAsync_v2"},
    {"cuMemPrefetchAsync", 12020, 1, "cuMemPrefetchAsync_v2_ptsz"},
    {"cuMemAdvise", 8000, 0, "cuMemAdvise"},
    {"cuMemAdvise", 12020, 0, "cuMemAdvise_v2"},
    {"cuStreamAttachMemAsync", 6000, 0, "cuStreamAttachMemAsync"},
    {"cuStreamAttachMemAsync", 7000, 1, "cuStreamAttachMemAsync_ptsz"},
    {"cuMemPrefetchBatchAsync", 13000, 0, "cuMemPrefetchBatchAsync"},
    {"cuMemPrefetchBatchAsync", 13000, 1, "cuMemPrefetchBatchAsync_ptsz"},
    {"cuMemDiscardBatchAsync", 13000, 0, "cuMemDiscardBatchAsync"},
    {"cuMemDiscardBatchAsync", 13000, 1, "cuMemDiscardBatchAsync_ptsz"},
    {"cuMemDiscardAndPrefetchBatchAsync", 13000, 0, "cuMemDiscardAndPrefetchBatchAsync"},
    {"cuMemDiscardAndPrefetchBatchAsync", 13000, 1, "cuMemDiscardAndPrefetchBatchAsync_ptsz"},
    {"cuMemcpyHtoA", 3020, 0, "cuMemcpyHtoA_v2"},
    {"cuMemcpyHtoA", 7000, 1, "cuMemcpyHtoA_v2_ptds"},
    {"cuMemcpyAtoH", 3020, 0, "cuMemcpyAtoH_v2"},
    {"cuMemcpyAtoH", 7000, 1, "cuMemcpyAtoH_v2_ptds"},
    {"cuMemcpyDtoA", 3020, 0, "cuMemcpyDtoA_v2"},
    {"cuMemcpyDtoA", 7000, 1, "cuMemcpyDtoA_v2_ptds"},
    {"cuMemcpyAtoD", 3020, 0, "cuMemcpyAtoD_v2"},
    {"cuMemcpyAtoD", 7000, 1, "cuMemcpyAtoD_v2_ptds"},
    {"cuMemcpyAtoA", 3020, 0, "cuMemcpyAtoA_v2"},
    {"cuMemcpyAtoA", 7000, 1, "cuMemcpyAtoA_v2_ptds"},
    {"cuMemcpyHtoAAsync", 3020, 0, "cuMemcpyHtoAAsync_v2"},
    {"cuMemcpyHtoAAsync", 7000, 1, "cuMemcpyHtoAAsync_v2_ptsz"},
    {"cuMemcpyAtoHAsync", 3020, 0, "cuMemcpyAtoHAsync_v2"},
    {"cuMemcpyAtoHAsync", 7000, 1, "cuMemcpyAtoHAsync_v2_ptsz"},
    {"cuArrayCreate", 3020, 0, "cuArrayCreate_v2"},
    {"cuArray3DCreate", 3020, 0, "cuArray3DCreate_v2"},
    {"cuArrayDestroy", 2000, 0, "cuArrayDestroy"},
    {"cuArray3DGetDescriptor", 3020, 0, "cuArray3DGetDescriptor_v2"},
    {"cuMipmappedArrayCreate", 5000, 0, "cuMipmappedArrayCreate"},
    {"cuMipmappedArrayGetLevel", 5000, 0, "cuMipmappedArrayGetLevel"},
    {"cuMipmappedArrayDestroy", 5000, 0, "cuMipmappedArrayDestroy"},
    {"cuExternalMemoryGetMappedMipmappedArray", 10000, 0, "cuExternalMemoryGetMappedMipmappedArray"},
    {"cuMemcpyHtoD", 3020, 0, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 7000, 1, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyDtoH", 3020, 0, "cuMemcpyDtoH_v2"},
    {"cuMemcpyDtoH", 7000, 1, "cuMemcpyDtoH_v2_ptds"},
    {"cuMemcpyDtoD", 3020, 0, "cuMemcpyDtoD_v2"},
    {"cuMemcpyDtoD", 7000, 1, "cuMemcpyDtoD_v2_ptds"},
    {"cuMemcpyHtoDAsync", 3020, 0, "cuMemcpyHtoDAsync_v2"},
    {"cuMemcpyHtoDAsync", 7000, 1, "cuMemcpyHtoDAsync_v2_ptsz"},
    {"cuMemcpyDtoHAsync", 3020, 0, "cuMemcpyDtoHAsync_v2"},
    {"cuMemcpyDtoHAsync", 7000, 1, "cuMemcpyDtoHAsync_v2_ptsz"},
    {"cuMemcpyDtoDAsync", 3020, 0, "cuMemcpyDtoDAsync_v2"},
    {"cuMemcpyDtoDAsync", 7000, 1, "cuMemcpyDtoDAsync_v2_ptsz"},
    {"cuMemcpy2D", 3020, 0, "cuMemcpy2D_v2"},
    {"cuMemcpy2D", 7000, 1, "cuMemcpy2D_v2_ptds"},
    {"cuMemcpy2DUnaligned", 3020, 0, "cuMemcpy2DUnaligned_v2"},
    {"cuMemcpy2DUnaligned", 7000, 1, "cuMemcpy2DUnaligned_v2_ptds"},
    {"cuMemcpy2DAsync", 3020, 0, "cuMemcpy2DAsync_v2"},
    {"cuMemcpy2DAsync", 7000, 1, "cuMemcpy2DAsync_v2_ptsz"},
    {"cuMemcpy3D", 3020, 0, "cuMemcpy3D_v2"},
    {"cuMemcpy3D", 7000, 1, "cuMemcpy3D_v2_ptds"},
    {"cuMemcpy3DAsync", 3020, 0, "cuMemcpy3DAsync_v2"},
    {"cuMemcpy3DAsync", 7000, 1, "cuMemcpy3DAsync_v2_ptsz"},
    {"cuMemcpy3DPeer", 4000, 0, "cuMemcpy3DPeer"},
    {"cuMemcpy3DPeer", 7000, 1, "cuMemcpy3DPeer_ptds"},
    {"cuMemcpy3DPeerAsync", 4000, 0, "cuMemcpy3DPeerAsync"},
    {"cuMemcpy3DPeerAsync", 7000, 1, "cuMemcpy3DPeerAsync_ptsz"},
    {"cuMemcpyPeer", 4000, 0, "cuMemcpyPeer"},
    {"cuMemcpyPeer", 7000, 1, "cuMemcpyPeer_ptds"},
    {"cuMemcpyPeerAsync", 4000, 0, "cuMemcpyPeerAsync"},
    {"cuMemcpyPeerAsync", 7000, 1, "cuMemcpyPeerAsync_ptsz"},
    {"cuMemsetD8", 3020, 0, "cuMemsetD8_v2"},
    {"cuMemsetD8", 7000, 1, "cuMemsetD8_v2_ptds"},
    {"cuMemsetD16", 3020, 0, "cuMemsetD16_v2"},
    {"cuMemsetD16", 7000, 1, "cuMemsetD16_v2_ptds"},
    {"cuMemsetD32", 3020, 0, "cuMemsetD32_v2"},
    {"cuMemsetD32", 7000, 1, "cuMemsetD32_v2_ptds"},
    {"cuMemsetD8Async", 3020, 0, "cuMemsetD8Async"},
    {"cuMemsetD8Async", 7000, 1, "cuMemsetD8Async_ptsz"},
    {"cuMemsetD16Async", 3020, 0, "cuMemsetD16Async"},
    {"cuMemsetD16Async", 7000, 1, "cuMemsetD16Async_ptsz"},
    {"cuMemsetD32Async", 3020, 0, "cuMemsetD32Async"},
    {"cuMemsetD32Async", 7000, 1, "cuMemsetD32Async_ptsz"},
    {"cuMemsetD2D8", 3020, 0, "cuMemsetD2D8_v2"},
    {"cuMemsetD2D8", 7000, 1, "cuMemsetD2D8_v2_ptds"},
    {"cuMemsetD2D16", 3020, 0, "cuMemsetD2D16_v2"},
    {"cuMemsetD2D16", 7000, 1, "cuMemsetD2D16_v2_ptds"},
    {"cuMemsetD2D32", 3020, 0, "cuMemsetD2D32_v2"},
    {"cuMemsetD2D32", 7000, 1, "cuMemsetD2D32_v2_ptds"},
    {"cuMemsetD2D8Async", 3020, 0, "cuMemsetD2D8Async"},
    {"cuMemsetD2D8Async", 7000, 1, "cuMemsetD2D8Async_ptsz"},
    {"cuMemsetD2D16Async", 3020, 0, "cuMemsetD2D16Async"},
    {"cuMemsetD2D16Async", 7000, 1, "cuMemsetD2D16Async_ptsz"},
    {"cuMemsetD2D32Async", 3020, 0, "cuMemsetD2D32Async"},
    {"cuMemsetD2D32Async", 7000, 1, "cuMemsetD2D32Async_ptsz"},
    {"cuStreamCreate", 2000, 0, "cuStreamCreate"},
    {"cuStreamCreateWithPriority", 5050, 0, "cuStreamCreateWithPriority"},
    {"cuStreamDestroy", 2000, 0, "cuStreamDestroy"},
    {"cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2"},
    {"cuStreamSynchronize", 2000, 0, "cuStreamSynchronize"},
    {"cuStreamSynchronize", 7000, 1, "cuStreamSynchronize_ptsz"},
    {"cuStreamQuery", 2000, 0, "cuStreamQuery"},
    {"cuStreamQuery", 7000, 1, "cuStreamQuery_ptsz"},
    {"cuEventCreate", 2000, 0, "cuEventCreate"},
    {"cuEventRecord", 2000, 0, "cuEventRecord"},
    {"cuEventRecord", 7000, 1, "cuEventRecord_ptsz"},
    {"cuEventRecordWithFlags", 11010, 0, "cuEventRecordWithFlags"},
    {"cuEventRecordWithFlags", 11010, 1, "cuEventRecordWithFlags_ptsz"},
    {"cuStreamWaitValue32", 8000, 0, "cuStreamWaitValue32"},
    {"cuStreamWaitValue32", 8000, 1, "cuStreamWaitValue32_ptsz"},
    {"cuStreamWaitValue32", 11070, 0, "cuStreamWaitValue32_v2"},
    {"cuStreamWaitValue32", 11070, 1, "cuStreamWaitValue32_v2_ptsz"},
    {"cuStreamWaitValue64", 8000, 0, "cuStreamWaitValue64"},
    {"cuStreamWaitValue64", 8000, 1, "cuStreamWaitValue64_ptsz"},
    {"cuStreamWaitValue64", 11070, 0, "cuStreamWaitValue64_v2"},
    {"cuStreamWaitValue64", 11070, 1, "cuStreamWaitValue64_v2_ptsz"},
    {"cuStreamWriteValue32", 8000, 0, "cuStreamWriteValue32"},
    {"cuStreamWriteValue32", 8000, 1, "cuStreamWriteValue32_ptsz"},
    {"cuStreamWriteValue32", 11070, 0, "cuStreamWriteValue32_v2"},
    {"cuStreamWriteValue32", 11070, 1, "cuStreamWriteValue32_v2_ptsz"},
    {"cuStreamWriteValue64", 8000, 0, "cuStreamWriteValue64"},
    {"cuStreamWriteValue64", 8000, 1, "cuStreamWriteValue64_ptsz"},
    {"cuStreamWriteValue64", 11070, 0, "cuStreamWriteValue64_v2"},
    {"cuStreamWriteValue64", 11070, 1, "cuStreamWriteValue64_v2_ptsz"},
    {"cuStreamBatchMemOp", 8000, 0, "cuStreamBatchMemOp"},
    {"cuStreamBatchMemOp", 8000, 1, "cuStreamBatchMemOp_ptsz"},
    {"cuStreamBatchMemOp", 11070, 0, "cuStreamBatchMemOp_v2"},
    {"cuStreamBatchMemOp", 11070, 1, "cuStreamBatchMemOp_v2_ptsz"},
    {"cuLaunchHostFunc", 10000, 0, "cuLaunchHostFunc"},
    {"cuLaunchHostFunc", 10000, 1, "cuLaunchHostFunc_ptsz"},
    {"cuStreamAddCallback", 5000, 0, "cuStreamAddCallback"},
    {"cuStreamAddCallback", 7000, 1, "cuStreamAddCallback_ptsz"},
    {"cuEventQuery", 2000, 0, "cuEventQuery"},
    {"cuStreamWaitEvent", 2000, 0, "cuStreamWaitEvent"},
    {"cuStreamWaitEvent", 7000, 1, "cuStreamWaitEvent_ptsz"},
    {"cuEventSynchronize", 2000, 0, "cuEventSynchronize"},
    {"cuEventElapsedTime", 2000, 0, "cuEventElapsedTime"},
    {"cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2"},
    {"cuEventDestroy", 2000, 0, "cuEventDestroy"},
    {"cuEventDestroy", 4000, 0, "cuEventDestroy_v2"},
    {"cuProfilerStart", 4000, 0, "cuProfilerStart"},
    {"cuProfilerStop", 4000, 0, "cuProfilerStop"},
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
    {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
};

static void* driver;

/* The exported name of a function address, as the dynamic linker sees it. */
static const char* nameOf(void* p) {
  Dl_info info;
  if (p == (void*)1) return "(unchanged)";
  return p != NULL && dladdr(p, &info) != 0 && info.dli_sname != NULL ? info.dli_sname : "NULL";
}

static void lookupAt(const char* name, int version, cuuint64_t flags) {
  void* p = (void*)1;
  CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
  CUresult r = cuGetProcAddress(name, &p, version, flags, &status);
  printf("%s@%d%s -> %s %s status %d\n", name, version,
         flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ? " per-thread" : "", errorName(r), nameOf(p),
         (int)status);
}

static void lookups(FILE* coverage) {
  typedef CUresult (*GetProcV1)(const char*, void**, int, cuuint64_t);
  GetProcV1 getProc1 = NULL;
  void* bootstrap = NULL;
  void* self = NULL;
  void* fn = NULL;
  size_t i;
  int version = 0;
  CUdriverProcAddressQueryResult status;

  driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL) {
    printf("dlopen: %s\n", dlerror());
    ++failures;
    return;
  }
  /* The runtime's bootstrap: dlsym cuGetProcAddress_v2, then ask it for itself. */
  bootstrap = dlsym(driver, "cuGetProcAddress_v2");
  CHECK(cuGetProcAddress("cuGetProcAddress", &self, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  printf("cuGetProcAddress@12000 is the exported cuGetProcAddress_v2: %s\n", self == bootstrap ? "yes" : "no");
  if (self != bootstrap) ++failures;
  CHECK(cuGetProcAddress("cuGetProcAddress", &self, 11030, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  memcpy(&getProc1, &self, sizeof(getProc1)); /* ISO C has no void* -> function pointer cast */
  CHECK(getProc1("cuDriverGetVersion", &fn, 2020, CU_GET_PROC_ADDRESS_DEFAULT));
  if (fn != NULL) {
    CUresult (*getVersion)(int*) = NULL;
    memcpy(&getVersion, &fn, sizeof(getVersion));
    CHECK(getVersion(&version));
  }
  printf("v1 lookup: %s -> %d\n", nameOf(fn), version);

  lookupAt("cuMemAlloc", 3020, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuMemAlloc", 3010, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuGetProcAddress", 11020, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuGetProcAddress", 11030, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuGetProcAddress", 11080, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuGetProcAddress", 12000, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuCtxSynchronize", 12000, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuCtxSynchronize", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuEventElapsedTime", 12000, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuEventElapsedTime", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuLaunchKernel", 6050, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  lookupAt("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  lookupAt("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
  lookupAt("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  lookupAt("cuInit", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  lookupAt("cuMemAlloc_v2", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuNoSuchFunction", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
  lookupAt("cuInit", 13000, 4);

  /* Every export, at the version that introduced it: the answer must be exactly dlsym's. */
  for (i = 0; i < sizeof(kLookups) / sizeof(kLookups[0]); ++i) {
    const struct Lookup* l = &kLookups[i];
    const cuuint64_t flags = l->perThread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    void* exported = dlsym(driver, l->symbol);
    fn = NULL;
    if (cuGetProcAddress(l->name, &fn, l->version, flags, &status) != CUDA_SUCCESS || fn == NULL || fn != exported) {
      printf("FAIL lookup %s@%d%s -> %s, want %s\n", l->name, l->version, l->perThread ? " per-thread" : "",
             nameOf(fn), l->symbol);
      ++failures;
    } else if (coverage != NULL) {
      fprintf(coverage, "%s\n", l->symbol);
    }
  }
  printf("lookups checked: %zu\n", sizeof(kLookups) / sizeof(kLookups[0]));
}

int main(int argc, char** argv) {
  FILE* coverage = argc > 1 ? fopen(argv[1], "w") : NULL;
  devices();
  memory();
  launches();
  events();
  errors();
  lookups(coverage);
  if (coverage != NULL) fclose(coverage);
  printf("smoke_driver: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
