#pragma once
// PyTorch's emit_nvtx range names, parsed: "aten::addmm, seq = 1459, op_id = 4986,
// sizes = [[256], [2048, 256]], input_op_ids = [...]", "AddBackward0, seq = 3612, op_id = 30908",
// "AddBackward0, stashed seq = 1459" (older releases), "autograd::engine::evaluate_function:
// AddBackward0, op_id = 1995". Names that are not PyTorch's parse as nothing and stay as they
// are.
//
// From the parsed ranges come the links PyTorch users used to draw by hand:
// - forward op -> the backward function that carries its sequence number (and the same from an
//   op run inside a backward function with create_graph=True to its double-backward function);
// - device work -> the innermost op range around the call that launched it.
// Where PyTorch's numbering does not single out one range on each side, no link is made.

#include <cstdint>
#include <string_view>
#include <vector>

#include "collector/trace_data.h"
#include "exporters/trace_view.h"

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

// Whether an op name is an autograd function run by the backward pass: "...Backward<N>",
// "autograd::engine::evaluate_function: ...", AccumulateGrad, GraphRoot.
bool isBackwardFunction(std::string_view name);

// Whether `list` is a bracketed list of integers (nested), so it can be copied into JSON as is.
bool isIntegerList(std::string_view list);

struct EventRef {
  int thread = -1;
  uint32_t event = 0;
};

struct TorchLinks {
  std::vector<std::pair<EventRef, EventRef>> forwardToBackward;
  std::vector<EventRef> opOfDevice;  // per TraceData::device; thread < 0 when none
};

// `launches` is linkDeviceToHost(data).
TorchLinks linkTorchOps(const TraceData& data, const std::vector<HostLink>& launches);

}  // namespace cutrace
