#pragma once
// A call-stack walk driven by each function's call frame information (.eh_frame), with the rule
// of every return address it has seen cached process-wide, so a repeated stack costs a table
// probe and a load or two per frame, and the thread's last stack met again from the same start a
// compare per stack word that walk read (ThreadMemo).
//
// The rule of a code address is found once: _dl_find_object gives the object's .eh_frame_hdr,
// its sorted table gives the FDE, and the FDE's CFA program is run up to the address. x86-64
// code from GCC and Clang needs only "CFA = rsp or rbp + offset", the return address and rbp
// saved at offsets from the CFA, and GCC's stack-realignment forms "CFA = *(rbp + offset)" and
// "rbp saved at rbp + offset". Any
// other rule (signal frames, registers saved in registers, other expressions, code without an
// FDE) makes the walk give up, and the caller unwinds that stack with libunwind instead: the
// result is either the same frames libunwind would report or no result.
//
// Stack memory is only read inside [current rsp, stackHi), so a wrong rule or a foreign stack
// (sigaltstack, coroutines) ends the walk instead of faulting. The cache is never flushed: an
// object unloaded and another loaded at the same address could reuse stale rules, bounded by
// the same stack checks (libunwind has the same exposure between its own flushes).
//
// No allocation, lock or system call after initialize(); safe in any thread, reentrant.

#include <cstdint>
#include <cstring>

namespace cutrace::dwarf {

// Off the hot path, once per process. False when the C library lacks _dl_find_object (glibc
// before 2.35) or the cache cannot be mapped; backtrace() must not be called then.
bool initialize();

// One thread's last walks, by depth: for frame n, the code address, rsp and rbp it was entered
// with and what its rule made of them (the caller's rsp, where rbp was saved). A frame met again
// at the same depth with the same three values is stepped from here: the rule is a function of
// the code address alone, and the addresses it gives of rsp and rbp, so the result is what the
// rule would give, with its bounds checks already passed, and the walk costs a compare and a
// load or two per frame. The words read from the stack are read afresh every time: only how to
// find them is remembered (a CFA read from the stack, GCC's realignment form, is checked again
// as it is read). Owned by its thread, used inside a RecordSection (a signal handler never
// walks with it while the thread does); zeroed memory is an empty memo, and a new owner of the
// memory (another thread, other stack bounds) must zero it.
struct ThreadMemo {
  static constexpr int kDepth = 64;
  struct Frame {
    uint64_t pc, sp, bp;
    uint64_t cfa;    // the caller's rsp; 0 (and cfaAt 0): the outermost frame
    uint64_t cfaAt;  // non-zero: the caller's rsp is read from here instead
    uint64_t bpAt;   // where rbp was saved; 0: rbp kept
    bool usesBp;     // the rule reads rbp (the CFA or where rbp was saved is rbp + offset)
  };
  Frame frame[kDepth];
  // How many frames the last walk returned (0 after a walk that gave up), and whether that walk
  // returned the same frames as the walk before it: as many, each found in the memo, so each
  // equal to the memo's frame at its depth, which the walk before it left there.
  int lastCount;
  bool repeated;
  // Where the last walk gave up on code no loaded object holds, which no epilogue fixes (a JIT's),
  // else 0: if libunwind cannot get past it either, the caller says so with noteDeadEnd().
  uint64_t stoppedAt;
  // The last walk as what decided it: its start (code address, rsp, rbp), its bounds and `max`,
  // every stack word it read (address and value, in order) and the frames it returned. A walk is
  // a function of exactly these (a rule, of the code address alone), so a walk with the same
  // start and bounds that finds the same value at each of those addresses returns the same
  // frames: it is replayed by comparing words, with no rule looked up or applied. The addresses
  // passed the bounds checks then, with the same bounds. `replayable`: false after a walk that
  // gave up, read more than kReads words or returned more than kDepth frames.
  struct Read {
    uint64_t at, value;
  };
  static constexpr int kReads = 2 * kDepth;
  bool replayable;
  // The last walk was such a replay, and was told to leave its frames here (pcs), not in `out`.
  bool replayed;
  int max, reads;
  uint64_t pc, sp, bp, lo, hi;
  Read read[kReads];
  uint64_t pcs[kDepth];
};

// Where a walk starts: an address in a function of the calling thread and its rsp and rbp
// there, taken by walkStart().
struct WalkStart {
  uint64_t pc, sp, bp;
};
// Inlined (always) into the function it describes: the registers must be that function's own,
// at an instruction whose call frame information the walk reads. (__builtin_dwarf_cfa() would
// name a caller's frame directly, but GCC computes it as rbp + 16, which is wrong in a realigned
// frame using a DRAP register, as every shim was while its local record was 64-byte aligned.)
__attribute__((always_inline)) inline WalkStart walkStart() {
  WalkStart f;
  asm volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2"
      : "=r"(f.pc), "=r"(f.sp), "=r"(f.bp));
  return f;
}

// Return addresses of the calling thread, innermost first, starting with an address inside
// backtrace() itself (as unw_backtrace starts inside itself). Returns how many were written
// (the walk ends at the outermost frame, where the return address is undefined, or at `max`),
// or -1 when some frame's rule is not one of the supported forms or leaves the stack bounds
// before the outermost frame.
int backtrace(uint64_t* out, int max, uintptr_t stackHi, ThreadMemo& memo);

// A word of the calling thread's stack in a frame the caller does not own (it may lie in an
// ASan redzone there): read by an instruction no sanitizer instruments.
__attribute__((always_inline)) inline uint64_t stackWord(uint64_t at) {
  uint64_t value;
  asm volatile("mov %1, %0" : "=r"(value) : "m"(*reinterpret_cast<const uint64_t*>(at)));
  return value;
}

// The memo's last walk again, from the same start with the same bounds (`lo`: the walking
// function's rsp, below which nothing is read) and `max`, when every stack word it read holds
// what it held then: its frame count, else -1 (then walk).
__attribute__((always_inline)) inline int replay(const WalkStart& from, uint64_t lo, uint64_t* out, int max,
                                                 uintptr_t stackHi, ThreadMemo& memo, bool copyReplay) {
  if (!memo.replayable || memo.pc != from.pc || memo.sp != from.sp || memo.bp != from.bp || memo.lo != lo ||
      memo.hi != stackHi || memo.max != max)
    return -1;
  // Every word, their differences or'ed two at a time with no branch per word: a mismatch means a
  // walk, far costlier than the words left (5.5 instructions a word against 7 comparing one by
  // one). Each address passed the bounds check with these bounds, so each is readable.
  const ThreadMemo::Read* r = memo.read;
  const ThreadMemo::Read* const end = r + memo.reads;
  uint64_t diff = 0;
  if (memo.reads & 1) {
    diff = stackWord(r->at) ^ r->value;
    ++r;
  }
  for (; r != end; r += 2) diff |= (stackWord(r[0].at) ^ r[0].value) | (stackWord(r[1].at) ^ r[1].value);
  if (diff != 0) return -1;
  const int count = memo.lastCount;
  if (copyReplay) memcpy(out, memo.pcs, static_cast<std::size_t>(count) * sizeof(uint64_t));
  memo.replayed = !copyReplay;
  memo.repeated = true;
  return count;
}

// The walk of backtraceFrom(), not replayed, reading nothing below `lo`.
int walkFrom(const WalkStart& from, uint64_t lo, uint64_t* out, int max, uintptr_t stackHi, ThreadMemo& memo);

// The same walk from another frame of the calling thread, further up its stack (walkStart()
// taken there). The frames between it and this call are not walked. -1 as backtrace(), and
// when the start lies below the walking function's frame. `copyReplay` false: a walk that
// replays the memo leaves `out` as it was and sets memo.replayed, its frames in memo.pcs (a
// caller that then knows the stack by its id never needs them).
//
// Inline: a repeated stack (ThreadMemo) is replayed here, in the caller, and only a walk calls
// walkFrom().
__attribute__((always_inline)) inline int backtraceFrom(const WalkStart& from, uint64_t* out, int max,
                                                        uintptr_t stackHi, ThreadMemo& memo, bool copyReplay = true) {
  const uint64_t lo = walkStart().sp;
  const int n = replay(from, lo, out, max, stackHi, memo, copyReplay);
  return n >= 0 ? n : walkFrom(from, lo, out, max, stackHi, memo);
}

// Rules computed so far and stacks given up on, for the trace's metadata.
uint64_t rulesCached();

// `pc` (a ThreadMemo::stoppedAt) is where libunwind's stack ended too: from now on a walk that
// reaches it ends there, as libunwind's did, and does not give up (its stack would go to
// libunwind again, for nothing, at every call: a JIT-compiled loop's). A set of a few hundred,
// lock-free; past that, walks give up there as before.
void noteDeadEnd(uint64_t pc);

// Off the hot path (the symbolizer). The code range [begin, end) of the part split off the
// function covering `pc` by GCC's hot/cold partitioning (on with profile feedback, as CPython's
// distribution builds are made; its ".cold" part, which a stripped binary names with no symbol):
// the FDE GCC writes right after the function's own, when its code starts inside a frame (entered
// by a jump, not a call). False when there is none, or without _dl_find_object (glibc < 2.35).
bool splitPartOf(uint64_t pc, uint64_t& begin, uint64_t& end);

}  // namespace cutrace::dwarf
