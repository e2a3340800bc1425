// The drain's work per recorded event, alone and the same run after run: a ring filled with the
// records the hooks write (NVTX: a loop's ranges of one label, or PyTorch op ranges: a text
// each; launch: cudaLaunchKernel and the cuLaunchKernel it makes, two events, with CUPTI off or
// on, which gives each launch a flow; sync: cuCtxSynchronize, one call and one event), decoded by the Store, encoded by the stream writer and
// folded, pass by pass, as the drain thread does (collector.cpp, preload_main.cpp's streamPass),
// in one thread, with no file, no clock reads and no other thread to wait for.
//
//   bench_drain [--case nvtx|nvtx-ops|launch|launch-cupti|sync] [--ranges N] [--batch B] [--runs R]
//
// Prints the drain's thread CPU per range or launch (median of R runs). Nanoseconds on a shared machine
// wobble; instructions do not: under callgrind, only the passes are counted
//
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*drainPasses*' build/bench/bench_drain --runs 1
//
// and the total Ir divided by the ranges (printed) is the drain's instructions per range,
// identical from run to run for the same build. Not counted here: the drain's locking, clock
// anchors, the file write and the JSON size sample (see bench_events for the whole drain).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collector/collector.h"
#include "collector/name_table.h"
#include "collector/store.h"
#include "exporters/folded.h"
#include "exporters/perfetto_writer.h"

namespace {

using namespace cutrace;

struct Options {
  std::string which = "nvtx";
  long ranges = 1000000;
  long batch = 4096;  // ranges a pass: a busy thread's ring between two passes
  int runs = 5;
};

// What the hooks write for a push of `text` and its pop (preload/nvtx_injection.cpp): the push's
// record, its text in whole blocks (none where it repeats the thread's last push: `same`), the
// pop's record.
void putRange(ThreadState& s, uint64_t seq, uint64_t t, const std::string& text, bool same) {
  const std::size_t blocks = same ? 0 : (text.size() + kRecordSize - 1) / kRecordSize;
  uint64_t at = s.ring.reserve(2 + blocks);
  Record& push = s.ring.at(at);
  memset(&push, 0, sizeof(push));
  push.type = RecordType::NvtxPush;
  push.extra = static_cast<uint8_t>(blocks);
  push.seq = seq;
  push.t0 = push.t1 = t;
  push.nvtx.length = static_cast<uint16_t>(text.size());
  push.nvtx.sameText = same ? 1 : 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    Record& block = s.ring.at(at + 1 + b);
    memset(&block, 0, sizeof(block));
    memcpy(&block, text.data() + b * kRecordSize, std::min<std::size_t>(kRecordSize, text.size() - b * kRecordSize));
  }
  Record& pop = s.ring.at(at + 1 + blocks);
  memset(&pop, 0, sizeof(pop));
  pop.type = RecordType::NvtxPop;
  pop.t0 = pop.t1 = t + 40;
  s.ring.commit(2 + blocks);
}

// What the launch hooks write for cudaLaunchKernel and the cuLaunchKernel inside it: the inner
// call's record first (marked as made inside a call), then the outer one's.
void putLaunch(ThreadState& s, uint64_t seq, uint64_t t, uint32_t kernel) {
  const uint64_t at = s.ring.reserve(2);
  for (int i = 0; i < 2; ++i) {
    const bool inner = i == 0;
    Record& r = s.ring.at(at + static_cast<uint64_t>(i));
    memset(&r, 0, sizeof(r));
    r.type = RecordType::Api;
    r.hook = inner ? 1 : 0;
    r.seq = inner ? seq + 1 : seq;
    r.t0 = inner ? t + 10 : t;
    r.t1 = inner ? t + 50 : t + 60;
    r.launch.kernelName = kernel;
    r.launch.gridX = 128;
    r.launch.gridY = r.launch.gridZ = 1;
    r.launch.block = LaunchPayload::packBlock(256, 1, 1);
    r.launch.stream = 0x10;
    r.launch.stack = inner ? kNestedCallBit : 0;
  }
  s.ring.commit(2);
}

// What the hooks write for a driver call made outside any other (cuCtxSynchronize): one record.
void putSync(ThreadState& s, uint64_t seq, uint64_t t) {
  const uint64_t at = s.ring.reserve(1);
  Record& r = s.ring.at(at);
  memset(&r, 0, sizeof(r));
  r.type = RecordType::Api;
  r.hook = 2;
  r.seq = seq;
  r.t0 = t;
  r.t1 = t + 60;
  s.ring.commit(1);
}

bool isLaunch(const Options& o) { return o.which == "launch" || o.which == "launch-cupti"; }

std::string rangeText(const Options& o, long i) {
  if (o.which == "nvtx") return "bench";
  // As PyTorch's emit_nvtx names an op (bench_events' nvtx-ops loop).
  char text[256];
  snprintf(text, sizeof(text), "aten::addmm, seq = %ld, op_id = %ld, sizes = [[64, 128], [128, 256], [256]], input_op_ids = [%ld, %ld]",
           i, i + 7, i + 3, i + 5);
  return text;
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Drain {
  NameTable names;
  std::unique_ptr<Store> store;
  PerfettoWriter writer;
  FoldBuilder fold{FoldOptions{}};
  std::vector<Record> slots;
  ThreadState s;
  explicit Drain(std::size_t ringRecords) : slots(ringRecords) {
    names.init(1024, 1 << 20);
    store = std::make_unique<Store>(names);
    TraceData& d = store->data();
    d.meta.pid = 4242;
    d.meta.exe = "bench_drain";
    // Ticks of a 2.5 GHz TSC, mapped to ns between the anchors each pass adds (drainPasses).
    store->setClock(TickTimeline(ClockAnchor{0, 0}, false));
    s.ring.attach(slots.data(), slots.size());
    s.trackId = 1;
    s.tid = 7;
    writer.reserve(std::size_t{1} << 20);  // as the stream's (preload_main.cpp)
    static const HookDescriptor kHooks[] = {{"cudaLaunchKernel", ApiLayer::Runtime, ApiKind::Launch},
                                            {"cuLaunchKernel", ApiLayer::Driver, ApiKind::Launch},
                                            {"cuCtxSynchronize", ApiLayer::Driver, ApiKind::Sync}};
    d.hooks.assign(std::begin(kHooks), std::end(kHooks));
  }
};

// The passes: what is measured (and what callgrind counts, --toggle-collect).
[[gnu::noinline]] void drainPasses(Drain& d, uint64_t now) {
  d.store->addClockAnchor(ClockAnchor{now, now * 2 / 5});
  d.store->consume(d.s, false, now);
  TraceData& data = d.store->data();
  d.writer.encodePass(data, now * 2 / 5, true);
  d.fold.pass(data);
  d.writer.eventsReleased();
  d.store->releaseEvents();
  d.writer.clearPending();  // where the drain hands the packets to the file
}

double run(const Options& o) {
  std::vector<std::string> texts;
  for (long i = 0; i < o.batch; ++i) texts.push_back(rangeText(o, i));
  const std::size_t perRange = isLaunch(o) ? 2 : o.which == "sync" ? 1 : 2 + (texts.back().size() + kRecordSize - 1) / kRecordSize;
  std::size_t ring = 1;
  while (ring < perRange * static_cast<std::size_t>(o.batch)) ring <<= 1;
  Drain d(ring);
  if (o.which == "launch-cupti") d.store->data().cupti.state = "on";
  const uint32_t kernel = d.names.intern("_Z4gemmPfS_i");
  double cpu = 0;
  uint64_t t = 1000, seq = 0;
  for (long done = 0; done < o.ranges;) {
    const long n = std::min(o.batch, o.ranges - done);
    for (long i = 0; i < n; ++i, t += 100) {
      if (isLaunch(o)) {
        putLaunch(d.s, seq, t, kernel);
        seq += 2;
        continue;
      }
      if (o.which == "sync") {
        putSync(d.s, seq++, t);
        continue;
      }
      const bool label = o.which == "nvtx";
      putRange(d.s, seq, t, label ? texts[0] : texts[i], label && seq > 0);
      ++seq;
    }
    const double before = threadCpuSeconds();
    drainPasses(d, t);
    cpu += threadCpuSeconds() - before;
    done += n;
  }
  return cpu * 1e9 / static_cast<double>(o.ranges);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--case" && i + 1 < argc) o.which = argv[++i];
    else if (a == "--ranges" && i + 1 < argc) o.ranges = atol(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) o.batch = atol(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) o.runs = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_drain [--case nvtx|nvtx-ops|launch|launch-cupti|sync] [--ranges N] [--batch B] [--runs R]\n");
      return 2;
    }
  }
  if ((o.which != "nvtx" && o.which != "nvtx-ops" && o.which != "sync" && !isLaunch(o)) || o.ranges <= 0 || o.batch <= 0 ||
      o.runs <= 0) {
    fprintf(stderr, "bench_drain: --case nvtx|nvtx-ops|launch|launch-cupti|sync, positive counts\n");
    return 2;
  }
  std::vector<double> ns;
  for (int r = 0; r < o.runs; ++r) ns.push_back(run(o));
  std::sort(ns.begin(), ns.end());
  const char* unit = isLaunch(o) ? "launch" : o.which == "sync" ? "call" : "range";
  const char* units = isLaunch(o) ? "launches" : o.which == "sync" ? "calls" : "ranges";
  printf("%s: %ld %s in passes of %ld, drain %.1f ns of thread CPU a %s (median of %d; min %.1f, max %.1f)\n",
         o.which.c_str(), o.ranges, units, o.batch, ns[ns.size() / 2], unit,
         o.runs, ns.front(), ns.back());
  return 0;
}
