#pragma once
// The one input layer of the `cutrace` tools for traces: a Chrome JSON trace or a stream
// (<stem>.pftrace), told apart by content, never by file name: a .pftrace starts with a
// field-1 length-delimited TracePacket (byte 0x0a), JSON with '{' or '[' after whitespace.
//
// A .pftrace is read packet by packet (exporters/perfetto_reader.h) and handed on as the
// events of the Chrome trace the same process writes (TraceEvent: what `report`, `diff` need
// of them), one at a time: memory is one packet, the sequences' interned state, and the small
// per-launch and per-op index that names the op of each device kernel (the Chrome writer's
// linkTorchOps rule), not the file. A .pftrace from a pipe is read whole (capped like JSON).

#include <cstdint>
#include <string>
#include <string_view>

#include "collector/config.h"
#include "exporters/perfetto_reader.h"
#include "tools/input_file.h"

namespace cutrace {
struct TraceData;
}

namespace cutrace::tools {

enum class TraceFormat { ChromeJson, Perfetto };

// By the first bytes of an input (leading whitespace skipped). False when they are neither.
bool traceFormatOf(std::string_view head, TraceFormat& out);

// An input opened for reading as a trace: its format, and, where it can be read only once (a
// pipe, "-"), its bytes (read whole, at most wholeInputCap()); a regular file is left on disk.
struct TraceInput {
  std::string path;
  std::string name;  // inputName(path)
  TraceFormat format = TraceFormat::ChromeJson;
  bool whole = false;  // `bytes` hold the input
  InputBytes bytes;
};
// False with one message naming the input: missing, unreadable, empty, or neither format.
bool openTraceInput(const std::string& path, TraceInput& out, std::string& error);

// One event of the Chrome trace (exporters/chrome_trace.cpp) as the stream holds it. Times are
// CLOCK_MONOTONIC nanoseconds (the Chrome trace's are the same minus its origin).
struct TraceEvent {
  char ph = 'X';  // 'X' slice, 'i' NVTX mark, 'b' NVTX start/end range (async), 'X' device work
  std::string_view cat;
  std::string_view name;    // NVTX op ranges: the op name, as the Chrome trace shows them
  std::string_view kernel;  // launches: the demangled kernel name (args.kernel)
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t pid = 0;
  int64_t tid = 0;  // the Chrome trace's track: thread tid, a distinct id per NVTX domain
                    // track, deviceTrackId(device, stream) for device work
  // Slices of a thread or NVTX domain track: the stream's track (its uuid, never 0). They
  // arrive at their END: after the slices they nest, and ranges or calls that spanned a drain
  // pass after slices that came later in the file (the writer writes an event once it ended).
  uint64_t track = 0;
  // PyTorch (emit_nvtx): on op ranges op_seq/stashed_seq, op_id, sizes; on device work the
  // innermost op range around its launch (args.op, args.op_id, and that range's sizes).
  std::string_view op;
  uint64_t opId = 0;
  bool hasOpId = false, hasOpSeq = false, hasSizes = false;
  std::string sizes;  // compact JSON text of an integer list, or the text as written
  // CUDA calls: made into a stream being captured into a CUDA graph (args.captured).
  bool captured = false;
};

class TraceEventSink {
 public:
  virtual ~TraceEventSink() = default;
  virtual void event(const TraceEvent&) = 0;
  // The `cutrace` metadata (the Chrome trace's `metadata` object, JSON), at a normal end.
  virtual void metadata(std::string_view /*json*/) {}
};

// The events of a .pftrace input, in file order. (Device work names its op from what the writer
// put on it: a stream of a build before that names none.)
// Progress on stderr ("reading X: N% of M MB") past 100 MB, as the JSON readers print it.
// False with one message naming the input.
bool readPerfettoEvents(TraceInput& input, TraceEventSink& sink, std::string& error);

// The whole process of a .pftrace input, rebuilt (for writers of Chrome JSON: merge, export).
bool readPerfettoData(TraceInput& input, TraceData& out, std::string& error, const PfRebuildOptions& options = {},
                      PfRebuildInfo* info = nullptr);

// A trace input as Chrome JSON text in `out` (padded for simdjson, nesting checked): a JSON
// input as read, a .pftrace as the Chrome trace its process writes (rebuilt whole in memory:
// for tools that need a whole document, such as merge). A .pftrace whose Chrome trace would pass
// `maxJson` bytes is refused, as its process would not have written it either by default
// (memory stays bounded: the rebuild stops past maxJson / kMinJsonBytesPerEvent events, and the
// JSON is measured before it is made). False with one message.
bool loadTraceAsJson(const std::string& path, InputBytes& out, std::string& error, uint64_t maxJson = kDefaultJsonLimit);

}  // namespace cutrace::tools
