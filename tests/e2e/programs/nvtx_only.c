/* NVTX without CUDA: every kind of NVTX call a tool receives, on two threads. The trace must
 * hold exactly these ranges and marks, with messages copied byte for byte (escaped as JSON). */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

static nvtxRangeId_t crossThreadRange;

static void* worker(void* arg) {
  (void)arg;
  nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-worker");
  nvtxRangePushA("worker range");
  nvtxMarkA("worker mark");
  nvtxRangePop();
  nvtxRangeEnd(crossThreadRange); /* started on the main thread */
  return NULL;
}

int main(void) {
  nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
  nvtxNameCategoryA(7, "io");

  nvtxRangePushA("ascii \"quoted\" \\ path");
  nvtxRangePushW(L"wide \u00e9\u20ac");

  nvtxEventAttributes_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.category = 7;
  attr.colorType = NVTX_COLOR_ARGB;
  attr.color = 0xff00ff00u;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "with attributes";
  nvtxRangePushEx(&attr);
  nvtxMarkEx(&attr);
  nvtxRangePop();

  nvtxRangePushA("bytes \x01\x1f \xff\xfe end");
  nvtxRangePop();

  char longText[5000];
  memset(longText, 'x', sizeof(longText) - 1);
  longText[sizeof(longText) - 1] = '\0';
  nvtxRangePushA(longText);
  nvtxRangePop();

  nvtxRangePop(); /* wide */
  nvtxRangePop(); /* ascii */

  /* Texts of 0 to 40 bytes whose NUL is the last byte before a page that cannot be read: the
   * tool reads a short text in 16-byte loads, none of which may cross into that page. */
  const long page = sysconf(_SC_PAGESIZE);
  char* edge = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (edge == MAP_FAILED || mprotect(edge + page, page, PROT_NONE) != 0) return 1;
  static const char letters[] = "edge-abcdefghijklmnopqrstuvwxyz0123456789";
  for (int n = 0; n <= 40; ++n) {
    char* text = edge + page - (n + 1);
    memcpy(text, letters, n);
    text[n] = '\0';
    nvtxRangePushA(text);
    nvtxRangePop();
  }
  munmap(edge, 2 * page);

  nvtxDomainHandle_t domain = nvtxDomainCreateA("my-domain");
  nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "registered message");
  nvtxEventAttributes_t dattr;
  memset(&dattr, 0, sizeof(dattr));
  dattr.version = NVTX_VERSION;
  dattr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  dattr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  dattr.message.registered = registered;
  nvtxDomainRangePushEx(domain, &dattr);
  nvtxDomainMarkEx(domain, &dattr);
  nvtxDomainRangePop(domain);

  crossThreadRange = nvtxRangeStartA("cross-thread span");
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);

  int extraPop = nvtxRangePop(); /* nothing open: NVTX reports an error (negative) with a tool attached */
  printf("nvtx_only: done (%s)\n", extraPop < 0 || extraPop == 0 ? "pop ok" : "pop unexpected");
  return 0;
}
