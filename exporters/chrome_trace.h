#pragma once
// Chrome trace (JSON object form) as DESIGN.md's output contract describes it: X events for
// CUDA calls and NVTX ranges, M events naming the process and every thread, and a top-level
// metadata object. Opens in Perfetto UI and chrome://tracing. NVTX ranges and marks of a named
// domain are drawn on a track of their own per thread (exporters/trace_view.h).

#include <string>

#include "collector/trace_data.h"
#include "exporters/folded.h"
#include "exporters/json_writer.h"

namespace cutrace {

// `folded`: the folded stacks written with this trace, whose depth cap goes into
// metadata.folded; none, no metadata.folded.
void writeChromeTrace(const TraceData& data, Sink& out, const FoldedStacks* folded = nullptr);
// The bytes a part of the trace's events takes, counted, not kept: the traced process samples
// its passes with it to tell at exit whether the whole trace would fit CUTRACE_JSON_LIMIT. Up to
// `maxEvents` host events and as many device events with their flows; names, metadata, counters
// and PyTorch's flows, which grow little with a run, are left out.
struct ChromeTraceSample {
  uint64_t hostBytes = 0, hostEvents = 0;
  uint64_t deviceBytes = 0, deviceEvents = 0;
};
ChromeTraceSample chromeTraceSample(const TraceData& data, std::size_t maxEvents);
// The trace's top-level `metadata` object alone (also kept in the .pftrace).
std::string chromeTraceMetadata(const TraceData& data);

}  // namespace cutrace
