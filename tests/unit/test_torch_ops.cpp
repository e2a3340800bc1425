#include <catch2/catch.hpp>
#include <simdjson.h>

#include <set>
#include <string>
#include <vector>

#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
#include "exporters/torch_ops.h"
#include "trace_builder.h"

using namespace cutrace;
using test::TraceBuilder;

TEST_CASE("PyTorch range names as measured on 2.11 parse into fields", "[torch]") {
  TorchOp op;
  REQUIRE(parseTorchRange("aten::addmm, seq = 1459, op_id = 4986, sizes = [[256], [2048, 256], [256, 256], [], []], "
                          "input_op_ids = [4980, 4981, 0]",
                          op));
  REQUIRE(op.name == "aten::addmm");
  REQUIRE((op.hasSeq && op.seq == 1459 && !op.stashed && op.hasOpId && op.opId == 4986 && !op.backward));
  REQUIRE(op.sizes == "[[256], [2048, 256], [256, 256], [], []]");
  REQUIRE(op.inputOpIds == "[4980, 4981, 0]");

  REQUIRE(parseTorchRange("AddBackward0, seq = 3612, op_id = 30908, sizes = [[16, 128, 256]], input_op_ids = []", op));
  REQUIRE((op.name == "AddBackward0" && op.seq == 3612 && op.opId == 30908 && op.backward));
  REQUIRE(op.sizes == "[[16, 128, 256]]");

  REQUIRE(parseTorchRange("autograd::engine::evaluate_function: AddBackward0, op_id = 1995", op));
  REQUIRE((op.name == "autograd::engine::evaluate_function: AddBackward0" && !op.hasSeq && op.opId == 1995 && op.backward));

  REQUIRE(parseTorchRange("MulBackward0, stashed seq = 77", op));  // older releases
  REQUIRE((op.name == "MulBackward0" && op.stashed && op.seq == 77 && op.backward));
  REQUIRE(parseTorchRange("aten::mul, seq = 12", op));
  REQUIRE((op.seq == 12 && !op.backward && op.sizes.empty()));
  REQUIRE(parseTorchRange("aten::empty, sizes = [[2, 3]]", op));
  REQUIRE((!op.hasSeq && op.sizes == "[[2, 3]]"));
}

TEST_CASE("names that are not PyTorch's stay unparsed", "[torch]") {
  TorchOp op;
  for (const char* name : {"step", "forward", "a, b = c", "load batch, 3 items", "aten::mul, seq = x", ", seq = 3", "seq = 4",
                           "copy, seqs = 4", ""}) {
    INFO(name);
    REQUIRE_FALSE(parseTorchRange(name, op));
  }
}

// The folded stacks name an op range by torchRangeName, which stops reading at the first field
// that makes the text an op range: the same answer and name as the whole parse, on every text.
TEST_CASE("torchRangeName agrees with parseTorchRange", "[torch]") {
  for (const char* text :
       {"aten::addmm, seq = 1459, op_id = 4986, sizes = [[256], [2048, 256]], input_op_ids = [4980, 4981, 0]",
        "aten::mul, seq = x, op_id = 7", "aten::mul, seq = x, op_id = y", "aten::mul, seq = x, sizes = [[2]]",
        "aten::mul, seq = x", "aten::mul, op_id = , sizes = [[1]]", "  aten::pad  , seq = 3", "MulBackward0, stashed seq = 77",
        "autograd::engine::evaluate_function: AddBackward0, op_id = 1995", "aten::empty, sizes = [[2, 3]]",
        "x, input_op_ids = [1]", "x, scope = 2", "x, scope = 2, seq = 5", ", seq = 3", "step", "", "a, b = c",
        "load batch, 3 items", "copy, seqs = 4"}) {
    INFO(text);
    TorchOp op;
    std::string_view name = "unset";
    const bool parsed = parseTorchRange(text, op);
    REQUIRE(torchRangeName(text, name) == parsed);
    if (parsed) REQUIRE(name == op.name);
    else REQUIRE(name == "unset");
  }
}

// The stream writes an op range as its parts where parseExactTorchRange takes its text, and the
// reader renders them: that must give the text back, and must be tried wherever it would. Checked
// on PyTorch's spellings and on every text one edit away from them (a character dropped, or one of
// a few inserted, at each place), against the definition: parses, and renders back the same.
TEST_CASE("parseExactTorchRange takes exactly the texts that render back", "[torch]") {
  std::vector<std::string> texts;
  for (const char* base :
       {"aten::addmm, seq = 1459, op_id = 4986, sizes = [[256], [2048, 256], [256, 256], [], []], input_op_ids = [4980, 4981, 0]",
        "AddBackward0, seq = 3612, op_id = 30908, sizes = [[16, 128, 256]], input_op_ids = []",
        "autograd::engine::evaluate_function: AddBackward0, op_id = 1995", "MulBackward0, stashed seq = 77",
        "aten::mul, seq = 0", "aten::empty, sizes = [[2, 3]]", "x, input_op_ids = [1], seq = 2", "x, scope = 2, seq = 5",
        "aten::add, op_id = 10, seq = 9", "aten::add, seq = 1, seq = 2", "a, sizes = [[1]]junk", "a, sizes = [[1]",
        "aten::mul, seq = 9999999999999999999, op_id = 12345678901234567890", "aten::mul, seq = 12,3, op_id = 7,"}) {
    const std::string t = base;
    texts.push_back(t);
    for (std::size_t i = 0; i <= t.size(); ++i) {
      if (i < t.size()) texts.push_back(t.substr(0, i) + t.substr(i + 1));
      for (const char* insert : {" ", "0", "1", ", ", "[", "]", ", seq = 3", ", op_id = 4", ", sizes = [[1]]"})
        texts.push_back(t.substr(0, i) + insert + t.substr(i));
    }
  }
  std::size_t exact = 0;
  for (const std::string& text : texts) {
    INFO(text);
    TorchOp op, parsed;
    std::string rendered;
    const bool renders = parseTorchRange(text, parsed) && (renderTorchRange(parsed, rendered), rendered == text);
    REQUIRE(parseExactTorchRange(text, op) == renders);
    if (!renders) continue;
    ++exact;
    REQUIRE((op.name == parsed.name && op.hasSeq == parsed.hasSeq && op.stashed == parsed.stashed && op.seq == parsed.seq &&
             op.hasOpId == parsed.hasOpId && op.opId == parsed.opId && op.sizes == parsed.sizes &&
             op.inputOpIds == parsed.inputOpIds && op.backward == parsed.backward));
  }
  // Both ways are exercised: the spellings themselves and many edits take it, more edits do not.
  REQUIRE(exact > 500);
  REQUIRE(texts.size() - exact > 1000);
}

// A bracketed value runs to its matching bracket, found 16 bytes at a time: lists of every
// length and nesting, the match at every place of a block, against a byte-by-byte reference.
TEST_CASE("a sizes list runs to its matching bracket wherever it falls", "[torch]") {
  const auto reference = [](std::string_view s) {
    int depth = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      depth += s[i] == '[' ? 1 : s[i] == ']' ? -1 : 0;
      if (depth == 0) return s.substr(0, i + 1);
    }
    return s;
  };
  std::size_t checked = 0;
  for (int dims = 0; dims < 12; ++dims) {
    for (const char* tail : {"", "]", "]]", ", input_op_ids = [1, 2]", "]x, seq = 4", "[[", " ]"}) {
      std::string list = "[";
      for (int d = 0; d < dims; ++d) list += (d ? ", [" : "[") + std::to_string(d * 37) + (d % 3 ? "" : ", 5") + "]";
      for (int pad = 0; pad < 17; ++pad) {
        const std::string name = "aten::" + std::string(static_cast<std::size_t>(pad), 'x');
        const std::string text = name + ", seq = 1, sizes = " + list + (dims % 4 == 3 ? "" : "]") + tail;
        INFO(text);
        TorchOp op;
        REQUIRE(parseTorchRange(text, op));
        const std::string_view from = std::string_view(text).substr(name.size() + 19);
        REQUIRE(op.sizes == reference(from));
        ++checked;
      }
    }
  }
  REQUIRE(checked == 12 * 7 * 17);
}

TEST_CASE("backward functions and integer lists", "[torch]") {
  REQUIRE(isBackwardFunction("AddmmBackward0"));
  REQUIRE(isBackwardFunction("NativeLayerNormBackward"));
  REQUIRE(isBackwardFunction("torch::autograd::AccumulateGrad"));
  REQUIRE(isBackwardFunction("autograd::engine::evaluate_function: MulBackward0"));
  REQUIRE_FALSE(isBackwardFunction("aten::add"));
  REQUIRE_FALSE(isBackwardFunction("Backwardish"));
  REQUIRE(isIntegerList("[[256], [2048, 256], [], []]"));
  REQUIRE(isIntegerList("[]"));
  REQUIRE(isIntegerList("[-1, 3]"));
  REQUIRE_FALSE(isIntegerList("[[1, 2]"));
  REQUIRE_FALSE(isIntegerList("[1,]"));
  REQUIRE_FALSE(isIntegerList("[a]"));
  REQUIRE_FALSE(isIntegerList("5"));
}

namespace {

// Thread 1 runs forward ops; thread 2 is the autograd engine's thread.
TraceData& torchTrace(TraceBuilder& b) {
  // linear -> addmm share seq 10 (the composite op and the op that made the node); the
  // launch inside addmm made the kernel with correlation 5.
  b.push(1, 0, 0, 0, "aten::linear, seq = 10, op_id = 1");
  b.push(1, 1, 10, 1, "aten::addmm, seq = 10, op_id = 2, sizes = [[256], [2, 256], [256, 256]], input_op_ids = [0, 0, 0]");
  b.launch(1, test::kCudaLaunchKernel, 2, 20, 40, "gemm");
  b.pop(1, 50, 1);
  b.pop(1, 60, 0);
  b.push(1, 3, 70, 0, "aten::mul, seq = 11, op_id = 3");  // its backward uses the old spelling
  b.pop(1, 80, 0);
  b.push(1, 4, 90, 0, "aten::relu, seq = 12, op_id = 4");  // seq 12 appears on two threads: ambiguous
  b.pop(1, 95, 0);
  b.push(2, 0, 100, 0, "autograd::engine::evaluate_function: AddmmBackward0, op_id = 9");
  b.push(2, 1, 110, 1, "AddmmBackward0, seq = 10, op_id = 10, sizes = [[2, 256]]");
  // create_graph=True: an op run inside a backward function numbers a double-backward node.
  b.push(2, 2, 120, 2, "aten::mm, seq = 40, op_id = 11");
  b.pop(2, 130, 2);
  b.pop(2, 140, 1);
  b.pop(2, 150, 0);
  b.push(2, 3, 160, 0, "MulBackward0, stashed seq = 11");
  b.pop(2, 170, 0);
  b.push(2, 4, 175, 0, "aten::relu, seq = 12, op_id = 12");
  b.pop(2, 178, 0);
  b.push(2, 5, 180, 0, "ReluBackward0, seq = 12");
  b.pop(2, 185, 0);
  b.push(2, 6, 190, 0, "MmBackward0, seq = 40, op_id = 13");
  b.pop(2, 200, 0);
  b.threadName(2, 2, "pt_autograd_0");
  TraceData& d = b.finish(300);
  d.apiActivity = {{20, 40, 1, 5}};
  DeviceEvent k;
  k.kind = DeviceKind::Kernel;
  k.correlation = 5;
  k.start = 1000;
  k.end = 3000;
  d.device.push_back(k);
  return d;
}

std::string nameOf(const TraceData& d, EventRef r) {
  TorchOp op;
  const std::string_view text = d.strings.get(d.threads[static_cast<std::size_t>(r.thread)].events[r.event].name);
  return std::string(parseTorchRange(text, op) ? op.name : text);
}

}  // namespace

TEST_CASE("forward ops link to the backward function with their number, unambiguous ones only", "[torch]") {
  TraceBuilder b;
  const TraceData& d = torchTrace(b);
  const TorchLinks links = linkTorchOps(d, linkDeviceToHost(d));
  std::set<std::string> pairs;
  for (const auto& [from, to] : links.forwardToBackward) pairs.insert(nameOf(d, from) + " -> " + nameOf(d, to));
  REQUIRE(pairs == std::set<std::string>{"aten::addmm -> AddmmBackward0", "aten::mul -> MulBackward0",
                                         "aten::mm -> MmBackward0"});
  REQUIRE(links.opOfDevice.size() == 1);
  REQUIRE(nameOf(d, links.opOfDevice[0]) == "aten::addmm");
}

TEST_CASE("chrome trace: op names, op args, autograd and op flows; folded by op name", "[torch][chrome]") {
  TraceBuilder b;
  const TraceData& d = torchTrace(b);
  Sink out;
  writeChromeTrace(d, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(out.text()).get(doc) == simdjson::SUCCESS);
  int autograd = 0, opFlows = 0;
  bool sawAddmm = false, sawKernelOp = false;
  for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"], cat = e["cat"].is_string() ? std::string_view(e["cat"]) : std::string_view();
    if (ph == "s" && cat == "autograd") ++autograd;
    if (ph == "s" && cat == "op") ++opFlows;
    if (ph == "X" && cat == "nvtx" && std::string_view(e["name"]) == "aten::addmm") {
      sawAddmm = true;
      REQUIRE(uint64_t(e["args"]["op_seq"]) == 10);
      REQUIRE(uint64_t(e["args"]["op_id"]) == 2);
      REQUIRE(simdjson::to_string(e["args"]["sizes"]) == "[[256],[2,256],[256,256]]");
    }
    if (ph == "X" && cat == "kernel") {
      sawKernelOp = std::string_view(e["args"]["op"]) == "aten::addmm" && uint64_t(e["args"]["op_id"]) == 2;
    }
  }
  REQUIRE(autograd == 3);
  REQUIRE(opFlows == 1);
  REQUIRE(sawAddmm);
  REQUIRE(sawKernelOp);
  const auto folded = foldStacks(d);
  REQUIRE(folded.count("aten::linear;aten::addmm;cudaLaunchKernel;gemm") == 1);
  REQUIRE(folded.find("aten::linear;aten::addmm;cudaLaunchKernel;gemm")->gpuNs == 2000);
}

// As measured (PyTorch 2.11, emit_nvtx(record_shapes=True), an nn.TransformerEncoder layer's
// attention in-projection; times in us from the first range): the numbers only move when a node
// is made, so views of the input (which needs no grad) and composite ops record the number the
// next node takes, beside and around the op that takes it. aten::t makes TBackward0 after
// transpose and linear recorded 955 (transpose beside linear, not around it); aten::mm makes
// MmBackward0 after matmul, reshape, clone and _unsafe_view recorded 956 (reshape beside mm).
TEST_CASE("forward ops: of the ranges with a number on one thread, the last one started made the node", "[torch]") {
  TraceBuilder b;
  uint64_t seq = 0;
  const auto push = [&](uint32_t tid, uint64_t t, uint16_t depth, const std::string& text) {
    b.push(tid, seq++, t, depth, text);
  };
  push(1, 14, 0,
       "aten::transpose, seq = 955, op_id = 2, sizes = [[16, 128, 256], [], []], "
       "input_op_ids = [(0,-1), (0,-1), (0,-1)]");
  push(1, 34, 1, "aten::as_strided, op_id = 3, sizes = [[16, 128, 256], [], [], []]");
  b.pop(1, 41, 1);
  b.pop(1, 46, 0);
  push(1, 82, 0,
       "aten::linear, seq = 955, op_id = 4, sizes = [[128, 16, 256], [768, 256], [768]], "
       "input_op_ids = [(2,0), (0,-1), (0,-1)]");
  push(1, 87, 1, "aten::t, seq = 955, op_id = 5, sizes = [[768, 256]], input_op_ids = [(0,-1)]");
  push(1, 100, 2, "aten::transpose, op_id = 6, sizes = [[768, 256], [], []]");
  b.pop(1, 111, 2);
  b.pop(1, 114, 1);
  push(1, 120, 1,
       "aten::matmul, seq = 956, op_id = 8, sizes = [[128, 16, 256], [256, 768]], input_op_ids = [(2,0), (5,0)]");
  push(1, 126, 2, "aten::reshape, seq = 956, op_id = 9, sizes = [[128, 16, 256], []], input_op_ids = [(2,0), (0,-1)]");
  push(1, 134, 3, "aten::clone, seq = 956, op_id = 10, sizes = [[128, 16, 256], []], input_op_ids = [(2,0), (0,-1)]");
  push(1, 182, 4, "aten::copy_, op_id = 13, sizes = [[128, 16, 256], [128, 16, 256], []]");
  b.pop(1, 280, 4);
  b.pop(1, 281, 3);
  push(1, 287, 3,
       "aten::_unsafe_view, seq = 956, op_id = 14, sizes = [[128, 16, 256], []], input_op_ids = [(10,0), (0,-1)]");
  b.pop(1, 291, 3);
  b.pop(1, 292, 2);
  push(1, 297, 2, "aten::mm, seq = 956, op_id = 15, sizes = [[2048, 256], [256, 768]], input_op_ids = [(9,0), (5,0)]");
  b.pop(1, 426, 2);
  push(1, 435, 2,
       "aten::_unsafe_view, seq = 957, op_id = 16, sizes = [[2048, 768], []], input_op_ids = [(15,0), (0,-1)]");
  b.pop(1, 441, 2);
  b.pop(1, 443, 1);
  b.pop(1, 513, 0);
  // The autograd engine's thread, in the order it ran them.
  const auto function = [&](uint64_t t, const std::string& name, const std::string& fields, const std::string& inner) {
    push(2, t, 0, "autograd::engine::evaluate_function: " + name + ", op_id = " + std::to_string(seq));
    push(2, t + 3, 1, name + ", " + fields);
    push(2, t + 5, 2, inner);
    b.pop(2, t + 10, 2);
    b.pop(2, t + 12, 1);
    b.pop(2, t + 14, 0);
  };
  function(1067, "UnsafeViewBackward0", "seq = 957, op_id = 2004, sizes = [[128, 16, 768]], input_op_ids = [(1989,0)]",
           "aten::reshape, op_id = 2005, sizes = [[128, 16, 768], []]");
  function(1087, "MmBackward0", "seq = 956, op_id = 2008, sizes = [[2048, 768]], input_op_ids = [(2005,0)]",
           "aten::mm, op_id = 2012, sizes = [[768, 2048], [2048, 256]]");
  function(1241, "TBackward0", "seq = 955, op_id = 2017, sizes = [[256, 768]], input_op_ids = [(2013,0)]",
           "aten::t, op_id = 2018, sizes = [[256, 768]]");
  b.threadName(2, 2, "pt_autograd_0");
  const TraceData& d = b.finish(2000);

  const TorchLinks links = linkTorchOps(d, linkDeviceToHost(d));
  const auto named = [&](EventRef r) {
    TorchOp op;
    REQUIRE(torchOpOf(d, d.threads[static_cast<std::size_t>(r.thread)].events[r.event], op));
    return std::string(op.name) + " " + std::to_string(op.opId);
  };
  std::multiset<std::string> pairs;
  for (const auto& [from, to] : links.forwardToBackward) pairs.insert(named(from) + " -> " + named(to));
  REQUIRE(pairs == std::multiset<std::string>{"aten::t 5 -> TBackward0 2017", "aten::mm 15 -> MmBackward0 2008",
                                              "aten::_unsafe_view 16 -> UnsafeViewBackward0 2004"});
}

// A backward function run twice (backward(retain_graph=True), then backward again): its number
// twice, in two nests of the autograd thread, each the function's range around the ops it ran
// ("stashed seq" ones among them). Both runs link to the forward op, as do runs on two autograd
// threads (one a device).
TEST_CASE("forward ops link to every run of their backward function", "[torch]") {
  TraceBuilder b;
  uint64_t seq = 0;
  b.push(1, seq++, 10, 0, "aten::mul, seq = 7, op_id = 1, sizes = [[4], [4]]");
  b.pop(1, 20, 0);
  b.push(1, seq++, 30, 0, "aten::add, seq = 8, op_id = 2, sizes = [[4], [4], []]");
  b.pop(1, 40, 0);
  for (uint64_t t : {100, 200}) {
    b.push(2, seq++, t, 0, "MulBackward0, seq = 7, op_id = " + std::to_string(100 + t));
    b.push(2, seq++, t + 2, 1, "aten::mul, stashed seq = 7, op_id = " + std::to_string(101 + t));
    b.pop(2, t + 8, 1);
    b.pop(2, t + 10, 0);
  }
  b.push(2, seq++, 300, 0, "AddBackward0, seq = 8, op_id = 500");
  b.pop(2, 310, 0);
  b.push(3, seq++, 305, 0, "AddBackward0, seq = 8, op_id = 501");
  b.pop(3, 320, 0);
  b.threadName(2, 2, "pt_autograd_0");
  const TraceData& d = b.finish(400);
  const TorchLinks links = linkTorchOps(d, linkDeviceToHost(d));
  std::multiset<std::string> pairs;
  for (const auto& [from, to] : links.forwardToBackward) {
    TorchOp f, t;
    REQUIRE(torchOpOf(d, d.threads[static_cast<std::size_t>(from.thread)].events[from.event], f));
    REQUIRE(torchOpOf(d, d.threads[static_cast<std::size_t>(to.thread)].events[to.event], t));
    pairs.insert(std::string(f.name) + " " + std::to_string(f.opId) + " -> " + std::string(t.name) + " " +
                 std::to_string(t.opId));
  }
  REQUIRE(pairs == std::multiset<std::string>{"aten::mul 1 -> MulBackward0 200", "aten::mul 1 -> MulBackward0 300",
                                              "aten::add 2 -> AddBackward0 500", "aten::add 2 -> AddBackward0 501"});
}
