// A CUDA graph built node by node with the runtime's graph API: a kernel, a set, a copy, a host
// function, a child graph, event record and wait, empty nodes, a node by its generic parameters
// and copies by the runtime's shorthands (linear, to and from a device variable); in a graph of their own, graph memory allocated and freed. Each node added is recorded with its graph as the handle, and the driver call the
// runtime makes for it nested inside; a node on no graph is refused and recorded with its result.
// The graph is then instantiated and edited (every kind of node's parameters set in the graph,
// with the node as the handle, and in the instantiated graph, with the exec as the handle; the exec
// updated from the graph), each edit with the driver call the runtime makes for it nested inside;
// an update from a graph of another shape is refused and recorded with its result. The graph is
// then launched and destroyed. A graph's structure is edited (an edge added and removed, the graph
// cloned, a node destroyed; an edge to another graph's node refused).
//   usage: graph_build_runtime
#include <cstdio>
#include <cstring>

#include "cuda_check.h"

__device__ int deviceTable[16];

__global__ void graph_fill(int* p, int v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

static void hostFunction(void* data) { *static_cast<int*>(data) += 1; }

int main() {
  const int n = 256;
  int* buffer = nullptr;
  checkRuntime(cudaMalloc(&buffer, 2 * n * sizeof(int)), "cudaMalloc");
  cudaEvent_t event;
  checkRuntime(cudaEventCreate(&event), "cudaEventCreate");
  cudaGraph_t graph, child;
  checkRuntime(cudaGraphCreate(&graph, 0), "cudaGraphCreate");
  checkRuntime(cudaGraphCreate(&child, 0), "cudaGraphCreate");
  cudaGraphNode_t start, set, kernel, copy, host, sub, record, wait, generic, inChild, refused;
  checkRuntime(cudaGraphAddEmptyNode(&start, graph, nullptr, 0), "cudaGraphAddEmptyNode");

  cudaMemsetParams m;
  std::memset(&m, 0, sizeof(m));
  m.dst = buffer;
  m.elementSize = 1;
  m.width = 2 * n * sizeof(int);
  m.height = 1;
  checkRuntime(cudaGraphAddMemsetNode(&set, graph, &start, 1, &m), "cudaGraphAddMemsetNode");
  int value = 7, count = n;
  void* args[] = {&buffer, &value, &count};
  cudaKernelNodeParams k;
  std::memset(&k, 0, sizeof(k));
  k.func = reinterpret_cast<void*>(graph_fill);
  k.gridDim = dim3(1);
  k.blockDim = dim3(n);
  k.kernelParams = args;
  checkRuntime(cudaGraphAddKernelNode(&kernel, graph, &set, 1, &k), "cudaGraphAddKernelNode");
  cudaMemcpy3DParms c;
  std::memset(&c, 0, sizeof(c));
  c.srcPtr = make_cudaPitchedPtr(buffer, n * sizeof(int), n * sizeof(int), 1);
  c.dstPtr = make_cudaPitchedPtr(buffer + n, n * sizeof(int), n * sizeof(int), 1);
  c.extent = make_cudaExtent(n * sizeof(int), 1, 1);
  c.kind = cudaMemcpyDeviceToDevice;
  checkRuntime(cudaGraphAddMemcpyNode(&copy, graph, &kernel, 1, &c), "cudaGraphAddMemcpyNode");
  int hostRuns = 0;
  cudaHostNodeParams h = {hostFunction, &hostRuns};
  checkRuntime(cudaGraphAddHostNode(&host, graph, &copy, 1, &h), "cudaGraphAddHostNode");
  checkRuntime(cudaGraphAddEmptyNode(&inChild, child, nullptr, 0), "cudaGraphAddEmptyNode");
  checkRuntime(cudaGraphAddChildGraphNode(&sub, graph, &host, 1, child), "cudaGraphAddChildGraphNode");
  checkRuntime(cudaGraphAddEventRecordNode(&record, graph, &sub, 1, event), "cudaGraphAddEventRecordNode");
  checkRuntime(cudaGraphAddEventWaitNode(&wait, graph, &record, 1, event), "cudaGraphAddEventWaitNode");
  // Zeroed storage: the union's members with constructors delete its default constructor in C++.
  alignas(cudaGraphNodeParams) unsigned char storage[sizeof(cudaGraphNodeParams)] = {};
  auto* empty = reinterpret_cast<cudaGraphNodeParams*>(storage);
  empty->type = cudaGraphNodeTypeEmpty;
  checkRuntime(cudaGraphAddNode(&generic, graph, &wait, nullptr, 1, empty), "cudaGraphAddNode");
  // Copies by the runtime's shorthands: linear, into a device variable and out of it.
  cudaGraphNode_t copy1D, toSymbol, fromSymbol;
  const cudaMemcpyKind d2d = cudaMemcpyDeviceToDevice;
  checkRuntime(cudaGraphAddMemcpyNode1D(&copy1D, graph, &generic, 1, buffer + n, buffer, n * sizeof(int), d2d),
               "cudaGraphAddMemcpyNode1D");
  checkRuntime(cudaGraphAddMemcpyNodeToSymbol(&toSymbol, graph, &copy1D, 1, deviceTable, buffer, sizeof(deviceTable), 0, d2d),
               "cudaGraphAddMemcpyNodeToSymbol");
  checkRuntime(cudaGraphAddMemcpyNodeFromSymbol(&fromSymbol, graph, &toSymbol, 1, buffer + n, deviceTable,
                                                sizeof(deviceTable), 0, d2d),
               "cudaGraphAddMemcpyNodeFromSymbol");
  // Graph memory, in a graph of its own (memory nodes go in no child graph).
  cudaGraph_t memory;
  cudaGraphNode_t alloc, freed;
  checkRuntime(cudaGraphCreate(&memory, 0), "cudaGraphCreate");
  cudaMemAllocNodeParams a;
  std::memset(&a, 0, sizeof(a));
  a.poolProps.allocType = cudaMemAllocationTypePinned;
  a.poolProps.location.type = cudaMemLocationTypeDevice;
  a.poolProps.location.id = 0;
  a.bytesize = 1 << 20;
  checkRuntime(cudaGraphAddMemAllocNode(&alloc, memory, nullptr, 0, &a), "cudaGraphAddMemAllocNode");
  if (a.dptr == nullptr) ++failures;
  checkRuntime(cudaGraphAddMemFreeNode(&freed, memory, &alloc, 1, a.dptr), "cudaGraphAddMemFreeNode");
  // Refused: a node on no graph; a copy into a device variable from the device to the host.
  if (cudaGraphAddEmptyNode(&refused, nullptr, nullptr, 0) == cudaSuccess) ++failures;
  if (cudaGraphAddMemcpyNodeToSymbol(&refused, graph, nullptr, 0, deviceTable, buffer, sizeof(deviceTable), 0,
                                     cudaMemcpyDeviceToHost) != cudaErrorInvalidMemcpyDirection)
    ++failures;
  (void)cudaGetLastError();

  cudaGraphExec_t exec;
  checkRuntime(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");

  value = 9;  // the kernel's argument, read when its parameters are set again
  checkRuntime(cudaGraphKernelNodeSetParams(kernel, &k), "cudaGraphKernelNodeSetParams");
  checkRuntime(cudaGraphMemsetNodeSetParams(set, &m), "cudaGraphMemsetNodeSetParams");
  checkRuntime(cudaGraphMemcpyNodeSetParams(copy, &c), "cudaGraphMemcpyNodeSetParams");
  checkRuntime(cudaGraphHostNodeSetParams(host, &h), "cudaGraphHostNodeSetParams");
  checkRuntime(cudaGraphEventRecordNodeSetEvent(record, event), "cudaGraphEventRecordNodeSetEvent");
  checkRuntime(cudaGraphEventWaitNodeSetEvent(wait, event), "cudaGraphEventWaitNodeSetEvent");
  alignas(cudaGraphNodeParams) unsigned char setStorage[sizeof(cudaGraphNodeParams)] = {};
  auto* setParams = reinterpret_cast<cudaGraphNodeParams*>(setStorage);
  setParams->type = cudaGraphNodeTypeMemset;
  setParams->memset.dst = buffer;
  setParams->memset.elementSize = 1;
  setParams->memset.width = 2 * n * sizeof(int);
  setParams->memset.height = 1;
  checkRuntime(cudaGraphNodeSetParams(set, setParams), "cudaGraphNodeSetParams");
  checkRuntime(cudaGraphMemcpyNodeSetParams1D(copy1D, buffer + n, buffer, n * sizeof(int), d2d),
               "cudaGraphMemcpyNodeSetParams1D");
  checkRuntime(cudaGraphMemcpyNodeSetParamsToSymbol(toSymbol, deviceTable, buffer, sizeof(deviceTable), 0, d2d),
               "cudaGraphMemcpyNodeSetParamsToSymbol");
  checkRuntime(cudaGraphMemcpyNodeSetParamsFromSymbol(fromSymbol, buffer + n, deviceTable, sizeof(deviceTable), 0, d2d),
               "cudaGraphMemcpyNodeSetParamsFromSymbol");
  checkRuntime(cudaGraphExecKernelNodeSetParams(exec, kernel, &k), "cudaGraphExecKernelNodeSetParams");
  checkRuntime(cudaGraphExecMemsetNodeSetParams(exec, set, &m), "cudaGraphExecMemsetNodeSetParams");
  checkRuntime(cudaGraphExecMemcpyNodeSetParams(exec, copy, &c), "cudaGraphExecMemcpyNodeSetParams");
  checkRuntime(cudaGraphExecHostNodeSetParams(exec, host, &h), "cudaGraphExecHostNodeSetParams");
  checkRuntime(cudaGraphExecChildGraphNodeSetParams(exec, sub, child), "cudaGraphExecChildGraphNodeSetParams");
  checkRuntime(cudaGraphExecEventRecordNodeSetEvent(exec, record, event), "cudaGraphExecEventRecordNodeSetEvent");
  checkRuntime(cudaGraphExecEventWaitNodeSetEvent(exec, wait, event), "cudaGraphExecEventWaitNodeSetEvent");
  checkRuntime(cudaGraphExecNodeSetParams(exec, set, setParams), "cudaGraphExecNodeSetParams");
  checkRuntime(cudaGraphExecMemcpyNodeSetParams1D(exec, copy1D, buffer + n, buffer, n * sizeof(int), d2d),
               "cudaGraphExecMemcpyNodeSetParams1D");
  checkRuntime(cudaGraphExecMemcpyNodeSetParamsToSymbol(exec, toSymbol, deviceTable, buffer, sizeof(deviceTable), 0, d2d),
               "cudaGraphExecMemcpyNodeSetParamsToSymbol");
  checkRuntime(cudaGraphExecMemcpyNodeSetParamsFromSymbol(exec, fromSymbol, buffer + n, deviceTable, sizeof(deviceTable),
                                                          0, d2d),
               "cudaGraphExecMemcpyNodeSetParamsFromSymbol");
  cudaGraphExecUpdateResultInfo info;
  checkRuntime(cudaGraphExecUpdate(exec, graph, &info), "cudaGraphExecUpdate");
  // Refused: an update from a graph of another shape.
  if (cudaGraphExecUpdate(exec, child, &info) != cudaErrorGraphExecUpdateFailure ||
      info.result != cudaGraphExecUpdateErrorTopologyChanged)
    ++failures;
  (void)cudaGetLastError();
  checkRuntime(cudaGraphLaunch(exec, 0), "cudaGraphLaunch");
  checkRuntime(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  int back[2 * 256];
  checkRuntime(cudaMemcpy(back, buffer, sizeof(back), cudaMemcpyDeviceToHost), "cudaMemcpy");
  (void)hostRuns;  // the stand-in runs no graph's work: checked on a real GPU only
  checkRuntime(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  cudaGraph_t shape, shapeCopy;
  cudaGraphNode_t first, second;
  checkRuntime(cudaGraphCreate(&shape, 0), "cudaGraphCreate");
  checkRuntime(cudaGraphAddEmptyNode(&first, shape, nullptr, 0), "cudaGraphAddEmptyNode");
  checkRuntime(cudaGraphAddEmptyNode(&second, shape, nullptr, 0), "cudaGraphAddEmptyNode");
  checkRuntime(cudaGraphAddDependencies(shape, &first, &second, nullptr, 1), "cudaGraphAddDependencies");
  checkRuntime(cudaGraphClone(&shapeCopy, shape), "cudaGraphClone");
  checkRuntime(cudaGraphRemoveDependencies(shape, &first, &second, nullptr, 1), "cudaGraphRemoveDependencies");
  checkRuntime(cudaGraphDestroyNode(second), "cudaGraphDestroyNode");
  if (cudaGraphAddDependencies(shape, &first, &start, nullptr, 1) != cudaErrorInvalidValue) ++failures;
  (void)cudaGetLastError();
  checkRuntime(cudaGraphDestroy(shapeCopy), "cudaGraphDestroy");
  checkRuntime(cudaGraphDestroy(shape), "cudaGraphDestroy");
  checkRuntime(cudaGraphDestroy(graph), "cudaGraphDestroy");
  checkRuntime(cudaGraphDestroy(child), "cudaGraphDestroy");
  checkRuntime(cudaGraphDestroy(memory), "cudaGraphDestroy");
  checkRuntime(cudaEventDestroy(event), "cudaEventDestroy");
  checkRuntime(cudaFree(buffer), "cudaFree");
  std::printf("built and edited\n");
  return failures == 0 ? 0 : 1;
}
