/* A CUDA 11 runtime's cudaGraphInstantiate, as old binaries call it: five parameters, the last
 * two a buffer for the instantiation's log and its size (CUDA 12 took them out and kept the
 * name). Reports what arrived, so that a shim that forwards only the newer three is caught: the
 * real runtime writes its log through whatever pointer arrives. Its cudaMemPrefetchAsync takes a
 * device ordinal and the stream (CUDA 13's: a location, flags, the stream); its cudaGraphExecUpdate
 * an error node and a result out (CUDA 12's: one result info). Also what cutrace
 * looks a runtime up by (cudaGetDeviceCount), and its version. It stands for CUDA 12.8's runtime
 * too, as any before 13: its batch copies take the index of a failed copy before the stream (13's
 * not), cudaMemcpyBatchAsync's as a ninth parameter, on the stack; its cudaMemAdvise takes a device
 * ordinal (13's a location), and 12.2's location version is cudaMemAdvise_v2; its
 * cudaGraphAddDependencies takes no edge data (13's before the count).
 *
 *   built as a library; old_runtime links it */
#include <stddef.h>
#include <string.h>

#include "cudart11.h"

int cudaGetDeviceCount(int* count) {
  if (count != NULL) *count = 0;
  return 0;
}

int cudaGraphInstantiate(void** exec, void* graph, void* errorNode, char* logBuffer, size_t bufferSize) {
  static const char kLog[] = "instantiated";
  if (exec == NULL || graph == NULL || errorNode != NULL) return 1; /* cudaErrorInvalidValue */
  if (logBuffer == NULL || bufferSize != 64) return 1;
  memcpy(logBuffer, kLog, sizeof(kLog));
  *exec = graph;
  return 0;
}

int cudaRuntimeGetVersion(int* version) {
  if (version == NULL) return 1;
  *version = 11080;
  return 0;
}

/* The stream the caller passed, seen by old_runtime. */
void* lastPrefetchStream;

int cudaMemPrefetchAsync(const void* p, size_t count, int dstDevice, void* stream) {
  if (p == NULL || count != 4096 || dstDevice != 0) return 1;
  lastPrefetchStream = stream;
  return 0;
}

/* CUDA 11's: the node that failed and the result, each through its own pointer. */
int cudaGraphExecUpdate(void* exec, void* graph, void** errorNode, int* result) {
  if (exec == NULL || graph == NULL || errorNode == NULL || result == NULL) return 1;
  *errorNode = NULL;
  *result = 0; /* cudaGraphExecUpdateSuccess */
  return 0;
}

/* CUDA 12.8's: every copy made (the host's memory stands for the device's); the index of a failed
 * copy out; the stream seen by old_runtime. */
int cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count, void* attrs,
                         size_t* attrsIdxs, size_t numAttrs, size_t* failIdx, void* stream) {
  if (dsts == NULL || srcs == NULL || sizes == NULL || attrs == NULL || attrsIdxs == NULL || numAttrs != 1 ||
      failIdx == NULL)
    return 1;
  for (size_t i = 0; i < count; ++i) memcpy(dsts[i], srcs[i], sizes[i]);
  *failIdx = (size_t)-1;
  lastPrefetchStream = stream;
  return 0;
}

/* The index of a failed copy out, before the flags and the stream: one word more than 13's. */
int cudaMemcpy3DBatchAsync(size_t count, void* ops, size_t* failIdx, unsigned long long flags, void* stream) {
  if (count != 1 || ops == NULL || failIdx == NULL || flags != 0) return 1;
  *failIdx = (size_t)-1;
  lastPrefetchStream = stream;
  return 0;
}

/* The advice and device seen by old_runtime. */
int lastAdvice, lastAdviceDevice;

int cudaMemAdvise(const void* p, size_t count, int advice, int device) {
  if (p == NULL || count == 0) return 1;
  lastAdvice = advice, lastAdviceDevice = device;
  return 0;
}

int cudaMemAdvise_v2(const void* p, size_t count, int advice, struct Location location) {
  if (p == NULL || count == 0 || location.type != 1) return 1;
  lastAdvice = advice, lastAdviceDevice = location.id;
  return 0;
}

/* The edges seen by old_runtime. */
size_t lastEdges;

int cudaGraphAddDependencies(void* graph, void* const* from, void* const* to, size_t count) {
  if (graph == NULL || from == NULL || to == NULL) return 1;
  lastEdges = count;
  return 0;
}

/* CUDA 11.2-12.9's names for the external semaphores' calls (their headers rename
 * cudaSignalExternalSemaphoresAsync and cudaWaitExternalSemaphoresAsync to these), and 12.3's second
 * versions of the edge calls, which take each edge's data before the count (13's under the first
 * names): what arrived, seen by old_runtime. */
void* lastSemaphore;
void* lastStream;
size_t lastCount;

static int semaphores(void* const* sems, const void* params, unsigned count, void* stream) {
  if (sems == NULL || params == NULL || count == 0) return 1;
  lastSemaphore = sems[0], lastCount = count, lastStream = stream;
  return 0;
}
int cudaSignalExternalSemaphoresAsync_v2(void* const* sems, const void* params, unsigned count, void* stream) {
  return semaphores(sems, params, count, stream);
}
int cudaSignalExternalSemaphoresAsync_v2_ptsz(void* const* sems, const void* params, unsigned count, void* stream) {
  return semaphores(sems, params, count, stream);
}
int cudaWaitExternalSemaphoresAsync_v2(void* const* sems, const void* params, unsigned count, void* stream) {
  return semaphores(sems, params, count, stream);
}
int cudaWaitExternalSemaphoresAsync_v2_ptsz(void* const* sems, const void* params, unsigned count, void* stream) {
  return semaphores(sems, params, count, stream);
}

static int captureDependencies(void* stream, void* const* deps, const struct EdgeData* edges, size_t count,
                               unsigned flags) {
  if (deps == NULL || edges == NULL || flags > 1) return 1;
  lastStream = stream, lastCount = count;
  return 0;
}
int cudaStreamUpdateCaptureDependencies_v2(void* stream, void* const* deps, const struct EdgeData* edges, size_t count,
                                           unsigned flags) {
  return captureDependencies(stream, deps, edges, count, flags);
}
int cudaStreamUpdateCaptureDependencies_v2_ptsz(void* stream, void* const* deps, const struct EdgeData* edges,
                                                size_t count, unsigned flags) {
  return captureDependencies(stream, deps, edges, count, flags);
}

int cudaGraphAddNode_v2(void** node, void* graph, void* const* deps, const struct EdgeData* edges, size_t count,
                        void* params) {
  if (node == NULL || graph == NULL || params == NULL || (count != 0 && (deps == NULL || edges == NULL))) return 1;
  *node = params;
  lastCount = count;
  return 0;
}

int cudaGraphAddDependencies_v2(void* graph, void* const* from, void* const* to, const struct EdgeData* edges,
                                size_t count) {
  if (graph == NULL || from == NULL || to == NULL || edges == NULL) return 1;
  lastEdges = count;
  return 0;
}
int cudaGraphRemoveDependencies_v2(void* graph, void* const* from, void* const* to, const struct EdgeData* edges,
                                   size_t count) {
  if (graph == NULL || from == NULL || to == NULL || edges == NULL || count > lastEdges) return 1;
  lastEdges -= count;
  return 0;
}

/* The names before CUDA 4.0 of cudaDeviceSynchronize and cudaDeviceReset, exported up to 12.9. */
int synchronized, exited;
int cudaThreadSynchronize(void) {
  ++synchronized;
  return 0;
}
int cudaThreadExit(void) {
  ++exited;
  return 0;
}
/* And of cudaDeviceSetLimit and cudaDeviceSetCacheConfig: the stack size and the preference seen. */
size_t lastLimit;
int lastCacheConfig = -1;
int cudaThreadSetLimit(int limit, size_t value) {
  if (limit != 0 /* cudaLimitStackSize */) return 1;
  lastLimit = value;
  return 0;
}
int cudaThreadSetCacheConfig(int config) {
  if (config < 0 || config > 3) return 1;
  lastCacheConfig = config;
  return 0;
}

/* A kernel's registration (the host stub as its handle) and one cooperative launch on each device
 * of a list (cudaLaunchParams), the devices counted; CUDA 13 took the call out. */
void __cudaRegisterFunction(void** module, const char* hostFun, char* deviceFun, const char* deviceName,
                            int threadLimit, void* tid, void* bid, void* bDim, void* gDim, int* wSize) {
  (void)module, (void)hostFun, (void)deviceFun, (void)deviceName, (void)threadLimit, (void)tid, (void)bid,
      (void)bDim, (void)gDim, (void)wSize;
}
int cudaLaunchCooperativeKernelMultiDevice(struct LaunchParams* list, unsigned count, unsigned flags) {
  if (list == NULL || count == 0 || flags != 0) return 1;
  for (unsigned i = 0; i < count; ++i)
    if (list[i].func == NULL || list[i].grid.x == 0 || list[i].block.x == 0) return 1;
  lastCount = count, lastStream = list[0].stream;
  return 0;
}
