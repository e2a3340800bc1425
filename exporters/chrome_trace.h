#pragma once
// Chrome trace (JSON object form) as DESIGN.md's output contract describes it: X events for
// CUDA calls and NVTX ranges, M events naming the process and every thread, and a top-level
// metadata object. Opens in Perfetto UI and chrome://tracing.

#include <string>

#include "collector/trace_data.h"
#include "exporters/json_writer.h"

namespace cutrace {

void writeChromeTrace(const TraceData& data, Sink& out);
// The trace's top-level `metadata` object alone (also kept in the .pftrace).
std::string chromeTraceMetadata(const TraceData& data);

}  // namespace cutrace
