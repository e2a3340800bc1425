#include <catch2/catch.hpp>

#include <alloca.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collector/dwarf_unwind.h"
#include "collector/symbolizer.h"

using namespace cutrace;

// The .eh_frame walk against libunwind's unw_backtrace from the same frames: the return
// addresses from the leaf's caller outwards must be identical, through frames without frame
// pointers, alloca, stack realignment, std::function, another thread, a catch block and a
// dlopen'ed library.

namespace {

using UnwBacktrace = int (*)(void**, int);

UnwBacktrace unwBacktrace() {
  static const UnwBacktrace fn = [] {
    void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return lib != nullptr ? reinterpret_cast<UnwBacktrace>(dlsym(lib, "unw_backtrace")) : nullptr;
  }();
  return fn;
}

uintptr_t stackHi() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* base = nullptr;
  std::size_t size = 0;
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  return reinterpret_cast<uintptr_t>(base) + size;
}

struct Walks {
  uint64_t callerReturn = 0;  // the leaf's return address: where both walks are aligned
  int ours = 0;
  bool repeated = false;  // the memo's verdict: the same frames as the thread's walk before
  std::vector<uint64_t> dwarf, libunwind;
};

thread_local dwarf::ThreadMemo memo{};

__attribute__((noinline)) void leaf(Walks& w) {
  w.callerReturn = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  const uintptr_t hi = stackHi();
  uint64_t frames[256];
  w.ours = dwarf::backtrace(frames, 256, hi, memo);
  w.repeated = memo.repeated;
  if (w.ours > 0) w.dwarf.assign(frames, frames + w.ours);
  void* theirs[256];
  const int n = unwBacktrace()(theirs, 256);
  for (int i = 0; i < n; ++i) w.libunwind.push_back(reinterpret_cast<uint64_t>(theirs[i]));
  asm volatile("");
}

std::vector<uint64_t> fromCaller(const std::vector<uint64_t>& frames, uint64_t callerReturn) {
  for (std::size_t i = 0; i < frames.size(); ++i)
    if (frames[i] == callerReturn) return {frames.begin() + static_cast<long>(i), frames.end()};
  return {};
}

void requireSameAsLibunwind(const Walks& w, std::size_t minFrames) {
  REQUIRE(w.ours > 0);
  const auto ours = fromCaller(w.dwarf, w.callerReturn);
  const auto theirs = fromCaller(w.libunwind, w.callerReturn);
  REQUIRE(theirs.size() >= minFrames);
  REQUIRE(ours == theirs);
}

__attribute__((noinline)) void recurseInto(const std::function<void()>& f, int depth) {
  if (depth == 0) f();
  else recurseInto(f, depth - 1);
  asm volatile("");
}

__attribute__((noinline)) void recurse(int depth, Walks& w) {
  if (depth == 0) leaf(w);
  else recurse(depth - 1, w);
  asm volatile("");
}

__attribute__((noinline)) void withAlloca(std::size_t bytes, Walks& w) {
  volatile char* buf = static_cast<char*>(alloca(bytes));
  buf[0] = 1;
  recurse(2, w);
  buf[bytes - 1] = 2;
}

__attribute__((noinline)) void realigned(Walks& w) {
  alignas(128) volatile char buf[256];
  buf[0] = 1;
  withAlloca(64 + static_cast<std::size_t>(buf[0]), w);
  buf[255] = 2;
}

__attribute__((noipa)) void sevenArguments(Walks& w, long a, long b, long c, long d, long e, long f) {
  realigned(w);
  asm volatile("" : : "r"(a + b + c + d + e + f));
}

// Realigned and passing arguments on the stack: GCC keeps the incoming stack pointer in a DRAP
// register and describes the frame with expressions (CFA = *(rbp - N), rbp saved at rbp + 0),
// the shape of cutrace's own launch shims (a 64-byte-aligned record, a launch's 8 arguments).
__attribute__((noipa)) void realignedWithStackArgs(Walks& w) {
  alignas(64) volatile long buf[8];
  buf[0] = 1;
  sevenArguments(w, buf[0], 2, 3, 4, 5, 6);
  buf[7] = buf[0];
}

__attribute__((noinline)) void throughFunction(Walks& w) {
  std::function<void()> f = [&] { realignedWithStackArgs(w); };
  f();
  asm volatile("");
}

__attribute__((noinline)) void inCatch(Walks& w) {
  try {
    throw std::runtime_error("x");
  } catch (const std::exception&) {
    throughFunction(w);
  }
}

// The same frames reached through different callers at the same stack depth: frame by frame
// the code address, rsp and rbp of the walk before, until the callers differ.
// (Bodies that differ, so the compiler does not fold them into one function.)
volatile int g_caller = 0;
__attribute__((noipa)) void callerA(Walks& w) {
  g_caller = 1;
  recurse(3, w);
  asm volatile("");
}
__attribute__((noipa)) void callerB(Walks& w) {
  g_caller = 2;
  recurse(3, w);
  asm volatile("");
}

// A realigned frame at the same aligned rsp and rbp as before, called with a different rsp:
// its CFA, read from the stack, differs from the walk before.
__attribute__((noinline)) void paddedRealigned(std::size_t pad, Walks& w) {
  volatile char* buf = static_cast<char*>(alloca(pad));
  buf[0] = 1;
  realignedWithStackArgs(w);
  buf[pad - 1] = 2;
}

// Shims as the preload's hooks are: they note where they are (dwarf::walkStart) and the walk
// starts there. The second is realigned and passes arguments on the stack, which makes GCC keep
// its incoming stack pointer in a DRAP register (CFA = *(rbp - N)), as the launch shims do.
struct FromWalk {
  int ours = 0;
  std::vector<uint64_t> dwarf, libunwind;
  uint64_t shimReturn = 0;  // the shim's return address
};

__attribute__((noinline)) void walkFrom(const dwarf::WalkStart& from, FromWalk& w) {
  uint64_t frames[256];
  w.ours = dwarf::backtraceFrom(from, frames, 256, stackHi(), memo);
  if (w.ours > 0) w.dwarf.assign(frames, frames + w.ours);
  void* theirs[256];
  const int n = unwBacktrace()(theirs, 256);
  for (int i = 0; i < n; ++i) w.libunwind.push_back(reinterpret_cast<uint64_t>(theirs[i]));
}

__attribute__((noinline)) void plainShim(FromWalk& w) {
  w.shimReturn = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  walkFrom(dwarf::walkStart(), w);
  asm volatile("");
}

__attribute__((noipa)) void walkFromWithStackArgs(const dwarf::WalkStart& from, FromWalk& w, long a, long b, long c,
                                                  long d, long e, long f) {
  walkFrom(from, w);
  asm volatile("" : : "r"(a + b + c + d + e + f));
}

__attribute__((noipa)) void realignedShim(FromWalk& w) {
  alignas(64) volatile long buf[8];
  buf[0] = 1;
  w.shimReturn = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  walkFromWithStackArgs(dwarf::walkStart(), w, buf[0], 2, 3, 4, 5, 6);
  buf[7] = buf[0];
}

__attribute__((noinline)) void callShims(FromWalk& plain, FromWalk& realigned) {
  plainShim(plain);
  realignedShim(realigned);
  asm volatile("");
}

volatile int g_signalWalk = 0;
uintptr_t g_signalStackHi = 0;  // found before the signal: pthread_getattr_np is not signal-safe
void onSignal(int) {
  uint64_t frames[64];
  dwarf::ThreadMemo own{};
  g_signalWalk = dwarf::backtrace(frames, 64, g_signalStackHi, own);
}

}  // namespace

TEST_CASE("dwarf unwind: same return addresses as libunwind, through every kind of frame", "[stacks][dwarf]") {
  REQUIRE(unwBacktrace() != nullptr);  // scripts/setup.sh installs libunwind8
  REQUIRE(dwarf::initialize());
  {
    Walks w;
    recurse(12, w);
    requireSameAsLibunwind(w, 14);
    // Twice: the second walk runs on cached rules only.
    Walks again;
    recurse(12, again);
    requireSameAsLibunwind(again, 14);
    REQUIRE(again.dwarf.size() == w.dwarf.size());
  }
  {
    Walks w;
    inCatch(w);
    requireSameAsLibunwind(w, 8);
  }
  // Not under ThreadSanitizer: libunwind's per-thread cache destructor crashes there at thread
  // exit (the reason the collector never uses libunwind under TSan).
  if (dlsym(RTLD_DEFAULT, "__tsan_init") == nullptr) {
    Walks w;
    std::thread([&] { recurse(5, w); }).join();
    requireSameAsLibunwind(w, 7);
  }
  {
    void* lib = dlopen(CUTRACE_DLOPEN_TARGET, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib != nullptr);
    auto call = reinterpret_cast<void (*)(void (*)(void*), void*)>(dlsym(lib, "cutraceDlopenCall"));
    REQUIRE(call != nullptr);
    Walks w;
    call([](void* arg) { recurse(3, *static_cast<Walks*>(arg)); }, &w);
    requireSameAsLibunwind(w, 6);
    dlclose(lib);
  }
  REQUIRE(dwarf::rulesCached() > 10);
}

TEST_CASE("dwarf unwind: a frame met again is stepped from the thread's memo, its callers read afresh",
          "[stacks][dwarf]") {
  REQUIRE(dwarf::initialize());
  Walks a, b, again;
  callerA(a);
  callerB(b);
  callerA(again);
  requireSameAsLibunwind(a, 6);
  requireSameAsLibunwind(b, 6);
  requireSameAsLibunwind(again, 6);
  // From the leaf's caller: recurse x4, then callerA or callerB.
  const auto fa = fromCaller(a.dwarf, a.callerReturn), fb = fromCaller(b.dwarf, b.callerReturn),
             fagain = fromCaller(again.dwarf, again.callerReturn);
  REQUIRE(fa.size() > 5);
  REQUIRE(std::vector<uint64_t>(fa.begin(), fa.begin() + 4) == std::vector<uint64_t>(fb.begin(), fb.begin() + 4));
  REQUIRE(fa[4] != fb[4]);
  REQUIRE(std::vector<uint64_t>(fa.begin(), fa.begin() + 5) == std::vector<uint64_t>(fagain.begin(), fagain.begin() + 5));
  // Each of those three differs from the walk before it; the same call made twice does not.
  CHECK_FALSE(a.repeated);
  CHECK_FALSE(b.repeated);
  CHECK_FALSE(again.repeated);
  // One call site for both calls, the same argument (a register holding a different pointer
  // in a frame that keeps rbp for data would make the frames differ to the memo).
  Walks same;
  bool repeated[2] = {true, false};
  std::vector<uint64_t> first;
  const volatile int times = 2;  // a loop the compiler keeps
  for (int i = 0; i < times; ++i) {
    same = Walks{};
    callerA(same);
    repeated[i] = same.repeated;
    if (i == 0) first = same.dwarf;
  }
  CHECK_FALSE(repeated[0]);  // the call site in this loop is not the one above
  CHECK(repeated[1]);
  CHECK(same.dwarf == first);
  // The second of those walks was replayed from the first: the same start, every word read the
  // same. From the same start through the other caller, the words differ four frames down.
  Walks other;
  callerB(other);
  requireSameAsLibunwind(other, 6);
  const auto fother = fromCaller(other.dwarf, other.callerReturn);
  CHECK_FALSE(other.repeated);
  REQUIRE(fother.size() > 5);
  CHECK(fother[4] == fb[4]);
  // Pads 16 bytes apart: 64-byte realignment puts two of every four at the same aligned rsp.
  std::vector<std::vector<uint64_t>> walks;
  for (std::size_t pad = 16; pad <= 16 * 8; pad += 16) {
    Walks w;
    paddedRealigned(pad, w);
    requireSameAsLibunwind(w, 8);
    walks.push_back(fromCaller(w.dwarf, w.callerReturn));
  }
  REQUIRE(walks.front() == walks.back());
}

TEST_CASE("dwarf unwind: a walk from a shim's own frame", "[stacks][dwarf]") {
  REQUIRE(dwarf::initialize());
  for (int round = 0; round < 2; ++round) {  // the second from the thread's memo
    FromWalk plain, realigned;
    recurseInto([&] { callShims(plain, realigned); }, 3);
    for (const FromWalk* w : {&plain, &realigned}) {
      // Frame 0 is in the shim; from frame 1 on, the frames libunwind finds from the shim's
      // return address, walking from inside walkFrom.
      REQUIRE(w->ours > 6);
      const std::vector<uint64_t> ours(w->dwarf.begin() + 1, w->dwarf.end());
      REQUIRE(ours.front() == w->shimReturn);
      const auto theirs = fromCaller(w->libunwind, w->shimReturn);
      REQUIRE(theirs.size() >= 6);
      REQUIRE(ours == theirs);
    }
  }
}

namespace {

Walks* g_trampolineWalks = nullptr;

// What a trampoline calls; realigns its stack (the `ret` trampoline enters it misaligned).
extern "C" __attribute__((noinline, force_align_arg_pointer)) void trampolineLeaf() {
  leaf(*g_trampolineWalks);
  asm volatile("");
}

// Trampolines in memory no object holds, with no unwind information, as a JIT writes them: each
// calls its argument (rdi), then returns through one of the epilogues the walk reads.
struct Trampoline {
  const char* name;
  std::vector<unsigned char> code;
  std::size_t returnAt;  // the offset of the return address of its call
  bool libunwindFollows;  // libunwind's frame-chain guess finds the same caller
};
const Trampoline kTrampolines[] = {
    // push rbp; mov rbp, rsp; call *rdi; pop rbp; ret (CPython's -X perf trampolines)
    {"pop rbp; ret", {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3}, 6, true},
    // push rbp; mov rbp, rsp; sub rsp, 16; call *rdi; leave; ret
    {"leave; ret", {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xff, 0xd7, 0xc9, 0xc3}, 10, true},
    // call *rdi; ret
    {"ret", {0xff, 0xd7, 0xc3}, 2, false},
    // push rbp; mov rbp, rsp; call *rdi; nop; pop rbp; ret: no such epilogue, a frame pointer
    // (stepped through as libunwind steps)
    {"frame pointer", {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x90, 0x5d, 0xc3}, 6, true},
};

__attribute__((noinline)) void callTrampoline(void (*trampoline)(void (*)()), uint64_t& returnHere) {
  returnHere = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  trampoline(&trampolineLeaf);
  asm volatile("");
}

}  // namespace

TEST_CASE("dwarf unwind: through code in no object, from the epilogue after its call or its frame pointer",
          "[stacks][dwarf]") {
  REQUIRE(dwarf::initialize());
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  std::size_t at = 0;
  for (const Trampoline& t : kTrampolines) {
    INFO(t.name);
    auto* code = static_cast<unsigned char*>(page) + at;
    memcpy(code, t.code.data(), t.code.size());
    at += 64;
    Walks w;
    g_trampolineWalks = &w;
    uint64_t outer = 0;
    callTrampoline(reinterpret_cast<void (*)(void (*)())>(code), outer);
    // The walk went on past the trampoline (no -1, no fallback needed): its frame, then the
    // function that called it, then that function's caller.
    REQUIRE(w.ours > 0);
    const auto ours = fromCaller(w.dwarf, w.callerReturn);
    REQUIRE(ours.size() >= 4);
    CHECK(ours[1] == reinterpret_cast<uint64_t>(code) + t.returnAt);
    CHECK(ours[2] > reinterpret_cast<uint64_t>(&callTrampoline));
    CHECK(ours[2] < reinterpret_cast<uint64_t>(&callTrampoline) + 256);
    CHECK(ours[3] == outer);
    if (t.libunwindFollows && unwBacktrace() != nullptr && dlsym(RTLD_DEFAULT, "__tsan_init") == nullptr)
      CHECK(ours == fromCaller(w.libunwind, w.callerReturn));
    // Again (called from another line): from the cached rule.
    Walks again;
    g_trampolineWalks = &again;
    callTrampoline(reinterpret_cast<void (*)(void (*)())>(code), outer);
    const auto second = fromCaller(again.dwarf, again.callerReturn);
    REQUIRE(second.size() >= 4);
    CHECK(std::vector<uint64_t>(second.begin(), second.begin() + 3) == std::vector<uint64_t>(ours.begin(), ours.begin() + 3));
    CHECK(second[3] == outer);
  }
  // Code with neither (rbp cleared) is given up on, where it says, until noteDeadEnd() makes it
  // the end of the stack (as libunwind's: stacks::capture learns it from there).
  {
    auto* code = static_cast<unsigned char*>(page) + at;
    // push rbp; xor ebp, ebp; call *rdi; nop; pop rbp; ret
    const unsigned char other[] = {0x55, 0x31, 0xed, 0xff, 0xd7, 0x90, 0x5d, 0xc3};
    memcpy(code, other, sizeof other);
    const uint64_t returnAt = reinterpret_cast<uint64_t>(code) + 5;
    Walks w;
    g_trampolineWalks = &w;
    uint64_t outer = 0;
    callTrampoline(reinterpret_cast<void (*)(void (*)())>(code), outer);
    CHECK(w.ours == -1);
    CHECK(memo.stoppedAt == returnAt);
    dwarf::noteDeadEnd(returnAt);
    Walks ended;
    g_trampolineWalks = &ended;
    callTrampoline(reinterpret_cast<void (*)(void (*)())>(code), outer);
    REQUIRE(ended.ours > 0);
    CHECK(ended.dwarf.back() == returnAt);
    CHECK(memo.stoppedAt == 0);
    // Again, replayed: the same frames.
    Walks replayed;
    g_trampolineWalks = &replayed;
    callTrampoline(reinterpret_cast<void (*)(void (*)())>(code), outer);
    CHECK(replayed.dwarf == ended.dwarf);
  }
  munmap(page, 4096);
}

TEST_CASE("dwarf unwind: gives up on what it cannot follow", "[stacks][dwarf]") {
  REQUIRE(dwarf::initialize());
  uint64_t frames[64];
  // A bound below the caller's frame: the walk cannot stay on the stack.
  char here;
  REQUIRE(dwarf::backtrace(frames, 64, reinterpret_cast<uintptr_t>(&here) - 4096, memo) == -1);
  REQUIRE(dwarf::backtrace(frames, 64, 0, memo) == -1);
  // A signal frame (the kernel's sigreturn trampoline) is left to libunwind.
  struct sigaction sa = {}, old = {};
  sa.sa_handler = onSignal;
  g_signalStackHi = stackHi();
  sigaction(SIGUSR1, &sa, &old);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  REQUIRE(g_signalWalk == -1);
  // `max` bounds the walk.
  REQUIRE(dwarf::backtrace(frames, 2, stackHi(), memo) == 2);
}

// The replay reads every word the memo's walk read, in pairs after an odd one first: a change in
// any of them, whatever its position and however many words there are, must make it walk.
TEST_CASE("dwarf unwind: a replay compares every word the walk read", "[stacks][dwarf]") {
  static dwarf::ThreadMemo memo;  // large: not on the test's stack
  uint64_t words[9];
  for (int reads = 1; reads <= 9; ++reads) {
    for (int changed = -1; changed < reads; ++changed) {
      memo = dwarf::ThreadMemo{};
      memo.replayable = true;
      memo.pc = 0x1000;
      memo.sp = 0x2000;
      memo.bp = 0x3000;
      memo.lo = 0x10;
      memo.hi = 0x20;
      memo.max = 8;
      memo.reads = reads;
      memo.lastCount = 3;
      for (int i = 0; i < reads; ++i) {
        words[i] = 0xabc0 + static_cast<uint64_t>(i);
        memo.read[i] = {reinterpret_cast<uint64_t>(&words[i]), words[i]};
      }
      if (changed >= 0) words[changed] ^= 0x40;
      uint64_t out[8];
      const int n = dwarf::replay(dwarf::WalkStart{0x1000, 0x2000, 0x3000}, 0x10, out, 8, 0x20, memo, true);
      INFO("reads " << reads << ", changed " << changed);
      CHECK(n == (changed < 0 ? 3 : -1));
    }
  }
}

TEST_CASE("dwarf unwind: the part GCC split off a stripped function is found from the function, and named "
          "as the eval loop's when it is CPython's", "[stacks][dwarf]") {
  void* lib = dlopen(CUTRACE_SPLIT_TARGET, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  auto eval = reinterpret_cast<int (*)(int, void**)>(dlsym(lib, "_PyEval_EvalFrameDefault"));
  auto opaque = dlsym(lib, "cutraceSplitOpaque");
  REQUIRE(eval != nullptr);
  REQUIRE(opaque != nullptr);
  void* where = nullptr;
  REQUIRE(eval(12345, &where) == 12345 * 2 + 1);
  const auto call = reinterpret_cast<uint64_t>(where) - 1;
  Dl_info info;
  void* entry = nullptr;
  REQUIRE(dladdr1(reinterpret_cast<void*>(eval), &info, &entry, RTLD_DL_SYMENT) != 0);
  const auto begin = reinterpret_cast<uint64_t>(eval);
  const uint64_t size = static_cast<const ElfW(Sym)*>(entry)->st_size;
  REQUIRE((call < begin || call >= begin + size));  // the cold call lies outside the function's symbol

  uint64_t partBegin = 0, partEnd = 0;
  REQUIRE(dwarf::splitPartOf(begin, partBegin, partEnd));
  CHECK(partBegin <= call);
  CHECK(call < partEnd);
  // A function split nowhere: the next FDE is another function's, entered by a call.
  CHECK_FALSE(dwarf::splitPartOf(reinterpret_cast<uint64_t>(opaque), partBegin, partEnd));

  // The symbolizer names it (the library has no .symtab to), so a stack's Python frames find it.
  Symbolizer symbolizer;
  CHECK(symbolizer.frameName(reinterpret_cast<uint64_t>(where)) == kPythonEvalLoopPart);
  CHECK(isPythonEvalLoop(symbolizer.frameName(reinterpret_cast<uint64_t>(where))));
  CHECK(symbolizer.frameName(begin + 1) == kPythonEvalLoop);
  CHECK_FALSE(isPythonEvalLoop("_PyEval_EvalFrameDefaultX"));
  CHECK_FALSE(isPythonEvalLoop("_PyEval_EvalFrame"));
  dlclose(lib);
}
