#include "collector/store.h"

#include <stdio.h>
#include <string.h>

#include <algorithm>

#include "collector/collector.h"
#include "collector/private_files.h"
#include "collector/python_frames.h"
#include "collector/stack_table.h"
#include "collector/symbolizer.h"
#include "collector/torch_text.h"

namespace cutrace {

uint32_t StringPool::find(std::string_view text, uint64_t h, Slot*& slot) {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.idPlusOne == 0) {
      slot = &s;
      return UINT32_MAX;
    }
    if (s.hash == h && strings_[s.idPlusOne - 1] == text) return s.idPlusOne - 1;
  }
}

void StringPool::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  filter_.assign(slots_.size() / 8, 0);
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.idPlusOne == 0) continue;
    std::size_t i = s.hash & mask;
    while (slots_[i].idPlusOne != 0) i = (i + 1) & mask;
    slots_[i] = s;
    addToFilter(s.hash);
  }
}

uint32_t StringPool::add(std::string_view text, uint64_t h, Slot* slot) {
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(text);
  *slot = Slot{h, id + 1};
  addToFilter(h);
  bytes_ += text.size();
  if (strings_.size() * 2 > slots_.size()) grow();
  return id;
}

uint32_t StringPool::intern(std::string_view text) {
  const uint64_t h = textHash(text);
  Slot* slot = nullptr;
  if (const uint32_t id = find(text, h, slot); id != UINT32_MAX) return id;
  return add(text, h, slot);
}

uint32_t StringPool::internBounded(std::string_view text, std::size_t maxStrings, std::size_t maxBytes) {
  const uint64_t h = textHash(text);
  Slot* slot = nullptr;
  if (mayHold(h)) {
    if (const uint32_t id = find(text, h, slot); id != UINT32_MAX) return id;
  }
  if (seen_.empty()) seen_.assign(kSeenSlots, 0);
  uint16_t& seen = seen_[(h >> 20) & (kSeenSlots - 1)];
  if (seen == seenTag(h) && strings_.size() < maxStrings && bytes_ + text.size() <= maxBytes) {
    seen = 0;
    if (slot == nullptr) find(text, h, slot);  // not in the pool (the filter said so): its empty slot
    return add(text, h, slot);
  }
  seen = seenTag(h);
  return addTransient(text);
}

void StringPool::dropTransient(const std::vector<uint32_t*>& keep) {
  std::string text;
  std::vector<Span> spans;
  text.swap(transientText_);
  spans.swap(transient_);
  std::unordered_map<uint32_t, uint32_t> moved;
  for (uint32_t* id : keep) {
    if (!isTransient(*id)) continue;
    const uint32_t index = *id & ~kTransientId;
    auto [it, added] = moved.try_emplace(*id, 0);
    if (added)
      it->second = index < spans.size() ? addTransient(std::string_view(text).substr(spans[index].offset, spans[index].length))
                                        : addTransient({});
    *id = it->second;
  }
  // The buffers keep their capacity for the next pass's texts.
  text.clear();
  if (transientText_.empty()) transientText_.swap(text);
  spans.clear();
  if (transient_.empty()) transient_.swap(spans);
}

const char* copyKindName(uint8_t kind) {
  switch (static_cast<CopyKind>(kind)) {
    case CopyKind::HostToHost: return "HtoH";
    case CopyKind::HostToDevice: return "HtoD";
    case CopyKind::DeviceToHost: return "DtoH";
    case CopyKind::DeviceToDevice: return "DtoD";
    case CopyKind::Default: return "default";
    case CopyKind::Peer: return "peer";
    case CopyKind::Unknown: break;
  }
  return "unknown";
}

uint64_t TraceData::droppedEvents() const {
  uint64_t n = 0;
  for (const auto& t : threads) n += t.dropped;
  for (const auto& t : exitedThreads) n += t.dropped;
  return n;
}

uint64_t TraceData::eventCount() const {
  uint64_t n = 0;
  for (const auto& t : threads) n += t.released + t.events.size();
  for (const auto& t : exitedThreads) n += t.events;
  return n;
}

namespace {

// The kernel's name for a thread of this process (what pthread_setname_np and prctl set).
std::string readThreadName(uint32_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
  char buf[64];
  const ssize_t n = privateFiles::readFile(path, buf, sizeof(buf));
  std::string name(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name;
}

}  // namespace

Store::Track& Store::track(uint32_t trackId, uint32_t tid, uint32_t pthreadLow) {
  auto it = tracks_.find(trackId);
  if (it != tracks_.end()) return it->second;
  ThreadTrack t;
  t.ordinal = nextOrdinal_++;
  t.tid = tid;
  t.pthreadLow = pthreadLow;
  t.name = readThreadName(tid);
  std::size_t index;
  if (!freeSlots_.empty()) {
    index = freeSlots_.back();
    freeSlots_.pop_back();
    data_.threads[index] = std::move(t);
  } else {
    index = data_.threads.size();
    data_.threads.push_back(std::move(t));
  }
  return tracks_.emplace(trackId, Track{index, {}}).first->second;
}

uint32_t Store::internTableName(uint32_t id) {
  const uint32_t pooled = data_.strings.intern(names_.get(id));
  if (id >= tableToPool_.size()) tableToPool_.resize(std::size_t{id} + 1, 0);
  tableToPool_[id] = pooled + 1;
  return pooled;
}

uint32_t Store::nvtxName(const Record& r, const char* text, std::size_t textLen, uint8_t& flags,
                         TorchPayload* torch) {
  if (r.nvtx.truncated) flags |= kEventTextTruncated;
  if (r.nvtx.message != 0) return nameFromTable(r.nvtx.message);
  const std::string_view message(text, std::min<std::size_t>(textLen, r.nvtx.length));
  // A loop pushes the same label over and over: the last message kept is compared first.
  if (message == lastMessage_ && !StringPool::isTransient(lastMessageId_)) return lastMessageId_;
  // PyTorch's op ranges: a text per call, whose parts repeat but for the numbers. Taken apart
  // here, once, for the fold, the stream and the Chrome trace alike.
  TorchOp op;
  if (torch != nullptr && parseExactTorchRange(message, op)) {
    *torch = torchPayload(op, op.sizes.empty() ? 0 : internText(op.sizes),
                          op.inputOpIds.empty() ? 0 : data_.strings.transient(op.inputOpIds));
    return internText(op.name);
  }
  const uint32_t id = internText(message);
  if (!StringPool::isTransient(id)) {
    lastMessage_.assign(message);
    lastMessageId_ = id;
  }
  return id;
}

uint32_t Store::pushNameOf(Track& t, const Record& r, const char* text, std::size_t textLen, uint8_t& flags,
                           TorchPayload* torch) {
  if (r.nvtx.sameText) {
    text = t.hasLastPush ? t.lastPush.data() : "";  // none: a ring the hooks wrote otherwise
    textLen = t.hasLastPush ? t.lastPush.size() : 0;
  }
  const uint32_t id = nvtxName(r, text, textLen, flags, torch);
  const std::size_t length = std::min<std::size_t>(textLen, r.nvtx.length);
  // What the hooks compare the next push with (ThreadState::lastPush*): a short text, not a
  // registered string.
  if (!r.nvtx.sameText) {
    t.hasLastPush = r.nvtx.message == 0 && r.nvtx.length < kShortText && !r.nvtx.truncated;
    if (t.hasLastPush) t.lastPush.assign(text, length);
  }
  t.lastPushPlain = t.hasLastPush && !StringPool::isTransient(id) && (torch == nullptr || torch->fields == 0);
  t.lastPushName = id;
  return id;
}

void Store::decodeRun(Track& t, const Record* records, std::size_t count) {
  for (std::size_t i = 0; i < count;) {
    const Record& r = records[i];
    const std::size_t n = std::min<std::size_t>(1u + r.extra, count - i);
    if (n == 1) {
      decodeInto(t, r, "", 0);
    } else {
      textBuffer_.assign(reinterpret_cast<const char*>(records + i + 1), (n - 1) * kRecordSize);
      decodeInto(t, r, textBuffer_.data(), textBuffer_.size());
    }
    i += n;
  }
}

// The most frequent record, inlined into the drain's loop (its call and prologue cost as much
// as the decoding).
[[gnu::always_inline]] inline void Store::decodeApi(Track& t, const Record& r) {
  ++recordsSeen_;
  // Decoded straight into its slot, every field written once.
  if (Event* e = newEvent(t.index)) {
    e->start = clock_.toMonotonicNs(r.t0);
    e->end = clock_.toMonotonicNs(r.t1);
    e->seq = r.seq;
    e->name = 0;
    e->domain = 0;
    e->category = 0;
    e->hook = r.hook;
    e->kind = EventKind::Api;
    e->flags = 0;
    e->result = r.result;
    memcpy(e->raw, r.raw, sizeof(e->raw));
    uint32_t stackWord;
    memcpy(&stackWord, e->raw + kStackIdOffset, sizeof(stackWord));
    if (stackWord & (kNestedCallBit | kCapturedBit)) {
      e->flags = static_cast<uint8_t>(((stackWord & kNestedCallBit) ? kEventInsideCall : 0) |
                                      ((stackWord & kCapturedBit) ? kEventCaptured : 0));
      stackWord &= ~(kNestedCallBit | kCapturedBit);
      memcpy(e->raw + kStackIdOffset, &stackWord, sizeof(stackWord));
    }
    if (r.hook < data_.hooks.size()) {
      const ApiKind kind = data_.hooks[r.hook].kind;
      if (kind == ApiKind::Launch) e->launch.kernelName = nameFromTable(r.launch.kernelName);
      // A thread that never pushed a range has no stacks: nothing more for most programs' calls.
      if (makesDeviceWork(kind) && !(e->flags & kEventInsideCall) && !t.stacks.empty()) noteLaunchOp(t, *e);
    }
  }
  if (t.defaultStack != nullptr) noteInside(*t.defaultStack, r.t0, r.t1);
}

void Store::noteLaunchOp(Track& t, const Event& call) {
  // The op ranges are those the Chrome trace's linkTorchOps takes: a text kept whole that
  // parseTorchRange reads as an op counts too, so that both files give a kernel the same op.
  const auto isOp = [&](OpenRange& r) {
    if (r.torch.fields != 0) return true;
    if (r.looseOp < 0) {
      TorchOp parsed;
      r.looseOp = parseTorchRange(data_.strings.get(r.name), parsed) ? 1 : 0;
    }
    return r.looseOp != 0;
  };
  OpenRange* op = nullptr;
  for (auto& [domain, stack] : t.stacks)
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
      if (isOp(*it)) {
        if (op == nullptr || it->start > op->start) op = &*it;
        break;
      }
  if (op == nullptr) return;
  // A loose one's parts are found by the writer, from its text (ThreadTrack::LaunchOp::loose).
  const bool loose = op->torch.fields == 0;
  data_.threads[t.index].launchOps.push_back(ThreadTrack::LaunchOp{
      call.seq, op->torch.opId, op->name, loose ? 0 : op->torch.sizes, (op->torch.fields & kTorchOpId) != 0, loose});
}

bool Store::consume(ThreadState& s, bool retired, uint64_t maxTicks, uint64_t maxRecords, uint64_t upTo) {
  Track& t = track(s.trackId, s.tid, s.pthreadLow);  // first sight: the track keeps both thread ids
  data_.markChanged(t.index);
  auto& ring = s.ring;
  // Committed before the previous pass ended, so before this pass's anchor. (Decoding never
  // touches `carried`; cleared, it keeps its capacity for the next hand-over.)
  decodeRun(t, t.carried.data(), t.carried.size());
  t.carried.clear();
  uint64_t i = ring.readBegin();
  const uint64_t end = std::min(ring.readEnd(), upTo);
  bool carrying = false;
  bool more = false;
  uint64_t decoded = 0;
  while (i < end) {
    // Copied whole, at once: decoding the fields in place, read over the whole decode, made the
    // traced thread slower (NVTX push/pop, 9 alternating runs: 36 -> 41 ns a range).
    const Record r = ring.at(i);
    const uint64_t n = 1u + r.extra;
    if (i + n > end) break;  // cannot happen: a record and its text are committed together
    carrying = carrying || (r.type == RecordType::Api ? r.t1 : r.t0) > maxTicks;
    if (!carrying && decoded++ == maxRecords) {
      more = true;
      break;
    }
    if (carrying) {
      for (uint64_t b = 0; b < n; ++b) t.carried.push_back(ring.at(i + b));
      i += n;
      continue;
    }
    if (r.type == RecordType::Api) {  // every CUDA call (never with text)
      decodeApi(t, r);
      i += n;
      continue;
    }
    const char* text = "";
    std::size_t textLen = 0;
    if (n > 1) {
      textLen = (n - 1) * kRecordSize;
      if (const Record* first = &ring.at(i + 1); &ring.at(i + n - 1) == first + (n - 2)) {
        // Its text blocks lie in order in the ring (they do but where the ring wraps): read in
        // place, valid until the release below.
        text = reinterpret_cast<const char*>(first);
      } else {
        textBuffer_.clear();
        for (uint64_t b = 1; b < n; ++b) {
          const Record& block = ring.at(i + b);
          textBuffer_.append(reinterpret_cast<const char*>(&block), kRecordSize);
        }
        text = textBuffer_.data();
      }
    }
    // A range around nothing recorded (a push, then its pop): both at once, when the pop is
    // decoded in this pass as well.
    if (r.type == RecordType::NvtxPush && i + n < end && decoded < maxRecords) {
      const Record& pop = ring.at(i + n);
      if (pop.type == RecordType::NvtxPop && pop.extra == 0 && pop.nvtx.domain == r.nvtx.domain &&
          pop.nvtx.depth == r.nvtx.depth && pop.t0 <= maxTicks) {
        decodeRange(t, r, pop, text, textLen);
        ++decoded;
        i += n + 1;
        continue;
      }
    }
    decodeInto(t, r, text, textLen);
    i += n;
  }
  ring.release(i);
  listOpenRanges(t);
  ThreadTrack& thread = data_.threads[t.index];
  thread.dropped = s.dropped.load(std::memory_order_relaxed) + thread.capped;
  recordedAny_ = recordedAny_ || thread.dropped != 0;
  thread.lostEnds = s.lostEnds.load(std::memory_order_relaxed);
  // The owner wrote its final name before it published Retired (collector.cpp, threadExit);
  // before that the name is the owner's to change, so it is only read here.
  if (retired) {
    // The owner exited: its counter is final and visible (Retired was published with release).
    thread.seqEnd = s.nextSeq;
    const std::string_view last(s.name, strnlen(s.name, sizeof(s.name)));
    if (!last.empty()) thread.name = std::string(last);
    // A name given with NVTX wins, as at the end (finalize): the thread's slot may not be there then.
    if (auto named = threadNames_.find(thread.tid); named != threadNames_.end()) thread.name = named->second;
    // Its last records taken and no range of it left open: nothing more comes for it, and what
    // the drain and the views keep for it can go once this is streamed.
    bool open = !t.carried.empty();
    for (const auto& [domain, stack] : t.stacks) open = open || !stack.empty();
    if (!more && !open) {
      thread.exited = true;
      tracks_.erase(s.trackId);
    }
  }
  return more;
}

void Store::releaseEvents() {
  // Only a changed thread holds events or opens (every append marks its thread).
  data_.forEachChanged([&](std::size_t i) {
    ThreadTrack& t = data_.threads[i];
    t.released += t.events.size();
    eventsStored_ -= t.events.size();
    t.releasedOpens += t.opens.size();
    if (t.exited) {
      t.events.clearReleasingBlocks();
      std::vector<ThreadTrack::RangeOpen>().swap(t.opens);
      std::vector<ThreadTrack::LaunchOp>().swap(t.launchOps);
      if (!spanBegunOn(i)) {
        // The stream and the folding took its last events in this pass (they run before the
        // release): its figures are all that is kept, and the slot goes to the next new thread.
        data_.exitedThreads.push_back(t.figures(t.ordinal));
        t = ThreadTrack();
        t.ordinal = ThreadTrack::kVacant;
        freeSlots_.push_back(i);
      }
    } else {
      t.events.clearKeepingBlocks();
      t.opens.clear();
      t.launchOps.clear();
    }
  });
  data_.clearChanged();
  // Device work and CUPTI's API records went into the stream too (the writer keeps the API
  // records it may still need).
  data_.releasedDevice += data_.device.size();
  data_.device.clear();
  data_.apiActivity.clear();
  // Transient names (StringPool) still in use: the ranges and spans not yet ended.
  if (data_.strings.transientCount() != 0) {
    std::vector<uint32_t*> inUse;
    for (auto& [id, track] : tracks_)
      for (auto& [domain, stack] : track.stacks)
        for (OpenRange& open : stack) {
          inUse.push_back(&open.name);
          if (open.torch.fields == 0) continue;
          inUse.push_back(&open.torch.sizes);
          inUse.push_back(&open.torch.inputOpIds);
        }
    for (auto& [rangeId, span] : openSpans_) inUse.push_back(&span.event.name);
    data_.strings.dropTransient(inUse);
  }
}

void Store::noteInside(std::vector<OpenRange>& stack, uint64_t t0, uint64_t t1) {
  if (stack.empty()) return;
  OpenRange& top = stack.back();
  if (top.sealed) return;
  if (t0 >= top.start) {
    top.lastInside = std::max(top.lastInside, t1);
  } else {
    top.sealed = true;
    top.sealStart = t0;
    top.sealEnd = t1;
  }
}

void Store::childEnded(OpenRange& parent, const OpenRange& child, uint64_t end) {
  if (parent.sealed) return;
  parent.lastInside = std::max(parent.lastInside, end);
  if (!child.sealed) return;
  // The call that enclosed the child began inside the parent (then it is inside the parent too)
  // or before it (then it encloses the parent as well).
  if (child.sealStart >= parent.start) {
    parent.lastInside = std::max(parent.lastInside, child.sealEnd);
  } else {
    parent.sealed = true;
    parent.sealStart = child.sealStart;
    parent.sealEnd = child.sealEnd;
  }
}

void Store::closeLost(Track& t, std::vector<OpenRange>& stack, uint32_t minDepth, uint64_t at, bool defaultDomain) {
  // Ranges still open at or above `minDepth` lost their pop; they ended no later than `at`, and
  // a default-domain range no later than the calls enclosing it allow.
  while (!stack.empty() && stack.back().depth >= minDepth)
    endTop(t.index, stack, defaultDomain ? lostEnd(stack.back(), at) : at, kEventEndLost, defaultDomain);
}

void Store::endTop(std::size_t trackIndex, std::vector<OpenRange>& stack, uint64_t end, uint8_t flags,
                   bool defaultDomain) {
  const OpenRange& open = stack.back();
  if (Event* e = newEvent(trackIndex, open.listed)) {
    rangeEvent(open, *e);
    e->end = clock_.toMonotonicNs(end);
    e->flags |= flags;
  }
  if (defaultDomain && stack.size() > 1) childEnded(stack[stack.size() - 2], open, end);
  stack.pop_back();
}

void Store::rangeEvent(const OpenRange& open, Event& e) const {
  e.start = open.startNs;
  e.seq = open.seq;
  e.name = open.name;
  e.domain = open.domain;
  e.category = open.category;
  e.hook = 0;
  e.kind = EventKind::NvtxRange;
  e.flags = open.flags;
  e.result = 0;
  memset(e.raw, 0, sizeof(e.raw));
  if (open.torch.fields != 0) e.torch = open.torch;
}

void Store::listOpenRanges(Track& t) {
  std::vector<Event>& list = data_.threads[t.index].openRanges;
  list.clear();
  for (auto& [domain, stack] : t.stacks) {
    for (OpenRange& open : stack) {
      if (open.flags & kEventInsideCall) continue;
      open.listed = true;
      rangeEvent(open, list.emplace_back());
    }
  }
  const bool spans = spanBegunOn(t.index);
  if (spans) {
    for (auto& [rangeId, open] : openSpans_) {
      if (open.track != t.index) continue;
      open.listed = true;
      list.push_back(open.event);
    }
  }
  // Domains come in the map's order, spans in theirs: by seq, the order the ranges began.
  if (t.stacks.size() > 1 || spans)
    std::sort(list.begin(), list.end(), [](const Event& a, const Event& b) { return a.seq < b.seq; });
}

void Store::endSpan(const OpenSpan& open, uint64_t endTicks, uint8_t flags) {
  data_.markChanged(open.track);
  // Listed on its thread, which may not be decoded again (it ended): it goes from the list here.
  std::vector<Event>& list = data_.threads[open.track].openRanges;
  std::erase_if(list, [&](const Event& e) { return e.kind == EventKind::NvtxSpan && e.seq == open.event.seq; });
  --spansOpenOn_[open.track];
  if (Event* e = newEvent(open.track, open.listed)) {
    *e = open.event;
    e->end = clock_.toMonotonicNs(endTicks);
    e->flags |= flags;
  }
}

[[gnu::always_inline]] inline void Store::decodeRange(Track& t, const Record& push, const Record& pop, const char* text,
                                                      std::size_t textLen) {
  recordsSeen_ += 2;
  const uint32_t domain = nameFromTable(push.nvtx.domain);
  auto& stack = stackOf(t, domain);
  // As the push: everything at its depth or deeper lost its pop.
  closeLost(t, stack, push.nvtx.depth, push.t0, domain == 0);
  // As the pop: the range's event, and its parent (default domain) learns where it ended; being
  // the top of the stack for no record, the range was never sealed.
  if (domain == 0 && !stack.empty() && !stack.back().sealed)
    stack.back().lastInside = std::max(stack.back().lastInside, pop.t0);
  Event* e = newEvent(t.index);
  if (e == nullptr) {
    // Dropped (memory cap) but read: the next push may repeat its text (NvtxPayload::sameText).
    uint8_t flags = 0;
    TorchPayload torch{};
    pushName(t, push, text, textLen, flags, &torch);
    return;
  }
  e->start = clock_.toMonotonicNs(push.t0);
  e->end = clock_.toMonotonicNs(pop.t0);
  e->seq = push.seq;
  e->domain = domain;
  e->category = push.nvtx.category;
  e->hook = 0;
  e->kind = EventKind::NvtxRange;
  e->result = 0;
  memset(e->raw, 0, sizeof(e->raw));
  uint8_t flags = push.nvtx.insideCall ? kEventInsideCall : 0;
  e->name = pushName(t, push, text, textLen, flags, &e->torch);
  e->flags = flags;
}

void Store::decode(uint32_t trackId, uint32_t tid, const Record& r, const char* text, std::size_t textLen) {
  Track& t = track(trackId, tid);
  data_.markChanged(t.index);
  decodeInto(t, r, text, textLen);
  listOpenRanges(t);
}

void Store::decodeInto(Track& t, const Record& r, const char* text, std::size_t textLen) {
  if (r.type == RecordType::Api) return decodeApi(t, r);
  ++recordsSeen_;
  switch (r.type) {
    case RecordType::Api:  // decodeApi, above
      break;
    case RecordType::NvtxPush: {
      const uint32_t domain = nameFromTable(r.nvtx.domain);
      auto& stack = stackOf(t, domain);
      // A push at depth d means everything at depth >= d was popped, even if we lost the pop.
      closeLost(t, stack, r.nvtx.depth, r.t0, domain == 0);
      OpenRange& open = stack.emplace_back();  // filled in place, every field
      open.start = r.t0;
      open.startNs = clock_.toMonotonicNs(r.t0);
      open.seq = r.seq;
      open.domain = domain;
      open.category = r.nvtx.category;
      open.flags = 0;
      open.torch.fields = 0;
      open.looseOp = -1;
      open.name = pushName(t, r, text, textLen, open.flags, &open.torch);
      open.depth = r.nvtx.depth;
      open.lastInside = r.t0;
      open.sealStart = open.sealEnd = 0;
      open.sealed = false;
      open.listed = false;
      if (r.nvtx.insideCall) {
        open.flags |= kEventInsideCall;
      } else if (domain == 0) {
        ThreadTrack& thread = data_.threads[t.index];
        thread.opens.push_back(ThreadTrack::RangeOpen{static_cast<uint32_t>(thread.events.size()), open.name,
                                                      open.startNs, r.seq});
      }
      break;
    }
    case RecordType::NvtxPop: {
      const uint32_t domain = nameFromTable(r.nvtx.domain);
      auto& stack = stackOf(t, domain);
      closeLost(t, stack, r.nvtx.depth + 1u, r.t0, domain == 0);
      if (!stack.empty() && stack.back().depth == r.nvtx.depth) endTop(t.index, stack, r.t0, 0, domain == 0);
      // Otherwise the matching push was dropped (already counted as a drop): nothing to close.
      break;
    }
    case RecordType::NvtxMark: {
      Event e;
      e.kind = EventKind::NvtxMark;
      e.start = e.end = r.t0;
      e.seq = r.seq;
      e.domain = nameFromTable(r.nvtx.domain);
      e.category = r.nvtx.category;
      e.name = nvtxName(r, text, textLen, e.flags);
      emit(t.index, e);
      if (e.domain == 0 && t.defaultStack != nullptr) noteInside(*t.defaultStack, r.t0, r.t0);
      break;
    }
    case RecordType::NvtxStart: {
      Event e;
      e.kind = EventKind::NvtxSpan;
      e.start = r.t0;
      e.seq = r.seq;
      e.domain = nameFromTable(r.nvtx.domain);
      e.category = r.nvtx.category;
      e.name = nvtxName(r, text, textLen, e.flags);
      e.rangeId = r.nvtx.rangeId;
      auto early = earlyEnds_.find(r.nvtx.rangeId);
      if (early != earlyEnds_.end()) {
        e.end = early->second;
        earlyEnds_.erase(early);
        emit(t.index, e);
      } else {
        e.start = clock_.toMonotonicNs(r.t0);  // mapped once: the event as endSpan() emits it
        openSpans_[r.nvtx.rangeId] = OpenSpan{e, t.index, false};
        if (spansOpenOn_.size() <= t.index) spansOpenOn_.resize(t.index + 1);
        ++spansOpenOn_[t.index];
      }
      break;
    }
    case RecordType::NvtxEnd: {
      auto open = openSpans_.find(r.nvtx.rangeId);
      if (open != openSpans_.end()) {
        endSpan(open->second, r.t0, 0);
        openSpans_.erase(open);
      } else {
        earlyEnds_[r.nvtx.rangeId] = r.t0;  // started on a thread not drained yet
      }
      break;
    }
    case RecordType::ThreadName:
      threadNames_[r.threadName.tid] = std::string(text, std::min<std::size_t>(textLen, r.threadName.length));
      break;
    case RecordType::CategoryName: {
      const uint64_t key = (static_cast<uint64_t>(nameFromTable(r.nvtx.domain)) << 32) | r.nvtx.category;
      data_.categoryNames[key] =
          data_.strings.intern(std::string_view(text, std::min<std::size_t>(textLen, r.nvtx.length)));
      break;
    }
    case RecordType::Invalid:
      break;
  }
}

void Store::finalize(uint64_t endTicks) {
  // Ranges close and names are settled on any thread.
  for (std::size_t i = 0; i < data_.threads.size(); ++i) data_.markChanged(i);
  for (auto& [id, t] : tracks_) {
    for (auto& [domain, stack] : t.stacks) {
      // Innermost first, so each range's end is known to its parent.
      while (!stack.empty())
        endTop(t.index, stack, domain == 0 ? lostEnd(stack.back(), endTicks) : endTicks, kEventUnclosed, domain == 0);
    }
  }
  for (auto& [rangeId, open] : openSpans_) endSpan(open, endTicks, kEventUnclosed);
  openSpans_.clear();
  for (auto& thread : data_.threads) {
    thread.openRanges.clear();  // all ended above
    if (thread.vacant()) continue;
    auto it = threadNames_.find(thread.tid);
    if (it != threadNames_.end()) {
      thread.name = it->second;
    } else if (!thread.exited) {  // an exited thread's last name was taken at its exit; its tid may be another's now
      // Threads often name themselves after their first CUDA call; prefer the latest name.
      std::string latest = readThreadName(thread.tid);
      if (!latest.empty()) thread.name = std::move(latest);
    }
  }
}

namespace {

std::string pythonFrameName(uint64_t frame) {
  python::FrameInfo info;
  const auto id = static_cast<uint32_t>(frame);
  if (id == 0 || !python::describe(id, info)) return "[python]";
  std::string name = info.function + " (" + info.file;
  if (info.line > 0) name += ":" + std::to_string(info.line);
  return name + ")";
}

}  // namespace

void Store::resolveStacks(const StackTable& table, Symbolizer& symbolizer) {
  const uint32_t count = table.size();
  if (data_.stacks.size() < std::size_t{count} + 1) data_.stacks.resize(std::size_t{count} + 1);
  // Ids are handed out before their frames are copied: one still in flight is taken up on a
  // later pass. One whose copy never ends (a handler's siglongjmp out of it) stays empty, and
  // the ids after it are named all the same: stopping there left every later stack of the run
  // without its frames. At most kMaxStacksInFlight are retried; past them the oldest stays empty.
  std::size_t kept = 0;
  for (const uint32_t id : stacksInFlight_)
    if (!resolveStack(table, symbolizer, id)) stacksInFlight_[kept++] = id;
  stacksInFlight_.resize(kept);
  for (; stacksResolved_ < count; ++stacksResolved_) {
    const uint32_t id = stacksResolved_ + 1;
    if (resolveStack(table, symbolizer, id)) continue;
    if (stacksInFlight_.size() == kMaxStacksInFlight) stacksInFlight_.erase(stacksInFlight_.begin());
    stacksInFlight_.push_back(id);
  }
}

bool Store::resolveStack(const StackTable& table, Symbolizer& symbolizer, uint32_t id) {
  const StackTable::Frames f = table.frames(id);
  if (f.depth == 0) return false;
  std::vector<uint32_t>& names = data_.stacks[id];
  names.reserve(f.depth);
  // Python frames follow the native ones. Each native frame of the eval loop ran one
  // group of them: the frames up to and including the next one flagged as its entry. Groups
  // left over (the native walk stopped early) go at the root end.
  uint32_t python = 0;
  while (python < f.depth && !(f.frames[python] & kPythonFrameTag)) ++python;
  const uint32_t nativeEnd = python;
  for (uint32_t i = 0; i < nativeEnd; ++i) {
    const std::string& native = symbolizer.frameName(f.frames[i]);
    if (python < f.depth && isPythonEvalLoop(native)) {
      for (; python < f.depth; ++python) {
        names.push_back(data_.strings.intern(pythonFrameName(f.frames[python])));
        if (f.frames[python] & kPythonEntryBit) {
          ++python;
          break;
        }
      }
      continue;
    }
    names.push_back(data_.strings.intern(native));
  }
  for (; python < f.depth; ++python) names.push_back(data_.strings.intern(pythonFrameName(f.frames[python])));
  // A frame-pointer walk may end on a stray word past the outermost real frame.
  while (!names.empty() && data_.strings.get(names.back()) == "[unknown]") names.pop_back();
  return true;
}

}  // namespace cutrace
