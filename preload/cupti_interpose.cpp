// The program's own CUPTI use (torch.profiler, a custom tool) meets cutrace's activity session
// here: three CUPTI entry points are interposed so cutrace can hand CUPTI over to the program's
// profiler when it starts (collector/cupti_session.h). Everything else of CUPTI is the
// program's alone.

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

extern "C" __attribute__((visibility("default"))) CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  if (cutrace::tls::busy == 0) cutrace::Cupti::programRegistersCallbacks();
  auto fn = real<decltype(&cuptiActivityRegisterCallbacks)>("cuptiActivityRegisterCallbacks");
  return fn != nullptr ? fn(request, complete) : CUPTI_ERROR_NOT_INITIALIZED;
}

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
