// The program's own CUPTI use (torch.profiler, a custom tool) meets cutrace's activity session
// here: the CUPTI entry points that set a profiler up (subscribe, enable a kind, register
// buffers) are interposed so cutrace can hand CUPTI over to the program's profiler at the first
// of them (collector/cupti_session.h), and disable and finalize so cutrace's session survives a
// program that only touches them. Everything else of CUPTI is the program's alone.

#include <cupti.h>
#include <dlfcn.h>

#include "collector/collector.h"
#include "collector/cupti_session.h"
#include "preload/dlsym_hook.h"

namespace {

void* realCupti(const char* name) {
  cutrace::ErrnoKeeper keepErrno;  // the lookups are cutrace's, not the program's
  void* p = cutrace::realDlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    // A CUPTI loaded into a private scope (an RTLD_LOCAL extension) is not in RTLD_NEXT's reach.
    for (const char* soname : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
      if (void* h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD)) {
        p = cutrace::realDlsym(h, name);
        dlclose(h);
        if (p != nullptr) break;
      }
    }
  }
  dlerror();
  return p;
}

template <typename Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(realCupti(name));
}

}  // namespace

// The program's call that sets a profiler up: cutrace hands CUPTI over first, then the call
// goes through.
#define CUTRACE_CUPTI_SETUP(name, params, args)                                          \
  extern "C" __attribute__((visibility("default"))) CUptiResult name params {            \
    if (cutrace::tls::busy == 0) cutrace::Cupti::programUsesCupti();                      \
    auto fn = real<decltype(&name)>(#name);                                               \
    return fn != nullptr ? fn args : CUPTI_ERROR_NOT_INITIALIZED;                         \
  }
CUTRACE_CUPTI_SETUP(cuptiActivityRegisterCallbacks,
                    (CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete),
                    (request, complete))
CUTRACE_CUPTI_SETUP(cuptiSubscribe, (CUpti_SubscriberHandle * subscriber, CUpti_CallbackFunc callback, void* userdata),
                    (subscriber, callback, userdata))
CUTRACE_CUPTI_SETUP(cuptiSubscribe_v2,
                    (CUpti_SubscriberHandle * subscriber, CUpti_CallbackFunc callback, void* userdata,
                     CUpti_SubscriberParams* params),
                    (subscriber, callback, userdata, params))
CUTRACE_CUPTI_SETUP(cuptiActivityEnable, (CUpti_ActivityKind kind), (kind))
CUTRACE_CUPTI_SETUP(cuptiActivityEnableContext, (CUcontext context, CUpti_ActivityKind kind), (context, kind))
CUTRACE_CUPTI_SETUP(cuptiActivityEnableAndDump, (CUpti_ActivityKind kind), (kind))
#undef CUTRACE_CUPTI_SETUP

extern "C" __attribute__((visibility("default"))) CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  auto fn = real<decltype(&cuptiActivityDisable)>("cuptiActivityDisable");
  const CUptiResult r = fn != nullptr ? fn(kind) : CUPTI_ERROR_NOT_INITIALIZED;
  if (cutrace::tls::busy == 0) cutrace::Cupti::programDisabled(kind);
  return r;
}

extern "C" __attribute__((visibility("default"))) CUptiResult cuptiFinalize() {
  if (cutrace::tls::busy == 0 && cutrace::Cupti::started() && cutrace::Cupti::programFinalizing()) return CUPTI_SUCCESS;
  auto fn = real<decltype(&cuptiFinalize)>("cuptiFinalize");
  return fn != nullptr ? fn() : CUPTI_ERROR_NOT_INITIALIZED;
}
