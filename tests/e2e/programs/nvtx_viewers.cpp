// NVTX patterns whose traces must still open right in the viewers people use, one scenario per
// argument:
//   unpopped N [RSS_FILE]  pushes a range every step and never pops it (a common bug), one CUDA
//                          call per step; with RSS_FILE the work runs in a forked child and the
//                          child's peak RSS in KiB (tracing and writing the trace included) is
//                          written there
//   domains                a library's domain range around the start of the user's range, closed
//                          inside it (legal: one stack per domain), CUDA calls in every part
//   names                  ranges named like counters and values ("epoch 1", "iter 12",
//                          "lr 0.5"), and an empty name
//   quick                  only ranges far shorter than a microsecond
//   many-domains           300 named domains, past the 254 that get tracks of their own: a
//                          mark in the last of those, nested ranges in two later ones (which
//                          share one track) around the start of the user's range, as domains
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace {

void unpoppedSteps(int steps) {
  for (int i = 0; i < steps; ++i) {
    nvtxRangePushA(("step " + std::to_string(i)).c_str());
    cudaDeviceSynchronize();
  }
}

int unpopped(int steps, const char* rssFile) {
  if (rssFile == nullptr) {
    unpoppedSteps(steps);
    printf("unpopped: %d steps\n", steps);
    return 0;
  }
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    unpoppedSteps(steps);
    exit(0);  // through atexit: the trace is written inside the child
  }
  int status = 0;
  struct rusage usage;
  if (wait4(child, &status, 0, &usage) != child || !WIFEXITED(status)) return 1;
  FILE* f = fopen(rssFile, "w");
  if (f == nullptr) return 1;
  fprintf(f, "%ld\n", usage.ru_maxrss);
  fclose(f);
  printf("unpopped: %d steps in a child\n", steps);
  return 0;
}

nvtxEventAttributes_t message(const char* text) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof(a));
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = text;
  return a;
}

int domains() {
  nvtxDomainHandle_t lib = nvtxDomainCreateA("lib");
  void* p = nullptr;
  const nvtxEventAttributes_t op = message("lib op");
  const nvtxEventAttributes_t mark = message("lib mark");
  nvtxDomainRangePushEx(lib, &op);  // lib op ......
  cudaMalloc(&p, 256);              //   only in lib op
  nvtxRangePushA("user step");      //   user step ......
  nvtxDomainMarkEx(lib, &mark);
  cudaDeviceSynchronize();          //     in both
  nvtxDomainRangePop(lib);          // ...... lib op ends inside user step
  cudaFree(p);                      //     only in user step
  nvtxRangePop();                   //   ...... user step
  cudaDeviceSynchronize();          // in neither
  printf("domains: ok\n");
  return 0;
}

int manyDomains() {
  nvtxDomainHandle_t d[300];
  for (int i = 0; i < 300; ++i) d[i] = nvtxDomainCreateA(("dom" + std::to_string(i)).c_str());
  void* p = nullptr;
  const nvtxEventAttributes_t late = message("late op");
  const nvtxEventAttributes_t later = message("later op");
  const nvtxEventAttributes_t mark = message("named mark");
  nvtxDomainMarkEx(d[253], &mark);        // the last domain of its own
  nvtxDomainRangePushEx(d[299], &late);   // late op ......
  nvtxDomainRangePushEx(d[280], &later);  //   later op ......
  cudaMalloc(&p, 256);                    //     only in the late ones
  nvtxRangePushA("user step");            //     user step ......
  cudaDeviceSynchronize();                //       in all
  nvtxDomainRangePop(d[280]);             // ......later op ends inside user step
  nvtxDomainRangePop(d[299]);             // ...... late op too
  cudaFree(p);                            //       only in user step
  nvtxRangePop();                         //     ...... user step
  cudaDeviceSynchronize();                // in none
  printf("many domains: ok\n");
  return 0;
}

int names() {
  for (const char* name : {"epoch 1", "iter 12", "lr 0.5", "v 2.", ""}) {
    nvtxRangePushA(name);
    cudaDeviceSynchronize();
    nvtxRangePop();
  }
  printf("names: ok\n");
  return 0;
}

int quick() {
  // Nothing between push and pop: each range lasts well under a microsecond.
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("quick");
    nvtxRangePushA("quicker");
    nvtxRangePop();
    nvtxRangePop();
  }
  printf("quick: ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "unpopped" && argc > 2) return unpopped(atoi(argv[2]), argc > 3 ? argv[3] : nullptr);
  if (what == "domains") return domains();
  if (what == "many-domains") return manyDomains();
  if (what == "names") return names();
  if (what == "quick") return quick();
  fprintf(stderr, "usage: nvtx_viewers unpopped N [RSS_FILE] | domains | names | quick\n");
  return 2;
}
