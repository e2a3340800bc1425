#pragma once
// FlameGraph folded stacks: "frame;frame;...;leaf weight", root first, one line per distinct
// stack, lines sorted bytewise, weight an integer. Frames are, per thread, the enclosing NVTX
// push/pop ranges, then the CUDA API calls (a runtime call above the driver call it made), with
// the kernel name as a frame right under the call that launched it. A line's weight is the
// time spent in that exact stack and not in a deeper one (self time), in microseconds rounded
// to nearest; lines that round to 0 are kept so the set of stacks never depends on timing.

#include <cstdint>
#include <map>
#include <string>

#include "collector/trace_data.h"
#include "exporters/json_writer.h"

namespace cutrace {

// Self time in nanoseconds per folded stack.
std::map<std::string, uint64_t> foldStacks(const TraceData& data);

void writeFolded(const TraceData& data, Sink& out);

// A frame name made safe for the format: ';' becomes ':', control bytes become spaces, bytes
// that are not valid UTF-8 become U+FFFD, an empty name becomes "[empty]".
std::string foldedFrame(std::string_view name);

}  // namespace cutrace
