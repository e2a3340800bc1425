#pragma once
// FlameGraph folded stacks: "frame;frame;...;leaf weight", root first, one line per distinct
// stack, lines sorted bytewise, weight an integer. Frames are, per thread: the enclosing NVTX
// push/pop ranges (switchable), the call stack of the outermost CUDA call (native and Python
// frames, root first), the CUDA API calls (a runtime call above the driver call it made), and
// the kernel name as a frame right under the call that launched it.
//
// Three weights of the same stacks:
// - host time: time spent in that exact stack and not in a deeper one (self time), in
//   microseconds rounded to nearest; lines that round to 0 are kept so the set of stacks never
//   depends on timing;
// - calls: how many API calls and NVTX ranges ended exactly there;
// - GPU time: microseconds of device work (CUPTI) that the launch or copy at that stack caused.

#include <cstdint>
#include <map>
#include <string>

#include "collector/trace_data.h"
#include "exporters/json_writer.h"

namespace cutrace {

struct FoldOptions {
  bool nvtxFrames = true;
};

struct FoldWeights {
  uint64_t hostNs = 0;
  uint64_t calls = 0;
  uint64_t gpuNs = 0;
};

std::map<std::string, FoldWeights> foldStacks(const TraceData& data, const FoldOptions& options = {});

enum class FoldWeight { HostTime, Calls, GpuTime };
// Writes one weighting; lines of weight 0 are left out of the calls and GPU files (a stack
// without device work has no GPU line).
void writeFolded(const std::map<std::string, FoldWeights>& folded, FoldWeight weight, Sink& out);

// A frame name made safe for the format: ';' becomes ':', control bytes become spaces, bytes
// that are not valid UTF-8 become U+FFFD, an empty name becomes "[empty]".
std::string foldedFrame(std::string_view name);

}  // namespace cutrace
