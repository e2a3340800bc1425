#pragma once
// cutrace's dlsym. Programs and the CUDA runtime find driver entry points with dlsym; the
// preload answers lookups of hooked names with its shims and forwards everything else.
//
// The exported `dlsym` is a few instructions of assembly (dlsym_x86_64.S): names that are not
// hooked are forwarded with a tail jump, so glibc still sees the original caller's return
// address and RTLD_NEXT / RTLD_DEFAULT keep their meaning, and its answer and dlerror() text
// are glibc's own. Only names starting with "cu" or "__cu" are looked up in the hook table
// (cutraceDlsymHooks); dlsym also runs on every Python extension import, so the others' path
// must stay this short.

extern "C" {
// glibc's dlsym (resolved with dlvsym, never through our own export).
extern void* (*cutraceRealDlsym)(void*, const char*) __attribute__((visibility("hidden")));
void* cutraceResolveRealDlsym() __attribute__((visibility("hidden")));
// Whether a cu* name is one cutrace hooks (the others are forwarded like any name: libcurl's
// curl_*, a plugin's own cu* functions). Called from the assembly with the stack aligned.
int cutraceDlsymHooks(const char* name) __attribute__((visibility("hidden")));
// The slow path for hooked names; `caller` is the return address of the program's dlsym call.
void* cutraceDlsymHook(void* handle, const char* name, void* caller) __attribute__((visibility("hidden")));
}

namespace cutrace {

inline void* realDlsym(void* handle, const char* name) {
  void* (*real)(void*, const char*) = cutraceRealDlsym;
  if (real == nullptr) real = reinterpret_cast<void* (*)(void*, const char*)>(cutraceResolveRealDlsym());
  return real != nullptr ? real(handle, name) : nullptr;
}

// A dlsym handle for the shared object containing `address` (dlopen with RTLD_NOLOAD, which
// also prepares the search list of an object loaded as a dependency), or nullptr for the main
// program or an address in no object. Link-map pointers are not valid handles for objects
// that were not dlopen'ed: glibc crashes on them. In a fork child where no dlopen may be made
// (Collector::loaderStuckSinceFork) it is the object's link map: give it only to symbolIn and
// releaseLibraryHandle, which take either.
void* libraryHandleOf(const void* address);
// `name` looked up in `handle` (libraryHandleOf's, or loadedLibrary's): dlsym, or where the
// handle is a link map, the object's own definition (definedSymbol).
void* symbolIn(void* handle, const char* name);
// Gives back a handle libraryHandleOf opened (nothing to give back for a link map).
void releaseLibraryHandle(void* handle);

// Whether cutrace has a shim named `name`.
bool isHookedSymbol(const char* name);
// Maps the result of a lookup of `name` to the shim with the same ABI, when there is one.
void* redirectDlsymResult(const char* name, void* result);

}  // namespace cutrace
