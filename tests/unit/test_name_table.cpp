#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collector/name_table.h"

using cutrace::NameTable;
using cutrace::PointerMap;

TEST_CASE("interning returns one stable id per distinct text", "[names]") {
  NameTable t;
  REQUIRE(t.init(1024, 1 << 20));
  const uint32_t a = t.intern("alpha");
  const uint32_t b = t.intern("beta");
  REQUIRE(a != 0);
  REQUIRE(b != 0);
  REQUIRE(a != b);
  REQUIRE(t.intern("alpha") == a);
  REQUIRE(t.get(a) == "alpha");
  REQUIRE(t.get(b) == "beta");
  REQUIRE(t.get(0).empty());
  REQUIRE(t.intern(std::string_view("with\0nul", 8)) != t.intern("with"));
}

TEST_CASE("a full table answers 0 instead of failing", "[names]") {
  NameTable t;
  REQUIRE(t.init(4, 1 << 16));
  uint32_t last = 0;
  for (int i = 0; i < 4; ++i) last = t.intern("n" + std::to_string(i));
  REQUIRE(last != 0);
  REQUIRE(t.intern("one too many") == 0);
  REQUIRE(t.intern("n2") != 0);  // existing names still resolve
}

TEST_CASE("concurrent interning agrees on ids", "[names]") {
  NameTable t;
  REQUIRE(t.init(1 << 14, 8 << 20));
  constexpr int kThreads = 8;
  constexpr int kNames = 2000;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kNames));
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < kNames; ++i) {
        const int n = (i * 7 + th) % kNames;  // different orders per thread
        ids[th][n] = t.intern("kernel_" + std::to_string(n));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint32_t> distinct;
  for (int n = 0; n < kNames; ++n) {
    for (int th = 1; th < kThreads; ++th) REQUIRE(ids[th][n] == ids[0][n]);
    REQUIRE(t.get(ids[0][n]) == "kernel_" + std::to_string(n));
    distinct.insert(ids[0][n]);
  }
  REQUIRE(distinct.size() == kNames);
}

TEST_CASE("pointer map finds, overwrites and misses", "[names]") {
  PointerMap m;
  REQUIRE(m.init(64));
  int a = 0, b = 0;
  REQUIRE(m.find(&a) == 0);
  m.put(&a, 7, m.generation());
  m.put(&b, 9, m.generation());
  REQUIRE(m.find(&a) == 7);
  REQUIRE(m.find(&b) == 9);
  m.put(&a, 8, m.generation());
  REQUIRE(m.find(&a) == 8);
  REQUIRE(m.find(nullptr) == 0);
}

TEST_CASE("pointer map looks at most kMaxProbes slots: a full table misses at that cost", "[names]") {
  constexpr std::size_t kSlots = 1024;
  PointerMap m;
  REQUIRE(m.init(kSlots));
  // Distinct keys until every slot is taken: the last ones land beyond kMaxProbes of their hash.
  std::vector<uint64_t> keys(4 * kSlots);
  std::size_t cached = 0, refused = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (m.put(&keys[i], static_cast<uint32_t>(i + 1), m.generation())) ++cached;
    else ++refused;
  }
  CHECK(cached <= kSlots);
  CHECK(refused >= keys.size() - kSlots);
  // What was cached is found; what was refused is not (found within the same probes).
  std::size_t found = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const uint32_t v = m.find(&keys[i]);
    CHECK((v == 0 || v == i + 1));
    found += v != 0;
  }
  CHECK(found == cached);
  // Keys that all hash to one slot: only kMaxProbes of them fit, however empty the table.
  PointerMap one;
  REQUIRE(one.init(kSlots));
  std::vector<uint64_t> pool(128 * kSlots);
  std::vector<const void*> same;
  const std::size_t home = PointerMap::slotOf(&pool[0], kSlots - 1);
  for (auto& p : pool)
    if (PointerMap::slotOf(&p, kSlots - 1) == home) same.push_back(&p);
  REQUIRE(same.size() > PointerMap::kMaxProbes);
  std::size_t fit = 0;
  for (const void* p : same) fit += one.put(p, 1, one.generation());
  CHECK(fit == PointerMap::kMaxProbes);
}

TEST_CASE("pointer map forgets all but lasting values, and nothing put after", "[names]") {
  PointerMap m;
  REQUIRE(m.init(64));
  int stub = 0, handle = 0, other = 0;
  REQUIRE(m.put(&stub, 1, PointerMap::kLasting));
  REQUIRE(m.put(&handle, 2, m.generation()));
  // Looked up before the forget(), put after it: the value belongs to the ended generation.
  const uint32_t before = m.generation();
  m.forget();
  REQUIRE(m.put(&other, 3, before));
  CHECK(m.find(&stub) == 1);
  CHECK(m.find(&handle) == 0);
  CHECK(m.find(&other) == 0);
  // The same handle, a new owner: put again, found again (in the slot it had).
  REQUIRE(m.put(&handle, 4, m.generation()));
  CHECK(m.find(&handle) == 4);
  m.forget();
  CHECK(m.find(&handle) == 0);
  CHECK(m.find(&stub) == 1);
}

TEST_CASE("pointer map counts kept by threads at once lose nothing, and never go below 0", "[names]") {
  PointerMap m;
  REQUIRE(m.init(64));
  int handle = 0;
  CHECK_FALSE(m.adjust(&handle, -1, PointerMap::kLasting));  // nothing to take
  CHECK(m.find(&handle) == 0);
  constexpr int kThreads = 8, kEach = 200000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) m.adjust(&handle, 2, PointerMap::kLasting), m.adjust(&handle, -1, PointerMap::kLasting);
    });
  for (auto& t : threads) t.join();
  CHECK(m.find(&handle) == kThreads * kEach);
  // Lasting: a forget() leaves the count; one of an ended generation counts from 0 again.
  m.forget();
  CHECK(m.find(&handle) == kThreads * kEach);
  int other = 0;
  REQUIRE(m.put(&other, 5, m.generation()));
  m.forget();
  REQUIRE(m.adjust(&other, 1, PointerMap::kLasting));
  CHECK(m.find(&other) == 1);
}
