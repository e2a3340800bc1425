#pragma once
/* What cudart11 (a CUDA 11 and 12 runtime's entry points, as programs built against those
 * headers call them) exports, and what it saw of the last calls, which old_runtime checks. Its own
 * declarations: CUDA 13's headers declare these names with other parameters, or not at all. */
#include <stddef.h>

int cudaGraphInstantiate(void** exec, void* graph, void* errorNode, char* logBuffer, size_t bufferSize);
int cudaGraphExecUpdate(void* exec, void* graph, void** errorNode, int* result);
int cudaMemPrefetchAsync(const void* p, size_t count, int dstDevice, void* stream);
int cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count, void* attrs,
                         size_t* attrsIdxs, size_t numAttrs, size_t* failIdx, void* stream);
int cudaMemcpy3DBatchAsync(size_t count, void* ops, size_t* failIdx, unsigned long long flags, void* stream);
extern void* lastPrefetchStream;
int cudaMemAdvise(const void* p, size_t count, int advice, int device);
/* A location: its type and id (cudaMemLocation). */
struct Location {
  int type, id;
};
int cudaMemAdvise_v2(const void* p, size_t count, int advice, struct Location location);
extern int lastAdvice, lastAdviceDevice;
int cudaGraphAddDependencies(void* graph, void* const* from, void* const* to, size_t count);
extern size_t lastEdges;
int cudaSignalExternalSemaphoresAsync_v2(void* const* sems, const void* params, unsigned count, void* stream);
int cudaSignalExternalSemaphoresAsync_v2_ptsz(void* const* sems, const void* params, unsigned count, void* stream);
int cudaWaitExternalSemaphoresAsync_v2(void* const* sems, const void* params, unsigned count, void* stream);
int cudaWaitExternalSemaphoresAsync_v2_ptsz(void* const* sems, const void* params, unsigned count, void* stream);
extern void* lastSemaphore;
extern void* lastStream;
extern size_t lastCount;
/* An edge's data: its source port, destination port and type (cudaGraphEdgeData). */
struct EdgeData {
  unsigned char from_port, to_port, type, reserved[5];
};
int cudaStreamUpdateCaptureDependencies_v2(void* stream, void* const* deps, const struct EdgeData* edges, size_t count,
                                           unsigned flags);
int cudaStreamUpdateCaptureDependencies_v2_ptsz(void* stream, void* const* deps, const struct EdgeData* edges,
                                                size_t count, unsigned flags);
int cudaGraphAddNode_v2(void** node, void* graph, void* const* deps, const struct EdgeData* edges, size_t count,
                        void* params);
int cudaGraphAddDependencies_v2(void* graph, void* const* from, void* const* to, const struct EdgeData* edges,
                                size_t count);
int cudaGraphRemoveDependencies_v2(void* graph, void* const* from, void* const* to, const struct EdgeData* edges,
                                   size_t count);
int cudaThreadSynchronize(void);
int cudaThreadExit(void);
extern int synchronized, exited;
int cudaThreadSetLimit(int limit, size_t value);
int cudaThreadSetCacheConfig(int config);
extern size_t lastLimit;
extern int lastCacheConfig;
void __cudaRegisterFunction(void** module, const char* hostFun, char* deviceFun, const char* deviceName,
                            int threadLimit, void* tid, void* bid, void* bDim, void* gDim, int* wSize);
/* cudaLaunchParams (CUDA 9-12.9), with its dim3s. */
struct Dim3 {
  unsigned x, y, z;
};
struct LaunchParams {
  void* func;
  struct Dim3 grid, block;
  void** args;
  size_t shared;
  void* stream;
};
int cudaLaunchCooperativeKernelMultiDevice(struct LaunchParams* list, unsigned count, unsigned flags);
