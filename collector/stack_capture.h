#pragma once
// Call stacks at CUDA calls: captured on the calling thread, interned in the process's
// StackTable (collector/stack_table.h), stored as an id in the call's record. Symbolization
// happens off the hot path (collector/symbolizer.h).
//
// Unwinders, chosen once by CUTRACE_UNWIND:
// - libunwind's unw_backtrace, with libunwind.so.8 loaded privately (dlopen RTLD_LOCAL) and
//   called through a pointer: linked normally, its _Unwind_* symbols would take over the C++
//   exception unwinding of the whole process (DESIGN.md pitfalls);
// - a frame-pointer walk bounded by the thread's stack, which stops where code has no frame
//   pointers (most distribution libraries) but costs a few nanoseconds;
// - the .eh_frame walk of collector/dwarf_unwind.h, with each code address's rule cached, which
//   hands the stacks it cannot follow to libunwind (or, where libunwind is missing, to the
//   frame-pointer walk).
// auto and dwarf: the .eh_frame walk where the C library has _dl_find_object, else libunwind
// when it loads, else the frame-pointer walk.

#include <cstdint>

#include "collector/config.h"
#include "collector/dwarf_unwind.h"
#include "collector/stack_table.h"
#include "collector/trace_data.h"

namespace cutrace {

struct ThreadState;

namespace stacks {

namespace detail {
extern bool g_wanted[kApiKindCount];  // by ApiKind; written once by initialize() before recording starts
extern __thread bool t_inLibunwind __attribute__((tls_model("initial-exec")));
}

// Whether the calling thread is inside libunwind, called by capture(): the pipe libunwind opens
// then (to probe memory: read and write one byte, each time it checks an address) is cutrace's,
// and goes to a high descriptor number (preload/unwinder_hooks.cpp).
inline bool inLibunwind() { return detail::t_inLibunwind; }

// Off the hot path, once per process (from Collector::initialize).
void initialize(const Config& config);

// Whether a call of this kind captures a stack (when it is the outermost recorded call).
inline bool wanted(ApiKind kind) { return detail::g_wanted[static_cast<unsigned>(kind)]; }

// Hot path: the interned id of the calling thread's stack below the preload, 0 when none or
// when the table is full. `from`: the shim (dwarf::walkStart() inlined in it), where the DWARF
// walk starts, so the frames in between are not walked (the other unwinders walk from here);
// the preload's own frames are skipped. May change errno (libunwind probes memory with system
// calls that can fail): the caller gives the program its value back.
uint32_t capture(ThreadState* s, const dwarf::WalkStart& from);

// The thread's stack bounds for the frame-pointer walk (slow path, at thread attach).
void attachThread(ThreadState* s);

StackTable& table();
const char* unwinderName();  // "dwarf, libunwind fallback", "libunwind", "frame-pointer", "off"...
// Stacks the .eh_frame walk gave up on, which the fallback unwinder took.
uint64_t unwindFallbacks();
// Whether CUTRACE_UNWIND=verify is in effect, and the stacks on which the .eh_frame walk and
// libunwind disagreed.
bool verifyingUnwind();
uint64_t unwindMismatches();
const char* pythonStatus();   // what Python frame support found in this process

}  // namespace stacks
}  // namespace cutrace
