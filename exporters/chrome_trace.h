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
// The trace's top-level `metadata` object alone (also kept in the .pftrace).
std::string chromeTraceMetadata(const TraceData& data);

}  // namespace cutrace
