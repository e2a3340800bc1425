#pragma once
// The text of PyTorch's op ranges (emit_nvtx): "aten::addmm, seq = 1459, op_id = 4986,
// sizes = [[256], [2048, 256]], input_op_ids = [...]", "AddBackward0, seq = 3612, op_id = 30908",
// "AddBackward0, stashed seq = 1459" (older releases), "autograd::engine::evaluate_function:
// AddBackward0, op_id = 1995". Names that are not PyTorch's parse as nothing and stay as they
// are. The drain takes such a text apart as it decodes it (collector/store.cpp), the stream
// writes the parts and its reader renders the text again (exporters/perfetto_*.cpp).

#include <cstdint>
#include <string>
#include <string_view>

namespace cutrace {

struct TorchOp {
  std::string_view name;  // the op or autograd function, e.g. "aten::addmm", "AddBackward0"
  bool hasSeq = false;
  bool stashed = false;  // "stashed seq = N": the older spelling on backward functions
  uint64_t seq = 0;
  bool hasOpId = false;
  uint64_t opId = 0;
  std::string_view sizes;       // the list as written, e.g. "[[256], [2048, 256]]"
  std::string_view inputOpIds;  // likewise
  bool backward = false;        // the range is an autograd backward function
};

// False for a name that is not a PyTorch op range (no "seq", "stashed seq", "op_id" or "sizes"
// field after the op name).
bool parseTorchRange(std::string_view text, TorchOp& out);
// The op name parseTorchRange would give, found reading no further than the first field that
// makes `text` an op range (most often its seq): false where parseTorchRange is false.
bool torchRangeName(std::string_view text, std::string_view& name);

// The text PyTorch writes for `op`: its name, then seq (or stashed seq), op_id, sizes and
// input_op_ids where it has them, in that order. Appended to `out`.
void renderTorchRange(const TorchOp& op, std::string& out);
// parseTorchRange, where the text is exactly what renderTorchRange makes of its parse (PyTorch's
// own spelling), else false: the parse then stands for the text, which the stream writes as its
// parts (an interned op name, numbers, an interned sizes list) and its reader renders again.
bool parseExactTorchRange(std::string_view text, TorchOp& out);

// An op range taken apart as the drain decoded it (Event::torch, collector/trace_data.h): its
// text is exactly renderTorchRange of these fields, and Event::name is the op name. Such ranges
// come one text per call; their parts repeat (the op name, the sizes it is called with), so
// they are interned and the one-off numbers are not text.
enum TorchFields : uint8_t { kTorchParts = 1, kTorchSeq = 2, kTorchStashed = 4, kTorchOpId = 8 };
struct TorchPayload {
  uint64_t seq;
  uint64_t opId;
  uint32_t sizes;       // id in TraceData::strings, 0: none
  uint32_t inputOpIds;  // likewise
  uint8_t fields;       // TorchFields; 0 in every NVTX range not taken apart
};
// The payload of `op`, the ids of its sizes and input_op_ids texts given.
TorchPayload torchPayload(const TorchOp& op, uint32_t sizes, uint32_t inputOpIds);

// Whether an op name is an autograd function run by the backward pass: "...Backward<N>",
// "autograd::engine::evaluate_function: ...", AccumulateGrad, GraphRoot.
bool isBackwardFunction(std::string_view name);

// Whether `list` is a bracketed list of integers (nested), so it can be copied into JSON as is.
bool isIntegerList(std::string_view list);

}  // namespace cutrace
