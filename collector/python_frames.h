#pragma once
// Python frames at CUDA calls: reads the calling thread's CPython 3.10-3.15 frame chain from
// inside a hook, without the GIL and without linking libpython. Struct offsets are hard-coded
// per minor version (python_frames.cpp says where each comes from); any interpreter the module
// does not recognise (other version, debug, free-threaded) leaves it off with a reason.

#include <cstdint>
#include <string>

#include "collector/stack_table.h"

namespace cutrace::python {

// Once, off the hot path (may allocate, call dlsym and mmap); idempotent and thread-safe.
// Returns whether frames can be read in this process. Frames are returned only once the
// interpreter is initialised, so calling this before Python starts (a preload constructor) works.
bool initialize();

// One line for trace metadata: "CPython 3.11.7: frames on", "not a Python process", ...
const char* status();

// What the stack hash covers: cheap to capture.
struct RawFrame {
  uint64_t code;   // code object address
  uint32_t instr;  // byte offset of the current instruction in the code; kNotStarted before the first
  uint32_t entry;  // 1 = outermost Python frame of its C-level _PyEval_EvalFrameDefault call
};
inline constexpr uint32_t kNotStarted = 0xffffffffu;

// What one walk of a thread's frames read that decided its result, step by step (each frame
// visited, skipped ones included), and what each step gave: the frame, its code object, its
// instruction word and its owner byte (with 3.11's entry byte). A step that reads the same values
// as the last walk's step at the same distance from the chain's outermost frame, with every step
// further out the same too, gives the same frame: the rest it reads are fields of those code
// objects that do not change while a frame of theirs lives (their type, their first traceable
// instruction), and the owner of the frame further out, that step's own read. So a walk reuses
// the frames (and their hash) of the callers it shares with the last one, and reads the rest.
// Owner thread only.
struct ChainMemo {
  static constexpr int kSteps = 64;
  struct Reads {
    uint64_t frame, code, instr, owner;  // no padding: compared word by word
  };
  struct Step {
    Reads reads;
    uint64_t hash;   // foldPythonFrame() of the frames given from the outermost step to this one
    uint32_t given;  // frames given from the outermost step to this one
  };
  int steps = -1;  // -1: nothing to compare with (no walk yet, or the last one was longer or cut)
  Step step[kSteps];  // step[0]: the outermost frame
  uint64_t words[2 * kSteps];  // the frames given, from the outermost in (frameWords)
};

// HOT PATH (no allocation, lock, syscall or GIL): the calling thread's frames, innermost first,
// each as two words, as the stack hash takes them (frameWords): at most `max` frames, 2 * max
// words, and in `hash` their hash (foldPythonFrame from the outermost in; kFramesHashSeed for
// none). Returns the frames, 0 when there are none, the process is not Python, or initialize()
// did not succeed. `memo`, when given, is what the thread's last walk read: the callers this walk
// shares with it are not read again (ChainMemo); it is then filled with what this walk read, and
// holds the frames instead of `out` (heldWords; most stacks are known by their hash, and their
// frames are never needed), or has steps -1 when it cannot, with the frames in `out`.
// `frame`: the thread's innermost frame when the caller has read it already (innermostFrame(), in
// this same call into the hooks), else kFrameNotRead.
inline constexpr uintptr_t kFrameNotRead = ~uintptr_t{0};
int captureWords(uint64_t* out, int max, uint64_t& hash, ChainMemo* memo = nullptr, uintptr_t frame = kFrameNotRead);
// The frames captureWords left in `memo` (steps >= 0), innermost first, into `out`.
void heldWords(const ChainMemo& memo, uint64_t* out);
// A stack's Python frames are hashed from the outermost in: a frame's words folded into the hash
// of its callers, which a walk sharing them with the last one takes from its ChainMemo.
inline constexpr uint64_t kFramesHashSeed = 0x2d358dccaa6c78a5ull;
inline uint64_t foldPythonFrame(uint64_t callers, const uint64_t* words) {
  return foldedProduct(words[0] ^ 0x8bb84b93962eacc9ull, words[1] ^ callers);
}
inline void frameWords(const RawFrame& f, uint64_t* words) {
  words[0] = f.code;
  words[1] = f.instr | uint64_t{f.entry} << 32;
}
inline RawFrame rawFrameOf(const uint64_t* words) {
  return RawFrame{words[0], static_cast<uint32_t>(words[1]), static_cast<uint32_t>(words[1] >> 32)};
}
// captureWords as RawFrames.
int captureRaw(RawFrame* out, int max);

// HOT PATH: the calling thread's innermost Python frame (0: none, not Python, or initialize()
// did not succeed), for sameChain and captureWords, which read it once so.
uintptr_t innermostFrame();
// HOT PATH: whether captureWords would now return what it returned when it filled `memo` (the
// same reads at every step, from `frame`, innermostFrame()): a compare per frame, no code object
// read. False when unsure.
bool sameChain(const ChainMemo& memo, uintptr_t frame);

// Hot path, but only the first time a stack is seen. `f` must come from captureWords on this thread
// with its frames still live (the frame holds a reference to its code object, so the code is
// alive). Copies the code's names and line table once per code object into a preallocated arena
// (lock-free). Returns an id > 0 for (code, instr), or 0 when the arena or a table is full or the
// frame is not readable (counted by internFailures()).
uint32_t internFrame(const RawFrame& f);
uint64_t internFailures();

// Off the hot path; uses only the copied data, so it works after Python has finalised.
struct FrameInfo {
  std::string function;  // 3.11+: qualified name (Class.method); 3.10: co_name
  std::string file;
  int line = 0;          // 0 when the instruction has no line
};
bool describe(uint32_t id, FrameInfo& out);

}  // namespace cutrace::python
