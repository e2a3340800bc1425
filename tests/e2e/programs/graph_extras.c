/* The rest of what programs do to CUDA graphs besides adding nodes and setting their parameters,
 * through the driver and the runtime: a kernel node's launch attributes set (one refused: a node
 * that is no kernel's) and copied to another kernel node; a stream memory operation node's
 * parameters set in the graph and in its exec; a node disabled and enabled again in an exec; a
 * conditional node's handle made; user objects made, retained and released by the program and by
 * the graph (one moved to it), their destructors run when the last reference goes; a capture's
 * dependencies replaced and added to through both driver versions and the runtime (one refused:
 * a stream not capturing); the graph memory a device keeps given back. Each shows with the node,
 * exec, graph, user object or stream it acts on as its handle.
 *
 *   usage: graph_extras */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"
#include "noop_ptx.h"

/* CUDA 11.3's version: cuda.h gives its name to 12.3's (each dependency's edge data). */
CUresult updateCaptureDependenciesV1(CUstream s, CUgraphNode* dependencies, size_t count, unsigned flags)
    __asm__("cuStreamUpdateCaptureDependencies");

static int destroyed = 0;
static void destroyUserObject(void* counter) { ++*(int*)counter; }

int main(void) {
  const CUdevice dev = useFirstDevice();
  CUcontext ctx;
  check(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  CUmodule module;
  CUfunction noop;
  check(cuModuleLoadData(&module, kPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&noop, module, "noop"), "cuModuleGetFunction");
  CUdeviceptr flag;
  check(cuMemAlloc(&flag, 4), "cuMemAlloc");
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  /* Driver: two kernel nodes and a stream memory operation node. */
  CUgraph graph;
  CUgraphNode first, second, write;
  check(cuGraphCreate(&graph, 0), "cuGraphCreate");
  CUDA_KERNEL_NODE_PARAMS k = oneBlockNode(noop);
  check(cuGraphAddKernelNode(&first, graph, NULL, 0, &k), "cuGraphAddKernelNode");
  check(cuGraphAddKernelNode(&second, graph, &first, 1, &k), "cuGraphAddKernelNode");
  CUstreamBatchMemOpParams op;
  memset(&op, 0, sizeof(op));
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = flag;
  op.writeValue.value = 1;
  CUDA_BATCH_MEM_OP_NODE_PARAMS b = {ctx, 1, &op, 0};
  check(cuGraphAddBatchMemOpNode(&write, graph, &second, 1, &b), "cuGraphAddBatchMemOpNode");

  CUkernelNodeAttrValue priority;
  memset(&priority, 0, sizeof(priority));
  priority.priority = 1;
  check(cuGraphKernelNodeSetAttribute(first, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &priority), "cuGraphKernelNodeSetAttribute");
  if (cuGraphKernelNodeSetAttribute(write, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &priority) == CUDA_SUCCESS) ++failures;
  check(cuGraphKernelNodeCopyAttributes(second, first), "cuGraphKernelNodeCopyAttributes");
  op.writeValue.value = 2;
  check(cuGraphBatchMemOpNodeSetParams(write, &b), "cuGraphBatchMemOpNodeSetParams");
  CUgraphConditionalHandle condition;
  check(cuGraphConditionalHandleCreate(&condition, graph, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT),
        "cuGraphConditionalHandleCreate");

  /* A user object the program holds two references to: one moved to the graph, one released. */
  CUuserObject object;
  check(cuUserObjectCreate(&object, &destroyed, destroyUserObject, 2, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC),
        "cuUserObjectCreate");
  check(cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE), "cuGraphRetainUserObject");
  check(cuUserObjectRetain(object, 2), "cuUserObjectRetain");
  check(cuUserObjectRelease(object, 3), "cuUserObjectRelease");

  CUgraphExec exec;
  check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  op.writeValue.value = 3;
  check(cuGraphExecBatchMemOpNodeSetParams(exec, write, &b), "cuGraphExecBatchMemOpNodeSetParams");
  check(cuGraphNodeSetEnabled(exec, second, 0), "cuGraphNodeSetEnabled");
  check(cuGraphLaunch(exec, stream), "cuGraphLaunch");
  check(cuGraphNodeSetEnabled(exec, second, 1), "cuGraphNodeSetEnabled");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  check(cuGraphDestroy(graph), "cuGraphDestroy"); /* the graph's reference, the last */

  /* Driver: a capture whose dependencies are replaced (none) and added to, through both versions. */
  check(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  check(updateCaptureDependenciesV1(stream, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
        "cuStreamUpdateCaptureDependencies");
  check(cuStreamUpdateCaptureDependencies(stream, NULL, NULL, 0, CU_STREAM_ADD_CAPTURE_DEPENDENCIES),
        "cuStreamUpdateCaptureDependencies_v2");
  CUgraph captured;
  check(cuStreamEndCapture(stream, &captured), "cuStreamEndCapture");
  if (updateCaptureDependenciesV1(stream, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES) == CUDA_SUCCESS) ++failures;
  check(cuGraphDestroy(captured), "cuGraphDestroy");
  check(cuDeviceGraphMemTrim(dev), "cuDeviceGraphMemTrim");

  /* Runtime: the same on a graph of its own. */
  cudaGraph_t rgraph;
  cudaGraphNode_t rfirst, rsecond;
  checkRuntime(cudaGraphCreate(&rgraph, 0), "cudaGraphCreate");
  check(cuGraphAddKernelNode(&rfirst, (CUgraph)rgraph, NULL, 0, &k), "cuGraphAddKernelNode");
  check(cuGraphAddKernelNode(&rsecond, (CUgraph)rgraph, &rfirst, 1, &k), "cuGraphAddKernelNode");
  cudaKernelNodeAttrValue rpriority;
  memset(&rpriority, 0, sizeof(rpriority));
  rpriority.priority = 1;
  checkRuntime(cudaGraphKernelNodeSetAttribute(rfirst, cudaKernelNodeAttributePriority, &rpriority),
               "cudaGraphKernelNodeSetAttribute");
  checkRuntime(cudaGraphKernelNodeCopyAttributes(rsecond, rfirst), "cudaGraphKernelNodeCopyAttributes");
  cudaGraphConditionalHandle rcondition;
  checkRuntime(cudaGraphConditionalHandleCreate(&rcondition, rgraph, 0, 0), "cudaGraphConditionalHandleCreate");
  cudaUserObject_t robject;
  checkRuntime(cudaUserObjectCreate(&robject, &destroyed, destroyUserObject, 1, cudaUserObjectNoDestructorSync),
               "cudaUserObjectCreate");
  checkRuntime(cudaGraphRetainUserObject(rgraph, robject, 1, 0), "cudaGraphRetainUserObject");
  checkRuntime(cudaUserObjectRetain(robject, 1), "cudaUserObjectRetain");
  checkRuntime(cudaUserObjectRelease(robject, 2), "cudaUserObjectRelease");
  checkRuntime(cudaGraphReleaseUserObject(rgraph, robject, 1), "cudaGraphReleaseUserObject"); /* the last */
  cudaGraphExec_t rexec;
  checkRuntime(cudaGraphInstantiate(&rexec, rgraph, 0), "cudaGraphInstantiate");
  checkRuntime(cudaGraphNodeSetEnabled(rexec, rsecond, 0), "cudaGraphNodeSetEnabled");
  checkRuntime(cudaGraphLaunch(rexec, (cudaStream_t)stream), "cudaGraphLaunch");
  checkRuntime(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
  checkRuntime(cudaGraphExecDestroy(rexec), "cudaGraphExecDestroy");
  checkRuntime(cudaGraphDestroy(rgraph), "cudaGraphDestroy");
  checkRuntime(cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  checkRuntime(cudaStreamUpdateCaptureDependencies((cudaStream_t)stream, NULL, NULL, 0, cudaStreamSetCaptureDependencies),
               "cudaStreamUpdateCaptureDependencies");
  cudaGraph_t rcaptured;
  checkRuntime(cudaStreamEndCapture((cudaStream_t)stream, &rcaptured), "cudaStreamEndCapture");
  checkRuntime(cudaGraphDestroy(rcaptured), "cudaGraphDestroy");
  checkRuntime(cudaDeviceGraphMemTrim(dev), "cudaDeviceGraphMemTrim");

  check(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cuMemFree(flag), "cuMemFree");
  check(cuModuleUnload(module), "cuModuleUnload");
  printf("graphs edited, user objects released, captures joined\n");
  return failures == 0 ? 0 : 1;
}
