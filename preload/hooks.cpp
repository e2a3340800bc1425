// The exported shims, one per entry of hooks.def. A shim forwards to the real function with the
// same arguments and returns its result unchanged; when recording it stamps the call around
// the real one. Shims are extern "C" with the real symbol name given as an asm label, so the
// C++ names never collide with cuda.h's declarations or renaming macros.

#include "preload/hook_support.h"

namespace cutrace {
namespace {

// Runs the real call and the post-call bookkeeping for both void and non-void functions. `Kind`
// as a template argument: only the calls that make device work test for a stream capture.
template <typename R, ApiKind Kind, typename Real, typename Post>
inline R invokeReal(HookCall& call, Real&& real, Post&& post) {
  call.start();
  if constexpr (std::is_void_v<R>) {
    real();
    call.returned();
    if constexpr (makesDeviceWork(Kind)) call.noteCapture(Kind);
    post(0);
  } else {
    R rc = real();
    call.returned();
    call.setResult(rc);
    if constexpr (makesDeviceWork(Kind)) call.noteCapture(Kind);
    post(rc);
    return rc;
  }
}

}  // namespace
}  // namespace cutrace

#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post)                                  \
  extern "C" __attribute__((visibility("default"))) ret cutrace_hook_##name params __asm__(#name);    \
  extern "C" __attribute__((visibility("default"))) ret cutrace_hook_##name params {                  \
    using Fn = ret(*) params;                                                                            \
    const auto real = reinterpret_cast<Fn>(                                                              \
        cutrace::realFunction(cutrace::HookId::k##name, __builtin_return_address(0)));                   \
    if (__builtin_expect(real == nullptr, 0))                                                            \
      return cutrace::missingLibraryResult<ret>(cutrace::ApiLayer::layer);                               \
    cutrace::HookCall c(cutrace::HookId::k##name, cutrace::ApiKind::kind, cutrace::dwarf::walkStart());  \
    if (c.recording()) {                                                                                 \
      pre;                                                                                               \
    }                                                                                                    \
    return cutrace::invokeReal<ret, cutrace::ApiKind::kind>(c, [&]() -> ret { return real args; },      \
                                    [&]([[maybe_unused]] auto rc) { post; });                            \
  }
#include "preload/hooks.def"
#undef CUTRACE_HOOK

namespace cutrace {

void* const kHookWrappers[kHookCount] = {
#define CUTRACE_HOOK(layer, kind, name, ret, params, args, pre, post) reinterpret_cast<void*>(&cutrace_hook_##name),
#include "preload/hooks.def"
#undef CUTRACE_HOOK
};

}  // namespace cutrace
