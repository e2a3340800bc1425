#pragma once
// The calling thread's alternate signal stack, as it last set it with sigaltstack
// (preload/signal_hooks.cpp); {0, 0}: none.

#include <stddef.h>
#include <stdint.h>

namespace cutrace {

struct AltStack {
  uintptr_t lo;
  size_t size;
};

namespace tls {
extern __thread AltStack altStack __attribute__((tls_model("initial-exec")));
}  // namespace tls

// What a stack walk takes below the shim's frame (capture's buffers, about 5 KiB, the unwinder's
// frames and what the hook calls), with room to spare: from a signal handler on an alternate
// stack with less left (8-16 KiB stacks are common: SIGSTKSZ) the walk ran off its end.
inline constexpr uintptr_t kWalkStackBytes = 32 * 1024;

// Whether a walk from `sp` has the room: anywhere but on the alternate stack less than
// kWalkStackBytes above its low end. (Off it, sp - lo wraps or is past its size.)
inline bool roomToWalk(uintptr_t sp) {
  const uintptr_t room = sp - tls::altStack.lo;
  return room >= tls::altStack.size || room >= kWalkStackBytes;
}

// Whether `sp` is on the thread's alternate signal stack.
inline bool onAltStack(uintptr_t sp) { return sp - tls::altStack.lo < tls::altStack.size; }

}  // namespace cutrace
