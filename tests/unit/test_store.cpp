#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <set>

#include "collector/collector.h"
#include "exporters/chrome_trace.h"
#include "exporters/folded.h"
#include "exporters/perfetto_reader.h"
#include "exporters/perfetto_writer.h"
#include "heap_meter.h"
#include "trace_builder.h"

using namespace cutrace;
using cutrace::test::TraceBuilder;
using cutrace::test::TestThread;

namespace {

const Event* findNamed(const TraceData& d, const ThreadTrack& t, const std::string& name) {
  for (const Event& e : t.events)
    if (e.kind != EventKind::Api && d.strings.get(e.name) == name) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("push/pop pairs become nested ranges with the push's seq", "[store]") {
  TraceBuilder b;
  b.push(1, 0, 100, 0, "outer");
  b.push(1, 1, 200, 1, "inner");
  b.pop(1, 300, 1);
  b.pop(1, 400, 0);
  const TraceData& d = b.finish(1000);
  REQUIRE(d.threads.size() == 1);
  const ThreadTrack& t = d.threads[0];
  REQUIRE(t.events.size() == 2);
  const Event* outer = findNamed(d, t, "outer");
  const Event* inner = findNamed(d, t, "inner");
  REQUIRE(outer);
  REQUIRE(inner);
  REQUIRE(outer->start == 100);
  REQUIRE(outer->end == 400);
  REQUIRE(outer->seq == 0);
  REQUIRE(inner->start == 200);
  REQUIRE(inner->end == 300);
  REQUIRE(inner->seq == 1);
  REQUIRE(outer->flags == 0);
}

TEST_CASE("a lost push leaves its pop unmatched instead of closing the wrong range", "[store]") {
  TraceBuilder b;
  b.push(1, 0, 100, 0, "outer");
  // push of depth 1 dropped (seq 1 never arrives)
  b.pop(1, 300, 1);  // belongs to the lost push: must not close "outer"
  b.pop(1, 400, 0);
  const TraceData& d = b.finish(1000);
  REQUIRE(d.threads[0].events.size() == 1);
  const Event& outer = d.threads[0].events[0];
  REQUIRE(outer.start == 100);
  REQUIRE(outer.end == 400);
  REQUIRE(outer.flags == 0);
}

TEST_CASE("a lost pop is closed by the next range at the same level, flagged", "[store]") {
  TraceBuilder b;
  b.push(1, 0, 100, 0, "first");
  // its pop (depth 0) was dropped
  b.push(1, 1, 500, 0, "second");
  b.pop(1, 600, 0);
  const TraceData& d = b.finish(1000);
  const ThreadTrack& t = d.threads[0];
  REQUIRE(t.events.size() == 2);
  const Event* first = findNamed(d, t, "first");
  REQUIRE(first->end == 500);
  REQUIRE((first->flags & kEventEndLost) != 0);
  REQUIRE(findNamed(d, t, "second")->flags == 0);
}

TEST_CASE("ranges still open at the end are closed there and flagged", "[store]") {
  TraceBuilder b;
  b.push(7, 0, 100, 0, "never popped");
  const TraceData& d = b.finish(900);
  REQUIRE(d.threads[0].events.size() == 1);
  REQUIRE(d.threads[0].events[0].end == 900);
  REQUIRE((d.threads[0].events[0].flags & kEventUnclosed) != 0);
}

TEST_CASE("domains keep separate push/pop stacks", "[store]") {
  TraceBuilder b;
  const uint32_t dom = b.name("mydomain");
  b.push(1, 0, 100, 0, "default-range");
  b.push(1, 1, 150, 0, "domain-range", dom);
  b.pop(1, 200, 0);       // default domain pop
  b.pop(1, 250, 0, dom);  // domain pop
  const TraceData& d = b.finish(1000);
  const ThreadTrack& t = d.threads[0];
  REQUIRE(findNamed(d, t, "default-range")->end == 200);
  const Event* inDomain = findNamed(d, t, "domain-range");
  REQUIRE(inDomain->end == 250);
  REQUIRE(d.strings.get(inDomain->domain) == "mydomain");
}

TEST_CASE("start/end ranges pair across threads in either drain order", "[store]") {
  TraceBuilder b;
  b.end(2, 700, 55);                 // thread 2 drained first: end before start
  b.start(1, 3, 100, 55, "span");
  b.start(1, 4, 200, 56, "span2");
  b.end(3, 800, 56);
  const TraceData& d = b.finish(1000);
  REQUIRE(d.threads.size() == 3);
  std::size_t spans = 0;
  for (const auto& t : d.threads) {
    for (const Event& e : t.events) {
      REQUIRE(e.kind == EventKind::NvtxSpan);
      REQUIRE(t.tid == 1);  // shown on the thread that started it
      ++spans;
      if (e.rangeId == 55) REQUIRE(e.end == 700);
      if (e.rangeId == 56) REQUIRE(e.end == 800);
    }
  }
  REQUIRE(spans == 2);
}

TEST_CASE("API records keep payloads and kernel names move to the pool", "[store]") {
  TraceBuilder b;
  b.launch(1, test::kCudaLaunchKernel, 0, 10, 50, "_Z6kernelPf");
  b.launch(1, test::kCuLaunchKernel, 1, 20, 40, nullptr);
  b.mem(1, test::kCudaMalloc, 2, 60, 70, 4096);
  const TraceData& d = b.finish(100);
  const auto& ev = d.threads[0].events;
  REQUIRE(ev.size() == 3);
  REQUIRE(d.strings.get(ev[0].launch.kernelName) == "_Z6kernelPf");
  REQUIRE(ev[0].launch.gridX == 4);
  REQUIRE(ev[1].launch.kernelName == 0);
  REQUIRE(ev[2].mem.bytes == 4096);
}

TEST_CASE("work the hooks flagged captured is flagged, its stack id and nesting kept", "[store]") {
  enum : uint16_t { kLaunch, kDriverLaunch };
  const HookDescriptor hooks[] = {
      {"cudaLaunchKernel", ApiLayer::Runtime, ApiKind::Launch},
      {"cuLaunchKernel", ApiLayer::Driver, ApiKind::Launch},
  };
  NameTable names;
  names.init(64, 1 << 16);
  Store store(names);
  store.data().hooks.assign(std::begin(hooks), std::end(hooks));
  uint64_t seq = 0, t = 10;
  const auto call = [&](uint16_t hook, uint32_t stackWord) {
    Record r;
    memset(&r, 0, sizeof(r));
    r.type = RecordType::Api;
    r.hook = hook;
    r.seq = seq++;
    r.t0 = t;
    r.t1 = t + 5;
    t += 10;
    r.launch.stream = 0xa0;
    r.launch.stack = stackWord;
    store.decode(1, 7, r, nullptr, 0);
  };
  call(kLaunch, 3);
  call(kLaunch, 3 | kCapturedBit);
  call(kDriverLaunch, kNestedCallBit | kCapturedBit);
  call(kDriverLaunch, kNestedCallBit);
  const auto& ev = store.data().threads[0].events;
  REQUIRE(ev.size() == 4);
  std::vector<std::pair<uint8_t, uint32_t>> seen;
  for (std::size_t i = 0; i < ev.size(); ++i) seen.emplace_back(ev[i].flags, stackIdOf(ev[i]));
  REQUIRE(seen == std::vector<std::pair<uint8_t, uint32_t>>{
                      {0, 3}, {kEventCaptured, 3}, {kEventInsideCall | kEventCaptured, 0}, {kEventInsideCall, 0}});
}

TEST_CASE("nvtxNameOsThread names the thread in the output", "[store]") {
  TraceBuilder b;
  b.threadName(1, 1, "worker-A");
  b.mark(1, 0, 10, "m");
  const TraceData& d = b.finish(100);
  REQUIRE(d.threads[0].name == "worker-A");
}

TEST_CASE("a range whose pop was lost inside a CUDA call ends inside that call", "[store]") {
  // A signal handler pushed "handler" and marked while the thread was inside cuCtxSynchronize;
  // its pop was dropped. The call's record arrives after the handler's (it ended later); the
  // thread's next pop (depth 0) closes the range. Closed at that pop, it would end after the
  // call it lies in: X events that overlap without nesting (Perfetto moves or drops them).
  TraceBuilder b;
  b.push(1, 0, 100, 0, "step");
  b.push(1, 2, 200, 1, "handler");
  b.mark(1, 3, 210, "handler_mark");
  b.api(1, 0, 1, 150, 300);  // the call the handler interrupted: began before the push
  b.api(1, 0, 4, 350, 380);  // a later call, after the handler
  b.pop(1, 400, 0);
  const TraceData& d = b.finish(1000);
  const ThreadTrack& t = d.threads[0];
  const Event* handler = findNamed(d, t, "handler");
  const Event* step = findNamed(d, t, "step");
  REQUIRE(handler);
  REQUIRE(step);
  CHECK(handler->start == 200);
  CHECK(handler->end == 210);  // the last thing recorded inside it, not the pop at 400
  CHECK(handler->flags == kEventEndLost);
  CHECK(step->end == 400);

  SECTION("without an enclosing call the next pop still closes it") {
    TraceBuilder c;
    c.push(1, 0, 100, 0, "step");
    c.push(1, 1, 200, 1, "inner");
    c.api(1, 0, 2, 250, 260);
    c.pop(1, 400, 0);
    const TraceData& e = c.finish(1000);
    const Event* inner = findNamed(e, e.threads[0], "inner");
    REQUIRE(inner);
    CHECK(inner->end == 400);
    CHECK(inner->flags == kEventEndLost);
  }
  SECTION("the enclosing call seals the parent too when it began before it") {
    TraceBuilder c;
    c.push(1, 0, 100, 0, "outer");
    c.push(1, 1, 200, 1, "inner");
    c.api(1, 0, 2, 50, 300);   // began before both ranges: both lie inside it
    c.api(1, 0, 3, 350, 360);  // after the call: inside neither
    c.push(1, 4, 500, 0, "next");  // closes both lost ranges
    c.pop(1, 600, 0);
    const TraceData& e = c.finish(1000);
    const Event* inner = findNamed(e, e.threads[0], "inner");
    const Event* outer = findNamed(e, e.threads[0], "outer");
    REQUIRE(inner);
    REQUIRE(outer);
    CHECK(inner->end == 200);
    CHECK(outer->end == 200);
    CHECK(outer->end <= 300);
  }
}

// The drain's events of one pass live in a list emptied after every pass and refilled: what is
// pushed after clearKeepingBlocks() must be what is read back, whichever block it lands in.
TEST_CASE("BlockList refilled after clearKeepingBlocks reads back what was pushed", "[store]") {
  BlockList<uint64_t, 4> list;
  for (uint64_t i = 0; i < 11; ++i) REQUIRE(list.push_back(1000 + i));
  list.clearKeepingBlocks();
  CHECK(list.empty());
  for (uint64_t i = 0; i < 6; ++i) REQUIRE(list.push_back(i));
  REQUIRE(list.size() == 6);
  for (uint64_t i = 0; i < 6; ++i) CHECK(list[i] == i);
  for (uint64_t i = 6; i < 14; ++i) REQUIRE(list.push_back(i));  // past the blocks kept: a new one
  for (uint64_t i = 0; i < 14; ++i) CHECK(list[i] == i);
  // A moved list appends after its last element, in place within a block and in a new one past it.
  BlockList<uint64_t, 4> moved(std::move(list));
  CHECK(list.empty());
  for (uint64_t i = 14; i < 19; ++i) REQUIRE(moved.push_back(i));
  REQUIRE(moved.size() == 19);
  for (uint64_t i = 0; i < 19; ++i) CHECK(moved[i] == i);
  BlockList<uint64_t, 4> assigned;
  REQUIRE(assigned.push_back(99));
  assigned = std::move(moved);
  REQUIRE(assigned.push_back(19));
  uint64_t expect = 0;
  for (std::size_t i = 0; i < assigned.size();) {
    const auto run = assigned.run(i);
    for (std::size_t k = 0; k < run.count; ++k, ++i) CHECK(run.at[k] == expect++);
  }
  CHECK(expect == 20);
  // The moved-from list starts again from nothing.
  REQUIRE(list.push_back(7));
  CHECK(list.size() == 1);
  CHECK(list[0] == 7);
}

// The first elements of a list live in a small heap block, moved into a whole block when the
// list outgrows it (also after clearKeepingBlocks), and a list of a few elements maps no block:
// 1,000 lists of one event each took 640 MB of address space (30,000 threads read back: 20 GB).
TEST_CASE("BlockList keeps its first elements in a small block", "[store]") {
  BlockList<uint64_t, 16> list;  // 4 in the small block, then blocks of 16
  for (uint64_t i = 0; i < 3; ++i) REQUIRE(list.push_back(i));
  list.clearKeepingBlocks();
  for (uint64_t i = 0; i < 40; ++i) REQUIRE(list.push_back(100 + i));  // refilled past the small block
  for (uint64_t i = 0; i < 40; ++i) CHECK(list[i] == 100 + i);
  list.clearKeepingBlocks();
  for (uint64_t i = 0; i < 5; ++i) REQUIRE(list.push_back(i));
  for (uint64_t i = 0; i < 5; ++i) CHECK(list[i] == i);
  list.clearReleasingBlocks();
  for (uint64_t i = 0; i < 6; ++i) REQUIRE(list.push_back(7 * i));
  BlockList<uint64_t, 16> moved(std::move(list));
  REQUIRE(moved.push_back(42));
  const auto run = moved.run(0);
  REQUIRE(run.count == 7);
  for (uint64_t i = 0; i < 6; ++i) CHECK(run.at[i] == 7 * i);
  CHECK(run.at[6] == 42);

  auto addressSpace = [] {
    long pages = 0;
    FILE* f = fopen("/proc/self/statm", "r");
    REQUIRE(f != nullptr);
    REQUIRE(fscanf(f, "%ld", &pages) == 1);
    fclose(f);
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  };
  const uint64_t before = addressSpace();
  std::vector<BlockList<Event>> lists(1000);
  for (auto& l : lists) REQUIRE(l.push_back(Event{}));
  CHECK(addressSpace() - before < (uint64_t{64} << 20));
}

// Every pass adds an anchor; a tick maps to the same ns in every pass after its own (the chord
// from the start to the latest anchor moved it by the anchors' noise), through anchors exactly,
// rising with the ticks.
TEST_CASE("tick timeline: a tick maps the same in every later pass", "[clock]") {
  // Anchors with noise, as a VM gives them: ~3 ticks a ns, +-40 ns jitter.
  std::vector<ClockAnchor> anchors;
  uint64_t ticks = 1000000, ns = 5000000;
  for (int i = 0; i < 40; ++i) {
    anchors.push_back({ticks, ns + static_cast<uint64_t>((i * 37) % 80)});
    ticks += 3000000 + static_cast<uint64_t>(i % 7) * 1000;
    ns += 1000000;
  }
  TickTimeline timeline(anchors[0], false);
  std::vector<std::pair<uint64_t, uint64_t>> mapped;  // tick, its ns when first mapped
  for (std::size_t k = 1; k < anchors.size(); ++k) {
    timeline.add(anchors[k]);
    CHECK(timeline.toMonotonicNs(anchors[k].ticks) == anchors[k].monotonicNs);
    // This pass's ticks: between the last two anchors.
    for (uint64_t t = anchors[k - 1].ticks; t < anchors[k].ticks; t += 100003) mapped.emplace_back(t, timeline.toMonotonicNs(t));
    uint64_t previous = 0;
    for (const auto& [t, first] : mapped) {
      CAPTURE(k, t);
      const uint64_t now = timeline.toMonotonicNs(t);
      CHECK(now == first);
      CHECK(now >= previous);
      previous = now;
    }
  }
  // Past the kept anchors the oldest segment extends: still rising.
  TickTimeline many(ClockAnchor{0, 0}, false);
  for (uint64_t i = 1; i <= TickTimeline::kAnchors + 10; ++i) many.add(ClockAnchor{i * 1000, i * 500});
  CHECK(many.toMonotonicNs(5000) == 2500);
  CHECK(many.toMonotonicNs((TickTimeline::kAnchors + 10) * 1000) == (TickTimeline::kAnchors + 10) * 500);
  // Ticks that are nanoseconds already.
  CHECK(TickTimeline(ClockAnchor{7, 7}, true).toMonotonicNs(12345) == 12345);
  CHECK(TickTimeline().toMonotonicNs(42) == 42);
}

namespace {

// The seq of every event the store holds, thread by thread.
std::vector<uint64_t> storedSeqs(Store& store) {
  std::vector<uint64_t> out;
  for (const ThreadTrack& t : store.data().threads)
    for (const Event& e : t.events) out.push_back(e.seq);
  return out;
}

// A record as the hooks write it: a CUDA call (cudaDeviceSynchronize), or an NVTX record of a
// text of `length` bytes at `depth`.
Record testRecord(RecordType type, uint64_t seq, uint64_t t0, uint64_t t1, uint16_t depth, std::size_t length) {
  Record r = TraceBuilder::base(type, seq, t0, t1);
  if (type == RecordType::Api) {
    r.hook = test::kCudaDeviceSynchronize;
  } else {
    r.nvtx.depth = depth;
    r.nvtx.length = static_cast<uint16_t>(length);
  }
  return r;
}

// Every event the store holds once finished, thread by thread, as text: kind, name, seq, times,
// domain, flags and an op range's parts.
std::vector<std::string> eventsOf(TraceBuilder& b) {
  std::vector<std::string> out;
  TraceData& d = b.finish(1000);
  for (const ThreadTrack& t : d.threads)
    for (const Event& e : t.events)
      out.push_back(std::to_string(int(e.kind)) + " " + std::string(d.strings.get(e.name)) + " seq " + std::to_string(e.seq) +
                    " " + std::to_string(e.start) + "-" + std::to_string(e.end) + " domain " +
                    std::string(d.strings.get(e.domain)) + " flags " + std::to_string(e.flags) + " op " +
                    std::to_string(e.torch.fields) + "/" + std::to_string(e.torch.seq) + "/" + std::to_string(e.torch.opId));
  return out;
}

}  // namespace

// A pass decodes the records that ended by its clock anchor; those that end later (and all after
// them) leave the ring with it but are decoded first in the next pass, in ring order, so no tick
// is mapped past the anchors the timeline has.
TEST_CASE("a pass decodes what ended by its anchor, the rest in the next pass", "[store]") {
  TraceBuilder b;
  Store& store = b.store();
  TestThread thread;
  ThreadState& s = thread.s;
  const uint64_t ends[] = {10, 20, 30, 25, 40};  // the fourth ended before the third was committed
  for (uint64_t i = 0; i < 5; ++i) thread.putCall(i, ends[i] - 5, ends[i]);
  store.consume(s, false, 27);
  CHECK(storedSeqs(store) == std::vector<uint64_t>{0, 1});
  CHECK(s.ring.readBegin() == s.ring.readEnd());  // taken off the ring all the same
  store.consume(s, false, 100);
  CHECK(storedSeqs(store) == std::vector<uint64_t>{0, 1, 2, 3, 4});
}

// A busy thread's records are taken a batch at a time (the drain streams each batch before the
// next, collector.cpp): a call stops after its budget of records with the rest still on the
// ring, and says so; text blocks go with their record and do not count; past the anchor,
// carrying takes the rest whatever the budget.
TEST_CASE("consume decodes at most its budget of records and says when some are left", "[store]") {
  TraceBuilder b;
  Store& store = b.store();
  TestThread thread;
  ThreadState& s = thread.s;
  for (uint64_t i = 0; i < 5; ++i) {
    if (i == 1) {  // an NVTX mark with a text block
      Record r;
      memset(&r, 0, sizeof(r));
      r.type = RecordType::NvtxMark;
      r.nvtx.length = 4;
      r.t0 = 10 * i + 1;
      r.seq = i;
      thread.put(r, "mark");
      continue;
    }
    thread.putCall(i, 10 * i, 10 * i + 5);
  }
  CHECK(store.consume(s, false, UINT64_MAX, 2));  // two records (the mark's text block with it)
  CHECK(storedSeqs(store) == std::vector<uint64_t>{0, 1});
  CHECK(s.ring.readEnd() - s.ring.readBegin() == 3);
  CHECK(store.data().strings.get(store.data().threads[0].events[1].name) == "mark");
  CHECK(store.consume(s, false, UINT64_MAX, 2));
  CHECK(storedSeqs(store) == std::vector<uint64_t>{0, 1, 2, 3});
  CHECK_FALSE(store.consume(s, false, UINT64_MAX, 2));  // the last one: nothing left
  CHECK(storedSeqs(store) == std::vector<uint64_t>{0, 1, 2, 3, 4});
  CHECK(s.ring.readBegin() == s.ring.readEnd());
  CHECK_FALSE(store.consume(s, false, UINT64_MAX, 2));  // an empty ring

  // Past the anchor everything is carried, over the budget too, and nothing is left.
  for (uint64_t i = 5; i < 9; ++i) thread.putCall(i, 10 * i, 10 * i + 5);
  // Only what was committed up to `upTo` (the end the pass saw) is taken: the last record stays
  // on the ring, neither decoded nor carried.
  const uint64_t upTo = s.ring.readEnd() - 1;
  CHECK_FALSE(store.consume(s, false, 60, 1, upTo));  // seq 5 (ends at 55) decoded, 6 and 7 carried
  CHECK(storedSeqs(store) == std::vector<uint64_t>{0, 1, 2, 3, 4, 5});
  CHECK(s.ring.readBegin() == upTo);
  CHECK(store.consume(s, false, UINT64_MAX, 1) == false);  // the carried ones come first, whole
  CHECK(storedSeqs(store) == std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8});
}

// The drain takes a push and the pop right after it together (a range around nothing recorded):
// what it stores must be what decoding them one by one stores, event for event, with lost pops,
// a range sealed by a call that began before it, a named domain, text over two blocks, a pop
// past the pass's anchor, a pop at another depth and a batch budget of one record.
TEST_CASE("a push and its pop taken together store what they store one by one", "[store]") {
  struct Put {
    RecordType type;
    uint64_t t0, t1;
    uint16_t depth;
    bool named;  // in the domain "dom"
    std::string text;
  };
  const std::string longText = "d" + std::string(90, 'x');  // two text blocks
  const std::vector<Put> puts = {
      {RecordType::NvtxPush, 10, 10, 0, false, "outer"}, {RecordType::NvtxPush, 20, 20, 1, false, "a"},
      {RecordType::NvtxPop, 30, 30, 1, false, ""},       {RecordType::Api, 5, 40, 0, false, ""},  // seals outer
      {RecordType::NvtxPush, 45, 45, 1, false, "b"},     {RecordType::NvtxPop, 50, 50, 1, false, ""},
      {RecordType::NvtxPush, 55, 55, 1, false, "lost"},  {RecordType::NvtxPush, 60, 60, 1, false, "c"},
      {RecordType::NvtxPop, 65, 65, 1, false, ""},       {RecordType::NvtxPush, 70, 70, 0, true, "in dom"},
      {RecordType::NvtxPop, 75, 75, 0, true, ""},        {RecordType::NvtxPush, 80, 80, 1, false, longText},
      {RecordType::NvtxPop, 90, 90, 1, false, ""},       {RecordType::NvtxPush, 100, 100, 1, false, "e"},
      {RecordType::NvtxPop, 200, 200, 1, false, ""},     {RecordType::NvtxPush, 210, 210, 0, false, "outer2"},
      {RecordType::NvtxPop, 220, 220, 0, false, ""},     {RecordType::NvtxPush, 240, 240, 0, false, "g"},
      {RecordType::NvtxMark, 245, 245, 0, false, "m"},   {RecordType::NvtxPop, 250, 250, 0, false, ""},
      {RecordType::NvtxPush, 260, 260, 0, false, "h"},   {RecordType::NvtxPop, 262, 262, 1, false, ""},
      {RecordType::NvtxPop, 265, 265, 0, false, ""},     {RecordType::NvtxPush, 270, 270, 0, false, "tail"},
  };
  auto recordOf = [](const Put& p, uint64_t seq, uint32_t domain) {
    Record r = testRecord(p.type, seq, p.t0, p.t1, p.depth, p.text.size());
    if (p.type != RecordType::Api) r.nvtx.domain = p.named ? domain : 0;
    return r;
  };
  TraceBuilder one;
  const uint32_t domainOne = one.name("dom");
  for (std::size_t i = 0; i < puts.size(); ++i)
    one.store().decode(1, 7, recordOf(puts[i], i, domainOne), puts[i].text.data(), puts[i].text.size());
  const std::vector<std::string> expected = eventsOf(one);
  REQUIRE(expected.size() == 14);  // 12 ranges (one lost, one open at the end), the call and the mark
  for (const uint64_t budget : {UINT64_MAX, uint64_t{1}, uint64_t{2}}) {
    CAPTURE(budget);
    TraceBuilder paired;
    const uint32_t domain = paired.name("dom");
    TestThread thread;
    for (std::size_t i = 0; i < puts.size(); ++i)
      thread.put(recordOf(puts[i], i, domain), puts[i].text.empty() ? nullptr : puts[i].text.c_str());
    // A first pass whose anchor falls between "e"'s push and its pop, then the rest.
    while (paired.store().consume(thread.s, false, 150, budget)) {
    }
    while (paired.store().consume(thread.s, false, UINT64_MAX, budget)) {
    }
    CHECK(eventsOf(paired) == expected);
  }
}

// The hooks leave the text out of a push that repeats the thread's last push, when short
// (NvtxPayload::sameText): the drain names it by the text it kept for the thread, whether the
// push is taken with its pop or alone, across passes and budgets, for an op range too (taken
// apart again), and a dropped event's text still counts as the last one.
TEST_CASE("a push that repeats its thread's last short text carries none and is named by it", "[store]") {
  struct Put {
    RecordType type;
    uint64_t t;
    uint16_t depth;
    std::string text;
    bool same;  // written as the hooks write a repeat: no text
  };
  const std::string longText(40, 'L');  // not short: the next push carries its text again
  const std::string op = "aten::mm, seq = 4, op_id = 9";
  const std::vector<Put> puts = {
      {RecordType::NvtxPush, 10, 0, "loop", false},  {RecordType::NvtxPop, 12, 0, "", false},
      {RecordType::NvtxPush, 14, 0, "loop", true},   {RecordType::NvtxPop, 16, 0, "", false},
      {RecordType::NvtxPush, 18, 0, "loop", true},   {RecordType::Api, 19, 20, "", false},
      {RecordType::NvtxPop, 22, 0, "", false},       {RecordType::NvtxPush, 30, 0, "outer", false},
      {RecordType::NvtxPush, 32, 1, "outer", true},  {RecordType::NvtxPop, 34, 1, "", false},
      {RecordType::NvtxPop, 36, 0, "", false},       {RecordType::NvtxPush, 40, 0, longText, false},
      {RecordType::NvtxPop, 42, 0, "", false},       {RecordType::NvtxPush, 44, 0, "loop", false},
      {RecordType::NvtxPop, 46, 0, "", false},       {RecordType::NvtxPush, 50, 0, op, false},
      {RecordType::NvtxPop, 52, 0, "", false},       {RecordType::NvtxPush, 54, 0, op, true},
      {RecordType::NvtxPop, 56, 0, "", false},       {RecordType::NvtxPush, 160, 0, "late", false},
      {RecordType::NvtxPop, 162, 0, "", false},      {RecordType::NvtxPush, 164, 0, "late", true},
      {RecordType::NvtxPop, 166, 0, "", false},
  };
  auto recordOf = [](const Put& p, uint64_t seq, bool asHooks) {
    Record r = testRecord(p.type, seq, p.t, p.type == RecordType::Api ? p.t + 1 : p.t, p.depth, p.text.size());
    if (p.type != RecordType::Api) r.nvtx.sameText = asHooks && p.same ? 1 : 0;
    return r;
  };
  // Every push with its text, decoded one record at a time.
  TraceBuilder whole;
  for (std::size_t i = 0; i < puts.size(); ++i)
    whole.store().decode(1, 7, recordOf(puts[i], i, false), puts[i].text.data(), puts[i].text.size());
  const std::vector<std::string> expected = eventsOf(whole);
  REQUIRE(expected.size() == 12);
  CHECK(expected[1].starts_with("1 loop seq 2 "));
  CHECK(expected[8].starts_with("1 aten::mm seq 15 "));
  CHECK(expected[9].starts_with("1 aten::mm seq 17 "));
  CHECK(expected[9].ends_with("/4/9"));  // taken apart: op seq 4, op_id 9
  for (const uint64_t budget : {UINT64_MAX, uint64_t{1}, uint64_t{2}, uint64_t{3}}) {
    CAPTURE(budget);
    TraceBuilder b;
    TestThread thread;
    for (std::size_t i = 0; i < puts.size(); ++i)
      thread.put(recordOf(puts[i], i, true), puts[i].same || puts[i].text.empty() ? nullptr : puts[i].text.c_str());
    while (b.store().consume(thread.s, false, 100, budget)) {
    }
    while (b.store().consume(thread.s, false, UINT64_MAX, budget)) {
    }
    CHECK(eventsOf(b) == expected);
  }
  // Past the memory cap a range is dropped, but the text of its push is still the thread's last.
  TraceBuilder capped;
  capped.store().setMemoryCap(sizeof(Event));
  TestThread thread;
  const Put other = {RecordType::NvtxPush, 20, 0, "other", false};
  thread.put(recordOf(puts[0], 0, true), "loop");
  thread.put(recordOf(puts[1], 1, true));
  thread.put(recordOf(other, 2, true), "other");  // dropped
  thread.put(recordOf({RecordType::NvtxPop, 22, 0, "", false}, 3, true));
  capped.store().consume(thread.s, false);
  capped.store().releaseEvents();
  capped.store().setMemoryCap(0);
  thread.put(recordOf({RecordType::NvtxPush, 30, 0, "other", true}, 4, true));
  thread.put(recordOf({RecordType::NvtxPop, 32, 0, "", false}, 5, true));
  capped.store().consume(thread.s, false);
  TraceData& d = capped.finish(1000);
  REQUIRE(d.threads.size() == 1);
  REQUIRE(d.threads[0].events.size() == 1);
  CHECK(d.threads[0].events[0].seq == 4);
  CHECK(d.strings.get(d.threads[0].events[0].name) == "other");
}

// The ranges open after a decode are listed for the stream, which writes their BEGINs then
// (ThreadTrack::openRanges): not those pushed inside a CUDA call, and the END such a range owes
// is never dropped at the memory cap, as the events of ranges never listed are.
TEST_CASE("ranges open after a decode are listed and their ends kept past the memory cap", "[store]") {
  TraceBuilder b;
  b.store().setMemoryCap(sizeof(Event));  // one event
  TestThread thread;
  const auto push = [&](uint64_t seq, uint64_t t, uint16_t depth, const char* text, bool insideCall = false) {
    Record r = TraceBuilder::base(RecordType::NvtxPush, seq, t, t);
    r.nvtx.depth = depth;
    r.nvtx.length = static_cast<uint16_t>(strlen(text));
    r.nvtx.insideCall = insideCall;
    thread.put(r, text);
  };
  const auto pop = [&](uint64_t t, uint16_t depth) {
    Record r = TraceBuilder::base(RecordType::NvtxPop, 0, t, t);
    r.nvtx.depth = depth;
    thread.put(r);
  };
  push(1, 100, 0, "epoch");
  push(2, 110, 1, "inner");
  thread.putCall(3, 120, 130);  // stored: the one event
  pop(140, 1);                  // inner was never listed: dropped at the cap
  thread.putCall(4, 150, 160);  // dropped
  push(5, 170, 1, "in a call", true);
  CHECK_FALSE(b.store().consume(thread.s, false));
  TraceData& d = b.store().data();
  REQUIRE(d.threads.size() == 1);
  const ThreadTrack& t = d.threads[0];
  REQUIRE(t.openRanges.size() == 1);
  const Event& open = t.openRanges[0];
  CHECK(d.strings.get(open.name) == "epoch");
  CHECK(open.kind == EventKind::NvtxRange);
  CHECK(open.seq == 1);
  CHECK(open.start == 100);
  CHECK(open.end == 0);
  CHECK(open.flags == 0);
  CHECK(t.events.size() == 1);
  CHECK(t.dropped == 2);
  pop(180, 1);
  pop(200, 0);  // epoch, listed: kept past the cap
  CHECK_FALSE(b.store().consume(thread.s, false));
  CHECK(t.openRanges.empty());
  REQUIRE(t.events.size() == 2);
  CHECK(d.strings.get(t.events[1].name) == "epoch");
  CHECK(t.events[1].end == 200);
  CHECK(t.dropped == 3);  // and the range pushed inside a call
}

// A thread that exited is marked so once its last records are taken with none of its ranges
// open: the store forgets its decoding state, and its name stays the one it had at its exit, even
// where its tid is now another thread's (here: this live thread's, named otherwise).
TEST_CASE("a thread that exited with nothing open is marked exited and keeps its last name", "[store]") {
  TraceBuilder b;
  Store& store = b.store();
  TestThread gone;
  gone.s.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  strcpy(gone.s.name, "gone");
  gone.putCall(0, 10, 20);
  CHECK_FALSE(store.consume(gone.s, true));
  TestThread open;
  open.s.trackId = 2;
  open.s.tid = 8;
  Record push;
  memset(&push, 0, sizeof(push));
  push.type = RecordType::NvtxPush;
  push.t0 = push.t1 = 30;
  push.nvtx.length = 4;
  open.put(push, "left");
  CHECK_FALSE(store.consume(open.s, true));
  TraceData& d = store.data();
  REQUIRE(d.threads.size() == 2);
  CHECK(d.threads[0].exited);
  CHECK(d.threads[0].name == "gone");
  CHECK_FALSE(d.threads[1].exited);  // its range is still open: closed at the end
  store.releaseEvents();
  // Its events streamed, only its figures are kept; the slot waits for a new thread.
  CHECK(d.threads[0].vacant());
  CHECK(d.threads[0].events.empty());
  REQUIRE(d.exitedThreads.size() == 1);
  CHECK(d.exitedThreads[0].tid == gone.s.tid);
  CHECK(d.exitedThreads[0].ordinal == 0);
  CHECK(d.exitedThreads[0].events == 1);
  CHECK(d.eventCount() == 1);
  b.finish(100);
  CHECK(d.threads[0].vacant());
  REQUIRE(d.threads[1].events.size() == 1);
  CHECK(d.strings.get(d.threads[1].events[0].name) == "left");
}

// Threads that start and end one after another take turns in one slot (ThreadTrack::ordinal
// numbers them): what memory holds of each one that ended is its figures, and the stream and the
// views still keep every thread apart, with its own sequence, track, name and events.
TEST_CASE("threads that exited leave their slot to new ones, and the stream keeps each apart", "[store]") {
  TraceBuilder b;
  Store& store = b.store();
  TraceData& d = store.data();
  d.meta.pid = 4242;
  PerfettoWriter writer;
  FoldBuilder fold(FoldOptions{});
  std::string bytes;
  TestThread live;
  live.s.trackId = 100;
  live.s.tid = 50;
  strcpy(live.s.name, "live");
  for (uint32_t k = 0; k < 5; ++k) {
    TestThread t;
    t.s.trackId = k + 1;
    t.s.tid = 60 + k;
    snprintf(t.s.name, sizeof(t.s.name), "worker%u", k);
    t.putCall(0, 100 * k + 10, 100 * k + 20);
    t.putCall(1, 100 * k + 30, 100 * k + 40);
    CHECK_FALSE(store.consume(t.s, true));
    if (k == 1) {  // a thread that runs on, started while worker1 ran
      live.putCall(0, 150, 160);
      store.consume(live.s, false);
    }
    writer.encodePass(d, 100 * k + 90, bytes);
    fold.pass(d);
    store.releaseEvents();
  }
  // worker0 left slot 0 to worker1, which left it to... every worker took slot 0; the live
  // thread slot 1.
  REQUIRE(d.threads.size() == 2);
  CHECK(d.threads[0].vacant());
  CHECK(d.threads[1].tid == 50);
  CHECK(d.ordinal(1) == 2);  // third thread seen: worker0, worker1, then it
  REQUIRE(d.exitedThreads.size() == 5);
  for (uint32_t k = 0; k < 5; ++k) {
    CHECK(d.exitedThreads[k].tid == 60 + k);
    CHECK(d.exitedThreads[k].events == 2);
    CHECK(d.exitedThreads[k].ordinal == (k < 2 ? k : k + 1));
  }
  CHECK(d.eventCount() == 11);
  std::vector<uint32_t> order;
  d.forEachThreadFigures([&](const ExitedThread& t) { order.push_back(t.tid); });
  CHECK(order == std::vector<uint32_t>{60, 61, 50, 62, 63, 64});
  b.finish(1000);
  const FoldedStacks folded = fold.finish(d);
  writer.encodeEnd(d, 1000, chromeTraceMetadata(d), bytes);

  TraceData back;
  std::string error;
  const PfMetadataSource known{nullptr, nullptr, &d};
  REQUIRE(rebuildPerfettoBytes(bytes, known, back, error));
  REQUIRE(back.threads.size() == 6);
  std::vector<std::pair<uint32_t, std::string>> threads;
  for (const ThreadTrack& t : back.threads) {
    CHECK(t.events.size() == (t.tid == 50 ? 1u : 2u));
    threads.emplace_back(t.tid, t.tid == 50 ? std::string() : t.name);  // a live thread is named from /proc
  }
  CHECK(threads == std::vector<std::pair<uint32_t, std::string>>{
                       {60, "worker0"}, {61, "worker1"}, {50, ""}, {62, "worker2"}, {63, "worker3"}, {64, "worker4"}});
  CHECK(back.eventCount() == 11);
  // The folding as the run went counts every call, as the folding of the stream read back does.
  Sink a, c;
  writeFolded(folded, FoldWeight::Calls, a);
  writeFolded(foldStacks(back, FoldOptions{}), FoldWeight::Calls, c);
  CHECK(a.text() == c.text());
  uint64_t calls = 0;
  std::size_t at = 0;
  for (std::size_t nl; (nl = a.text().find('\n', at)) != std::string::npos; at = nl + 1)
    calls += std::stoull(a.text().substr(a.text().rfind(' ', nl) + 1, nl));
  CHECK(calls == 11);
}

// A process that made more than 65,536 threads over its life (a server that starts one per
// request) gets its Chrome trace: the stream reads back with every thread and its event. What the
// read-back holds per thread stays small: it was refused past 65,536 threads, each thread's
// sequence kept an index as long as its highest interned id (a name's id is its hook's), and the
// reader kept every sequence's state to the end (the writer now says when a thread's has ended).
TEST_CASE("a stream of 70000 threads that each lived briefly reads back in little memory per thread", "[perfetto]") {
  TraceBuilder b;
  Store& store = b.store();
  TraceData& d = store.data();
  d.meta.pid = 4242;
  PerfettoWriter writer;
  std::string bytes;
  constexpr uint32_t kThreads = 70000;
  // A hook table as long as the preload's, the call far down it: its name's interned id is high.
  const HookDescriptor sync = d.hooks[test::kCudaDeviceSynchronize];
  d.hooks.resize(400, sync);
  uint32_t unfinished = 0;
  for (uint32_t k = 0; k < kThreads; ++k) {
    TestThread t;
    t.s.trackId = k + 1;
    t.s.tid = 1000 + k;
    Record r;
    memset(&r, 0, sizeof(r));
    r.type = RecordType::Api;
    r.hook = 399;
    r.t0 = 10 * k + 1;
    r.t1 = 10 * k + 5;
    t.put(r);
    unfinished += store.consume(t.s, true) ? 1 : 0;
    if (k % 1000 == 999 || k + 1 == kThreads) {
      writer.encodePass(d, 10 * k + 9, bytes);
      store.releaseEvents();
    }
  }
  CHECK(unfinished == 0);
  CHECK(d.exitedThreads.size() == kThreads);
  CHECK(d.threads.size() == 1000);  // a pass's worth of slots, each taken over and over
  b.finish(10 * kThreads + 100);
  writer.encodeEnd(d, 10 * kThreads + 100, chromeTraceMetadata(d), bytes);

  const PfMetadataSource known{nullptr, nullptr, &d};
  TraceData back;
  std::string error;
  const test::HeapPeak heap;
  REQUIRE(rebuildPerfettoBytes(bytes, known, back, error));
  REQUIRE(back.threads.size() == kThreads);
  CHECK(back.eventCount() == kThreads);
  uint32_t misplaced = 0;
  for (uint32_t k = 0; k < kThreads; ++k)
    misplaced += back.threads[k].tid != 1000 + k || back.threads[k].events.size() != 1 ? 1 : 0;
  CHECK(misplaced == 0);
  // At its highest, the rebuilt trace included.
  const double perThread = static_cast<double>(heap.rise()) / kThreads;
  INFO("heap per thread read back, at the peak: " << perThread << " bytes");
  CHECK(perThread < 1024);
}

// Every thread of a process has its own 64 track uuids, apart from the process's, its GPU
// streams' and its spans', past the 16,384th thread too (they wrapped there: trace_processor then
// put a later thread's events on an earlier thread's track).
TEST_CASE("thread track uuids never meet", "[perfetto]") {
  for (uint32_t pid : {1u, 4242u, (1u << 22) - 1}) {
    std::set<uint64_t> bases;
    for (uint32_t ordinal = 0; ordinal < 70000; ++ordinal) {
      const uint64_t u = threadUuid(pid, ordinal);
      CHECK((u & 63) == 0);
      CHECK((u & (kDeviceTrackBit | kSpanTrackBit)) == 0);
      bases.insert(u);
    }
    CHECK(bases.size() == 70000);
    CHECK(bases.count(processUuid(pid) & ~uint64_t{63}) == 0);
    CHECK(threadUuid(pid, 5) == ((uint64_t{pid} << 24) | (0x100 + 5 * 64)));  // as files before
  }
}

// A pass visits the threads whose tracks changed since the last release, not every thread the
// process had: the ones it drained, and a thread whose start/end range another thread ended.
TEST_CASE("the store lists the threads a pass changed", "[store]") {
  TraceBuilder b;
  Store& store = b.store();
  TestThread a, c, idle;
  c.s.trackId = 2;
  c.s.tid = 8;
  idle.s.trackId = 3;
  idle.s.tid = 9;
  Record start;
  memset(&start, 0, sizeof(start));
  start.type = RecordType::NvtxStart;
  start.t0 = start.t1 = 10;
  start.nvtx.rangeId = 5;
  start.nvtx.length = 4;
  a.put(start, "span");
  idle.putCall(0, 1, 2);
  store.consume(a.s, false);
  store.consume(idle.s, false);
  TraceData& d = store.data();
  auto visited = [&] {
    std::vector<std::size_t> out;
    d.forEachChanged([&](std::size_t i) { out.push_back(i); });
    return out;
  };
  CHECK(visited() == std::vector<std::size_t>{0, 1});
  store.releaseEvents();
  CHECK(visited().empty());
  Record end = start;
  end.type = RecordType::NvtxEnd;
  end.t0 = end.t1 = 20;
  end.nvtx.length = 0;
  c.put(end);
  store.consume(c.s, false);
  CHECK(visited() == std::vector<std::size_t>{0, 2});  // the span's thread, then the one that ended it
  REQUIRE(d.threads[0].events.size() == 1);
  CHECK(d.threads[0].events[0].end == 20);
  store.releaseEvents();
  b.finish(100);
  CHECK(visited() == std::vector<std::size_t>{0, 1, 2});  // the end settles every thread's name
}

// The pool's index (open addressing behind a Bloom filter) grows from 64 slots: every text keeps
// its id through every growth, and a text the pool holds is never taken for one it does not.
TEST_CASE("string pool: ids stay, pooled texts are found past the cap, others are transient", "[store]") {
  StringPool pool;
  REQUIRE(pool.intern("") == 0);
  std::vector<uint32_t> ids;
  for (int i = 0; i < 100000; ++i) ids.push_back(pool.intern("text " + std::to_string(i)));
  REQUIRE(pool.size() == 100001);
  for (int i = 0; i < 100000; ++i) {
    INFO(i);
    REQUIRE(ids[static_cast<std::size_t>(i)] == static_cast<uint32_t>(i + 1));
    REQUIRE(pool.intern("text " + std::to_string(i)) == ids[static_cast<std::size_t>(i)]);
    REQUIRE(pool.get(ids[static_cast<std::size_t>(i)]) == "text " + std::to_string(i));
  }
  // Past the cap: what the pool holds keeps its id, anything else is transient and read back.
  const std::size_t cap = pool.size();
  for (int i = 0; i < 100000; i += 7) REQUIRE(pool.internBounded("text " + std::to_string(i), cap, SIZE_MAX) == ids[static_cast<std::size_t>(i)]);
  std::vector<uint32_t> transient;
  for (int i = 0; i < 1000; ++i) {
    const uint32_t id = pool.internBounded("op " + std::to_string(i), cap, SIZE_MAX);
    REQUIRE(StringPool::isTransient(id));
    REQUIRE(pool.get(id) == "op " + std::to_string(i));
    transient.push_back(id);
  }
  REQUIRE(pool.size() == cap);
  REQUIRE(pool.transientCount() == 1000);
  // Kept transient texts are renumbered, the others forgotten.
  uint32_t kept = transient[500], again = transient[500], other = transient[7], pooled = ids[3];
  pool.dropTransient({&kept, &again, &pooled, &other});
  REQUIRE(pool.transientCount() == 2);
  REQUIRE(kept == again);  // one text, one new id
  REQUIRE(pool.get(kept) == "op 500");
  REQUIRE(pool.get(other) == "op 7");
  REQUIRE(pooled == ids[3]);
  // Texts added after the drop read back beside the kept ones.
  const uint32_t next = pool.internBounded("op next", cap, SIZE_MAX);
  REQUIRE(pool.get(next) == "op next");
  REQUIRE(pool.get(kept) == "op 500");
  pool.dropTransient({});
  REQUIRE(pool.transientCount() == 0);
}

// A one-off text never enters the pool; a label does at its second sighting, while there is room.
TEST_CASE("string pool: internBounded pools a text at its second sighting, under the cap only", "[store]") {
  StringPool pool;
  const uint32_t first = pool.internBounded("forward", 16, 1 << 20);
  CHECK(StringPool::isTransient(first));
  CHECK(pool.get(first) == "forward");
  const uint32_t second = pool.internBounded("forward", 16, 1 << 20);
  REQUIRE_FALSE(StringPool::isTransient(second));
  CHECK(pool.get(second) == "forward");
  CHECK(pool.internBounded("forward", 16, 1 << 20) == second);
  CHECK(pool.intern("forward") == second);
  CHECK(pool.size() == 2);
  // Other texts in between: still its second sighting.
  CHECK(StringPool::isTransient(pool.internBounded("backward", 16, 1 << 20)));
  for (int i = 0; i < 10; ++i) CHECK(StringPool::isTransient(pool.internBounded("op " + std::to_string(i), 16, 1 << 20)));
  CHECK_FALSE(StringPool::isTransient(pool.internBounded("backward", 16, 1 << 20)));
  CHECK(pool.size() == 3);
  // The pool full: a label stays transient however often it comes.
  for (int i = 0; i < 5; ++i) CHECK(StringPool::isTransient(pool.internBounded("step", 3, 1 << 20)));
  CHECK(pool.size() == 3);
}
