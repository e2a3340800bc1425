#pragma once
// FlameGraph folded stacks: "frame;frame;...;leaf weight", root first, one line per distinct
// stack, lines sorted bytewise, weight a positive integer. Frames are, per thread: the
// enclosing NVTX push/pop ranges of the default domain (switchable; named domains have tracks
// of their own in the trace and are no frames), the call stack of the outermost CUDA call
// (native and Python frames, root first), the CUDA API calls (a runtime call above the driver
// call it made), and the kernel name as a frame right under the call that launched it.
//
// Three weights of the same stacks:
// - host time: nanoseconds spent in that exact stack and not in a deeper one (self time);
// - calls: how many API calls and NVTX ranges ended exactly there;
// - GPU time: nanoseconds of device work (CUPTI) that the launch or copy at that stack caused.
// A line whose weight is 0 is left out of that file: flamegraph.pl names a box by function,
// depth and end, so a zero-width box overwrites the real box of the same name (and a file of
// zeros draws nothing at all). Nanoseconds keep every stack that took any time.
//
// Viewers read these lines literally, so frame names are made safe for them (foldedFrame), and
// a stack is cut at kFoldedMaxFrames: the rest of it becomes one kDeeperFramesFrame frame with
// the time of everything below. Without the cut a program that pushes a range every step and
// never pops it (a common bug) writes lines whose length grows with the depth, a file quadratic
// in the steps.

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collector/trace_data.h"
#include "exporters/json_writer.h"

namespace cutrace {

inline constexpr uint32_t kFoldedMaxFrames = 256;
inline constexpr std::string_view kDeeperFramesFrame = "[deeper frames]";

struct FoldOptions {
  bool nvtxFrames = true;
  uint32_t maxFrames = kFoldedMaxFrames;  // frames of a line before the kDeeperFramesFrame one
};

// A map from (node << 32 | id) keys to node ids, open addressing with linear probing: a
// folded tree has a node per distinct frame of every distinct stack, millions in a long run,
// and a node-based hash map spent most of the folding in allocating them.
class FoldIndex {
 public:
  // The value under `key`, after storing `value` there when there was none (`inserted`).
  uint32_t findOrInsert(uint64_t key, uint32_t value, bool& inserted);
  // The value under `key`, or UINT32_MAX.
  uint32_t find(uint64_t key) const;

 private:
  static constexpr uint64_t kEmpty = UINT64_MAX;  // no node id is UINT32_MAX
  std::size_t slot(uint64_t key) const { return (key * 0x9e3779b97f4a7c15ull) >> shift_; }
  void grow();

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
  std::size_t size_ = 0;
  int shift_ = 64;
};

struct FoldWeights {
  uint64_t hostNs = 0;
  uint64_t calls = 0;
  uint64_t gpuNs = 0;
};

// The folded stacks of a trace, held as a tree of frames: a line's text is built only while it
// is read, so memory grows with the distinct frames of the tree, not with the text of the lines.
// Iterating yields (stack, weights) in bytewise order of the stack text.
class FoldedStacks {
 public:
  using value_type = std::pair<std::string, FoldWeights>;
  FoldedStacks() = default;
  FoldedStacks(FoldedStacks&&) = default;  // the label map's nodes move with it
  FoldedStacks& operator=(FoldedStacks&&) = default;
  FoldedStacks(const FoldedStacks&) = delete;
  FoldedStacks& operator=(const FoldedStacks&) = delete;

  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = FoldedStacks::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;

    const_iterator(const FoldedStacks* owner, std::size_t i) : owner_(owner), i_(i) {}
    reference operator*() const;
    pointer operator->() const { return &**this; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

   private:
    const FoldedStacks* owner_;
    std::size_t i_;
    mutable std::size_t built_ = SIZE_MAX;
    mutable value_type current_;
    mutable std::vector<uint32_t> chain_;
  };

  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, lines_.size()); }
  // Lines (stacks where some call or range ended), whatever their weights.
  std::size_t size() const { return lines_.size(); }
  // The weights of one stack ("a;b;c"), or null when no call or range ended there.
  const FoldWeights* find(std::string_view stack) const;
  std::size_t count(std::string_view stack) const { return find(stack) != nullptr; }
  bool anyGpu() const;

  uint32_t maxFrames() const { return maxFrames_; }
  // Calls and ranges whose own frame lay past maxFrames (folded into kDeeperFramesFrame).
  uint64_t depthCapped() const { return depthCapped_; }

 private:
  friend class Folder;
  friend class FoldBuilder;
  friend FoldedStacks foldStacks(const TraceData& data, const FoldOptions& options);
  static constexpr uint32_t kRoot = 0;

  uint32_t label(std::string_view text);
  uint32_t child(uint32_t node, uint32_t label);
  // The node one frame below `node`: past maxFrames_ the kDeeperFramesFrame node, which is its
  // own child.
  uint32_t descend(uint32_t node, uint32_t label);
  // `chain`: scratch space, kept by the caller across lines.
  void appendPath(uint32_t node, std::string& out, std::vector<uint32_t>& chain) const;
  // Sorts the nodes where something ended into lines_.
  void finish();

  uint32_t maxFrames_ = kFoldedMaxFrames;
  uint64_t depthCapped_ = 0;
  std::unordered_map<std::string, uint32_t> labelIds_;
  std::vector<const std::string*> labels_;  // by label id; the map's nodes do not move
  uint32_t deeperLabel_ = 0;
  FoldIndex children_;  // (node << 32 | label) -> child
  // Per node; node 0 is the root.
  std::vector<uint32_t> parent_{0};
  std::vector<uint32_t> label_{0};
  std::vector<uint32_t> depth_{0};
  std::vector<FoldWeights> weights_{FoldWeights{}};
  std::vector<bool> ends_{false};
  std::vector<uint32_t> lines_;  // nodes where something ended, in bytewise order of their text
};

FoldedStacks foldStacks(const TraceData& data, const FoldOptions& options = {});

// The same folded stacks built as a run goes, pass by pass, from what the drain decoded since
// the last pass (each thread's events and ThreadTrack::opens): memory grows with the distinct
// stacks and the frames open at once, never with the run's length. Fed the same events, it
// gives what foldStacks() gives, but for the GPU-time weights (device work is linked at the end
// only). Nesting comes from the order a thread recorded things: a range opens at its push
// (ThreadTrack::opens) and ends with its event; a call or range recorded inside a CUDA call
// (kEventInsideCall) waits for that call's event, then all enter in timeline order.
// One thread at a time (the drain's).
class FoldBuilder {
 public:
  explicit FoldBuilder(const FoldOptions& options = {});
  ~FoldBuilder();
  FoldBuilder(const FoldBuilder&) = delete;
  FoldBuilder& operator=(const FoldBuilder&) = delete;
  // Folds what `data` gained since the last call (before its events are released).
  void pass(const TraceData& data);
  // The last pass, then everything still open closes: the stacks of the whole run.
  FoldedStacks finish(const TraceData& data);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

enum class FoldWeight { HostTime, Calls, GpuTime };
// Writes one weighting; lines of weight 0 are left out (see above).
void writeFolded(const FoldedStacks& folded, FoldWeight weight, Sink& out);

// A frame name made safe for the viewers: ';' becomes ':', control bytes become spaces, bytes
// that are not valid UTF-8 become U+FFFD, an empty name becomes "[No name]" (as Perfetto shows
// it), and a name ending in a space and a number ("epoch 1", "lr 0.5") gets a '#' before the
// number ("epoch #1"): flamegraph.pl reads a line whose stack ends in " <number>" as a
// differential line with two weights.
std::string foldedFrame(std::string_view name);

}  // namespace cutrace
