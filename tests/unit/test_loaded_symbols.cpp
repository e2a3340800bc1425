#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include "collector/loaded_symbols.h"

using namespace cutrace;

// definedSymbol against the loader's own answers, on objects loaded at start-up (whose link maps
// glibc's dlsym does not accept) and on a dlopen'ed one.

namespace {

const struct link_map* linkMapOf(const void* address) {
  Dl_info info{};
  struct link_map* lm = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0) return nullptr;
  return lm;
}

}  // namespace

TEST_CASE("loaded symbols: an object's own default-version definitions, as dlsym finds them", "[loader]") {
  // libc by its handle: a sanitizer runtime defines some of its functions first in the global
  // scope, so RTLD_DEFAULT would answer with those.
  void* libcHandle = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  REQUIRE(libcHandle != nullptr);
  struct link_map* libc = nullptr;
  REQUIRE(dlinfo(libcHandle, RTLD_DI_LINKMAP, &libc) == 0);
  // realpath has two versions in glibc: the default one, and a hidden GLIBC_2.2.5 one.
  void* realpathNow = dlsym(libcHandle, "realpath");
  void* old = dlvsym(libcHandle, "realpath", "GLIBC_2.2.5");
  REQUIRE(realpathNow != nullptr);
  REQUIRE(old != nullptr);
  REQUIRE(old != realpathNow);
  CHECK(definedSymbol(libc, "realpath") == realpathNow);
  CHECK(definedSymbol(libc, "getenv") == dlsym(libcHandle, "getenv"));
  CHECK(definedSymbol(libc, "environ") == dlsym(libcHandle, "environ"));  // an object
  CHECK(definedSymbol(libc, "cutrace_no_such_symbol") == nullptr);
  CHECK(definedSymbol(libc, "") == nullptr);
  // A name the object only uses (defined by another object): not its own.
  const struct link_map* self = linkMapOf(reinterpret_cast<void*>(&linkMapOf));
  REQUIRE(self != nullptr);
  CHECK(definedSymbol(self, "__libc_start_main") == nullptr);
  CHECK(definedSymbol(nullptr, "getenv") == nullptr);
  dlclose(libcHandle);
}

TEST_CASE("loaded symbols: a dlopen'ed object", "[loader]") {
  void* lib = dlopen(CUTRACE_DLOPEN_TARGET, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  struct link_map* lm = nullptr;
  REQUIRE(dlinfo(lib, RTLD_DI_LINKMAP, &lm) == 0);
  void* call = dlsym(lib, "cutraceDlopenCall");
  REQUIRE(call != nullptr);
  CHECK(definedSymbol(lm, "cutraceDlopenCall") == call);
  CHECK(definedSymbol(lm, "getenv") == nullptr);  // its dependency's, not its own
  dlclose(lib);
}
