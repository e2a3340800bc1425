#pragma once
// From PyTorch's op ranges (collector/torch_text.h), the links PyTorch users used to draw by
// hand:
// - forward op -> the backward function that carries its sequence number, from the op of those
//   recording it that started last (and the same from an op run inside a backward function with
//   create_graph=True to its double-backward function);
// - device work -> the innermost op range around the call that launched it.
// Where PyTorch's numbering does not single out one range on each side, no link is made.

#include <cstdint>
#include <vector>

#include "collector/torch_text.h"
#include "collector/trace_data.h"
#include "exporters/trace_view.h"

namespace cutrace {

// The op an NVTX range is, where it is one of PyTorch's: taken apart as the drain decoded it
// (Event::torch), or parsed from its text (a trace read back from a file).
bool torchOpOf(const TraceData& data, const Event& e, TorchOp& op);

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
