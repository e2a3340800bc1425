#include "preload/dlsym_hook.h"

#include <dlfcn.h>
#include <link.h>

#include "collector/collector.h"
#include "collector/loaded_symbols.h"
#include "preload/hook_support.h"

extern "C" {

void* (*cutraceRealDlsym)(void*, const char*) = nullptr;

void* cutraceResolveRealDlsym() {
  // glibc 2.34 moved dlsym into libc with a new version; older ones only have 2.2.5.
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  __atomic_store_n(&cutraceRealDlsym, reinterpret_cast<void* (*)(void*, const char*)>(p), __ATOMIC_RELEASE);
  return p;
}

}  // extern "C"

namespace {

struct link_map* linkMapAt(const void* address) {
  Dl_info info{};
  struct link_map* lm = nullptr;
  if (address == nullptr || dladdr1(address, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0) return nullptr;
  return lm;
}

// `name` as defined by `lm` itself (not by one of its dependencies), or nullptr.
void* definedIn(struct link_map* lm, const char* name) {
  if (lm->l_name == nullptr || lm->l_name[0] == '\0') return nullptr;  // main program, vdso
  if (cutrace::Collector::loaderStuckSinceFork()) return cutrace::definedSymbol(lm, name);
  void* handle = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* p = cutrace::realDlsym(handle, name);
  dlclose(handle);
  return p != nullptr && linkMapAt(p) == lm ? p : nullptr;
}

// RTLD_NEXT as glibc defines it for `caller`: the first definition in an object after the
// caller's in the global search order.
void* lookupNext(const char* name, const void* caller) {
  struct link_map* self = linkMapAt(caller);
  if (self == nullptr) return cutrace::realDlsym(RTLD_DEFAULT, name);
  for (struct link_map* lm = self->l_next; lm != nullptr; lm = lm->l_next) {
    if (void* p = definedIn(lm, name)) {
      dlerror();
      return p;
    }
  }
  return cutrace::realDlsym(RTLD_DEFAULT, "cutrace: no next definition");  // NULL with dlerror() set
}

}  // namespace

namespace cutrace {

void* libraryHandleOf(const void* address) {
  struct link_map* lm = linkMapAt(address);
  if (lm == nullptr || lm->l_prev == nullptr || lm->l_name == nullptr || lm->l_name[0] == '\0') return nullptr;
  if (Collector::loaderStuckSinceFork()) return lm;
  return dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
}

void* symbolIn(void* handle, const char* name) {
  if (Collector::loaderStuckSinceFork()) return definedSymbol(static_cast<const struct link_map*>(handle), name);
  return realDlsym(handle, name);
}

void releaseLibraryHandle(void* handle) {
  if (!Collector::loaderStuckSinceFork()) dlclose(handle);
}

}  // namespace cutrace

extern "C" int cutraceDlsymHooks(const char* name) { return cutrace::isHookedSymbol(name) ? 1 : 0; }

extern "C" void* cutraceDlsymHook(void* handle, const char* name, void* caller) {
  // dlsym reports errors through dlerror(), not errno; the lookups made here for RTLD_NEXT and
  // for the redirection (dlopen of loaded objects, dladdr) leave the caller's errno unchanged.
  cutrace::ErrnoKeeper keepErrno;
  // Lookups made by the tracer itself (or by CUPTI on its behalf) get the real functions.
  if (cutrace::insideTracer(reinterpret_cast<uintptr_t>(__builtin_frame_address(0))))
    return handle == RTLD_NEXT ? lookupNext(name, caller) : cutrace::realDlsym(handle, name);
  cutrace::ReentrancyGuard guard;
  void* result;
  if (handle == RTLD_NEXT) {
    result = lookupNext(name, caller);
  } else {
    result = cutrace::realDlsym(handle, name);
    if (result == nullptr && handle == RTLD_DEFAULT) {
      // glibc also searches the caller's own scope for RTLD_DEFAULT (an RTLD_LOCAL object
      // sees its dependencies); our call came from libtrace.so, so search it explicitly.
      if (void* callerObject = cutrace::libraryHandleOf(caller)) {
        void* local = cutrace::symbolIn(callerObject, name);
        cutrace::releaseLibraryHandle(callerObject);
        if (local != nullptr) {
          dlerror();
          result = local;
        }
      }
    }
  }
  return cutrace::redirectDlsymResult(name, result);
}
