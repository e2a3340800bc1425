#pragma once
// A loaded object's own definition of a name, read from its dynamic symbol table in memory,
// with no call into the dynamic loader: for a fork child whose parent had a thread inside
// dlopen at the fork, where any dlopen fails ld.so's assertion and a link map is no dlsym handle
// for an object loaded at start-up (glibc crashes on it; see Collector::loaderStuckSinceFork).
//
// As dlsym without a version finds it: the object's default version (a hidden, non-default
// version is skipped). Looks at the object only, not its dependencies. An indirect function
// (STT_GNU_IFUNC, whose resolver would have to run) counts as not defined.
//
// No allocation, lock or system call; reads only the loader's own tables of the object.

#include <link.h>

namespace cutrace {

void* definedSymbol(const struct link_map* lm, const char* name);

}  // namespace cutrace
