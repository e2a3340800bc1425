#pragma once
// Builds TraceData the way the drain does, from hand-made ring records, so store, Chrome and
// folded tests run on exactly what a traced process would produce. Ticks are nanoseconds.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

#include "collector/collector.h"
#include "collector/name_table.h"
#include "collector/store.h"

namespace cutrace::test {

enum Hook : uint16_t {
  kCudaLaunchKernel, kCuLaunchKernel, kCudaMalloc, kCudaMemcpy, kCudaFree, kCudaDeviceSynchronize, kCudaGraphLaunch
};

inline const HookDescriptor kTestHooks[] = {
    {"cudaLaunchKernel", ApiLayer::Runtime, ApiKind::Launch}, {"cuLaunchKernel", ApiLayer::Driver, ApiKind::Launch},
    {"cudaMalloc", ApiLayer::Runtime, ApiKind::Alloc},        {"cudaMemcpy", ApiLayer::Runtime, ApiKind::Memcpy},
    {"cudaFree", ApiLayer::Runtime, ApiKind::Free},           {"cudaDeviceSynchronize", ApiLayer::Runtime, ApiKind::Sync},
    {"cudaGraphLaunch", ApiLayer::Runtime, ApiKind::Graph},
};

// A thread's state with a small ring, and records put on it as the hooks put them (a record, then
// its text in whole blocks), for the store to take as the drain does (Store::consume).
struct TestThread {
  Record slots[64];
  ThreadState s;
  explicit TestThread(uint32_t trackId = 1, uint32_t tid = 7) {
    s.ring.attach(slots, 64);
    s.trackId = trackId;
    s.tid = tid;
  }
  void put(Record r, const char* text = nullptr) {
    const std::size_t len = text ? strlen(text) : 0;
    const uint64_t blocks = (len + kRecordSize - 1) / kRecordSize;
    r.extra = static_cast<uint8_t>(blocks);
    const uint64_t at = s.ring.reserve(1 + blocks);
    if (at == UINT64_MAX) {  // a test that puts more than the ring holds before taking any
      fprintf(stderr, "TestThread: ring full\n");
      abort();
    }
    s.ring.at(at) = r;
    for (uint64_t i = 0; i < blocks; ++i) {
      Record block;
      memset(&block, 0, sizeof(block));
      memcpy(&block, text + i * kRecordSize, std::min<std::size_t>(kRecordSize, len - i * kRecordSize));
      s.ring.at(at + 1 + i) = block;
    }
    s.ring.commit(1 + blocks);
  }
  void putCall(uint64_t seq, uint64_t t0, uint64_t t1);
};

class TraceBuilder {
 public:
  TraceBuilder() : store_((names_.init(1024, 1 << 20), names_)) {
    store_.data().hooks.assign(std::begin(kTestHooks), std::end(kTestHooks));
    TraceMeta& m = store_.data().meta;
    m.pid = 4242;
    m.exe = "prog";
  }

  uint32_t name(const char* text) { return names_.intern(text); }

  void api(uint32_t tid, uint16_t hook, uint64_t seq, uint64_t t0, uint64_t t1, int32_t result = 0,
           uint32_t stack = 0) {
    Record r = base(RecordType::Api, seq, t0, t1);
    r.hook = hook;
    r.result = result;
    r.handle.stack = stack;
    store_.decode(tid, tid, r, nullptr, 0);
  }
  void launch(uint32_t tid, uint16_t hook, uint64_t seq, uint64_t t0, uint64_t t1, const char* kernel,
              uint32_t stack = 0) {
    Record r = base(RecordType::Api, seq, t0, t1);
    r.hook = hook;
    r.launch.stack = stack;
    r.launch.kernelName = kernel ? name(kernel) : 0;
    r.launch.gridX = 4;
    r.launch.gridY = r.launch.gridZ = 1;
    r.launch.block = LaunchPayload::packBlock(256, 1, 1);
    r.launch.stream = 0x10;
    store_.decode(tid, tid, r, nullptr, 0);
  }
  void mem(uint32_t tid, uint16_t hook, uint64_t seq, uint64_t t0, uint64_t t1, uint64_t bytes) {
    Record r = base(RecordType::Api, seq, t0, t1);
    r.hook = hook;
    r.mem.bytes = bytes;
    r.mem.copyKind = 1;
    r.mem.ptr = 0x7000;
    store_.decode(tid, tid, r, nullptr, 0);
  }
  void push(uint32_t tid, uint64_t seq, uint64_t t, uint16_t depth, const std::string& text, uint32_t domain = 0) {
    Record r = base(RecordType::NvtxPush, seq, t, t);
    r.nvtx.depth = depth;
    r.nvtx.domain = domain;
    r.nvtx.length = static_cast<uint16_t>(text.size());
    store_.decode(tid, tid, r, text.data(), text.size());
  }
  void pop(uint32_t tid, uint64_t t, uint16_t depth, uint32_t domain = 0) {
    Record r = base(RecordType::NvtxPop, 0, t, t);
    r.nvtx.depth = depth;
    r.nvtx.domain = domain;
    store_.decode(tid, tid, r, nullptr, 0);
  }
  // A push and its pop taken off the thread's ring together, as the drain takes them when it
  // finds both (a range with nothing recorded inside it: no open).
  void range(uint32_t tid, uint64_t seq, uint64_t t0, uint64_t t1, uint16_t depth, const std::string& text) {
    const auto thread = std::make_unique<TestThread>(tid, tid);
    Record push = base(RecordType::NvtxPush, seq, t0, t0);
    push.nvtx.depth = depth;
    push.nvtx.length = static_cast<uint16_t>(text.size());
    thread->put(push, text.c_str());
    Record pop = base(RecordType::NvtxPop, 0, t1, t1);
    pop.nvtx.depth = depth;
    thread->put(pop);
    store_.consume(thread->s, false);
  }
  void mark(uint32_t tid, uint64_t seq, uint64_t t, const std::string& text, uint32_t domain = 0) {
    Record r = base(RecordType::NvtxMark, seq, t, t);
    r.nvtx.domain = domain;
    r.nvtx.length = static_cast<uint16_t>(text.size());
    store_.decode(tid, tid, r, text.data(), text.size());
  }
  void start(uint32_t tid, uint64_t seq, uint64_t t, uint64_t id, const std::string& text) {
    Record r = base(RecordType::NvtxStart, seq, t, t);
    r.nvtx.rangeId = id;
    r.nvtx.length = static_cast<uint16_t>(text.size());
    store_.decode(tid, tid, r, text.data(), text.size());
  }
  void end(uint32_t tid, uint64_t t, uint64_t id) {
    Record r = base(RecordType::NvtxEnd, 0, t, t);
    r.nvtx.rangeId = id;
    store_.decode(tid, tid, r, nullptr, 0);
  }
  void threadName(uint32_t tid, uint32_t named, const std::string& text) {
    Record r = base(RecordType::ThreadName, 0, 0, 0);
    r.threadName.tid = named;
    r.threadName.length = static_cast<uint16_t>(text.size());
    store_.decode(tid, tid, r, text.data(), text.size());
  }

  // A resolved call stack, frames innermost first, as the drain would name them.
  void defineStack(uint32_t id, std::initializer_list<const char*> frames) {
    TraceData& d = store_.data();
    if (d.stacks.size() <= id) d.stacks.resize(id + 1);
    for (const char* f : frames) d.stacks[id].push_back(d.strings.intern(f));
  }

  TraceData& finish(uint64_t endTicks) {
    store_.finalize(endTicks);
    return store_.data();
  }
  Store& store() { return store_; }

  // A zeroed record of `type`, as the hooks start one.
  static Record base(RecordType type, uint64_t seq, uint64_t t0, uint64_t t1) {
    Record r;
    memset(&r, 0, sizeof(r));
    r.type = type;
    r.seq = seq;
    r.t0 = t0;
    r.t1 = t1;
    return r;
  }

 private:
  NameTable names_;
  Store store_;
};

inline void TestThread::putCall(uint64_t seq, uint64_t t0, uint64_t t1) {
  Record r = TraceBuilder::base(RecordType::Api, seq, t0, t1);
  r.hook = kCudaDeviceSynchronize;
  put(r);
}

}  // namespace cutrace::test
