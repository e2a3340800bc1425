/* A CUDA graph built node by node with the driver's graph API, as programs that do not capture
 * streams build theirs: a kernel, a set, a copy, a host function, a child graph, event record and
 * wait, empty nodes, and nodes by their generic parameters, each through the first and the later
 * version where cuda.h renamed one; in a graph of their own, graph memory allocated and freed and
 * a stream memory operation. Every node added is recorded with its graph as the handle; a
 * node on no graph and one depending on another graph's node are refused and recorded with their
 * result. The graph is then instantiated, edited as llama.cpp edits its graphs between launches
 * (every kind of node's parameters set in the graph, with the node as the handle, and in the
 * instantiated graph, with the exec as the handle; the exec updated from the graph), launched and
 * destroyed. A kernel's parameters on a set node, a node of another graph set in the exec and an
 * update from a graph of another shape are refused and recorded with their results. The graph is
 * instantiated too through CUDA 10's and 11's cuGraphInstantiate (a log out), and a graph captured
 * with CUDA 10.0's cuStreamBeginCapture (no mode), its set flagged as captured. A graph's
 * structure is edited (an edge added and removed through both versions, the graph cloned, a node
 * destroyed; an edge to another graph's node refused).
 *
 *   usage: graph_build */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"
#include "noop_ptx.h"

/* The first versions' symbols: cuda.h gives their names to the later ones. */
CUresult addKernelNodeV1(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                         const CUDA_KERNEL_NODE_PARAMS_v1* params) __asm__("cuGraphAddKernelNode");
CUresult addNodeV1(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies, size_t count,
                   CUgraphNodeParams* params) __asm__("cuGraphAddNode");
CUresult setKernelNodeV1(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* params) __asm__("cuGraphKernelNodeSetParams");
CUresult execSetKernelNodeV1(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* params)
    __asm__("cuGraphExecKernelNodeSetParams");
CUresult execUpdateV1(CUgraphExec exec, CUgraph graph, CUgraphNode* errorNode, CUgraphExecUpdateResult* result)
    __asm__("cuGraphExecUpdate");
CUresult instantiateV1(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode, char* log, size_t logBytes)
    __asm__("cuGraphInstantiate");
CUresult instantiateV2(CUgraphExec* exec, CUgraph graph, CUgraphNode* errorNode, char* log, size_t logBytes)
    __asm__("cuGraphInstantiate_v2");
CUresult beginCaptureV1(CUstream s) __asm__("cuStreamBeginCapture");
CUresult addDependenciesV1(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to, size_t count)
    __asm__("cuGraphAddDependencies");
CUresult removeDependenciesV1(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to, size_t count)
    __asm__("cuGraphRemoveDependencies");

static void hostFunction(void* data) { (void)data; }

int main(void) {
  CUcontext ctx;
  useFirstDevice();
  check(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  CUmodule module;
  CUfunction noop;
  check(cuModuleLoadData(&module, kPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&noop, module, "noop"), "cuModuleGetFunction");
  CUdeviceptr buffer;
  check(cuMemAlloc(&buffer, 4096), "cuMemAlloc");
  CUevent event;
  check(cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");

  CUgraph graph, child;
  check(cuGraphCreate(&graph, 0), "cuGraphCreate");
  check(cuGraphCreate(&child, 0), "cuGraphCreate");
  CUgraphNode start, kernel, kernelV1, set, copy, host, sub, record, wait, generic, genericV1, inChild, childSet, foreign;
  check(cuGraphAddEmptyNode(&start, graph, NULL, 0), "cuGraphAddEmptyNode");

  CUDA_KERNEL_NODE_PARAMS k = oneBlockNode(noop);
  check(cuGraphAddKernelNode(&kernel, graph, &start, 1, &k), "cuGraphAddKernelNode_v2");
  CUDA_KERNEL_NODE_PARAMS_v1 k1;
  memset(&k1, 0, sizeof(k1));
  k1.func = noop;
  k1.gridDimX = k1.gridDimY = k1.gridDimZ = 1;
  k1.blockDimX = 32;
  k1.blockDimY = k1.blockDimZ = 1;
  check(addKernelNodeV1(&kernelV1, graph, &start, 1, &k1), "cuGraphAddKernelNode");

  CUDA_MEMSET_NODE_PARAMS m;
  memset(&m, 0, sizeof(m));
  m.dst = buffer;
  m.elementSize = 1;
  m.width = 4096;
  m.height = 1;
  check(cuGraphAddMemsetNode(&set, graph, &kernel, 1, &m, ctx), "cuGraphAddMemsetNode");
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = buffer;
  c.dstDevice = buffer + 2048;
  c.WidthInBytes = 1024;
  c.Height = c.Depth = 1;
  check(cuGraphAddMemcpyNode(&copy, graph, &set, 1, &c, ctx), "cuGraphAddMemcpyNode");
  CUDA_HOST_NODE_PARAMS h = {hostFunction, NULL};
  check(cuGraphAddHostNode(&host, graph, &copy, 1, &h), "cuGraphAddHostNode");
  check(cuGraphAddEmptyNode(&inChild, child, NULL, 0), "cuGraphAddEmptyNode");
  check(cuGraphAddMemsetNode(&childSet, child, &inChild, 1, &m, ctx), "cuGraphAddMemsetNode");
  check(cuGraphAddChildGraphNode(&sub, graph, &host, 1, child), "cuGraphAddChildGraphNode");
  check(cuGraphAddEventRecordNode(&record, graph, &sub, 1, event), "cuGraphAddEventRecordNode");
  check(cuGraphAddEventWaitNode(&wait, graph, &record, 1, event), "cuGraphAddEventWaitNode");
  CUgraphNodeParams empty;
  memset(&empty, 0, sizeof(empty));
  empty.type = CU_GRAPH_NODE_TYPE_EMPTY;
  check(cuGraphAddNode(&generic, graph, &wait, NULL, 1, &empty), "cuGraphAddNode_v2");
  check(addNodeV1(&genericV1, graph, &generic, 1, &empty), "cuGraphAddNode");

  /* Graph memory and a stream memory operation (memory nodes go in no child graph, and an exec
   * with them is not updated: a graph of their own). */
  CUgraph memory;
  CUgraphNode alloc, freed, memop;
  check(cuGraphCreate(&memory, 0), "cuGraphCreate");
  CUDA_MEM_ALLOC_NODE_PARAMS a;
  memset(&a, 0, sizeof(a));
  a.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  a.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.poolProps.location.id = 0;
  a.bytesize = 1 << 20;
  check(cuGraphAddMemAllocNode(&alloc, memory, NULL, 0, &a), "cuGraphAddMemAllocNode");
  if (a.dptr == 0) ++failures;
  CUstreamBatchMemOpParams op;
  memset(&op, 0, sizeof(op));
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = buffer;
  op.writeValue.value = 1;
  CUDA_BATCH_MEM_OP_NODE_PARAMS b = {ctx, 1, &op, 0};
  check(cuGraphAddBatchMemOpNode(&memop, memory, &alloc, 1, &b), "cuGraphAddBatchMemOpNode");
  check(cuGraphAddMemFreeNode(&freed, memory, &memop, 1, a.dptr), "cuGraphAddMemFreeNode");

  /* Refused: a node on no graph; a dependency on another graph's node. */
  if (cuGraphAddEmptyNode(&foreign, NULL, NULL, 0) != CUDA_ERROR_INVALID_VALUE) ++failures;
  if (cuGraphAddEmptyNode(&foreign, graph, &inChild, 1) != CUDA_ERROR_INVALID_VALUE) ++failures;

  CUgraphExec exec;
  check(cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");

  /* Edited in the graph, then in the exec; a memset node through the generic parameters. */
  check(cuGraphKernelNodeSetParams(kernel, &k), "cuGraphKernelNodeSetParams_v2");
  check(setKernelNodeV1(kernelV1, &k1), "cuGraphKernelNodeSetParams");
  check(cuGraphMemsetNodeSetParams(set, &m), "cuGraphMemsetNodeSetParams");
  check(cuGraphMemcpyNodeSetParams(copy, &c), "cuGraphMemcpyNodeSetParams");
  check(cuGraphHostNodeSetParams(host, &h), "cuGraphHostNodeSetParams");
  check(cuGraphEventRecordNodeSetEvent(record, event), "cuGraphEventRecordNodeSetEvent");
  check(cuGraphEventWaitNodeSetEvent(wait, event), "cuGraphEventWaitNodeSetEvent");
  CUgraphNodeParams setParams;
  memset(&setParams, 0, sizeof(setParams));
  setParams.type = CU_GRAPH_NODE_TYPE_MEMSET;
  setParams.memset.dst = buffer;
  setParams.memset.elementSize = 1;
  setParams.memset.width = 2048;
  setParams.memset.height = 1;
  setParams.memset.ctx = ctx;
  check(cuGraphNodeSetParams(set, &setParams), "cuGraphNodeSetParams");
  check(cuGraphExecKernelNodeSetParams(exec, kernel, &k), "cuGraphExecKernelNodeSetParams_v2");
  check(execSetKernelNodeV1(exec, kernelV1, &k1), "cuGraphExecKernelNodeSetParams");
  check(cuGraphExecMemsetNodeSetParams(exec, set, &m, ctx), "cuGraphExecMemsetNodeSetParams");
  check(cuGraphExecMemcpyNodeSetParams(exec, copy, &c, ctx), "cuGraphExecMemcpyNodeSetParams");
  check(cuGraphExecHostNodeSetParams(exec, host, &h), "cuGraphExecHostNodeSetParams");
  check(cuGraphExecChildGraphNodeSetParams(exec, sub, child), "cuGraphExecChildGraphNodeSetParams");
  check(cuGraphExecEventRecordNodeSetEvent(exec, record, event), "cuGraphExecEventRecordNodeSetEvent");
  check(cuGraphExecEventWaitNodeSetEvent(exec, wait, event), "cuGraphExecEventWaitNodeSetEvent");
  check(cuGraphExecNodeSetParams(exec, set, &setParams), "cuGraphExecNodeSetParams");
  CUgraphExecUpdateResultInfo info;
  check(cuGraphExecUpdate(exec, graph, &info), "cuGraphExecUpdate_v2");
  CUgraphNode errorNode;
  CUgraphExecUpdateResult result;
  check(execUpdateV1(exec, graph, &errorNode, &result), "cuGraphExecUpdate");
  /* Refused: a kernel's parameters on a set node; another graph's node in the exec; an update
   * from a graph of another shape. */
  if (cuGraphKernelNodeSetParams(set, &k) != CUDA_ERROR_INVALID_VALUE) ++failures;
  if (cuGraphExecNodeSetParams(exec, childSet, &setParams) != CUDA_ERROR_INVALID_VALUE) ++failures;
  if (cuGraphExecUpdate(exec, child, &info) != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE ||
      info.result != CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED)
    ++failures;

  check(cuGraphLaunch(exec, NULL), "cuGraphLaunch");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");

  /* The earlier instantiations, each exec launched and destroyed. */
  CUgraphExec old[2];
  char log[64];
  CUgraphNode failed = start;
  check(instantiateV1(&old[0], graph, &failed, log, sizeof(log)), "cuGraphInstantiate");
  check(instantiateV2(&old[1], graph, &failed, log, sizeof(log)), "cuGraphInstantiate_v2");
  if (failed != NULL) ++failures;
  for (int i = 0; i < 2; ++i) {
    check(cuGraphLaunch(old[i], NULL), "cuGraphLaunch");
    check(cuGraphExecDestroy(old[i]), "cuGraphExecDestroy");
  }
  /* CUDA 10.0's capture: a set captured into a graph of its own. */
  CUstream s;
  CUgraph captured;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(beginCaptureV1(s), "cuStreamBeginCapture");
  check(cuMemsetD8Async(buffer, 1, 64, s), "cuMemsetD8Async");
  check(cuStreamEndCapture(s, &captured), "cuStreamEndCapture");
  check(cuGraphDestroy(captured), "cuGraphDestroy");
  check(cuStreamDestroy(s), "cuStreamDestroy");
  /* A graph's structure edited. */
  CUgraph shape, shapeCopy;
  CUgraphNode first, second;
  check(cuGraphCreate(&shape, 0), "cuGraphCreate");
  check(cuGraphAddEmptyNode(&first, shape, NULL, 0), "cuGraphAddEmptyNode");
  check(cuGraphAddEmptyNode(&second, shape, NULL, 0), "cuGraphAddEmptyNode");
  check(addDependenciesV1(shape, &first, &second, 1), "cuGraphAddDependencies");
  check(removeDependenciesV1(shape, &first, &second, 1), "cuGraphRemoveDependencies");
  check(cuGraphAddDependencies(shape, &first, &second, NULL, 1), "cuGraphAddDependencies_v2");
  check(cuGraphClone(&shapeCopy, shape), "cuGraphClone");
  check(cuGraphRemoveDependencies(shape, &first, &second, NULL, 1), "cuGraphRemoveDependencies_v2");
  check(cuGraphDestroyNode(second), "cuGraphDestroyNode");
  if (cuGraphAddDependencies(shape, &first, &start, NULL, 1) != CUDA_ERROR_INVALID_VALUE) ++failures;
  check(cuGraphDestroy(shapeCopy), "cuGraphDestroy");
  check(cuGraphDestroy(shape), "cuGraphDestroy");

  check(cuGraphDestroy(graph), "cuGraphDestroy");
  check(cuGraphDestroy(child), "cuGraphDestroy");
  check(cuGraphDestroy(memory), "cuGraphDestroy");
  check(cuEventDestroy(event), "cuEventDestroy");
  check(cuMemFree(buffer), "cuMemFree");
  check(cuModuleUnload(module), "cuModuleUnload");
  printf("built and edited\n");
  return failures == 0 ? 0 : 1;
}
