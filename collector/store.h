#pragma once
// The process store: the drain thread turns ring records into TraceData events.
//
// Only one thread uses a Store at a time (the drain thread, then the exiting thread after the
// drain thread has been joined); the collector serialises access with its drain mutex.
// NVTX push/pop records are paired here, per thread and domain, using the depth each record
// carries, so a dropped push or pop never mis-pairs the ranges around it.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/name_table.h"
#include "collector/record.h"
#include "collector/trace_data.h"

namespace cutrace {

struct ThreadState;
class StackTable;
class Symbolizer;

class Store {
 public:
  explicit Store(const NameTable& names) : names_(names) { data_.changesListed = true; }

  // Moves every committed record of `s` into the track of its current owner. `retired`: the
  // caller saw the owner's exit (Life::Retired, acquire), so its final name can be read.
  // Records that end after `maxTicks` (the pass's clock anchor), and all after them, are decoded
  // in the next pass, so that every tick is mapped between two anchors, never past the last (see
  // TickTimeline); the ring is emptied all the same, up to `upTo` (a ring index: the end the pass
  // saw; records committed later wait for the next pass, never carried). At most `maxRecords`
  // records are decoded (text blocks not counted); true when that stopped it with records left
  // before `upTo`: call again.
  bool consume(ThreadState& s, bool retired, uint64_t maxTicks = UINT64_MAX, uint64_t maxRecords = UINT64_MAX,
               uint64_t upTo = UINT64_MAX);
  // Decodes one record with its text (exposed for unit tests).
  void decode(uint32_t trackId, uint32_t tid, const Record& r, const char* text, std::size_t textLen);

  // Names the frames of stacks interned since the last call (drain passes and the end), while
  // the objects they point into are most likely still loaded.
  void resolveStacks(const StackTable& table, Symbolizer& symbolizer);

  // Closes what is still open at `endTicks`, applies thread names. Call once, at the end.
  void finalize(uint64_t endTicks);

  TraceData& data() { return data_; }
  // The stream holds every event decoded so far: they leave memory (counted in
  // ThreadTrack::released). Open ranges stay until they end.
  void releaseEvents();
  uint64_t recordsSeen() const { return recordsSeen_; }
  // Whether any thread stored or lost an event so far (TraceData::eventCount() +
  // droppedEvents() > 0, without visiting every thread).
  bool recordedAny() const { return recordedAny_; }
  // The fit that maps this pass's record ticks to CLOCK_MONOTONIC nanoseconds. Events are
  // stored in nanoseconds, converted once as they are decoded, so the stream and every view of
  // it read the same numbers.
  // The clock of the passes: set once, then an anchor added by every pass before it reads the rings.
  void setClock(const TickTimeline& clock) { clock_ = clock; }
  void addClockAnchor(const ClockAnchor& a) { clock_.add(a); }
  // An event could not be stored for want of memory (the collector then turns tracing off).
  bool outOfMemory() const { return outOfMemory_; }
  // At most this many bytes of stored events (0 = no cap).
  void setMemoryCap(uint64_t bytes) { eventBudget_ = bytes == 0 ? UINT64_MAX : bytes / sizeof(Event); }
  // NVTX message texts kept for the whole run (StringPool::internBounded: a text is kept from its
  // second sighting on, while these allow); any other text lives only as long as its event is in
  // memory.
  void setStringCap(std::size_t strings, std::size_t bytes) {
    stringCap_ = strings;
    stringBytesCap_ = bytes;
  }

 private:
  // Names the frames of stack `id`; false while its frames are not in the table yet.
  bool resolveStack(const StackTable& table, Symbolizer& symbolizer, uint32_t id);
  // A pushed range until its pop: what its event will need, no more (written field by field at
  // the push, and into the event's slot at the pop, never copied whole).
  struct OpenRange {
    uint64_t start;  // ticks
    // Its start as ns, mapped once at the push: its event (emitted passes later, when each pass
    // has its own clock fit) and ThreadTrack::opens then carry the same value, to the ns.
    uint64_t startNs;
    uint64_t seq;
    uint32_t name, domain, category;
    uint8_t flags;
    uint16_t depth;
    // Default domain only (its ranges share the thread's track with the CUDA calls): what bounds
    // the end of a range whose pop was lost, so that it still nests with the calls. `lastInside`:
    // the latest end of what was recorded inside it. `sealed`: a call that began before the range
    // arrived after it (the range lies inside that call, whose start and end are seal*): nothing
    // decoded later is inside the range.
    uint64_t lastInside;
    uint64_t sealStart, sealEnd;
    bool sealed;
    // Listed in ThreadTrack::openRanges at some point: the stream may have its BEGIN, so its
    // event is stored even past the memory cap (its END must follow).
    bool listed;
    TorchPayload torch;  // fields 0: not one of PyTorch's op ranges
    // With torch.fields 0, whether the text is an op range all the same in the Chrome trace's
    // reading (parseTorchRange, not in PyTorch's exact spelling): -1 not looked at yet, found
    // the first time a launch is made inside it (noteLaunchOp).
    int8_t looseOp;
    OpenRange() {}  // not zeroed first: the push writes every field (of torch, fields at least)
  };
  struct Track {
    std::size_t index;  // into data_.threads
    std::unordered_map<uint32_t, std::vector<OpenRange>> stacks;  // by domain (NameTable id)
    // stacks[0] once it exists (a map's elements never move), looked up by every call.
    std::vector<OpenRange>* defaultStack = nullptr;
    // Records taken from the ring that end past the pass's anchor, with their text blocks, in
    // ring order: decoded first in the next pass (whose anchor is later), so the ring is emptied
    // and still no tick is mapped past an anchor.
    std::vector<Record> carried;
    // The text of the thread's last push when it was short (NvtxPayload::sameText), with its name
    // when that is an interned one (not an op range's, not transient: lastPushPlain).
    std::string lastPush;
    bool hasLastPush = false;
    bool lastPushPlain = false;
    uint32_t lastPushName = 0;
  };
  void decodeRun(Track& t, const Record* records, std::size_t count);
  // A start/end range until its end: its event but for `end` (`start` already in ns).
  struct OpenSpan {
    Event event;
    std::size_t track;  // the thread it began on, whose track its event goes to
    bool listed;  // as OpenRange::listed
  };
  // The start/end range `open` ends at `endTicks`; `flags`: kEventUnclosed at the end.
  void endSpan(const OpenSpan& open, uint64_t endTicks, uint8_t flags);

  Track& track(uint32_t trackId, uint32_t tid, uint32_t pthreadLow = 0);
  static std::vector<OpenRange>& stackOf(Track& t, uint32_t domain) {
    if (domain == 0 && t.defaultStack != nullptr) return *t.defaultStack;
    std::vector<OpenRange>& stack = t.stacks[domain];
    if (domain == 0) t.defaultStack = &stack;
    return stack;
  }
  void decodeInto(Track& t, const Record& r, const char* text, std::size_t textLen);
  void decodeApi(Track& t, const Record& r);
  // ThreadTrack::launchOps: the op range open around `call`, a call that can make device work.
  [[gnu::noinline]] void noteLaunchOp(Track& t, const Event& call);
  // A push and the pop right after it in the ring (same domain and depth): the range as push
  // and pop would store it, without its open state (nothing was recorded inside it).
  void decodeRange(Track& t, const Record& push, const Record& pop, const char* text, std::size_t textLen);
  // Inlined where every launch is decoded: its kernel's name is nearly always mapped already.
  uint32_t nameFromTable(uint32_t id) {
    if (id < tableToPool_.size() && tableToPool_[id] != 0) return tableToPool_[id] - 1;
    return id == 0 ? 0 : internTableName(id);
  }
  uint32_t internTableName(uint32_t id);
  // The name of an NVTX record's message. `torch`, for a push: where the text is one of PyTorch's
  // op ranges, its parts go there and the name is the op name.
  uint32_t nvtxName(const Record& r, const char* text, std::size_t textLen, uint8_t& flags,
                    TorchPayload* torch = nullptr);
  // nvtxName() of a push, which may carry no text and repeat the thread's last one
  // (NvtxPayload::sameText): pushes are decoded in ring order, as the hooks wrote them.
  // Inline for a loop's label (the thread's last push again, an interned name): its call and
  // prologue cost more than the answer.
  uint32_t pushName(Track& t, const Record& r, const char* text, std::size_t textLen, uint8_t& flags,
                    TorchPayload* torch) {
    if (r.nvtx.sameText && t.lastPushPlain) return t.lastPushName;
    return pushNameOf(t, r, text, textLen, flags, torch);
  }
  uint32_t pushNameOf(Track& t, const Record& r, const char* text, std::size_t textLen, uint8_t& flags,
                      TorchPayload* torch);
  uint32_t internText(std::string_view text) { return data_.strings.internBounded(text, stringCap_, stringBytesCap_); }
  void closeLost(Track& t, std::vector<OpenRange>& stack, uint32_t minDepth, uint64_t at, bool defaultDomain);
  // The range on top of `stack` ends at `end` (ticks; `flags`: a lost or missing pop): its event
  // is stored, a default-domain parent learns where it ended, and it leaves the stack.
  void endTop(std::size_t trackIndex, std::vector<OpenRange>& stack, uint64_t end, uint8_t flags, bool defaultDomain);
  // The event of `open` but for its end and the flags the end sets.
  void rangeEvent(const OpenRange& open, Event& e) const;
  // ThreadTrack::openRanges of `t` from its stacks and the start/end ranges begun on it, after a
  // decode.
  void listOpenRanges(Track& t);
  // Default-domain bookkeeping for lost ends (OpenRange): something recorded on the thread over
  // [t0, t1]; a range that ended at `end`, inside `parent`.
  static void noteInside(std::vector<OpenRange>& stack, uint64_t t0, uint64_t t1);
  static void childEnded(OpenRange& parent, const OpenRange& child, uint64_t end);
  // The end of a default-domain range whose pop was lost: `at` unless a call enclosing it says
  // it ended sooner.
  static uint64_t lostEnd(const OpenRange& r, uint64_t at) { return r.sealed ? r.lastInside : at; }
  // An event whose times are still ticks (marks, start/end ranges). Past the memory cap the
  // newest events are dropped and counted on their thread.
  void emit(std::size_t trackIndex, const Event& e) {
    data_.markChanged(trackIndex);  // another thread's track, for a start/end range
    Event* slot = newEvent(trackIndex);
    if (slot == nullptr) return;
    *slot = e;
    slot->start = clock_.toMonotonicNs(e.start);
    slot->end = clock_.toMonotonicNs(e.end);
  }
  // Room for one more event of the track, for the caller to fill with times already mapped;
  // nullptr when it is dropped (memory cap, unless `pastCap`; or no memory for another block:
  // tracing then ends).
  Event* newEvent(std::size_t trackIndex, bool pastCap = false) {
    ThreadTrack& t = data_.threads[trackIndex];
    recordedAny_ = true;  // stored, or counted as dropped below
    if (__builtin_expect(eventsStored_ >= eventBudget_, 0) && !pastCap) {
      ++t.capped;
      ++t.dropped;
      return nullptr;
    }
    Event* slot = t.events.appendUninitialized();
    if (slot == nullptr) {
      ++t.dropped;
      outOfMemory_ = true;
      return nullptr;
    }
    ++eventsStored_;
    return slot;
  }

  // Whether a start/end range begun on the thread in slot `index` is still open: its event
  // will go to that thread's track when it ends (on any thread), so the slot is kept.
  bool spanBegunOn(std::size_t index) const { return index < spansOpenOn_.size() && spansOpenOn_[index] != 0; }

  const NameTable& names_;
  TickTimeline clock_;
  TraceData data_;
  std::unordered_map<uint32_t, Track> tracks_;
  // Slots of data_.threads whose thread exited and left them (releaseEvents), for new threads.
  std::vector<std::size_t> freeSlots_;
  uint32_t nextOrdinal_ = 0;  // ThreadTrack::ordinal of the next new thread
  // NameTable id -> StringPool id + 1 (0: not interned yet). NameTable ids are dense and
  // bounded by its capacity; one is looked up for every launch and every named NVTX domain.
  std::vector<uint32_t> tableToPool_;
  std::unordered_map<uint64_t, OpenSpan> openSpans_;
  std::vector<uint32_t> spansOpenOn_;  // by slot: openSpans_ begun there
  std::unordered_map<uint64_t, uint64_t> earlyEnds_;  // rangeId -> end ticks, start not yet seen
  std::unordered_map<uint32_t, std::string> threadNames_;  // tid -> NVTX name
  std::string textBuffer_;
  // The last NVTX message text interned (not transient: such ids are renumbered) and its id.
  std::string lastMessage_;
  uint32_t lastMessageId_ = StringPool::kTransientId;
  uint64_t recordsSeen_ = 0;
  uint32_t stacksResolved_ = 0;  // ids up to here were looked at once (resolveStacks)
  // Ids looked at while their frames were still being copied, retried at every pass.
  static constexpr std::size_t kMaxStacksInFlight = 64;
  std::vector<uint32_t> stacksInFlight_;
  uint64_t eventBudget_ = UINT64_MAX;  // events held at most (UINT64_MAX: no cap)
  std::size_t stringCap_ = std::size_t{1} << 16;
  std::size_t stringBytesCap_ = std::size_t{16} << 20;
  uint64_t eventsStored_ = 0;
  bool outOfMemory_ = false;
  bool recordedAny_ = false;
};

}  // namespace cutrace
