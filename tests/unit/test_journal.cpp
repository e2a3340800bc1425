#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "exporters/folded.h"
#include "exporters/journal.h"
#include "trace_builder.h"

using namespace cutrace;
using test::TraceBuilder;

namespace {

std::string tempDir() {
  char dir[] = "/tmp/cutrace-journal-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  return dir;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("journal: appended in passes, read back to the same trace", "[journal]") {
  TraceBuilder b;
  TraceData& d = b.store().data();
  d.meta.pid = 4242;
  d.meta.exe = "prog";
  d.meta.rank = 2;
  d.meta.commandLine = {"prog", "--x"};
  b.defineStack(1, {"inner", "main"});
  b.push(1, 0, 0, 0, "step");
  b.launch(1, test::kCudaLaunchKernel, 1, 100, 300, "_Z6kernelPf", 1);
  b.pop(1, 400, 0);
  const std::string dir = tempDir();
  JournalWriter w;
  const ClockAnchor start{0, 0}, last{1000, 1000};
  REQUIRE(w.append(d, dir.c_str(), start, last, true));
  REQUIRE(w.path() == dir + "/prog-4242-rank2.journal");
  // A second pass adds events on another thread and a thread name.
  b.api(2, test::kCudaMalloc, 0, 500, 600, 0, 1);
  b.threadName(2, 2, "loader");
  b.mem(1, test::kCudaMemcpy, 2, 700, 800, 64);
  REQUIRE(w.append(d, dir.c_str(), start, ClockAnchor{2000, 2000}, true));
  const std::size_t afterTwo = readFile(w.path()).size();
  REQUIRE(w.append(d, dir.c_str(), start, ClockAnchor{3000, 3000}, true));  // nothing new: nothing written
  REQUIRE(readFile(w.path()).size() == afterTwo);

  TraceData r;
  std::string error;
  REQUIRE(readJournal(w.path(), r, error));
  REQUIRE(r.meta.pid == 4242);
  REQUIRE(r.meta.exe == "prog");
  REQUIRE(r.meta.rank == 2);
  REQUIRE(r.meta.commandLine == std::vector<std::string>{"prog", "--x"});
  REQUIRE(r.hooks.size() == d.hooks.size());
  REQUIRE(std::string(r.hooks[test::kCudaMemcpy].displayName) == "cudaMemcpy");
  REQUIRE(r.threads.size() == d.threads.size());
  for (std::size_t t = 0; t < d.threads.size(); ++t) {
    REQUIRE(r.threads[t].tid == d.threads[t].tid);
    REQUIRE(r.threads[t].events.size() == d.threads[t].events.size());
    for (std::size_t i = 0; i < d.threads[t].events.size(); ++i)
      REQUIRE(memcmp(&r.threads[t].events[i], &d.threads[t].events[i], sizeof(Event)) == 0);
  }
  std::map<std::string, uint64_t> original, recovered;
  for (const auto& [s, w8] : foldStacks(d)) original[s] = w8.calls;
  for (const auto& [s, w8] : foldStacks(r)) recovered[s] = w8.calls;
  REQUIRE(recovered == original);
  REQUIRE(recovered.count("step;main;inner;cudaLaunchKernel;kernel(float*)") == 1);
  w.discard();
  REQUIRE(access((dir + "/prog-4242-rank2.journal").c_str(), F_OK) != 0);
  rmdir(dir.c_str());
}

TEST_CASE("journal: cut anywhere, read as far as it goes or refused, never a crash", "[journal]") {
  TraceBuilder b;
  TraceData& d = b.store().data();
  d.meta.pid = 7;
  d.meta.exe = "cut";
  for (uint64_t i = 0; i < 20; ++i) b.api(1, test::kCudaFree, i, i * 10, i * 10 + 5);
  const std::string dir = tempDir();
  JournalWriter w;
  REQUIRE(w.append(d, dir.c_str(), ClockAnchor{}, ClockAnchor{100, 100}, true));
  const std::string whole = readFile(w.path());
  const std::string cut = dir + "/cut.journal";
  std::size_t readable = 0;
  for (std::size_t n = 0; n <= whole.size(); ++n) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc).write(whole.data(), static_cast<std::streamsize>(n));
    TraceData r;
    std::string error;
    if (readJournal(cut, r, error)) {
      ++readable;
      REQUIRE(r.eventCount() <= 20);
    } else {
      REQUIRE_FALSE(error.empty());
    }
  }
  TraceData full;
  std::string error;
  REQUIRE(readJournal(w.path(), full, error));
  REQUIRE(full.eventCount() == 20);
  REQUIRE(readable > 0);
  std::ofstream(cut, std::ios::binary | std::ios::trunc) << "not a journal at all";
  TraceData r;
  REQUIRE_FALSE(readJournal(cut, r, error));
  REQUIRE(error.find("not a cutrace journal") != std::string::npos);
  w.discard();
  unlink(cut.c_str());
  rmdir(dir.c_str());
}
