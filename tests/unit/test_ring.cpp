#include <catch2/catch.hpp>

#include <signal.h>

#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "collector/collector.h"
#include "collector/ring.h"

using cutrace::SpscRing;

namespace {

struct Slot {
  uint64_t value;
  uint64_t pad[7];
};

bool push(SpscRing<Slot>& ring, uint64_t v) {
  const uint64_t at = ring.reserve(1);
  if (at == UINT64_MAX) return false;
  ring.at(at).value = v;
  ring.commit(1);
  return true;
}

std::vector<uint64_t> drain(SpscRing<Slot>& ring) {
  std::vector<uint64_t> out;
  const uint64_t end = ring.readEnd();
  for (uint64_t i = ring.readBegin(); i < end; ++i) out.push_back(ring.at(i).value);
  ring.release(end);
  return out;
}

}  // namespace

TEST_CASE("ring keeps order across many wrap-arounds", "[ring]") {
  std::vector<Slot> storage(8);
  SpscRing<Slot> ring(storage.data(), 8);
  uint64_t next = 0;
  std::vector<uint64_t> seen;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 5; ++i) REQUIRE(push(ring, next++));
    auto got = drain(ring);
    seen.insert(seen.end(), got.begin(), got.end());
  }
  REQUIRE(seen.size() == 250);
  for (uint64_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == i);
}

TEST_CASE("full ring refuses, never overwrites, and recovers after release", "[ring]") {
  std::vector<Slot> storage(4);
  SpscRing<Slot> ring(storage.data(), 4);
  for (uint64_t i = 0; i < 4; ++i) REQUIRE(push(ring, i));
  REQUIRE_FALSE(push(ring, 99));
  REQUIRE(ring.reserve(1) == UINT64_MAX);
  REQUIRE(drain(ring) == std::vector<uint64_t>{0, 1, 2, 3});
  REQUIRE(push(ring, 4));
  REQUIRE(drain(ring) == std::vector<uint64_t>{4});
}

TEST_CASE("multi-slot reservations are all-or-nothing", "[ring]") {
  std::vector<Slot> storage(8);
  SpscRing<Slot> ring(storage.data(), 8);
  REQUIRE(ring.reserve(6) == 0);
  ring.commit(6);
  REQUIRE(ring.reserve(3) == UINT64_MAX);  // only 2 free
  REQUIRE(ring.reserve(2) == 6);
  ring.commit(2);
  REQUIRE(drain(ring).size() == 8);
  const uint64_t at = ring.reserve(8);
  REQUIRE(at == 8);  // indices keep growing; slots wrap by mask
}

TEST_CASE("crossedHalf: once when the fill passes half, again only after the consumer released", "[ring]") {
  std::vector<Slot> slots(16);
  SpscRing<Slot> ring(slots.data(), slots.size());
  std::vector<int> crossedAt;
  for (int i = 1; i <= 16; ++i) {
    REQUIRE(push(ring, static_cast<uint64_t>(i)));
    if (ring.crossedHalf()) crossedAt.push_back(i);
  }
  REQUIRE(crossedAt == std::vector<int>{9});  // 9 of 16 is the first fill past half
  REQUIRE(drain(ring).size() == 16);
  // Below half after the release: silent; past half again: once more.
  crossedAt.clear();
  for (int i = 1; i <= 12; ++i) {
    REQUIRE(push(ring, static_cast<uint64_t>(i)));
    if (ring.crossedHalf()) crossedAt.push_back(i);
  }
  REQUIRE(crossedAt == std::vector<int>{9});
  // The consumer releases part of it, still past half: the producer is told again.
  const uint64_t begin = ring.readBegin();
  ring.release(begin + 2);
  REQUIRE(push(ring, 13));
  REQUIRE(ring.crossedHalf());
  REQUIRE_FALSE(ring.crossedHalf());
}

TEST_CASE("concurrent producer and consumer: every accepted value arrives once, in order", "[ring]") {
  std::vector<Slot> storage(64);
  SpscRing<Slot> ring(storage.data(), 64);
  constexpr uint64_t kValues = 200000;
  uint64_t dropped = 0;
  std::vector<uint64_t> accepted;
  accepted.reserve(kValues);
  std::atomic<bool> done{false};
  std::vector<uint64_t> received;
  std::thread consumer([&] {
    for (;;) {
      const bool finished = done.load(std::memory_order_acquire);
      auto got = drain(ring);
      received.insert(received.end(), got.begin(), got.end());
      if (finished && got.empty()) break;
    }
  });
  for (uint64_t v = 0; v < kValues; ++v) {
    if (push(ring, v)) accepted.push_back(v);
    else ++dropped;
  }
  done.store(true, std::memory_order_release);
  consumer.join();
  REQUIRE(received == accepted);
  REQUIRE(accepted.size() + dropped == kValues);
}

TEST_CASE("a ring of no slots (a thread past the memory cap) refuses every reservation", "[ring]") {
  Slot none;
  SpscRing<Slot> ring(&none, 0);
  CHECK(ring.capacity() == 0);
  CHECK_FALSE(push(ring, 1));
  CHECK(ring.reserve(1) == UINT64_MAX);
  CHECK_FALSE(ring.crossedHalf());
  CHECK(ring.readBegin() == ring.readEnd());
}

namespace {

cutrace::ThreadState* g_signalState = nullptr;
int g_handlerOwned = -1;

void handlerEvent(int) {
  cutrace::RecordSection section(g_signalState);
  g_handlerOwned = section.owned() ? 1 : 0;
  if (!section.owned()) section.dropEvent();
  else cutrace::takeSeq(g_signalState);
}

// Runs `f` as a signal handler that interrupts the caller would: in a frame below the caller's
// (a section is known by the frame of the function that opens it).
template <typename F>
[[gnu::noinline]] void below(F&& f) {
  f();
  asm volatile("" ::: "memory");  // not a tail call: f's frame stays below this one
}

// A section opened and never closed, as code that a handler's siglongjmp left: below the caller.
[[gnu::noinline]] void leaveSectionOpen(cutrace::ThreadState* s) {
  alignas(cutrace::RecordSection) static unsigned char storage[sizeof(cutrace::RecordSection)];
  auto* left = new (storage) cutrace::RecordSection(s);  // never destroyed
  REQUIRE(left->owned());
  cutrace::takeSeq(s);
  asm volatile("" ::: "memory");
}

}  // namespace

TEST_CASE("RecordSection: a context that interrupts an open section drops its event, counted when the section closes",
          "[ring][section]") {
  auto s = std::make_unique<cutrace::ThreadState>();
  {
    cutrace::RecordSection outer(s.get());
    REQUIRE(outer.owned());
    CHECK(cutrace::takeSeq(s.get()) == 0);
    below([&] {
      cutrace::RecordSection push(s.get());  // as a signal handler's push would
      REQUIRE_FALSE(push.owned());
      push.dropEvent();
    });
    below([&] {
      cutrace::RecordSection pop(s.get());
      REQUIRE_FALSE(pop.owned());
      pop.dropEnd();
    });
    // Nothing the outer section reads changes under it.
    CHECK(s->nextSeq == 1);
    CHECK(s->dropped.load() == 0);
    CHECK(s->lostEnds.load() == 0);
  }
  CHECK(s->section.load() == 0);
  CHECK(s->nextSeq == 2);  // the dropped event's number is a gap, as for a full ring
  CHECK(s->dropped.load() == 1);
  CHECK(s->lostEnds.load() == 1);
  CHECK(s->pending.load() == 0);
  cutrace::RecordSection next(s.get());
  REQUIRE(next.owned());
  CHECK(cutrace::takeSeq(s.get()) == 2);
}

TEST_CASE("RecordSection: a section left open is taken over from at or above its frame, not from below it",
          "[ring][section]") {
  auto s = std::make_unique<cutrace::ThreadState>();
  leaveSectionOpen(s.get());
  CHECK(s->section.load() != 0);
  CHECK(s->nextSeq == 1);
  // Below the frame that left it, it may still run (a handler interrupting it): dropped, pending.
  below([&] { below([&] {
    cutrace::RecordSection deeper(s.get());
    REQUIRE_FALSE(deeper.owned());
    deeper.dropEvent();
  }); });
  CHECK(s->dropped.load() == 0);
  {
    // From the frame that called the one that left it: that frame is gone.
    cutrace::RecordSection next(s.get());
    REQUIRE(next.owned());
    CHECK(cutrace::takeSeq(s.get()) == 1);
  }
  // The event it was recording (number 0) is counted as dropped when it is taken over; the
  // drop made while it was left (number 2), when the section that took over closes.
  CHECK(s->section.load() == 0);
  CHECK(s->nextSeq == 3);
  CHECK(s->dropped.load() == 2);
  CHECK(s->unsettled == 1);  // number 1, taken above and not settled
  CHECK(s->pending.load() == 0);
}

TEST_CASE("RecordSection: a real signal handler inside and outside a section", "[ring][section]") {
  auto s = std::make_unique<cutrace::ThreadState>();
  g_signalState = s.get();
  struct sigaction sa {}, old{};
  sa.sa_handler = handlerEvent;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
  raise(SIGUSR1);  // delivered before raise returns, outside any section: recorded
  CHECK(g_handlerOwned == 1);
  CHECK(s->nextSeq == 1);
  {
    cutrace::RecordSection section(s.get());
    REQUIRE(section.owned());
    raise(SIGUSR1);  // inside the section: dropped
    CHECK(g_handlerOwned == 0);
    CHECK(s->nextSeq == 1);
  }
  CHECK(s->nextSeq == 2);
  CHECK(s->dropped.load() == 1);
  sigaction(SIGUSR1, &old, nullptr);
  g_signalState = nullptr;
}
