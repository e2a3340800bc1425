// The stream's encoding (proto::Writer/Reader) and its reader (exporters/perfetto_reader): a
// trace written pass by pass reads back into TraceData from which the Chrome and folded
// writers produce exactly what they produce from the original; every prefix of the file
// (a process killed while appending) reads without error and never yields more; a rebuild with
// a window gives what the whole rebuild cut to that window gives.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
#include "exporters/perfetto_fields.h"
#include "exporters/perfetto_reader.h"
#include "exporters/perfetto_writer.h"
#include "exporters/proto_writer.h"
#include "exporters/torch_ops.h"
#include "trace_builder.h"

using namespace cutrace;
using cutrace::test::TraceBuilder;

namespace {

struct ReadField {
  uint32_t number, wire;
  uint64_t value;
  std::string bytes;
  bool operator==(const ReadField& o) const {
    return number == o.number && wire == o.wire && value == o.value && bytes == o.bytes;
  }
};

std::vector<ReadField> readAll(std::string_view bytes, bool& failed) {
  std::vector<ReadField> out;
  proto::Reader r(bytes);
  proto::Reader::Field f;
  while (r.next(f)) out.push_back({f.number, f.wire, f.value, std::string(f.bytes)});
  failed = r.failed();
  return out;
}

std::string chrome(const TraceData& d) {
  Sink out;
  writeChromeTrace(d, out);
  return out.text();
}

// The names of the first thread's events, read back from the stream `bytes` written from `d`: an
// op range read back as its parts is named by its text, rendered (`parts`: how many).
std::vector<std::string> readBackNames(const std::string& bytes, const TraceData& d, std::size_t* parts = nullptr) {
  TraceData back;
  std::string error;
  const PfMetadataSource known{nullptr, nullptr, &d};
  REQUIRE(rebuildPerfettoBytes(bytes, known, back, error));
  std::vector<std::string> names;
  for (const Event& e : back.threads.at(0).events) {
    TorchOp op;
    if (e.kind == EventKind::NvtxRange && (e.torch.fields & kTorchParts) && torchOpOf(back, e, op)) {
      renderTorchRange(op, names.emplace_back());
      if (parts != nullptr) ++*parts;
    } else {
      names.emplace_back(back.strings.get(e.name));
    }
  }
  return names;
}

std::string folded(const TraceData& d, bool nvtx) {
  Sink out;
  const auto f = foldStacks(d, FoldOptions{nvtx});
  writeFolded(f, FoldWeight::HostTime, out);
  writeFolded(f, FoldWeight::Calls, out);
  writeFolded(f, FoldWeight::GpuTime, out);
  return out.text();
}

Record nvtxRecord(RecordType type, uint64_t seq, uint64_t t) {
  Record r;
  memset(&r, 0, sizeof(r));
  r.type = type;
  r.seq = seq;
  r.t0 = r.t1 = t;
  return r;
}

// A process with two threads, written in two drain passes and an end:
// - thread 11 ("main"): NVTX step range (category 7, named) holding a launch with a stack,
//   its driver launch, a failing malloc and a memcpy; a PyTorch op range; a mark; a
//   start/end span; a range in a non-default domain; drops between the passes;
// - thread 12: a launch in the second pass only, with another stack, and an unclosed range;
// - thread 13: named, nothing recorded;
// - device work linked to both launches, and one copy CUPTI could not link.
struct SampleStream {
  TraceBuilder b;
  PerfettoWriter writer;
  std::string bytes;
  std::vector<std::size_t> passEnds;  // byte counts after each pass

  TraceData& build() {
    TraceData& d = b.store().data();
    TraceMeta& m = d.meta;
    m.hostname = "host-a";
    m.commandLine = {"prog", "--flag", "x y"};
    m.rank = 2;
    m.capture = "all";
    m.clockSource = "clock_monotonic";
    m.originMonotonicNs = 50;
    m.realtimeMinusMonotonicNs = -12345;
    m.version = "test-version";
    b.defineStack(1, {"inner(int)", "outer()", "main"});
    b.defineStack(3, {"worker_fn", "start_thread"});

    const uint32_t domain = b.name("my.domain");
    Record named = nvtxRecord(RecordType::CategoryName, 0, 0);
    named.nvtx.category = 7;
    const std::string categoryText = "phase";
    named.nvtx.length = static_cast<uint16_t>(categoryText.size());
    b.store().decode(11, 11, named, categoryText.data(), categoryText.size());

    Record push = nvtxRecord(RecordType::NvtxPush, 1, 100);
    push.nvtx.category = 7;
    const std::string step = "step";
    push.nvtx.length = static_cast<uint16_t>(step.size());
    b.store().decode(11, 11, push, step.data(), step.size());
    b.push(11, 2, 150, 1, "aten::add, seq = 12, op_id = 3, sizes = [[4], [4]], input_op_ids = [1, 2]");
    b.launch(11, test::kCudaLaunchKernel, 3, 200, 900, "_ZN2ns5scaleIfEEvPT_i", 1);
    b.launch(11, test::kCuLaunchKernel, 4, 300, 800, nullptr);
    b.pop(11, 950, 1);
    b.api(11, test::kCudaMalloc, 5, 1000, 1100, /*result=*/2);
    b.mem(11, test::kCudaMemcpy, 6, 1200, 1500, 1 << 20);
    b.pop(11, 2000, 0);
    b.mark(11, 7, 2300, "checkpoint \"A\"");
    b.start(11, 8, 2400, 0xabc, "async load");
    b.end(11, 2600, 0xabc);
    b.push(11, 9, 2700, 0, "in my domain", domain);
    b.pop(11, 2800, 0, domain);
    b.threadName(11, 11, "main");
    d.threads[0].dropped = 3;
    writer.encodePass(d, 3000, bytes);
    passEnds.push_back(bytes.size());

    b.push(12, 1, 3050, 0, "AddBackward0, seq = 12, op_id = 9");
    b.launch(12, test::kCudaLaunchKernel, 2, 3100, 3400, "_Z6kernelPf", 3);
    b.pop(12, 3450, 0);
    b.push(12, 3, 3500, 0, "never popped");
    b.api(11, test::kCudaDeviceSynchronize, 10, 3600, 3700);
    b.threadName(13, 13, "idle");
    d.threads[0].dropped = 5;
    writer.encodePass(d, 4000, bytes);
    passEnds.push_back(bytes.size());

    b.finish(5000);
    REQUIRE(d.threads.size() == 3);  // thread 13 only named itself: a track with no events
    d.threads[0].lostEnds = 1;
    d.threads[1].seqEnd = 4;
    d.meta.counters = {{"lookups_wrapped", 12}, {"dlsym_calls", 3}};
    d.cupti.state = "on";
    d.cupti.reason = "";
    d.cupti.droppedRecords = 1;
    d.stackInfo.unwinder = "dwarf";
    d.stackInfo.python = "none";
    d.stackInfo.depth = 64;
    d.stackInfo.verified = true;
    d.stackInfo.mismatches = 2;
    const uint32_t kernelA = d.strings.intern("_ZN2ns5scaleIfEEvPT_i");
    const uint32_t kernelB = d.strings.intern("_Z6kernelPf");
    // Sorted as the writer writes them (device, stream, start): flows follow this order.
    DeviceEvent k1;
    k1.start = 950, k1.end = 1900, k1.correlation = 41, k1.device = 0, k1.stream = 7, k1.name = kernelA;
    k1.grid[0] = 4, k1.grid[1] = k1.grid[2] = 1, k1.block[0] = 256, k1.block[1] = k1.block[2] = 1;
    k1.registers = 32, k1.staticShared = 0, k1.dynamicShared = 128;
    DeviceEvent c1;
    c1.start = 2000, c1.end = 2500, c1.correlation = 42, c1.device = 0, c1.stream = 7, c1.kind = DeviceKind::Memcpy;
    c1.copyKind = 1, c1.bytes = 1 << 20;
    DeviceEvent orphan;
    orphan.start = 2600, orphan.end = 2700, orphan.correlation = 99, orphan.device = 0, orphan.stream = 7;
    orphan.kind = DeviceKind::Memset, orphan.bytes = 64;
    DeviceEvent k2;
    k2.start = 3500, k2.end = 4500, k2.correlation = 43, k2.device = 1, k2.stream = 70000, k2.name = kernelB;
    d.device = {k1, c1, orphan, k2};
    d.apiActivity = {{210, 890, 11, 41}, {1210, 1490, 11, 42}, {3110, 3390, 12, 43}};
    writer.encodeEnd(d, 5000, chromeTraceMetadata(d), bytes);
    passEnds.push_back(bytes.size());
    return d;
  }
};

}  // namespace

TEST_CASE("proto: varints round-trip at every length boundary", "[proto]") {
  const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, (1ull << 21) - 1, 1ull << 21, 0xffffffffull,
                             1ull << 35, 1ull << 56, (1ull << 63) - 1, 1ull << 63, ~0ull};
  proto::Writer w;
  for (uint64_t v : values) {
    const std::size_t before = w.size();
    w.varint(1, v);
    CHECK(w.size() - before == 1 + proto::varintSize(v));
  }
  CHECK(proto::varintSize(127) == 1);
  CHECK(proto::varintSize(128) == 2);
  CHECK(proto::varintSize(~0ull) == 10);
  bool failed = true;
  const auto fields = readAll(w.buffer(), failed);
  CHECK_FALSE(failed);
  REQUIRE(fields.size() == sizeof(values) / sizeof(values[0]));
  for (std::size_t i = 0; i < fields.size(); ++i) {
    CHECK(fields[i].number == 1);
    CHECK(fields[i].wire == proto::kVarint);
    CHECK(fields[i].value == values[i]);
  }
  // Negative int64 takes ten bytes and comes back as its two's complement.
  proto::Writer n;
  n.int64(4, -5);
  CHECK(n.size() == 11);
  CHECK(static_cast<int64_t>(readAll(n.buffer(), failed).at(0).value) == -5);
}

TEST_CASE("proto: nested lengths patched for bodies of 127, 128, 16383 and 16384 bytes", "[proto]") {
  for (std::size_t body : {std::size_t{0}, std::size_t{1}, std::size_t{127}, std::size_t{128}, std::size_t{16383},
                           std::size_t{16384}, std::size_t{300000}}) {
    CAPTURE(body);
    proto::Writer w;
    w.varint(9, 5);
    const auto outer = w.begin(2);
    const auto inner = w.begin(3);
    std::string payload(body, '\0');
    for (std::size_t i = 0; i < body; ++i) payload[i] = static_cast<char>('a' + i % 26);
    w.append(payload.data(), payload.size());  // an opaque body of exactly `body` bytes
    w.end(inner);
    w.fixed64(4, 0x0102030405060708ull);
    w.end(outer);
    w.varint(10, 6);
    const std::size_t innerBytes = 1 + proto::varintSize(body) + body;
    const std::size_t outerBody = innerBytes + 9;
    CHECK(w.size() == 2 + 1 + proto::varintSize(outerBody) + outerBody + 2);
    bool failed = true;
    const auto top = readAll(w.buffer(), failed);
    REQUIRE_FALSE(failed);
    REQUIRE(top.size() == 3);
    CHECK(top[0].value == 5);
    CHECK(top[2].value == 6);
    REQUIRE(top[1].number == 2);
    const auto nested = readAll(top[1].bytes, failed);
    REQUIRE_FALSE(failed);
    REQUIRE(nested.size() == 2);
    CHECK(nested[0].number == 3);
    CHECK(nested[0].bytes == payload);
    CHECK(nested[1].wire == proto::kFixed64);
    CHECK(nested[1].value == 0x0102030405060708ull);
  }
}

TEST_CASE("proto: every prefix of a message reads as its whole fields, then fails or ends", "[proto]") {
  proto::Writer w;
  std::vector<std::size_t> boundaries = {0};  // where each field ends
  w.varint(1, 300);
  boundaries.push_back(w.size());
  w.bytes(2, "hello");
  boundaries.push_back(w.size());
  w.fixed64(3, 7);
  boundaries.push_back(w.size());
  const auto n = w.begin(4);
  w.varint(1, 1ull << 40);
  w.end(n);
  boundaries.push_back(w.size());
  std::vector<uint64_t> packed = {1, 200, 70000};
  w.packedVarints(5, packed.begin(), packed.end());
  boundaries.push_back(w.size());
  bool failed = true;
  const auto whole = readAll(w.buffer(), failed);
  REQUIRE_FALSE(failed);
  REQUIRE(whole.size() == 5);
  std::vector<uint64_t> unpacked;
  CHECK(proto::Reader::forEachPacked(whole[4].bytes, [&](uint64_t v) { unpacked.push_back(v); }));
  CHECK(unpacked == packed);
  const std::string bytes(w.buffer());
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    CAPTURE(cut);
    // Copied so that a read past `cut` would leave the allocation (caught under ASan).
    const std::string prefix = bytes.substr(0, cut);
    const auto got = readAll(prefix, failed);
    const auto complete = static_cast<std::size_t>(
        std::count_if(boundaries.begin() + 1, boundaries.end(), [&](std::size_t b) { return b <= cut; }));
    CHECK(got.size() == complete);
    for (std::size_t i = 0; i < got.size() && i < whole.size(); ++i) CHECK(got[i] == whole[i]);
    CHECK(failed == (std::find(boundaries.begin(), boundaries.end(), cut) == boundaries.end()));
  }
  // Packed varints cut inside a value are refused.
  CHECK_FALSE(proto::Reader::forEachPacked(std::string_view(whole[4].bytes).substr(0, 2), [](uint64_t) {}));
}

TEST_CASE("proto: malformed input fails instead of reading past the end", "[proto]") {
  bool failed = false;
  // Eleven continuation bytes: no varint is that long.
  CHECK(readAll(std::string("\x08") + std::string(11, '\xff'), failed).empty());
  CHECK(failed);
  // A length beyond the end.
  CHECK(readAll(std::string("\x12\x05" "abc"), failed).empty());
  CHECK(failed);
  // Wire types 3, 4, 6 and 7 (groups and nothing) and field number 0.
  for (const char* bad : {"\x0b", "\x0c", "\x0e", "\x0f", "\x00\x01"}) {
    CHECK(readAll(std::string(bad, bad[0] == 0 ? 2 : 1), failed).empty());
    CHECK(failed);
  }
  // A fixed64 with four bytes.
  CHECK(readAll(std::string("\x19\x01\x02\x03\x04"), failed).empty());
  CHECK(failed);
}

TEST_CASE("pftrace reader: a stream rebuilds into the same Chrome trace and folded stacks", "[perfetto]") {
  SampleStream s;
  const TraceData& original = s.build();
  TraceData back;
  std::string error;
  PfRebuildInfo info;
  REQUIRE(readPerfettoTraceBytes(s.bytes, back, error, &info));
  CHECK(error.empty());
  CHECK(info.ended);
  CHECK_FALSE(info.stats.truncated);
  CHECK(info.stats.skipped == 0);
  CHECK(info.stats.unmatchedEnds == 0);
  CHECK(info.stats.openAtEnd == 0);
  CHECK(info.skippedEvents == 0);
  CHECK(info.metadataEvents == original.eventCount());
  CHECK(back.eventCount() == original.eventCount());
  REQUIRE(back.threads.size() == 3);
  CHECK(back.threads[2].name == "idle");
  CHECK(back.threads[2].events.size() == 0);
  CHECK(back.device.size() == 4);
  CHECK(back.stacks.size() == original.stacks.size());
  const std::string a = chrome(original), b = chrome(back);
  // The pieces that needed more than the events are there (not vacuous).
  for (const char* needle : {"\"category\":\"phase\"", "\"flow\"", "\"unlinked\":true", "\"stack\":[\"inner(int)\"",
                             "\"result\":2", "\"domain\":\"my.domain\"", "\"unclosed\":true", "\"lost_ends\":1",
                             "\"seq_end\":4", "\"dropped\":5", "\"rank\":2", "\"op\":\"aten::add\"",
                             "\"autograd\"", "\"unwind_mismatches\":2", "\"distinct\":3", "\"GPU 1 stream 70000\""}) {
    CAPTURE(needle);
    CHECK(a.find(needle) != std::string::npos);
  }
  CHECK(a == b);
  CHECK(folded(original, true) == folded(back, true));
  CHECK(folded(original, false) == folded(back, false));
  CHECK(folded(original, true).find("[empty]") == std::string::npos);
}

TEST_CASE("pftrace reader: a process killed after its passes gives its events, start metadata", "[perfetto]") {
  SampleStream s;
  const TraceData& original = s.build();
  TraceData back;
  std::string error;
  PfRebuildInfo info;
  REQUIRE(readPerfettoTraceBytes(std::string_view(s.bytes).substr(0, s.passEnds[1]), back, error, &info));
  CHECK_FALSE(info.ended);
  CHECK_FALSE(info.stats.truncated);
  CHECK(back.device.empty());
  CHECK(back.meta.exe == "prog");
  CHECK(back.meta.hostname == "host-a");
  CHECK(back.meta.rank == 2);
  CHECK(back.meta.pid == 4242);
  CHECK(back.meta.originMonotonicNs == 50);
  CHECK(back.meta.commandLine == original.meta.commandLine);
  CHECK(back.hooks.size() == original.hooks.size());
  CHECK(back.threads.at(0).dropped == 5);
  // Events of both passes, and the range still open then: its BEGIN was written at the second
  // pass, and it ends unclosed at the last thing the file holds (the drop count written at 4000).
  CHECK(back.eventCount() == original.eventCount());
  REQUIRE(back.threads.size() >= 2);
  const auto& events = back.threads[1].events;
  REQUIRE(events.size() == 3);
  const Event& open = events[2];
  CHECK(back.strings.get(open.name) == "never popped");
  CHECK(open.kind == EventKind::NvtxRange);
  CHECK(open.seq == 3);
  CHECK(open.start == 3500);
  CHECK(open.end == 4000);
  CHECK(open.flags == kEventUnclosed);
  CHECK(chrome(back).find("\"name\":\"never popped\",\"pid\":4242,\"tid\":12,\"ts\":3.45,\"dur\":0.5,\"args\":{\"seq\":3,\"unclosed\":true}}") !=
        std::string::npos);
}

TEST_CASE("pftrace writer: a range open at a pass's end is written then and ends where its event does", "[perfetto]") {
  // An epoch open over three passes holding a step per pass; its pop is lost (a push at its
  // depth), so its end is known only at its last pass.
  TraceBuilder b;
  TraceData& d = b.store().data();
  PerfettoWriter writer;
  std::string bytes;
  std::vector<std::size_t> passEnds;
  const auto pass = [&](uint64_t now) {
    writer.encodePass(d, now, bytes);
    passEnds.push_back(bytes.size());
  };
  b.push(11, 1, 100, 0, "epoch");
  b.api(11, test::kCudaMalloc, 2, 200, 300);
  b.push(11, 3, 400, 1, "step");
  b.api(11, test::kCudaDeviceSynchronize, 4, 500, 600);
  pass(650);
  b.pop(11, 700, 1);
  b.push(11, 5, 800, 1, "step");
  b.api(11, test::kCudaDeviceSynchronize, 6, 900, 1000);
  b.pop(11, 1100, 1);
  pass(1150);
  b.push(11, 7, 1200, 0, "epoch 2");  // the epoch's pop was lost: it ends here, end_lost
  b.api(11, test::kCudaFree, 8, 1300, 1400);
  pass(1450);
  b.finish(1500);  // epoch 2 unclosed
  writer.encodeEnd(d, 1500, chromeTraceMetadata(d), bytes);

  struct Order : PerfettoVisitor {
    std::vector<std::string> ended;  // name start-end flags, in the order read
    void slice(const PfSlice& s) override {
      std::string& x = ended.emplace_back(std::string(s.name) + " " + std::to_string(s.startNs) + "-" + std::to_string(s.endNs));
      if (s.find(Ann::Unclosed)) x += " unclosed";
      if (s.find(Ann::EndLost)) x += " end_lost";
    }
  };
  const auto read = [&](std::size_t upTo) {
    Order order;
    std::string error;
    PfReadStats stats;
    REQUIRE(readPerfettoBytes(std::string_view(bytes).substr(0, upTo), order, error, &stats));
    CHECK(stats.unmatchedEnds == 0);
    return order.ended;
  };
  // Killed after each pass: the ranges open then end at the file's last timestamp.
  CHECK(read(passEnds[0]) == std::vector<std::string>{"cudaMalloc 200-300", "cudaDeviceSynchronize 500-600",
                                                      "step 400-600 unclosed", "epoch 100-600 unclosed"});
  CHECK(read(passEnds[1]) == std::vector<std::string>{"cudaMalloc 200-300", "cudaDeviceSynchronize 500-600", "step 400-700",
                                                      "cudaDeviceSynchronize 900-1000", "step 800-1100",
                                                      "epoch 100-1100 unclosed"});
  CHECK(read(passEnds[2]) == std::vector<std::string>{"cudaMalloc 200-300", "cudaDeviceSynchronize 500-600", "step 400-700",
                                                      "cudaDeviceSynchronize 900-1000", "step 800-1100",
                                                      "epoch 100-1200 end_lost", "cudaFree 1300-1400",
                                                      "epoch 2 1200-1400 unclosed"});
  // The whole file: what the collector recorded, the flags its end set included.
  CHECK(read(bytes.size()) == std::vector<std::string>{"cudaMalloc 200-300", "cudaDeviceSynchronize 500-600", "step 400-700",
                                                       "cudaDeviceSynchronize 900-1000", "step 800-1100",
                                                       "epoch 100-1200 end_lost", "cudaFree 1300-1400",
                                                       "epoch 2 1200-1500 unclosed"});
  TraceData back;
  std::string error;
  PfRebuildInfo info;
  REQUIRE(readPerfettoTraceBytes(bytes, back, error, &info));
  CHECK(info.stats.openAtEnd == 0);
  CHECK(chrome(back) == chrome(d));
  CHECK(folded(back, true) == folded(d, true));
}

TEST_CASE("pftrace reader: every prefix of the file reads, never more than the whole", "[perfetto]") {
  SampleStream s;
  s.build();
  TraceData whole;
  std::string error;
  REQUIRE(readPerfettoTraceBytes(s.bytes, whole, error));
  uint64_t previous = 0;
  std::size_t atBoundary = 0;
  for (std::size_t cut = 0; cut <= s.bytes.size(); ++cut) {
    CAPTURE(cut);
    const std::string prefix = s.bytes.substr(0, cut);  // an allocation of exactly `cut` bytes
    TraceData back;
    PfRebuildInfo info;
    REQUIRE(readPerfettoTraceBytes(prefix, back, error, &info));
    CHECK(back.eventCount() <= whole.eventCount());
    CHECK(back.device.size() <= whole.device.size());
    CHECK(back.eventCount() >= previous);  // a longer prefix never loses an event
    previous = back.eventCount();
    if (!info.stats.truncated) ++atBoundary;
    if (cut == s.passEnds[0] || cut == s.passEnds[1]) CHECK_FALSE(info.stats.truncated);
  }
  CHECK(previous == whole.eventCount());
  CHECK(atBoundary > 20);  // packet boundaries, where the prefix is a whole file
}

TEST_CASE("pftrace reader: malformed files are refused with a message", "[perfetto]") {
  SampleStream s;
  s.build();
  std::string error;
  TraceData back;
  SECTION("not a trace") {
    CHECK_FALSE(readPerfettoTraceBytes("{\"traceEvents\":[]}", back, error));
    CHECK(error.find("not a Perfetto trace") != std::string::npos);
  }
  SECTION("a packet larger than the cap") {
    proto::Writer w;
    w.rawVarint(pf::Trace::kPacket << 3 | proto::kLengthDelimited);
    w.rawVarint(kMaxPacketBytes + 1);
    CHECK_FALSE(readPerfettoTraceBytes(w.buffer(), back, error));
    CHECK(error.find("oversized") != std::string::npos);
  }
  SECTION("an event whose name was never interned") {
    proto::Writer w;
    const auto p = w.begin(pf::Trace::kPacket);
    w.varint(pf::TracePacket::kTimestamp, 5);
    w.varint(pf::TracePacket::kTimestampClockId, pf::BuiltinClock::kMonotonic);
    w.varint(pf::TracePacket::kTrustedPacketSequenceId, 2);
    w.varint(pf::TracePacket::kSequenceFlags, pf::TracePacket::kSeqIncrementalStateCleared);
    const auto te = w.begin(pf::TracePacket::kTrackEvent);
    w.varint(pf::TrackEvent::kType, pf::TrackEvent::kTypeSliceBegin);
    w.varint(pf::TrackEvent::kTrackUuid, 77);
    w.varint(pf::TrackEvent::kNameIid, 9);
    w.end(te);
    w.end(p);
    CHECK_FALSE(readPerfettoTraceBytes(w.buffer(), back, error));
    CHECK(error.find("event name iid 9 not interned") != std::string::npos);
  }
  SECTION("a whole packet with a broken inside") {
    // The first packet's body, every byte flipped in turn: an error or a read, never a crash.
    std::size_t refused = 0;
    for (std::size_t i = 2; i < 60 && i < s.bytes.size(); ++i) {
      std::string bad = s.bytes;
      bad[i] = static_cast<char>(bad[i] ^ 0x5a);
      TraceData t;
      if (!readPerfettoTraceBytes(bad, t, error)) {
        ++refused;
        CHECK_FALSE(error.empty());
      }
    }
    CHECK(refused > 0);
  }
}

TEST_CASE("pftrace reader: interned ids of any size, dense or far apart, name their events", "[perfetto]") {
  // cutrace numbers interned entries from 1; another writer may not. Names at iids 1, 2, 5000,
  // 2^40 and 2^63, then an event of each, and one of a name never interned (4999). Then names
  // at 3..6000 but 4999 and 5000: the dense index grows past 5000, which was kept apart when it
  // came (far past what was interned then), and must still be found.
  const uint64_t iids[] = {1, 2, 5000, uint64_t{1} << 40, uint64_t{1} << 63};
  proto::Writer w;
  auto packet = [&](uint64_t ts, uint32_t flags) {
    const auto p = w.begin(pf::Trace::kPacket);
    w.varint(pf::TracePacket::kTimestamp, ts);
    w.varint(pf::TracePacket::kTimestampClockId, pf::BuiltinClock::kMonotonic);
    w.varint(pf::TracePacket::kTrustedPacketSequenceId, 2);
    w.varint(pf::TracePacket::kSequenceFlags, flags);
    return p;
  };
  auto p = packet(1, pf::TracePacket::kSeqIncrementalStateCleared);
  const auto interned = w.begin(pf::TracePacket::kInternedData);
  for (uint64_t iid : iids) {
    const auto e = w.begin(pf::InternedData::kEventNames);
    w.varint(pf::InternedEntry::kIid, iid);
    w.bytes(pf::InternedEntry::kName, "name " + std::to_string(iid));
    w.end(e);
  }
  w.end(interned);
  w.end(p);
  p = packet(2, pf::TracePacket::kSeqNeedsIncrementalState);
  const auto more = w.begin(pf::TracePacket::kInternedData);
  for (uint64_t iid = 3; iid <= 6000; ++iid) {
    if (iid == 4999 || iid == 5000) continue;
    const auto e = w.begin(pf::InternedData::kEventNames);
    w.varint(pf::InternedEntry::kIid, iid);
    w.bytes(pf::InternedEntry::kName, "other " + std::to_string(iid));
    w.end(e);
  }
  w.end(more);
  w.end(p);
  uint64_t ts = 10;
  for (uint64_t iid : iids) {
    for (uint64_t type : {pf::TrackEvent::kTypeSliceBegin, pf::TrackEvent::kTypeSliceEnd}) {
      p = packet(ts++, pf::TracePacket::kSeqNeedsIncrementalState);
      const auto te = w.begin(pf::TracePacket::kTrackEvent);
      w.varint(pf::TrackEvent::kType, type);
      w.varint(pf::TrackEvent::kTrackUuid, 77);
      if (type == pf::TrackEvent::kTypeSliceBegin) w.varint(pf::TrackEvent::kNameIid, iid);
      w.end(te);
      w.end(p);
    }
  }
  struct Names : PerfettoVisitor {
    std::vector<std::string> seen;
    void slice(const PfSlice& s) override { seen.emplace_back(s.name); }
  } names;
  std::string error;
  REQUIRE(readPerfettoBytes(w.buffer(), names, error));
  CHECK(names.seen == std::vector<std::string>{"name 1", "name 2", "name 5000", "name 1099511627776",
                                               "name 9223372036854775808"});
  p = packet(ts, pf::TracePacket::kSeqNeedsIncrementalState);
  const auto te = w.begin(pf::TracePacket::kTrackEvent);
  w.varint(pf::TrackEvent::kType, pf::TrackEvent::kTypeInstant);
  w.varint(pf::TrackEvent::kTrackUuid, 77);
  w.varint(pf::TrackEvent::kNameIid, 4999);
  w.end(te);
  w.end(p);
  CHECK_FALSE(readPerfettoBytes(w.buffer(), names, error));
  CHECK(error.find("event name iid 4999 not interned") != std::string::npos);
}

// The writer ends a thread's sequence with a packet that clears its state and sets nothing; the
// reader lets go of that state. A sequence that goes on after it reads as from a cleared state:
// what does not need interned entries is read, what names an entry from before fails.
TEST_CASE("pftrace reader: a sequence cleared with nothing set reads on from a cleared state", "[perfetto]") {
  proto::Writer w;
  auto packet = [&](uint32_t sequence, uint32_t flags, bool withTs = true) {
    const auto p = w.begin(pf::Trace::kPacket);
    if (withTs) {
      w.varint(pf::TracePacket::kTimestamp, 100);
      w.varint(pf::TracePacket::kTimestampClockId, pf::BuiltinClock::kMonotonic);
    }
    w.varint(pf::TracePacket::kTrustedPacketSequenceId, sequence);
    w.varint(pf::TracePacket::kSequenceFlags, flags);
    return p;
  };
  auto slice = [&](uint32_t sequence, uint64_t nameIid, std::string_view name) {
    for (uint64_t type : {pf::TrackEvent::kTypeSliceBegin, pf::TrackEvent::kTypeSliceEnd}) {
      const auto p = packet(sequence, pf::TracePacket::kSeqNeedsIncrementalState);
      const auto te = w.begin(pf::TracePacket::kTrackEvent);
      w.varint(pf::TrackEvent::kType, type);
      w.varint(pf::TrackEvent::kTrackUuid, 77);
      if (type == pf::TrackEvent::kTypeSliceBegin && nameIid != 0) w.varint(pf::TrackEvent::kNameIid, nameIid);
      if (type == pf::TrackEvent::kTypeSliceBegin && nameIid == 0) w.bytes(pf::TrackEvent::kName, name);
      w.end(te);
      w.end(p);
    }
  };
  auto p = packet(2, pf::TracePacket::kSeqIncrementalStateCleared);
  const auto interned = w.begin(pf::TracePacket::kInternedData);
  const auto e = w.begin(pf::InternedData::kEventNames);
  w.varint(pf::InternedEntry::kIid, 1);
  w.bytes(pf::InternedEntry::kName, "interned");
  w.end(e);
  w.end(interned);
  w.end(p);
  slice(2, 1, {});
  w.end(packet(2, pf::TracePacket::kSeqIncrementalStateCleared, false));  // the end the writer writes
  slice(3, 0, "never started");  // needs a state no packet set: skipped
  slice(2, 0, "after the end");
  struct Names : PerfettoVisitor {
    std::vector<std::string> seen;
    void slice(const PfSlice& s) override { seen.emplace_back(s.name); }
  } names;
  std::string error;
  PfReadStats stats;
  REQUIRE(readPerfettoBytes(w.buffer(), names, error, &stats));
  CHECK(names.seen == std::vector<std::string>{"interned", "after the end"});
  CHECK(stats.skipped == 2);
  slice(2, 1, {});
  names.seen.clear();
  CHECK_FALSE(readPerfettoBytes(w.buffer(), names, error));
  CHECK(error.find("event name iid 1 not interned") != std::string::npos);
}

TEST_CASE("pftrace reader: visitor sees tracks, slices with interned names, counters, metadata", "[perfetto]") {
  SampleStream s;
  s.build();
  struct Seen : PerfettoVisitor {
    std::vector<PfTrackKind> kinds;
    std::vector<std::string> slices;
    std::vector<int64_t> drops;
    std::vector<std::string> metadataNames;
    void track(const PfTrack& t) override { kinds.push_back(t.kind); }
    void slice(const PfSlice& s) override {
      std::string line = std::string(s.category) + " " + std::string(s.name);
      if (!s.frames.empty()) line += " @" + std::string(s.frames.front());
      slices.push_back(line);
    }
    void counter(const PfTrack& t, uint32_t, uint64_t, int64_t v) override {
      if (t.kind == PfTrackKind::DropCounter) drops.push_back(v);
    }
    void metadata(std::string_view name, std::string_view) override { metadataNames.emplace_back(name); }
  } seen;
  std::string error;
  REQUIRE(readPerfettoBytes(s.bytes, seen, error));
  CHECK(seen.drops == std::vector<int64_t>{3, 5});
  CHECK(seen.metadataNames == std::vector<std::string>{"cutrace.process", "cutrace"});
  auto count = [&](PfTrackKind k) { return std::count(seen.kinds.begin(), seen.kinds.end(), k); };
  CHECK(count(PfTrackKind::Process) == 1);
  CHECK(count(PfTrackKind::Span) == 1);
  CHECK(count(PfTrackKind::Domain) == 1);
  CHECK(count(PfTrackKind::DropCounter) == 1);
  CHECK(count(PfTrackKind::Device) == 2);
  CHECK(std::count(seen.slices.begin(), seen.slices.end(), "cuda_runtime cudaLaunchKernel @inner(int)") == 1);
  CHECK(std::count(seen.slices.begin(), seen.slices.end(), "cuda_runtime cudaLaunchKernel @worker_fn") == 1);
  CHECK(std::count(seen.slices.begin(), seen.slices.end(), "memcpy Memcpy HtoD") == 1);
  CHECK(std::count(seen.slices.begin(), seen.slices.end(), "kernel ns::scale<float>(float*, int)") == 0);
  CHECK(std::count(seen.slices.begin(), seen.slices.end(), "kernel void ns::scale<float>(float*, int)") == 1);
}

TEST_CASE("pftrace writer: a launch-bound loop with stacks takes under 40 bytes per event", "[perfetto]") {
  // cudaLaunchKernel (known kernel, a stack) around the cuLaunchKernel it makes, every 5 us, as
  // the drain thread sees them: the inner call ended (was recorded) first, seqs taken at entry.
  TraceBuilder b;
  TraceData& d = b.store().data();
  b.defineStack(1, {"train_step()", "main"});
  PerfettoWriter writer;
  std::string bytes;
  uint64_t seq = 1;
  auto pair = [&](uint64_t t) {
    b.launch(11, test::kCuLaunchKernel, seq + 1, t + 300, t + 1800, nullptr);
    b.launch(11, test::kCudaLaunchKernel, seq, t, t + 2000, "_Z5trainPf", 1);
    seq += 2;
  };
  pair(10000);  // the first pass interns the names, the stack, the launch
  writer.encodePass(d, 12000, bytes);
  const std::size_t first = bytes.size();
  constexpr int kPairs = 1000;
  for (int i = 1; i <= kPairs; ++i) pair(10000 + 5000 * static_cast<uint64_t>(i));
  writer.encodePass(d, 10000 + 5000 * (kPairs + 1), bytes);
  // Per pair: runtime BEGIN 25 bytes (packet 2, sequence 2, delta 3, event 2, type 2, category
  // 2, name 2, launch 7, callstack 3), driver BEGIN 22 (stream 7, no stack), two ENDs 11 each
  // (packet 2, sequence 2, delta 3, event 2, type 2); seqs follow, nothing else.
  CHECK(bytes.size() - first == kPairs * (25 + 22 + 11 + 11));
  CHECK(static_cast<double>(bytes.size() - first) / (2 * kPairs) <= 40.0);

  // A gap in the seqs (a drop) is written, and everything reads back as it was.
  seq += 5;
  pair(10000 + 5000 * (kPairs + 2));
  b.finish(10000 + 5000 * (kPairs + 4));
  writer.encodeEnd(d, 10000 + 5000 * (kPairs + 4), chromeTraceMetadata(d), bytes);
  TraceData back;
  std::string error;
  REQUIRE(readPerfettoTraceBytes(bytes, back, error));
  REQUIRE(back.eventCount() == d.eventCount());
  for (std::size_t i = 0; i < d.threads[0].events.size(); ++i) {
    CAPTURE(i);
    CHECK(back.threads[0].events[i].seq == d.threads[0].events[i].seq);
    CHECK(back.threads[0].events[i].start == d.threads[0].events[i].start);
    CHECK(back.threads[0].events[i].launch.stream == 0x10);
  }
  CHECK(chrome(back) == chrome(d));
  CHECK(folded(back, true) == folded(d, true));
}

TEST_CASE("pftrace reader: launches of many kernels and shapes read back each as it was", "[perfetto]") {
  // The reader keeps the last few launch texts it parsed: seven kernels (each twice in a row),
  // five grids and three streams in turn, so texts recur with others between them, some only
  // after the cache has moved on, and a kernel comes right after itself with another shape.
  TraceBuilder b;
  TraceData& d = b.store().data();
  const char* kernels[] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6"};
  for (uint64_t i = 0; i < 60; ++i) {
    Record r;
    memset(&r, 0, sizeof(r));
    r.type = RecordType::Api;
    r.seq = i + 1;
    r.t0 = 1000 + 100 * i;
    r.t1 = r.t0 + 50;
    r.hook = test::kCudaLaunchKernel;
    r.launch.kernelName = b.name(kernels[i / 2 % 7]);
    r.launch.gridX = static_cast<uint32_t>(i % 5 + 1);
    r.launch.gridY = 1;
    r.launch.gridZ = static_cast<uint16_t>(i % 2 + 1);
    r.launch.block = LaunchPayload::packBlock(32 * static_cast<unsigned>(i % 3 + 1), 1, 1);
    r.launch.sharedMem = static_cast<uint32_t>(i % 4) * 1024;
    r.launch.stream = 0x10 + i % 3;
    b.store().decode(11, 11, r, nullptr, 0);
  }
  b.finish(100000);
  PerfettoWriter writer;
  std::string bytes;
  writer.encodePass(d, 50000, bytes);
  writer.encodeEnd(d, 100000, chromeTraceMetadata(d), bytes);
  TraceData back;
  std::string error;
  REQUIRE(readPerfettoTraceBytes(bytes, back, error));
  REQUIRE(back.eventCount() == 60);
  for (std::size_t i = 0; i < 60; ++i) {
    CAPTURE(i);
    const LaunchPayload& was = d.threads[0].events[i].launch;
    const LaunchPayload& is = back.threads[0].events[i].launch;
    CHECK(back.strings.get(is.kernelName) == d.strings.get(was.kernelName));
    CHECK(is.gridX == was.gridX);
    CHECK(is.gridZ == was.gridZ);
    CHECK(is.block == was.block);
    CHECK(is.sharedMem == was.sharedMem);
    CHECK(is.stream == was.stream);
  }
  CHECK(chrome(back) == chrome(d));
}

TEST_CASE("pftrace writer: a range wrapping calls in one pass is written in time order", "[perfetto]") {
  // The range ends (is recorded) after the calls inside it, and the runtime call after the driver
  // call it made: the writer nests them back, BEGINs in the order they began, children in order.
  TraceBuilder b;
  TraceData& d = b.store().data();
  b.push(11, 1, 1000, 0, "step");
  b.api(11, test::kCudaFree, 2, 1100, 1200);
  b.launch(11, test::kCuLaunchKernel, 4, 1310, 1390, nullptr);
  b.launch(11, test::kCudaLaunchKernel, 3, 1300, 1400, "_Z1kv");
  b.api(11, test::kCudaGraphLaunch, 5, 1500, 1600);
  b.pop(11, 2000, 0);
  b.api(11, test::kCudaDeviceSynchronize, 6, 2100, 2200);
  PerfettoWriter writer;
  std::string bytes;
  writer.encodePass(d, 3000, bytes);
  b.finish(3000);
  writer.encodeEnd(d, 3000, chromeTraceMetadata(d), bytes);
  struct Order : PerfettoVisitor {
    std::vector<std::string> ended;  // slices as their END is read: file order
    void slice(const PfSlice& s) override { ended.emplace_back(s.name); }
  } order;
  std::string error;
  REQUIRE(readPerfettoBytes(bytes, order, error));
  CHECK(order.ended == std::vector<std::string>{"cudaFree", "cuLaunchKernel", "cudaLaunchKernel", "cudaGraphLaunch",
                                                "step", "cudaDeviceSynchronize"});
  TraceData back;
  REQUIRE(readPerfettoTraceBytes(bytes, back, error));
  CHECK(chrome(back) == chrome(d));
}

// A loop's pass: calls, runtime calls each recorded after the driver call it made (one starting
// at the same ns as its child), marks. Nothing wraps more than the event recorded just before
// it, which the writer takes without building its forest: the driver call still ends inside its
// runtime call, in the file's order, and every slice keeps its times, over two passes.
TEST_CASE("pftrace writer: a pass of calls and runtime calls around driver calls is written nested", "[perfetto]") {
  TraceBuilder b;
  TraceData& d = b.store().data();
  PerfettoWriter writer;
  std::string bytes;
  uint64_t seq = 1, t = 1000;
  std::vector<std::string> expected;  // "name start end", as each END is read
  const auto pass = [&](int shapes) {
    for (int i = 0; i < shapes; ++i, t += 100) {
      switch (i % 4) {
        case 0:
          b.api(11, test::kCudaDeviceSynchronize, seq++, t, t + 10);
          expected.push_back("cudaDeviceSynchronize " + std::to_string(t) + " " + std::to_string(t + 10));
          break;
        case 1:
        case 2: {
          // The second pair's runtime call starts at the same ns as its driver call.
          const uint64_t inner = i % 4 == 1 ? t + 2 : t;
          b.launch(11, test::kCuLaunchKernel, seq + 1, inner, t + 8, nullptr);
          b.launch(11, test::kCudaLaunchKernel, seq, t, t + 10, "_Z1kv");
          seq += 2;
          expected.push_back("cuLaunchKernel " + std::to_string(inner) + " " + std::to_string(t + 8));
          expected.push_back("cudaLaunchKernel " + std::to_string(t) + " " + std::to_string(t + 10));
          break;
        }
        default:
          b.mark(11, seq++, t, "m");
          break;
      }
    }
    writer.encodePass(d, t, bytes);
    b.store().releaseEvents();
  };
  pass(9);
  pass(6);
  b.finish(t);
  writer.encodeEnd(d, t, chromeTraceMetadata(d), bytes);
  struct Order : PerfettoVisitor {
    std::vector<std::string> ended;
    uint64_t marks = 0;
    // Packets read since the last slice ended, when a runtime call ends: 1 (its own END) where
    // its BEGIN came before its driver call's, 2 where its BEGIN came after that call had ended.
    uint64_t packets = 0, lastEnded = 0;
    std::vector<uint64_t> parentGaps;
    void position(uint64_t) override { ++packets; }
    void slice(const PfSlice& s) override {
      if (s.instant) {
        ++marks;
        return;
      }
      ended.push_back(std::string(s.name) + " " + std::to_string(s.startNs) + " " + std::to_string(s.endNs));
      if (s.name == "cudaLaunchKernel") parentGaps.push_back(packets - lastEnded);
      lastEnded = packets;
    }
  } order;
  std::string error;
  PfReadStats stats;
  REQUIRE(readPerfettoBytes(bytes, order, error, &stats));
  CHECK(stats.unmatchedEnds == 0);
  CHECK(order.ended == expected);
  CHECK(order.marks == 3);
  CHECK(order.parentGaps == std::vector<uint64_t>(7, 1));
}

// Ranges pushed and popped at random on two threads, in the default domain and a named one (pops
// lost now and then), marks, start/end ranges crossing threads, runtime calls around driver
// calls, cut into passes at random and released as the drain does. After every pass the file
// read as it is (the process killed there) pairs every END and holds exactly the ranges open
// then, unclosed; the whole file rebuilds the Chrome trace of the same records kept in memory.
TEST_CASE("pftrace writer: random nesting over random passes reads at every pass", "[perfetto]") {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    TraceBuilder streamed, kept;
    const uint32_t domain = streamed.name("dom");
    REQUIRE(kept.name("dom") == domain);
    PerfettoWriter writer;
    std::string bytes;
    struct Open {
      uint16_t depth;
      std::string name;
      uint64_t start;
    };
    // A domain's stack as the store pairs it: a range whose pop was lost stays until a push or
    // pop below it closes it.
    struct Stack {
      uint16_t depth = 0;
      std::vector<Open> open;
      void push(const std::string& name, uint64_t t) {
        std::erase_if(open, [&](const Open& o) { return o.depth >= depth; });
        open.push_back({depth++, name, t});
      }
      void pop() {
        --depth;
        std::erase_if(open, [&](const Open& o) { return o.depth > depth; });
        if (!open.empty() && open.back().depth == depth) open.pop_back();
      }
    };
    struct Model {
      uint64_t seq = 1;
      Stack stacks[2];  // the default domain, "dom"
    } model[2];
    uint64_t t = 100, spanId = 1;
    std::vector<std::pair<uint64_t, uint64_t>> spans;  // open: id, start
    const auto both = [&](const auto& f) {
      f(streamed);
      f(kept);
    };
    for (int step = 0; step < 600; ++step) {
      const uint32_t k = rng() % 2, tid = 11 + k;
      Model& m = model[k];
      t += 1 + rng() % 40;
      const uint32_t action = rng() % 16;
      // Mostly the default domain.
      const uint32_t d = action < 8 && rng() % 4 == 0 ? 1 : 0;
      Stack& stack = m.stacks[d];
      if (action < 4) {
        const std::string name = (d ? "d" : "r") + std::to_string(rng() % 3) + "/" + std::to_string(tid);
        both([&](TraceBuilder& b) { b.push(tid, m.seq, t, stack.depth, name, d ? domain : 0); });
        stack.push(name, t);
        ++m.seq;
      } else if (action < 7 && stack.depth > 0) {
        stack.pop();
        both([&](TraceBuilder& b) { b.pop(tid, t, stack.depth, d ? domain : 0); });
        ++m.seq;
      } else if (action == 7 && stack.depth > 0) {
        --stack.depth;  // its pop lost: the store ends it at the next push or pop below it
        ++m.seq;
      } else if (action < 10) {
        both([&](TraceBuilder& b) { b.mark(tid, m.seq, t, "m"); });
        ++m.seq;
      } else if (action == 11) {
        both([&](TraceBuilder& b) { b.start(tid, m.seq, t, spanId, "span"); });
        spans.emplace_back(spanId++, t);
        ++m.seq;
      } else if (action == 12 && !spans.empty()) {
        const auto at = spans.begin() + rng() % spans.size();
        const uint64_t id = at->first;
        spans.erase(at);
        both([&](TraceBuilder& b) { b.end(tid, t, id); });
      } else if (action == 13) {
        // A runtime call and the driver call it made, recorded as they ended.
        both([&](TraceBuilder& b) {
          b.launch(tid, test::kCuLaunchKernel, m.seq + 1, t + 2, t + 8, nullptr);
          b.launch(tid, test::kCudaLaunchKernel, m.seq, t, t + 10, "_Z1kv");
        });
        m.seq += 2, t += 10;
      } else {
        both([&](TraceBuilder& b) { b.api(tid, test::kCudaDeviceSynchronize, m.seq, t, t + 5); });
        ++m.seq, t += 5;
      }
      if (rng() % 20 != 0) continue;
      writer.encodePass(streamed.store().data(), t, bytes);
      streamed.store().releaseEvents();
      // Killed here.
      struct Read : PerfettoVisitor {
        std::vector<std::string> unclosed;  // "name start"
        uint64_t slices = 0;
        void slice(const PfSlice& s) override {
          ++slices;
          CHECK(s.endNs >= s.startNs);
          if (s.find(Ann::Unclosed) != nullptr)
            unclosed.push_back(std::string(s.name) + " " + std::to_string(s.startNs));
        }
      } read;
      std::string error;
      PfReadStats stats;
      REQUIRE(readPerfettoBytes(bytes, read, error, &stats));
      CHECK(stats.unmatchedEnds == 0);
      CHECK_FALSE(stats.truncated);
      std::vector<std::string> expected;
      for (const Model& x : model)
        for (const Stack& st : x.stacks)
          for (const Open& o : st.open) expected.push_back(o.name + " " + std::to_string(o.start));
      for (const auto& [id, start] : spans) expected.push_back("span " + std::to_string(start));
      std::sort(expected.begin(), expected.end());
      std::sort(read.unclosed.begin(), read.unclosed.end());
      CHECK(read.unclosed == expected);
    }
    t += 100;
    streamed.finish(t);
    kept.finish(t);
    writer.encodeEnd(streamed.store().data(), t, chromeTraceMetadata(kept.store().data()), bytes);
    TraceData back;
    std::string error;
    PfRebuildInfo info;
    REQUIRE(readPerfettoTraceBytes(bytes, back, error, &info));
    CHECK(info.stats.openAtEnd == 0);
    CHECK(info.stats.unmatchedEnds == 0);
    CHECK(back.eventCount() == kept.store().data().eventCount());
    CHECK(chrome(back) == chrome(kept.store().data()));
  }
}

// A range written ahead whose event never comes (the store could not keep it: tracing stopped
// for want of memory) still gets its END, before that of the range around it, which comes.
TEST_CASE("pftrace writer: a range written ahead that never ends is closed before its parent", "[perfetto]") {
  TraceBuilder b;
  TraceData& d = b.store().data();
  b.api(11, test::kCudaFree, 1, 100, 110);
  const auto range = [&](uint64_t seq, uint64_t start, const char* name) {
    Event e;
    e.kind = EventKind::NvtxRange;
    e.seq = seq;
    e.start = start;
    e.name = d.strings.intern(name);
    return e;
  };
  d.threads.at(0).openRanges = {range(2, 200, "parent"), range(3, 300, "lost")};
  PerfettoWriter writer;
  std::string bytes;
  writer.encodePass(d, 400, bytes);
  // The next pass: "lost" is no longer listed and left no event; its parent ends.
  d.threads[0].openRanges.clear();
  Event parent = range(2, 200, "parent");
  parent.end = 900;
  REQUIRE(d.threads[0].events.push_back(parent));
  d.markChanged(0);
  writer.encodePass(d, 1000, bytes);
  struct Order : PerfettoVisitor {
    std::vector<std::string> ended;
    void slice(const PfSlice& s) override {
      ended.push_back(std::string(s.name) + " " + std::to_string(s.startNs) + "-" + std::to_string(s.endNs));
    }
  } order;
  std::string error;
  PfReadStats stats;
  REQUIRE(readPerfettoBytes(bytes, order, error, &stats));
  CHECK(stats.unmatchedEnds == 0);
  CHECK(stats.openAtEnd == 0);
  // "lost" ends where the stream stood when the loss was seen: its own BEGIN.
  CHECK(order.ended == std::vector<std::string>{"cudaFree 100-110", "lost 300-300", "parent 200-900"});
}

TEST_CASE("pftrace writer: repeated ranges of several names keep their names and fields", "[perfetto]") {
  // Default-domain ranges are written from per-name templates (as calls are, per hook): three
  // names in turn, more than the sequence keeps range templates for.
  TraceBuilder b;
  TraceData& d = b.store().data();
  const char* names[] = {"forward", "backward", "optimizer"};
  std::vector<std::string> expected;
  uint64_t t = 1000, seq = 1;
  for (int i = 0; i < 12; ++i) {
    b.push(11, seq++, t, 0, names[i % 3]);
    b.pop(11, t + 100, 0);
    expected.emplace_back(names[i % 3]);
    t += 200;
  }
  PerfettoWriter writer;
  std::string bytes;
  writer.encodePass(d, t, bytes);
  b.finish(t);
  writer.encodeEnd(d, t, chromeTraceMetadata(d), bytes);
  struct Names : PerfettoVisitor {
    std::vector<std::string> seen;
    void slice(const PfSlice& s) override { seen.emplace_back(s.name); }
  } written;
  std::string error;
  REQUIRE(readPerfettoBytes(bytes, written, error));
  CHECK(written.seen == expected);
  TraceData back;
  REQUIRE(readPerfettoTraceBytes(bytes, back, error));
  CHECK(chrome(back) == chrome(d));
}

namespace {

// Driver allocations and frees from two threads over two passes (the first pass's events
// released before the second, as the drain does), with what the counters must skip: a runtime
// allocation, a failed one, frees of pointers never (or no longer) allocated, a null pointer.
void feedMemory(TraceBuilder& b, PerfettoWriter* writer, std::string* bytes, std::size_t* firstPass = nullptr) {
  TraceData& d = b.store().data();
  const auto alloc = static_cast<uint16_t>(d.hooks.size());
  if (d.hooks.size() == sizeof(test::kTestHooks) / sizeof(test::kTestHooks[0])) {
    d.hooks.push_back({"cuMemAlloc", ApiLayer::Driver, ApiKind::Alloc});
    d.hooks.push_back({"cuMemFree", ApiLayer::Driver, ApiKind::Free});
  }
  const uint16_t free = alloc + 1;
  auto call = [&](uint32_t tid, uint16_t hook, uint64_t seq, uint64_t t0, uint64_t t1, uint64_t ptr, uint64_t size,
                  int8_t device, int32_t result = 0) {
    Record r;
    memset(&r, 0, sizeof(r));
    r.type = RecordType::Api;
    r.seq = seq;
    r.t0 = t0;
    r.t1 = t1;
    r.hook = hook;
    r.result = result;
    r.mem.ptr = ptr;
    r.mem.bytes = size;
    r.mem.device = device;
    r.mem.copyKind = 0xff;
    b.store().decode(tid, tid, r, nullptr, 0);
  };
  call(11, alloc, 1, 100, 200, 0xa000, 1000, 0);
  call(12, alloc, 1, 250, 350, 0xc000, 500, 0);
  call(11, alloc, 2, 300, 400, 0xb000, 4096, 1);
  b.mem(11, test::kCudaMalloc, 3, 450, 500, 64);  // runtime layer: not counted
  call(11, alloc, 4, 520, 530, 0xe000, 8, 0, /*result=*/2);
  call(12, free, 2, 600, 650, 0x9999, 0, 0);  // never allocated
  call(12, alloc, 3, 700, 720, 0xd000, 32, -1);
  if (writer != nullptr) {
    writer->encodePass(d, 1000, *bytes);
    *firstPass = bytes->size();
    b.store().releaseEvents();
    writer->eventsReleased();
  }
  // Thread 12's free of 0xb000 starts before thread 11's free of 0xa000 but is recorded later.
  call(11, free, 5, 1100, 1150, 0xa000, 0, 0);
  call(12, free, 4, 1050, 1200, 0xb000, 0, 1);
  call(11, free, 6, 1300, 1310, 0xa000, 0, 0);  // no longer allocated
  call(11, free, 7, 1320, 1330, 0, 0, 0);
  call(12, alloc, 5, 1400, 1500, 0xa000, 2000, 0);
  call(12, free, 6, 1600, 1650, 0xd000, 0, -1);
  b.finish(2000);
  if (writer != nullptr) writer->encodeEnd(d, 2000, chromeTraceMetadata(d), *bytes);
}

// "NAME@TS=VALUE" for each "ph":"C" event of a Chrome trace, in order (TS as written, in us).
std::vector<std::string> chromeCounters(const std::string& json) {
  std::vector<std::string> out;
  auto field = [&](std::size_t from, const char* key, char stop) {
    const std::size_t at = json.find(key, from) + std::strlen(key);
    return json.substr(at, json.find(stop, at) - at);
  };
  for (std::size_t at = json.find("{\"ph\":\"C\""); at != std::string::npos; at = json.find("{\"ph\":\"C\"", at + 1))
    out.push_back(field(at, "\"name\":\"", '"') + "@" + field(at, "\"ts\":", ',') + "=" + field(at, "\"allocated\":", '}'));
  return out;
}

// What a window of the whole rebuild holds (what `cutrace export` cut before the rebuild took a
// window): each thread's events and the device work that PfWindow::holds, all else as it was.
void cutToWindow(TraceData& data, const PfWindow& w) {
  for (ThreadTrack& t : data.threads) {
    BlockList<Event> kept;
    for (const Event& e : t.events) {
      const int64_t start = data.toTraceNs(e.start);
      if (w.holds(start, e.kind == EventKind::NvtxMark ? start : data.toTraceNs(e.end))) REQUIRE(kept.push_back(e));
    }
    t.events = std::move(kept);
  }
  std::erase_if(data.device, [&](const DeviceEvent& d) {
    return !w.holds(data.toTraceNs(d.start), data.toTraceNs(d.end));
  });
}

}  // namespace

TEST_CASE("pftrace writer: device memory counters pass by pass, as the Chrome trace counts them", "[perfetto]") {
  TraceBuilder streamed, whole;
  PerfettoWriter writer;
  std::string bytes;
  std::size_t firstPass = 0;
  feedMemory(streamed, &writer, &bytes, &firstPass);
  feedMemory(whole, nullptr, nullptr);
  const TraceData& all = whole.store().data();

  struct Seen : PerfettoVisitor {
    const TraceData* data = nullptr;
    std::vector<std::string> counters;
    std::vector<std::string> tracks;
    void track(const PfTrack& t) override {
      if (t.kind == PfTrackKind::Other) tracks.push_back(t.name + (t.parent == processUuid(4242) ? " (process)" : ""));
    }
    void counter(const PfTrack& t, uint32_t sequence, uint64_t ns, int64_t v) override {
      Sink ts;
      ts.putMicros(static_cast<int64_t>(ns - data->meta.originMonotonicNs));
      counters.push_back(t.name + "@" + ts.text() + "=" + std::to_string(v) + (sequence == 1 ? "" : " off sequence 1"));
    }
  } seen;
  seen.data = &all;
  std::string error;
  REQUIRE(readPerfettoBytes(bytes, seen, error));
  CHECK(seen.tracks == std::vector<std::string>{"GPU 0 memory (process)", "GPU 1 memory (process)", "GPU memory (process)"});
  const std::vector<std::string> expected = {
      "GPU 0 memory@0.2=1000", "GPU 0 memory@0.35=1500", "GPU 1 memory@0.4=4096", "GPU memory@0.72=32",
      "GPU 1 memory@1.05=0",   "GPU 0 memory@1.1=500",   "GPU 0 memory@1.5=2500", "GPU memory@1.6=0"};
  CHECK(seen.counters == expected);
  CHECK(chromeCounters(chrome(all)) == expected);
  // The first pass wrote its own changes, before its events left memory.
  seen.counters.clear();
  REQUIRE(readPerfettoBytes(std::string_view(bytes).substr(0, firstPass), seen, error));
  CHECK(seen.counters == std::vector<std::string>(expected.begin(), expected.begin() + 4));

  // The rebuild ignores them: the Chrome trace read back from the stream is the whole run's.
  TraceData back;
  REQUIRE(readPerfettoTraceBytes(bytes, back, error));
  CHECK(back.eventCount() == all.eventCount());
  CHECK(chrome(back) == chrome(all));
}

// Text a program makes up per call (a step number in every NVTX message) must not grow memory
// with the run: a text seen once, or past the pool's cap, lives only while its event is in memory,
// is written inline (not interned) and still reads back, folds and names a range left open across
// passes. A label (seen again) is interned from its second sighting, while the pool has room.
TEST_CASE("pftrace writer: one-off NVTX messages past the string cap do not stay in memory", "[perfetto][strings]") {
  TraceBuilder b;
  Store& store = b.store();
  TraceData& d = store.data();
  store.setStringCap(4, 1 << 20);  // "" and three messages
  PerfettoWriter writer;
  FoldBuilder folded;
  std::string bytes;
  auto pass = [&](uint64_t now) {
    writer.encodePass(d, now, bytes);
    folded.pass(d);
    store.releaseEvents();
    writer.eventsReleased();
  };
  for (uint16_t i = 0; i < 6; ++i) {  // each label twice: pooled at its second push
    b.push(7, i, 10 + 2 * i, 0, "warm " + std::to_string(i / 2));
    b.pop(7, 11 + 2 * i, 0);
  }
  pass(22);
  CHECK(d.strings.size() == 4);
  CHECK(d.strings.transientCount() == 0);
  b.push(7, 6, 23, 0, "outer 42");  // transient, open across every pass below
  constexpr int kSteps = 50;
  for (int i = 0; i < kSteps; ++i) {
    const uint64_t t = 30 + 10 * static_cast<uint64_t>(i);
    // The same label every second step, past the cap: transient every time.
    b.push(7, 7 + static_cast<uint64_t>(i), t, 1, i % 2 == 0 ? "step " + std::to_string(i) : std::string("late"));
    b.pop(7, t + 5, 1);
    if (i % 10 == 9) {
      pass(t + 6);
      CHECK(d.strings.transientCount() == 1);  // the open range's name only
    }
  }
  b.pop(7, 1000, 0);
  pass(1001);
  CHECK(d.strings.size() == 4);
  CHECK(d.strings.transientCount() == 0);
  b.finish(2000);
  const FoldedStacks f = folded.finish(d);
  CHECK(f.find("outer #42;step #8") != nullptr);
  CHECK(f.find("outer #42;late") != nullptr);
  CHECK(f.find("outer #42") != nullptr);

  std::vector<std::string> names = readBackNames(bytes, d);
  REQUIRE(names.size() == 6 + 1 + kSteps);
  for (int i = 0; i < 3; ++i) CHECK(std::count(names.begin(), names.end(), "warm " + std::to_string(i)) == 2);
  CHECK(std::count(names.begin(), names.end(), "outer 42") == 1);
  for (int i = 0; i < kSteps; i += 2) CHECK(std::count(names.begin(), names.end(), "step " + std::to_string(i)) == 1);
  CHECK(std::count(names.begin(), names.end(), "late") == kSteps / 2);
}

// PyTorch's op ranges (emit_nvtx) are one text per call, ~100 bytes. Where a text is PyTorch's own
// spelling, the drain takes it apart and the stream writes the parts; any other text is written
// whole. Either way the reader gives each range its text back, and the Chrome trace and folded
// stacks of the read-back equal those of the recorded events.
TEST_CASE("pftrace writer: PyTorch's op ranges are written as their parts and read back as their texts", "[perfetto][torch]") {
  TraceBuilder b;
  Store& store = b.store();
  TraceData& d = store.data();
  PerfettoWriter writer;
  std::string bytes;
  std::size_t taken = 0;  // ranges decoded as parts
  auto pass = [&](uint64_t now) {
    for (std::size_t i = 0; i < d.threads.at(0).events.size(); ++i)
      taken += (d.threads.at(0).events[i].torch.fields & kTorchParts) != 0;
    writer.encodePass(d, now, bytes);
    store.releaseEvents();
    writer.eventsReleased();
  };
  const std::vector<std::string> others = {
      "aten::add, op_id = 3, seq = 2",  // PyTorch's order is seq first: written whole
      "aten::add, seq = 07", "aten::add, seq = 7, sizes = [[1]]junk", "  aten::pad, seq = 3", "step 12", "forward",
      "aten::add, seq = 1, scope = 2"};
  std::vector<std::string> texts;
  uint64_t seq = 0, t = 10;
  // Open across every pass below: its parts (transient input_op_ids among them) outlive them.
  const std::string outer = "autograd::engine::evaluate_function: AddBackward0, op_id = 1995, input_op_ids = [7, 0]";
  b.push(7, seq++, t++, 0, outer);
  texts.push_back(outer);
  constexpr int kOps = 2000;
  for (int i = 0; i < kOps; ++i) {
    std::string text;
    switch (i % 4) {
      case 0: text = "aten::addmm, seq = " + std::to_string(i) + ", op_id = " + std::to_string(3 * i) +
                     ", sizes = [[256], [2048, 256], [256, 2048]], input_op_ids = [" + std::to_string(3 * i - 1) + ", 0]"; break;
      case 1: text = "MulBackward0, stashed seq = " + std::to_string(i); break;
      case 2: text = "aten::empty, sizes = [[" + std::to_string(i % 7) + ", 3]]"; break;
      default: text = others[static_cast<std::size_t>(i / 4) % others.size()]; break;
    }
    b.push(7, seq++, t, 1, text);
    b.pop(7, t + 3, 1);
    texts.push_back(text);
    t += 5;
    if (i % 500 == 499) pass(t);
  }
  b.pop(7, t, 0);
  pass(t + 1);
  CHECK(taken == 3 * kOps / 4 + 1);  // and the outer range
  b.finish(t + 10);

  std::size_t readAsParts = 0;
  std::vector<std::string> names = readBackNames(bytes, d, &readAsParts);
  CHECK(readAsParts == taken);  // read back as the drain held them, not as texts
  std::sort(names.begin(), names.end());
  std::sort(texts.begin(), texts.end());
  CHECK(names == texts);
  // Both packets of a range, on average over this mix: 37 bytes as parts, 59 with every text
  // written whole (measured).
  CHECK(bytes.size() / (kOps + 1) < 45);
}

TEST_CASE("pftrace reader: a windowed rebuild is the whole rebuild cut to the window", "[perfetto]") {
  SampleStream s;
  s.build();
  // Every event boundary of the sample (CLOCK_MONOTONIC; the origin is 50), and one ns after.
  std::vector<int64_t> points;
  for (int64_t t : {0, 100, 150, 200, 300, 800, 900, 950, 1000, 1100, 1200, 1500, 1900, 2000, 2300, 2400, 2500, 2600,
                    2700, 2800, 3050, 3100, 3400, 3450, 3500, 3600, 3700, 4500, 5000, 6000}) {
    points.push_back(t - 50);
    points.push_back(t - 49);
  }
  std::size_t withFlows = 0, partial = 0;
  for (const std::size_t end : {s.passEnds[1], s.bytes.size()}) {
    const std::string_view bytes = std::string_view(s.bytes).substr(0, end);
    TraceData whole;
    std::string error;
    REQUIRE(readPerfettoTraceBytes(bytes, whole, error));
    for (std::size_t i = 0; i < points.size(); ++i) {
      for (std::size_t j = i + 1; j < points.size(); ++j) {
        const PfWindow w{points[i], points[j]};
        CAPTURE(end, w.fromNs, w.toNs);
        TraceData expected, back;
        PfRebuildInfo info;
        REQUIRE(readPerfettoTraceBytes(bytes, expected, error));
        cutToWindow(expected, w);
        REQUIRE(readPerfettoTraceBytes(bytes, back, error, &info, PfRebuildOptions{true, w}));
        CHECK(back.eventCount() == expected.eventCount());
        CHECK(info.outsideWindow == whole.eventCount() - expected.eventCount());
        CHECK(back.device.size() == expected.device.size());
        CHECK(back.threads.size() == whole.threads.size());
        CHECK(back.stacks.size() == whole.stacks.size());
        const std::string a = chrome(expected);
        CHECK(chrome(back) == a);
        CHECK(folded(back, true) == folded(expected, true));
        CHECK(folded(back, false) == folded(expected, false));
        if (a.find("\"ph\":\"s\"") != std::string::npos) ++withFlows;
        if (expected.eventCount() > 0 && expected.eventCount() < whole.eventCount()) ++partial;
      }
    }
  }
  // Not vacuous: windows that cut the trace and keep device work linked to its launch.
  CHECK(withFlows > 50);
  CHECK(partial > 500);
}

// Device work reaches the stream pass by pass (memory holds one pass of it), with its CUDA
// call's record from CUPTI possibly a pass earlier: the stream reads back into the same device
// events and host links as a run written at its end in one go.
TEST_CASE("pftrace writer: device work pass by pass, linked to calls reported passes before", "[perfetto][device]") {
  auto run = [](bool release) {
    TraceBuilder b;
    Store& store = b.store();
    TraceData& d = store.data();
    PerfettoWriter writer;
    std::string bytes;
    auto pass = [&](uint64_t now) {
      writer.encodePass(d, now, bytes);
      if (!release) return;
      store.releaseEvents();
      writer.eventsReleased();
      CHECK(d.device.empty());
    };
    const uint32_t kernel = d.strings.intern("_Z1kv");
    DeviceEvent k1, k2;
    k1.start = 950, k1.end = 1900, k1.correlation = 41, k1.device = 0, k1.stream = 7, k1.name = kernel;
    k2.start = 2000, k2.end = 2400, k2.correlation = 42, k2.device = 0, k2.stream = 7, k2.name = kernel;
    b.launch(11, test::kCudaLaunchKernel, 0, 200, 900, "_Z1kv");
    d.apiActivity.push_back({210, 890, 11, 41});
    d.device.push_back(k1);
    pass(1000);
    b.launch(11, test::kCudaLaunchKernel, 1, 1200, 1500, "_Z1kv");
    d.apiActivity.push_back({1210, 1490, 11, 42});
    pass(1600);
    d.device.push_back(k2);  // its call's record came a pass earlier
    pass(2500);
    b.finish(3000);
    writer.encodeEnd(d, 3000, chromeTraceMetadata(d), bytes);
    TraceData back;
    std::string error;
    const PfMetadataSource known{nullptr, nullptr, &d};
    REQUIRE(rebuildPerfettoBytes(bytes, known, back, error));
    return back;
  };
  TraceData streamed = run(true);
  TraceData whole = run(false);
  CHECK(whole.device.size() == 2);
  REQUIRE(streamed.device.size() == 2);
  const std::vector<HostLink> links = linkDeviceToHost(streamed);
  REQUIRE(links.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    REQUIRE(links[i].thread == 0);
    CHECK(streamed.threads[0].events[links[i].event].seq == streamed.device[i].correlation - 41);
  }
  CHECK(chrome(streamed) == chrome(whole));
}

// Flows while CUPTI records the device timeline: each outermost call that can make device work
// carries an id of its own (its thread and seq) in flow_ids, and the device slices of that call
// carry the same id, found from CUPTI's record of the call even passes later; a graph launch's
// slices all carry its id (a chain from the launch). Calls nested in another, and calls that
// make no device work, carry none; without CUPTI nothing does.
TEST_CASE("pftrace writer: flows join each call to its device work, passes apart", "[perfetto][device]") {
  using Flow = std::pair<uint64_t, uint64_t>;  // track (0: the sequence's default, the thread's), id
  auto run = [](bool cupti) {
    TraceBuilder b;
    Store& store = b.store();
    TraceData& d = store.data();
    if (cupti) d.cupti.state = "on";
    PerfettoWriter writer;
    std::string bytes;
    auto pass = [&](uint64_t now) {
      writer.encodePass(d, now, bytes);
      store.releaseEvents();
      writer.eventsReleased();
    };
    const uint32_t kernel = d.strings.intern("_Z1kv");
    auto device = [&](uint64_t start, uint32_t correlation) {
      DeviceEvent k;
      k.start = start, k.end = start + 50, k.correlation = correlation, k.device = 0, k.stream = 7, k.name = kernel;
      d.device.push_back(k);
    };
    b.launch(11, test::kCudaLaunchKernel, 0, 200, 900, "_Z1kv");
    b.launch(11, test::kCuLaunchKernel, 1, 300, 800, "_Z1kv", kNestedCallBit);  // inside the runtime call
    d.apiActivity.push_back({210, 890, 11, 41});
    device(950, 41);
    pass(1000);
    b.api(11, test::kCudaGraphLaunch, 2, 1200, 1500);
    d.apiActivity.push_back({1210, 1490, 11, 42});
    pass(1600);
    device(2000, 42);  // the graph's kernels, a pass after the call
    device(2100, 42);
    b.launch(11, test::kCudaLaunchKernel, 3, 2200, 2300, "_Z1kv");  // its kernel never reported
    b.api(11, test::kCudaDeviceSynchronize, 4, 2400, 2450);
    pass(2500);
    b.finish(3000);
    // The metadata counts device work that left memory, linked as it was written.
    CHECK(writer.linkedDevice() == (cupti ? 3 : 0));
    d.releasedLinked = writer.linkedDevice();
    const std::string meta = chromeTraceMetadata(d);
    CHECK(meta.find(cupti ? "\"device_events\":3,\"linked_to_host\":3}" : "\"linked_to_host\":0}") != std::string::npos);
    writer.encodeEnd(d, 3000, meta, bytes);
    std::vector<Flow> flows;
    proto::Reader trace(bytes);
    proto::Reader::Field packet;
    while (trace.next(packet)) {
      proto::Reader fields = packet.nested();
      proto::Reader::Field f;
      while (fields.next(f)) {
        if (f.number != pf::TracePacket::kTrackEvent) continue;
        proto::Reader event = f.nested();
        proto::Reader::Field e;
        uint64_t track = 0;
        std::vector<uint64_t> ids;
        while (event.next(e)) {
          if (e.number == pf::TrackEvent::kTrackUuid) track = e.value;
          if (e.number == pf::TrackEvent::kFlowIds) ids.push_back(e.value);
          CHECK(e.number != pf::TrackEvent::kTerminatingFlowIds);
        }
        for (uint64_t id : ids) flows.push_back({track, id});
      }
    }
    CHECK_FALSE(trace.failed());
    return flows;
  };
  const uint64_t gpu = deviceUuid(4242, 0, 7);
  const auto id = [](uint64_t seq) { return launchFlowId(4242, 11, seq); };
  // In the order written: a pass's host events, then its device work.
  const std::vector<Flow> expected = {{0, id(0)}, {gpu, id(0)}, {0, id(2)}, {0, id(3)}, {gpu, id(2)}, {gpu, id(2)}};
  CHECK(run(true) == expected);
  CHECK(run(false).empty());

  // A thread's calls are forgotten a minute after its last one: device work reported later has
  // no flow (and the writer keeps no list for the threads that ended).
  {
    TraceBuilder b;
    TraceData& d = b.store().data();
    d.cupti.state = "on";
    PerfettoWriter writer;
    std::string bytes;
    b.launch(11, test::kCudaLaunchKernel, 0, 200, 900, "_Z1kv");
    d.apiActivity.push_back({210, 890, 11, 41});
    writer.encodePass(d, 1000, bytes);
    b.store().releaseEvents();
    writer.eventsReleased();
    writer.encodePass(d, 900 + 61'000'000'000ull, bytes);  // a minute later: pruned
    DeviceEvent k;
    k.start = 950, k.end = 1000, k.correlation = 41, k.device = 0, k.stream = 7;
    d.device.push_back(k);
    writer.encodePass(d, 900 + 62'000'000'000ull, bytes);
    CHECK(writer.linkedDevice() == 0);
  }
  // CUPTI's records of a kernel and of its call come in the pass before the call's own record
  // (it ended past that pass's anchor): the kernel is held a pass and joins its call. One whose
  // call never comes is held one pass, no more.
  {
    TraceBuilder b;
    TraceData& d = b.store().data();
    d.cupti.state = "on";
    PerfettoWriter writer;
    std::string bytes;
    const auto pass = [&](uint64_t now) {
      writer.encodePass(d, now, bytes);
      b.store().releaseEvents();
      writer.eventsReleased();
    };
    const auto kernel = [&](uint64_t start, uint32_t correlation) {
      DeviceEvent k;
      k.start = start, k.end = start + 50, k.correlation = correlation, k.device = 0, k.stream = 7;
      d.device.push_back(k);
    };
    struct Device : PerfettoVisitor {
      std::vector<bool> linked;  // by slice, in file order
      void slice(const PfSlice& s) override {
        if (s.track->kind == PfTrackKind::Device) linked.push_back(s.flowOut);
      }
    } written;
    d.apiActivity.push_back({210, 890, 11, 41});
    kernel(950, 41);
    kernel(960, 99);  // no record of its call
    pass(900);
    CHECK(writer.linkedDevice() == 0);
    b.launch(11, test::kCudaLaunchKernel, 0, 200, 905, "_Z1kv");
    pass(2000);
    CHECK(writer.linkedDevice() == 1);
    writer.endDevice(d);
    bytes += writer.pending();
    writer.clearPending();
    std::string error;
    REQUIRE(readPerfettoBytes(bytes, written, error));
    CHECK(written.linked == std::vector<bool>{true, false});
  }
  // Under a capture mode CUPTI records from the first CUDA call: device work whose call CUPTI
  // reported but cutrace did not record (outside the capture) is left out and counted; work of a
  // recorded call, and work whose call CUPTI never reported, is written. Under `all` nothing is
  // left out.
  for (const std::string capture : {"nvtx:step", "all"}) {
    TraceBuilder b;
    TraceData& d = b.store().data();
    d.cupti.state = "on";
    d.meta.capture = capture;
    PerfettoWriter writer;
    std::string bytes;
    const auto kernel = [&](uint64_t start, uint32_t correlation) {
      DeviceEvent k;
      k.start = start, k.end = start + 50, k.correlation = correlation, k.device = 0, k.stream = 7;
      d.device.push_back(k);
    };
    struct Device : PerfettoVisitor {
      std::vector<uint64_t> starts;
      void slice(const PfSlice& s) override {
        if (s.track->kind == PfTrackKind::Device) starts.push_back(s.startNs);
      }
    } written;
    d.apiActivity.push_back({110, 190, 11, 40});  // a launch before the capture: not recorded
    b.launch(11, test::kCudaLaunchKernel, 0, 200, 300, "_Z1kv");
    d.apiActivity.push_back({210, 290, 11, 41});
    kernel(400, 40);
    kernel(500, 41);
    kernel(600, 77);  // CUPTI never reported its call
    writer.encodePass(d, 1000, bytes);
    writer.endDevice(d);
    bytes += writer.pending();
    writer.clearPending();
    std::string error;
    REQUIRE(readPerfettoBytes(bytes, written, error));
    std::sort(written.starts.begin(), written.starts.end());  // held work comes at the end
    if (capture == "all") {
      CHECK(written.starts == std::vector<uint64_t>{400, 500, 600});
      CHECK(writer.outsideCapture() == 0);
    } else {
      CHECK(written.starts == std::vector<uint64_t>{500, 600});
      CHECK(writer.outsideCapture() == 1);
    }
    CHECK(writer.linkedDevice() == 1);
  }
  // Ids of different threads, seqs and processes differ.
  CHECK(launchFlowId(4242, 11, 0) != launchFlowId(4242, 12, 0));
  CHECK(launchFlowId(4242, 11, 1) != launchFlowId(4243, 11, 1));
  CHECK(launchFlowId(0, 0, 0) != 0);
}

// The op range a kernel carries (annotations op, sizes, op_id) is the innermost PyTorch op range
// open around its launch on the launch's thread, over every domain (the Chrome trace's rule,
// torch_ops.h): random nests of op ranges, plain ranges and a named domain's op ranges, open
// across passes, with kernels delivered a pass later or before their launch was decoded.
TEST_CASE("pftrace writer: device work carries the op range around its launch", "[perfetto][device][torch]") {
  TraceBuilder b;
  Store& store = b.store();
  TraceData& d = store.data();
  d.cupti.state = "on";
  PerfettoWriter writer;
  std::string bytes;
  const auto pass = [&](uint64_t now) {
    writer.encodePass(d, now, bytes);
    store.releaseEvents();
    writer.eventsReleased();
  };
  const uint32_t domain = b.name("library");
  struct Open {
    uint64_t start;
    bool op;
    std::string name;
    uint64_t opId;
  };
  std::vector<Open> stacks[2];  // default domain, `domain`
  struct Expected {
    std::string op, sizes;
    uint64_t opId = 0;
  };
  std::map<uint64_t, Expected> expected;  // by correlation
  std::vector<DeviceEvent> waiting;
  std::mt19937 random(7);
  uint64_t t = 1000, seq = 0, opId = 0;
  uint32_t correlation = 1;
  for (int step = 0; step < 4000; ++step) {
    t += 10;
    const unsigned what = random() % 8;
    const int s = static_cast<int>(random() % 2);
    if (what <= 1 && stacks[s].size() < 6) {  // an op range, or on the default domain a plain one
      const bool op = s == 1 || what == 0;
      const std::string name = "aten::op" + std::to_string(random() % 5);
      const std::string sizes = ", sizes = [[" + std::to_string(random() % 3) + "]]";
      // One in four not in PyTorch's exact spelling (fields in another order): kept as text by
      // the drain, an op all the same to the Chrome trace (parseTorchRange).
      const bool loose = random() % 4 == 0;
      ++opId;
      const std::string text = !op    ? std::string("step")
                               : loose ? name + ", op_id = " + std::to_string(opId) + ", seq = " + std::to_string(seq) + sizes
                                       : name + ", seq = " + std::to_string(seq) + ", op_id = " + std::to_string(opId) + sizes;
      b.push(11, seq++, t, static_cast<uint16_t>(stacks[s].size()), text, s == 0 ? 0 : domain);
      stacks[s].push_back(Open{t, op, text, opId});
    } else if (what == 2 && !stacks[s].empty()) {
      stacks[s].pop_back();
      b.pop(11, t, static_cast<uint16_t>(stacks[s].size()), s == 0 ? 0 : domain);
    } else if (what <= 5) {
      // The innermost op range open now: the one begun last, of either domain.
      const Open* inner = nullptr;
      for (const auto& stack : stacks)
        for (auto it = stack.rbegin(); it != stack.rend(); ++it)
          if (it->op) {
            if (inner == nullptr || it->start > inner->start) inner = &*it;
            break;
          }
      Expected e;
      if (inner != nullptr) {
        TorchOp parsed;
        REQUIRE(parseTorchRange(inner->name, parsed));
        e = Expected{std::string(parsed.name), std::string(parsed.sizes), parsed.opId};
      }
      expected[correlation] = e;
      d.apiActivity.push_back({t + 1, t + 9, 11, correlation});
      DeviceEvent k;
      k.start = t + 20, k.end = t + 30, k.correlation = correlation++, k.device = 0, k.stream = 7;
      const bool early = what == 5;  // CUPTI delivers it before the launch's record is decoded
      if (early) {
        d.device.push_back(k);
        pass(t);
      } else {
        waiting.push_back(k);
      }
      b.launch(11, test::kCudaLaunchKernel, seq++, t, t + 10, "_Z1kv");
      t += 10;
    } else if (what == 6) {
      pass(t);
      for (const DeviceEvent& k : waiting) d.device.push_back(k);
      waiting.clear();
    }
  }
  for (const DeviceEvent& k : waiting) d.device.push_back(k);
  pass(t + 100);
  b.finish(t + 200);
  writer.endDevice(d);
  writer.encodeEnd(d, t + 200, chromeTraceMetadata(d), bytes);

  struct Device : PerfettoVisitor {
    std::map<uint64_t, Expected> seen;
    uint64_t unlinked = 0;
    void slice(const PfSlice& s) override {
      if (s.track->kind != PfTrackKind::Device) return;
      unlinked += !s.flowOut;
      const PfAnnotation* c = s.find(Ann::Correlation);
      const PfAnnotation* op = s.find(Ann::Op);
      const PfAnnotation* sizes = s.find(Ann::Sizes);
      const PfAnnotation* id = s.find(Ann::OpId);
      seen[c != nullptr ? c->value : 0] = Expected{op != nullptr ? std::string(op->text) : std::string(),
                                                   sizes != nullptr ? std::string(sizes->text) : std::string(),
                                                   id != nullptr ? id->value : 0};
    }
  } read;
  std::string error;
  REQUIRE(readPerfettoBytes(bytes, read, error));
  CHECK(read.unlinked == 0);
  REQUIRE(read.seen.size() == expected.size());
  std::size_t inOps = 0, mismatched = 0;
  for (const auto& [c, e] : expected) {
    const Expected& got = read.seen[c];
    inOps += !e.op.empty();
    mismatched += got.op != e.op || got.sizes != e.sizes || got.opId != e.opId;
  }
  CHECK(mismatched == 0);
  CHECK(inOps > expected.size() / 3);
  CHECK(inOps < expected.size());
}
