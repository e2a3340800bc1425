#include "exporters/perfetto_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>


#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "collector/torch_text.h"
#include "exporters/json_writer.h"
#include "exporters/perfetto_fields.h"
#include "exporters/proto_writer.h"
#include "exporters/trace_view.h"

namespace cutrace {

namespace {

using proto::Reader;

// ------------------------------------------------------------------ framing

// The bytes of a file (read in chunks into one reused buffer) or of memory, seen through a
// cursor.
class Input {
 public:
  explicit Input(int fd) : fd_(fd) {}
  explicit Input(std::string_view bytes) : view_(bytes) {}

  // Makes at least n bytes available at the cursor unless the input ends first; false only
  // on a read error.
  bool fill(std::size_t n, std::string& error) {
    if (fd_ < 0 || eof_ || view_.size() - pos_ >= n) return true;
    buf_.erase(0, pos_);
    pos_ = 0;
    while (buf_.size() < n && !eof_) {
      const std::size_t old = buf_.size();
      const std::size_t want = std::max(n - old, kChunk);
      buf_.resize(old + want);
      const ssize_t r = ::read(fd_, buf_.data() + old, want);
      if (r < 0) {
        buf_.resize(old);
        if (errno == EINTR) continue;
        error = std::string("read error: ") + strerror(errno);
        view_ = buf_;
        return false;
      }
      buf_.resize(old + static_cast<std::size_t>(r));
      if (r == 0) eof_ = true;
    }
    view_ = buf_;
    return true;
  }
  std::string_view available() const { return view_.substr(pos_); }
  void consume(std::size_t n) {
    pos_ += n;
    offset_ += n;
  }
  uint64_t offset() const { return offset_; }

 private:
  static constexpr std::size_t kChunk = std::size_t{1} << 20;
  int fd_ = -1;
  bool eof_ = false;
  std::string buf_;
  std::string_view view_;
  std::size_t pos_ = 0;
  uint64_t offset_ = 0;
};

// A varint at the start of `s`: its byte count, 0 when `s` ends inside it, -1 when malformed.
int peekVarint(std::string_view s, uint64_t& v) {
  v = 0;
  for (std::size_t i = 0; i < 10; ++i) {
    if (i >= s.size()) return 0;
    const auto b = static_cast<uint8_t>(s[i]);
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) return static_cast<int>(i + 1);
  }
  return -1;
}

// ------------------------------------------------------------------ decoding

// One kind of interned entry of a sequence: iid -> text id. Writers number each kind from 1 up
// (cutrace's do), so an iid is looked up by index; one far past the entries seen (another
// writer's numbering, a malformed file, or cutrace's: its iids are the writer's ids over all
// threads, so a thread that lived briefly uses a few high ones) goes to a map, so the index stays
// proportional to the entries, whatever iids a file holds. The map is made on first use: most
// kinds of most sequences never need it, and a process's every thread has a sequence.
class IidMap {
 public:
  const uint32_t* find(uint64_t iid) const {
    if (iid < dense_.size()) return dense_[iid] != kNone ? &dense_[iid] : nullptr;
    if (!sparse_) return nullptr;
    // Events look up the same few names one after another: the last one found is at hand.
    if (iid == lastIid_ && last_ != nullptr) return last_;
    auto it = sparse_->find(iid);
    if (it == sparse_->end()) return nullptr;
    lastIid_ = iid;
    last_ = &it->second;
    return last_;
  }
  void set(uint64_t iid, uint32_t value) {
    if (iid < dense_.size() || iid <= 2 * entries_ + kDenseSlack) {
      if (iid >= dense_.size()) grow(std::max<std::size_t>(iid + 1, dense_.size() * 2));
      entries_ += dense_[iid] == kNone;
      dense_[iid] = value;
    } else {
      if (!sparse_) sparse_ = std::make_unique<std::unordered_map<uint64_t, uint32_t>>();
      entries_ += sparse_->insert_or_assign(iid, value).second;
    }
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // Below this an iid is indexed whatever the entries: a few hundred bytes at most.
  static constexpr uint64_t kDenseSlack = 64;
  // The dense index now covers [0, size): entries kept apart below that move in, so an iid is
  // always in the one place find() looks. It doubles at least, so the entries kept apart are
  // looked over a logarithmic number of times however the iids come.
  void grow(std::size_t size) {
    dense_.resize(size, kNone);
    if (!sparse_) return;
    last_ = nullptr;
    for (auto it = sparse_->begin(); it != sparse_->end();) {
      if (it->first < size) {
        dense_[it->first] = it->second;
        it = sparse_->erase(it);
      } else {
        ++it;
      }
    }
  }
  std::vector<uint32_t> dense_;
  std::unique_ptr<std::unordered_map<uint64_t, uint32_t>> sparse_;
  uint64_t entries_ = 0;
  // A node of sparse_ (node-based: it stays put until erased, which only grow() does).
  mutable uint64_t lastIid_ = 0;
  mutable const uint32_t* last_ = nullptr;
};

bool isRelatableBuiltin(uint64_t clock) {
  return clock == pf::BuiltinClock::kBoottime || clock == pf::BuiltinClock::kRealtime;
}

class Decoder {
 public:
  Decoder(PerfettoVisitor& visitor, PfReadStats& stats) : visitor_(visitor), stats_(stats) {}

  // One whole TracePacket. False with a message when it is malformed.
  bool packet(std::string_view bytes, std::string& error);
  // NVTX ranges still open where the file ends were open when the process ended without
  // closing them (the writer writes the BEGIN of a range open at a pass's end: a process killed
  // in a step leaves the step): each ends at the trace's last timestamp, innermost first,
  // flagged unclosed as the collector flags ranges open at exit. Anything else open (a pass cut
  // short by the kill) is left out.
  void finish() {
    for (auto& [uuid, stack] : open_) {
      stats_.openAtEnd += stack.size();
      for (; !stack.empty(); stack.pop_back(), --openSlices_) {
        Pending& p = pool_[stack.back()];
        if (p.slice.category != kCategories[2]) continue;
        p.slice.endNs = std::max(p.slice.startNs, lastNs_);
        if (p.slice.find(Ann::Unclosed) == nullptr) {
          PfAnnotation& a = p.slice.annotations.emplace_back();
          a.id = Ann::Unclosed;
          a.type = PfAnnotation::Type::Bool;
          a.value = 1;
          a.name = kAnnotationNames[static_cast<std::size_t>(Ann::Unclosed)];
        }
        emit(p);
      }
    }
  }

 private:
  // What a file may make the reader hold, past which it is refused (exit 3 in the tools): the
  // decoder's memory stays bounded whatever the file, as each limit is past what a real
  // cutrace stream reaches.
  // Sequences alive at once (cleared and not ended): a process's live threads, each writing on
  // its own, and its process sequence. Linux's default vm.max_map_count (65,530) maps fewer
  // than 32,768 thread stacks (each is two mappings with its guard page). About 100 bytes each
  // until interned data comes (Sequence::interned): under 7 MB at the cap.
  static constexpr std::size_t kMaxSequences = std::size_t{1} << 16;
  // Slices open at once over all tracks (kMaxOpenSlices bounds one track): a thread has a few
  // open, its NVTX nesting and its start/end ranges. About 0.5 KB each: 32 MB at the cap.
  static constexpr std::size_t kMaxOpenSlicesTotal = std::size_t{1} << 16;
  // Tracks known at once: a thread's (at most 64 uuids: its own, its NVTX domains', its drop
  // counter's), GPU streams', memory counters'; a start/end range's, one per range, is
  // forgotten at the range's END. About 150 bytes each: 150 MB at the cap, which 16,384
  // threads each using every domain reach, or a million threads with two tracks each (past
  // the rebuild's own limit on threads).
  static constexpr std::size_t kMaxTracks = std::size_t{1} << 20;
  // Sequences ended (cleared with nothing set) that are remembered, should they go on. The
  // writer never reuses an ended thread's sequence, so past this many they are forgotten: a
  // foreign file's later packets on one are then read as on a sequence never cleared.
  static constexpr std::size_t kMaxEmptied = std::size_t{1} << 16;

  struct Interned {
    IidMap names, categories, annotationNames, strings, functions, frames;
    std::unordered_map<uint64_t, std::vector<uint64_t>> callstacks;  // frame iids, bottom first
  };
  static inline const Interned kNoInterned{};
  struct Sequence {
    bool valid = false;  // incremental state was set by a cleared packet
    uint64_t defaultClock = 0;
    uint64_t defaultTrack = 0;
    // A sequence-scoped clock from this sequence's ClockSnapshot.
    uint64_t seqClock = 0;
    bool seqIncremental = false;
    uint64_t seqValue = 0;      // its value now (incremental: the running sum)
    uint64_t seqSnapshot = 0;   // its value in the snapshot
    uint64_t seqMonotonic = 0;  // MONOTONIC at that moment
    uint64_t lastSeq = UINT64_MAX;  // the last BEGIN or INSTANT's seq (+ 1 is 0)
    // Made by the first interned data: a sequence without any (a file's every packet on a new
    // one) costs the few bytes above, so that kMaxSequences can be generous.
    std::unique_ptr<Interned> interned;
    Interned& tables() {
      if (!interned) interned = std::make_unique<Interned>();
      return *interned;
    }
    const Interned& lookup() const { return interned ? *interned : kNoInterned; }
  };
  struct Pending {
    PfSlice slice;
    std::string inlineName;
    std::vector<std::pair<std::size_t, std::string>> inlineTexts;  // annotation index, text
    bool nameInline = false;
  };

  uint32_t intern(std::string_view text) {
    auto it = textIds_.find(text);
    if (it != textIds_.end()) return it->second;
    texts_.emplace_back(text);
    textViews_.push_back(texts_.back());
    const auto id = static_cast<uint32_t>(texts_.size() - 1);
    textIds_.emplace(texts_.back(), id);
    return id;
  }
  std::string_view text(uint32_t id) const { return textViews_[id]; }
  // The annotation a name (a text id) is, found once per name: every event has several.
  Ann annotationOf(uint32_t id) {
    if (id >= annotations_.size()) annotations_.resize(texts_.size(), kUnresolved);
    uint8_t& known = annotations_[id];
    if (known == kUnresolved) {
      known = static_cast<uint8_t>(Ann::Count);
      for (std::size_t i = 0; i < static_cast<std::size_t>(Ann::Count); ++i)
        if (texts_[id] == kAnnotationNames[i]) {
          known = static_cast<uint8_t>(i);
          break;
        }
    }
    return static_cast<Ann>(known);
  }

  bool fail(std::string& error, const std::string& why) {
    error = why;
    return false;
  }
  bool interned(Sequence& seq, std::string_view bytes, std::string& error);
  bool clockSnapshot(Sequence& seq, std::string_view bytes, std::string& error);
  bool timestamp(Sequence& seq, bool has, uint64_t ts, bool hasClock, uint64_t clock, uint64_t& ns, std::string& error);
  bool trackDescriptor(uint32_t sequence, std::string_view bytes, std::string& error);
  bool trackEvent(Sequence& seq, uint32_t sequence, std::string_view bytes, bool hasTs, uint64_t ns, std::string& error);
  bool chromeEvents(std::string_view bytes, std::string& error);
  // The track `uuid` names, made when new; null past kMaxTracks (with the message in `error`).
  PfTrack* trackOf(uint64_t uuid, std::string& error) {
    auto it = tracks_.find(uuid);
    if (it != tracks_.end()) return &it->second;
    if (tracks_.size() >= kMaxTracks) {
      fail(error, "more than " + std::to_string(kMaxTracks) + " tracks");
      return nullptr;
    }
    it = tracks_.try_emplace(uuid).first;
    it->second.uuid = uuid;
    return &it->second;
  }
  void emit(Pending& p) {
    if (p.nameInline) p.slice.name = p.inlineName;
    for (auto& [index, t] : p.inlineTexts) p.slice.annotations[index].text = t;
    if (p.slice.category == kCategories[2]) torchText(p.slice);
    visitor_.slice(p.slice);
  }
  // A PyTorch op range written as its parts (perfetto_writer.cpp, beginEvent) is named by its
  // text again, as recorded: every view reads the stream's NVTX texts as the program gave them.
  void torchText(PfSlice& s) {
    TorchOp& op = s.op;
    op = TorchOp{};
    for (const PfAnnotation& a : s.annotations) {
      switch (a.id) {
        case Ann::OpSeq:
        case Ann::StashedSeq:
          op.hasSeq = true;
          op.stashed = a.id == Ann::StashedSeq;
          op.seq = a.value;
          break;
        case Ann::OpId:
          op.hasOpId = true;
          op.opId = a.value;
          break;
        case Ann::Sizes: op.sizes = a.text; break;
        case Ann::InputOpIds: op.inputOpIds = a.text; break;
        default: continue;
      }
      s.isTorchOp = true;
    }
    if (!s.isTorchOp) return;
    op.name = s.name;
    op.backward = op.stashed || isBackwardFunction(op.name);
    if (!visitor_.wantsOpText()) return;
    torchText_.clear();
    renderTorchRange(op, torchText_);
    s.name = torchText_;
  }
  // Slices live in a pool and are never moved: an event is read into the next free one, which
  // a BEGIN leaves on its track's stack (by index) until its END. A finished one's lists
  // (annotations, frames, texts) keep their room for the next, so reading an event allocates
  // nothing once a few are open.
  uint32_t takePending() {
    if (freePending_.empty()) {
      pool_.emplace_back();
      return static_cast<uint32_t>(pool_.size() - 1);
    }
    const uint32_t i = freePending_.back();
    freePending_.pop_back();
    Pending& p = pool_[i];
    std::vector<std::string_view> frames = std::move(p.slice.frames);
    std::vector<PfAnnotation> annotations = std::move(p.slice.annotations);
    p.slice = PfSlice{};
    p.slice.frames = std::move(frames);
    p.slice.frames.clear();
    p.slice.annotations = std::move(annotations);
    p.slice.annotations.clear();
    p.inlineTexts.clear();
    p.nameInline = false;
    return i;
  }
  // The stack of slices open on a track; the last one asked for is kept at hand (most events
  // are on their thread's track, one after another).
  std::vector<uint32_t>& openOn(uint64_t uuid) {
    if (uuid != lastOpenUuid_ || lastOpen_ == nullptr) {
      lastOpen_ = &open_[uuid];  // a node-based map: the stack does not move
      lastOpenUuid_ = uuid;
    }
    return *lastOpen_;
  }
  // The same without making one: an END on a track that never had a BEGIN costs nothing.
  std::vector<uint32_t>* openOnIfAny(uint64_t uuid) {
    if (uuid == lastOpenUuid_ && lastOpen_ != nullptr) return lastOpen_;
    auto it = open_.find(uuid);
    if (it == open_.end()) return nullptr;
    lastOpen_ = &it->second;
    lastOpenUuid_ = uuid;
    return lastOpen_;
  }
  // A start/end range's track once its range ended: the writer gives each range its own.
  void forgetTrack(uint64_t uuid) {
    if (uuid == lastOpenUuid_) lastOpen_ = nullptr;
    open_.erase(uuid);
    tracks_.erase(uuid);
  }
  std::vector<Pending> pool_;
  std::vector<uint32_t> freePending_;
  uint64_t lastOpenUuid_ = 0;
  uint64_t lastNs_ = 0;  // the latest timestamp of a track event so far
  std::vector<uint32_t>* lastOpen_ = nullptr;
  std::size_t openSlices_ = 0;  // over all tracks
  std::vector<uint64_t> categoryIids_;  // trackEvent's, reused

  PerfettoVisitor& visitor_;
  PfReadStats& stats_;
  std::unordered_map<uint32_t, Sequence> sequences_;
  std::unordered_set<uint32_t> emptied_;  // sequences cleared with nothing set since (not in sequences_)
  std::unordered_map<uint64_t, PfTrack> tracks_;  // node-based: PfTrack pointers stay valid
  std::unordered_map<uint64_t, std::vector<uint32_t>> open_;  // indices into pool_
  // Every string seen, once, for the whole read: views into it outlive a sequence's clearing.
  std::deque<std::string> texts_;
  std::vector<std::string_view> textViews_;  // texts_ by id, indexed without the deque's arithmetic
  std::unordered_map<std::string_view, uint32_t> textIds_;
  static constexpr uint8_t kUnresolved = 0xff;
  std::vector<uint8_t> annotations_;  // by text id: an Ann, kUnresolved until first asked
  std::string torchText_;  // the name of the slice being visited, where torchText() made it
  // MONOTONIC minus BOOTTIME and minus REALTIME, from the last snapshot that had them.
  bool haveBoot_ = false, haveReal_ = false;
  uint64_t monoMinusBoot_ = 0, monoMinusReal_ = 0;
};

bool Decoder::interned(Sequence& seq, std::string_view bytes, std::string& error) {
  Reader r(bytes);
  Reader::Field f;
  while (r.next(f)) {
    if (f.wire != proto::kLengthDelimited) continue;
    Reader e = f.nested();
    Reader::Field g;
    uint64_t iid = 0, ref = 0;
    std::string_view name;
    bool hasName = false, hasRef = false;
    std::vector<uint64_t> frameIds;
    bool framesOk = true;
    while (e.next(g)) {
      if (g.number == pf::InternedEntry::kIid && g.wire == proto::kVarint) {
        iid = g.value;
      } else if (f.number == pf::InternedData::kFrames) {
        if (g.number == pf::Frame::kFunctionNameId && g.wire == proto::kVarint) {
          ref = g.value;
          hasRef = true;
        }
      } else if (f.number == pf::InternedData::kCallstacks) {
        if (g.number == pf::Callstack::kFrameIds) {
          if (g.wire == proto::kVarint) frameIds.push_back(g.value);
          else if (g.wire == proto::kLengthDelimited)
            framesOk = Reader::forEachPacked(g.bytes, [&](uint64_t v) { frameIds.push_back(v); }) && framesOk;
        }
      } else if (g.number == pf::InternedEntry::kName && g.wire == proto::kLengthDelimited) {
        name = g.bytes;
        hasName = true;
      }
    }
    if (e.failed() || !framesOk) return fail(error, "malformed interned entry");
    if (iid == 0) return fail(error, "interned entry with iid 0");
    switch (f.number) {
      case pf::InternedData::kEventNames: if (hasName) seq.tables().names.set(iid, intern(name)); break;
      case pf::InternedData::kEventCategories: if (hasName) seq.tables().categories.set(iid, intern(name)); break;
      case pf::InternedData::kDebugAnnotationNames: if (hasName) seq.tables().annotationNames.set(iid, intern(name)); break;
      case pf::InternedData::kDebugAnnotationStringValues: if (hasName) seq.tables().strings.set(iid, intern(name)); break;
      case pf::InternedData::kFunctionNames: if (hasName) seq.tables().functions.set(iid, intern(name)); break;
      case pf::InternedData::kFrames: {
        if (!hasRef) return fail(error, "interned frame without a function name");
        const uint32_t* function = seq.tables().functions.find(ref);
        if (function == nullptr) return fail(error, "interned frame names function " + std::to_string(ref) + ", not interned");
        seq.tables().frames.set(iid, *function);
        break;
      }
      case pf::InternedData::kCallstacks:
        for (uint64_t frame : frameIds) {
          if (seq.tables().frames.find(frame) == nullptr) return fail(error, "callstack " + std::to_string(iid) + " has frame " + std::to_string(frame) + ", not interned");
        }
        seq.tables().callstacks[iid] = std::move(frameIds);
        break;
      default: break;
    }
  }
  return r.failed() ? fail(error, "malformed interned data") : true;
}

bool Decoder::clockSnapshot(Sequence& seq, std::string_view bytes, std::string& error) {
  struct Clock {
    uint64_t id = 0, ts = 0;
    bool incremental = false;
  };
  std::vector<Clock> clocks;
  Reader r(bytes);
  Reader::Field f;
  while (r.next(f)) {
    if (f.number != pf::ClockSnapshot::kClocks || f.wire != proto::kLengthDelimited) continue;
    if (clocks.size() >= 128) return fail(error, "clock snapshot with too many clocks");
    Clock c;
    Reader cr = f.nested();
    Reader::Field g;
    while (cr.next(g)) {
      if (g.wire != proto::kVarint) continue;
      if (g.number == pf::ClockSnapshotClock::kClockId) c.id = g.value;
      else if (g.number == pf::ClockSnapshotClock::kTimestamp) c.ts = g.value;
      else if (g.number == pf::ClockSnapshotClock::kIsIncremental) c.incremental = g.value != 0;
    }
    if (cr.failed()) return fail(error, "malformed clock snapshot");
    clocks.push_back(c);
  }
  if (r.failed()) return fail(error, "malformed clock snapshot");
  bool haveMono = false;
  uint64_t mono = 0;
  for (const Clock& c : clocks) {
    if (c.id == pf::BuiltinClock::kMonotonic) {
      haveMono = true;
      mono = c.ts;
    }
  }
  for (const Clock& c : clocks) {
    if (c.id == pf::BuiltinClock::kBoottime && haveMono) {
      monoMinusBoot_ = mono - c.ts;
      haveBoot_ = true;
    } else if (c.id == pf::BuiltinClock::kRealtime && haveMono) {
      monoMinusReal_ = mono - c.ts;
      haveReal_ = true;
    } else if (c.id >= 64 && c.id <= 127) {
      uint64_t reference = mono;
      if (!haveMono) {
        // Only through a builtin clock this snapshot has and the process snapshot relates.
        bool found = false;
        for (const Clock& other : clocks) {
          if (other.id == pf::BuiltinClock::kBoottime && haveBoot_) reference = other.ts + monoMinusBoot_, found = true;
          else if (other.id == pf::BuiltinClock::kRealtime && haveReal_) reference = other.ts + monoMinusReal_, found = true;
        }
        if (!found) return fail(error, "clock " + std::to_string(c.id) + " has no MONOTONIC reference");
      }
      seq.seqClock = c.id;
      seq.seqIncremental = c.incremental;
      seq.seqValue = c.ts;
      seq.seqSnapshot = c.ts;
      seq.seqMonotonic = reference;
    }
  }
  return true;
}

bool Decoder::timestamp(Sequence& seq, bool has, uint64_t ts, bool hasClock, uint64_t clock, uint64_t& ns,
                        std::string& error) {
  if (!has) return true;
  if (!hasClock) clock = seq.defaultClock != 0 ? seq.defaultClock : pf::BuiltinClock::kBoottime;
  if (clock == pf::BuiltinClock::kMonotonic) {
    ns = ts;
  } else if (clock >= 64 && clock <= 127) {
    if (clock != seq.seqClock) return fail(error, "timestamp on clock " + std::to_string(clock) + ", not defined on its sequence");
    if (seq.seqIncremental) {
      seq.seqValue += ts;
      ns = seq.seqMonotonic + (seq.seqValue - seq.seqSnapshot);
    } else {
      ns = seq.seqMonotonic + (ts - seq.seqSnapshot);
    }
  } else if (clock == pf::BuiltinClock::kBoottime && haveBoot_) {
    ns = ts + monoMinusBoot_;
  } else if (clock == pf::BuiltinClock::kRealtime && haveReal_) {
    ns = ts + monoMinusReal_;
  } else {
    return fail(error, "timestamp on clock " + std::to_string(clock) +
                           (isRelatableBuiltin(clock) ? " with no clock snapshot relating it to MONOTONIC" : ", unknown"));
  }
  // Past this, times from the origin (itself below it) are not what the Chrome trace's readers
  // take, and their differences could overflow.
  if (ns >= static_cast<uint64_t>(kMaxTraceNs)) return fail(error, "timestamp " + std::to_string(ns) + " ns out of range");
  return true;
}

bool Decoder::trackDescriptor(uint32_t sequence, std::string_view bytes, std::string& error) {
  uint64_t uuid = 0, parent = 0;
  std::string_view name, processName, threadName;
  bool isProcess = false, isThread = false, isCounter = false;
  uint32_t pid = 0, tid = 0;
  Reader r(bytes);
  Reader::Field f;
  while (r.next(f)) {
    switch (f.number) {
      case pf::TrackDescriptor::kUuid: uuid = f.value; break;
      case pf::TrackDescriptor::kParentUuid: parent = f.value; break;
      case pf::TrackDescriptor::kName: if (f.wire == proto::kLengthDelimited) name = f.bytes; break;
      case pf::TrackDescriptor::kCounter: isCounter = true; break;
      case pf::TrackDescriptor::kProcess:
      case pf::TrackDescriptor::kThread: {
        if (f.wire != proto::kLengthDelimited) break;
        const bool process = f.number == pf::TrackDescriptor::kProcess;
        (process ? isProcess : isThread) = true;
        Reader d = f.nested();
        Reader::Field g;
        while (d.next(g)) {
          if (process) {
            if (g.number == pf::ProcessDescriptor::kPid && g.wire == proto::kVarint) pid = static_cast<uint32_t>(g.value);
            else if (g.number == pf::ProcessDescriptor::kProcessName && g.wire == proto::kLengthDelimited) processName = g.bytes;
          } else {
            if (g.number == pf::ThreadDescriptor::kPid && g.wire == proto::kVarint) pid = static_cast<uint32_t>(g.value);
            else if (g.number == pf::ThreadDescriptor::kTid && g.wire == proto::kVarint) tid = static_cast<uint32_t>(g.value);
            else if (g.number == pf::ThreadDescriptor::kThreadName && g.wire == proto::kLengthDelimited) threadName = g.bytes;
          }
        }
        if (d.failed()) return fail(error, "malformed process or thread descriptor");
        break;
      }
      default: break;
    }
  }
  if (r.failed()) return fail(error, "malformed track descriptor");
  if (uuid == 0) return fail(error, "track descriptor without a uuid");
  PfTrack t;
  t.uuid = uuid;
  t.parent = parent;
  t.sequence = sequence;
  t.name = std::string(name);
  auto parentIt = parent != 0 ? tracks_.find(parent) : tracks_.end();
  const PfTrack* up = parentIt != tracks_.end() ? &parentIt->second : nullptr;
  if (isProcess) {
    t.kind = PfTrackKind::Process;
    t.pid = pid;
    if (!processName.empty()) t.name = std::string(processName);
  } else if (isThread) {
    t.kind = PfTrackKind::Thread;
    t.pid = pid;
    t.tid = tid;
    t.thread = uuid;
    if (!threadName.empty()) t.name = std::string(threadName);
  } else if (up != nullptr && up->kind == PfTrackKind::Thread) {
    t.thread = up->uuid;
    t.pid = up->pid;  // not the uuid's bits: a thread's number may reach past them (threadUuid)
    t.kind = isCounter ? PfTrackKind::DropCounter : (uuid & kSpanTrackBit) ? PfTrackKind::Span : PfTrackKind::Domain;
  } else if (up != nullptr && up->kind == PfTrackKind::Process && !isCounter && (uuid & kDeviceTrackBit) &&
             !(uuid & kSpanTrackBit)) {
    t.kind = PfTrackKind::Device;
    t.pid = up->pid;
    unsigned device = 0, stream = 0;
    char tail = 0;
    if (std::sscanf(t.name.c_str(), "GPU %u stream %u%c", &device, &stream, &tail) == 2) {
      t.device = device;
      t.stream = stream;
    } else {
      t.device = static_cast<uint32_t>((uuid >> 16) & 0x3f);
      t.stream = static_cast<uint32_t>(uuid & 0xffff);
    }
  }
  PfTrack* slot = trackOf(uuid, error);
  if (slot == nullptr) return false;
  *slot = std::move(t);
  visitor_.track(*slot);
  return true;
}

// "[x,y,z]" as the writer writes grid and block.
bool parseDims(std::string_view s, uint64_t out[3]) {
  if (s.size() < 7 || s.front() != '[' || s.back() != ']') return false;
  std::size_t i = 1;
  for (int k = 0; k < 3; ++k) {
    uint64_t v = 0;
    std::size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 12) {
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0 || i >= s.size() || s[i] != (k < 2 ? ',' : ']')) return false;
    ++i;
    out[k] = v;
  }
  return i == s.size();
}

bool Decoder::trackEvent(Sequence& seq, uint32_t sequence, std::string_view bytes, bool hasTs, uint64_t ns,
                         std::string& error) {
  uint64_t type = 0, trackUuid = seq.defaultTrack, nameIid = 0, callstack = 0;
  bool hasCounter = false;
  int64_t counterValue = 0;
  std::string_view inlineName;
  bool hasInlineName = false;
  std::vector<uint64_t>& categoryIids = categoryIids_;
  categoryIids.clear();
  const uint32_t index = takePending();
  // Released again below unless a BEGIN leaves it open; nothing takes another before that.
  Pending& p = pool_[index];
  struct Release {
    Decoder& d;
    uint32_t index;
    bool keep = false;
    ~Release() {
      if (!keep) d.freePending_.push_back(index);
    }
  } release{*this, index};
  Reader r(bytes);
  Reader::Field f;
  while (r.next(f)) {
    switch (f.number) {
      case pf::TrackEvent::kType: type = f.value; break;
      case pf::TrackEvent::kTrackUuid: trackUuid = f.value; break;
      case pf::TrackEvent::kNameIid: nameIid = f.value; break;
      case pf::TrackEvent::kName:
        if (f.wire == proto::kLengthDelimited) {
          inlineName = f.bytes;
          hasInlineName = true;
        }
        break;
      case pf::TrackEvent::kCallstackIid: callstack = f.value; break;
      case pf::TrackEvent::kFlowIds: p.slice.flowOut = true; break;
      case pf::TrackEvent::kCounterValue:
        hasCounter = true;
        counterValue = static_cast<int64_t>(f.value);
        break;
      case pf::TrackEvent::kCategoryIids:
        if (f.wire == proto::kVarint) {
          categoryIids.push_back(f.value);
        } else if (f.wire == proto::kLengthDelimited &&
                   !Reader::forEachPacked(f.bytes, [&](uint64_t v) { categoryIids.push_back(v); })) {
          return fail(error, "malformed category_iids");
        }
        break;
      case pf::TrackEvent::kDebugAnnotations: {
        if (f.wire != proto::kLengthDelimited) break;
        PfAnnotation a;
        bool hasValue = false, inlineText = false;
        std::string_view textBytes;
        Reader d = f.nested();
        Reader::Field g;
        while (d.next(g)) {
          switch (g.number) {
            case pf::DebugAnnotation::kNameIid: {
              const uint32_t* id = seq.lookup().annotationNames.find(g.value);
              if (id == nullptr) return fail(error, "annotation name iid " + std::to_string(g.value) + " not interned");
              a.name = text(*id);
              a.id = annotationOf(*id);
              break;
            }
            case pf::DebugAnnotation::kName:
              if (g.wire == proto::kLengthDelimited) {
                const uint32_t id = intern(g.bytes);
                a.name = text(id);
                a.id = annotationOf(id);
              }
              break;
            case pf::DebugAnnotation::kBoolValue: a.type = PfAnnotation::Type::Bool, a.value = g.value != 0, hasValue = true; break;
            case pf::DebugAnnotation::kUintValue: a.type = PfAnnotation::Type::Uint, a.value = g.value, hasValue = true; break;
            case pf::DebugAnnotation::kIntValue: a.type = PfAnnotation::Type::Int, a.value = g.value, hasValue = true; break;
            case pf::DebugAnnotation::kPointerValue: a.type = PfAnnotation::Type::Pointer, a.value = g.value, hasValue = true; break;
            case pf::DebugAnnotation::kStringValue:
              if (g.wire != proto::kLengthDelimited) break;
              a.type = PfAnnotation::Type::String;
              textBytes = g.bytes;
              inlineText = hasValue = true;
              break;
            case pf::DebugAnnotation::kStringValueIid: {
              const uint32_t* id = seq.lookup().strings.find(g.value);
              if (id == nullptr) return fail(error, "annotation string iid " + std::to_string(g.value) + " not interned");
              a.type = PfAnnotation::Type::String;
              a.text = text(*id);
              inlineText = false;
              hasValue = true;
              break;
            }
            default: break;
          }
        }
        if (d.failed()) return fail(error, "malformed debug annotation");
        if (!hasValue) break;  // a value of a kind cutrace does not write (nested, double)
        if (inlineText) p.inlineTexts.emplace_back(p.slice.annotations.size(), std::string(textBytes));
        p.slice.annotations.push_back(a);
        break;
      }
      default: break;
    }
  }
  if (r.failed()) return fail(error, "malformed track event");
  if (type == 0) return true;  // not a typed event: nothing cutrace writes
  if (!hasTs) return fail(error, "track event without a timestamp");
  if (trackUuid == 0) return fail(error, "track event without a track");
  lastNs_ = std::max(lastNs_, ns);
  if (type == pf::TrackEvent::kTypeSliceEnd) {
    std::vector<uint32_t>* openHere = openOnIfAny(trackUuid);
    if (openHere == nullptr || openHere->empty()) {
      ++stats_.unmatchedEnds;
      return true;
    }
    std::vector<uint32_t>& open = *openHere;
    Pending& done = pool_[open.back()];
    // A negative duration would be written to a Chrome trace that no reader takes.
    if (ns < done.slice.startNs)
      return fail(error, "slice ends at " + std::to_string(ns) + " ns, before it begins (" +
                             std::to_string(done.slice.startNs) + " ns)");
    done.slice.endNs = ns;
    // What only the end knew (a range written ahead: unclosed, end_lost) joins the slice's
    // annotations, as trace_processor merges an END's args; an inline text would not outlive
    // this event's buffer, and the writer puts none there.
    if (p.inlineTexts.empty())
      done.slice.annotations.insert(done.slice.annotations.end(), p.slice.annotations.begin(), p.slice.annotations.end());
    emit(done);
    freePending_.push_back(open.back());
    open.pop_back();
    --openSlices_;
    if (open.empty() && done.slice.track->kind == PfTrackKind::Span) forgetTrack(trackUuid);
    return true;
  }
  const PfTrack* track = trackOf(trackUuid, error);
  if (track == nullptr) return false;
  if (type == pf::TrackEvent::kTypeCounter) {
    if (hasCounter) visitor_.counter(*track, sequence, ns, counterValue);
    return true;
  }
  if (type != pf::TrackEvent::kTypeSliceBegin && type != pf::TrackEvent::kTypeInstant) return true;

  PfSlice& s = p.slice;
  s.track = track;
  s.sequence = sequence;
  const PfAnnotation* seqAnnotation = s.find(Ann::Seq);
  s.seq = seqAnnotation != nullptr ? seqAnnotation->value : seq.lastSeq + 1;
  seq.lastSeq = s.seq;
  s.startNs = s.endNs = ns;
  s.instant = type == pf::TrackEvent::kTypeInstant;
  if (!categoryIids.empty()) {
    const uint32_t* id = seq.lookup().categories.find(categoryIids.front());
    if (id == nullptr) return fail(error, "category iid " + std::to_string(categoryIids.front()) + " not interned");
    s.category = text(*id);
  }
  if (nameIid != 0) {
    const uint32_t* id = seq.lookup().names.find(nameIid);
    if (id == nullptr) return fail(error, "event name iid " + std::to_string(nameIid) + " not interned");
    s.name = text(*id);
    s.nameIid = nameIid;
  } else if (hasInlineName) {
    p.inlineName = std::string(inlineName);
    p.nameInline = true;
  }
  if (callstack != 0) {
    const Interned& tables = seq.lookup();
    auto it = tables.callstacks.find(callstack);
    if (it == tables.callstacks.end()) return fail(error, "callstack iid " + std::to_string(callstack) + " not interned");
    s.callstackIid = callstack;
    s.frames.reserve(it->second.size());
    for (auto frame = it->second.rbegin(); frame != it->second.rend(); ++frame) s.frames.push_back(text(*tables.frames.find(*frame)));
  }
  if (s.instant) {
    emit(p);
    return true;
  }
  std::vector<uint32_t>& stack = openOn(trackUuid);
  if (stack.size() >= kMaxOpenSlices) return fail(error, "more than " + std::to_string(kMaxOpenSlices) + " slices open on one track");
  if (openSlices_ >= kMaxOpenSlicesTotal)
    return fail(error, "more than " + std::to_string(kMaxOpenSlicesTotal) + " slices open at once");
  stack.push_back(index);
  ++openSlices_;
  release.keep = true;
  return true;
}

bool Decoder::chromeEvents(std::string_view bytes, std::string& error) {
  Reader r(bytes);
  Reader::Field f;
  while (r.next(f)) {
    if (f.number != pf::ChromeEventBundle::kMetadata || f.wire != proto::kLengthDelimited) continue;
    std::string_view name, value;
    Reader m = f.nested();
    Reader::Field g;
    while (m.next(g)) {
      if (g.wire != proto::kLengthDelimited) continue;
      if (g.number == pf::ChromeMetadata::kName) name = g.bytes;
      else if (g.number == pf::ChromeMetadata::kJsonValue || g.number == pf::ChromeMetadata::kStringValue) value = g.bytes;
    }
    if (m.failed()) return fail(error, "malformed metadata");
    visitor_.metadata(name, value);
  }
  return r.failed() ? fail(error, "malformed chrome events") : true;
}

bool Decoder::packet(std::string_view bytes, std::string& error) {
  uint64_t ts = 0, clock = 0, flags = 0;
  uint32_t sequence = 0;
  bool hasTs = false, hasClock = false;
  std::string_view event, internedData, defaults, descriptor, snapshot, chrome;
  bool hasEvent = false, hasInterned = false, hasDefaults = false, hasDescriptor = false, hasSnapshot = false,
       hasChrome = false;
  Reader r(bytes);
  Reader::Field f;
  while (r.next(f)) {
    const bool len = f.wire == proto::kLengthDelimited;
    switch (f.number) {
      case pf::TracePacket::kTimestamp: ts = f.value, hasTs = true; break;
      case pf::TracePacket::kTimestampClockId: clock = f.value, hasClock = true; break;
      case pf::TracePacket::kTrustedPacketSequenceId: sequence = static_cast<uint32_t>(f.value); break;
      case pf::TracePacket::kSequenceFlags: flags = f.value; break;
      case pf::TracePacket::kTrackEvent: if (len) event = f.bytes, hasEvent = true; break;
      case pf::TracePacket::kInternedData: if (len) internedData = f.bytes, hasInterned = true; break;
      case pf::TracePacket::kTracePacketDefaults: if (len) defaults = f.bytes, hasDefaults = true; break;
      case pf::TracePacket::kTrackDescriptor: if (len) descriptor = f.bytes, hasDescriptor = true; break;
      case pf::TracePacket::kClockSnapshot: if (len) snapshot = f.bytes, hasSnapshot = true; break;
      case pf::TracePacket::kChromeEvents: if (len) chrome = f.bytes, hasChrome = true; break;
      default: break;
    }
  }
  if (r.failed()) return fail(error, "malformed packet");
  const bool cleared = flags & pf::TracePacket::kSeqIncrementalStateCleared;
  if (cleared && !hasTs && !hasEvent && !hasInterned && !hasDefaults && !hasDescriptor && !hasSnapshot && !hasChrome) {
    // State cleared and nothing set: cutrace's writer says so of a thread's sequence once the
    // thread ended (nothing more comes on it). Its state goes; should the sequence go on, it
    // starts from a cleared state, as it would have.
    sequences_.erase(sequence);
    if (emptied_.size() >= kMaxEmptied) emptied_.clear();
    emptied_.insert(sequence);
    return visitor_.ok(error);
  }
  if (sequences_.size() >= kMaxSequences && !sequences_.contains(sequence))
    return fail(error, "more than " + std::to_string(kMaxSequences) + " sequences at once");
  auto [at, fresh] = sequences_.try_emplace(sequence);
  Sequence& seq = at->second;
  if (fresh && emptied_.erase(sequence) != 0) seq.valid = true;
  if (cleared) {
    seq = Sequence();
    seq.valid = true;
  } else if ((flags & pf::TracePacket::kSeqNeedsIncrementalState) && !seq.valid) {
    ++stats_.skipped;
    return true;
  }
  if (hasDefaults) {
    Reader d(defaults);
    Reader::Field g;
    while (d.next(g)) {
      if (g.number == pf::TracePacketDefaults::kTimestampClockId && g.wire == proto::kVarint) {
        seq.defaultClock = g.value;
      } else if (g.number == pf::TracePacketDefaults::kTrackEventDefaults && g.wire == proto::kLengthDelimited) {
        Reader e = g.nested();
        Reader::Field h;
        while (e.next(h)) {
          if (h.number == pf::TrackEventDefaults::kTrackUuid && h.wire == proto::kVarint) seq.defaultTrack = h.value;
        }
        if (e.failed()) return fail(error, "malformed track event defaults");
      }
    }
    if (d.failed()) return fail(error, "malformed packet defaults");
  }
  if (hasSnapshot && !clockSnapshot(seq, snapshot, error)) return false;
  if (hasInterned && !interned(seq, internedData, error)) return false;
  uint64_t ns = 0;
  if (!timestamp(seq, hasTs, ts, hasClock, clock, ns, error)) return false;
  if (hasDescriptor && !trackDescriptor(sequence, descriptor, error)) return false;
  if (hasEvent && !trackEvent(seq, sequence, event, hasTs, ns, error)) return false;
  if (hasChrome && !chromeEvents(chrome, error)) return false;
  return visitor_.ok(error);
}

bool readInput(Input& in, PerfettoVisitor& visitor, std::string& error, PfReadStats* statsOut) {
  PfReadStats stats;
  Decoder decoder(visitor, stats);
  for (;;) {
    if (!in.fill(20, error)) return false;
    std::string_view head = in.available();
    if (head.empty()) break;
    uint64_t tag = 0, length = 0;
    const int tagBytes = peekVarint(head, tag);
    if (tagBytes == 0) {
      stats.truncated = true;
      break;
    }
    if (tagBytes < 0 || (tag >> 3) == 0) {
      error = "not a Perfetto trace: malformed field at byte " + std::to_string(in.offset());
      return false;
    }
    const uint64_t wire = tag & 7;
    if (wire != proto::kLengthDelimited) {
      error = "not a Perfetto trace: field " + std::to_string(tag >> 3) + " of wire type " + std::to_string(wire) +
              " at byte " + std::to_string(in.offset());
      return false;
    }
    const int lengthBytes = peekVarint(head.substr(static_cast<std::size_t>(tagBytes)), length);
    if (lengthBytes == 0) {
      stats.truncated = true;
      break;
    }
    if (lengthBytes < 0 || length > kMaxPacketBytes) {
      error = "malformed or oversized packet (" + std::to_string(length) + " bytes) at byte " + std::to_string(in.offset());
      return false;
    }
    const std::size_t headBytes = static_cast<std::size_t>(tagBytes + lengthBytes);
    const std::size_t total = headBytes + static_cast<std::size_t>(length);
    if (!in.fill(total, error)) return false;
    const std::string_view whole = in.available();
    if (whole.size() < total) {
      stats.truncated = true;
      break;
    }
    if ((tag >> 3) == pf::Trace::kPacket) {
      std::string why;
      if (!decoder.packet(whole.substr(headBytes, static_cast<std::size_t>(length)), why)) {
        error = why + " (packet at byte " + std::to_string(in.offset()) + ")";
        return false;
      }
      ++stats.packets;
      stats.bytes += total;
    }
    in.consume(total);
    visitor.position(in.offset());
  }
  decoder.finish();
  if (statsOut != nullptr) *statsOut = stats;
  return true;
}

// ------------------------------------------------------------------ TraceData

uint8_t copyKindOf(std::string_view name) {
  for (unsigned k = 0; k <= static_cast<unsigned>(CopyKind::Peer); ++k) {
    if (name == copyKindName(static_cast<uint8_t>(k))) return static_cast<uint8_t>(k);
  }
  return static_cast<uint8_t>(CopyKind::Unknown);
}

class Rebuild : public PerfettoVisitor {
 public:
  Rebuild(TraceData& data, PfRebuildInfo& info, const PfMetadataSource& source, const PfRebuildOptions& options)
      : d_(data), info_(info), source_(source), options_(options) {
    if (const TraceData* k = source.known) {
      d_.meta = k->meta;
      d_.hooks = k->hooks;  // their names are the process's static strings
      d_.cupti = k->cupti;
      d_.stackInfo = k->stackInfo;
      haveHooks_ = true;
      pid_ = k->meta.pid;
      final_.ended = true;
      final_.events = k->eventCount();
      final_.distinctStacks = k->stacks.empty() ? 0 : k->stacks.size() - 1;
      k->forEachThreadFigures(
          [&](const ExitedThread& t) { final_.threads.push_back(PfFinalThread{t.tid, t.dropped, t.lostEnds, t.seqEnd}); });
    }
  }

  // Op ranges are kept as their parts (slice()): their texts are not needed.
  bool wantsOpText() const override { return false; }

  void track(const PfTrack& t) override {
    if (t.kind == PfTrackKind::Process) notePid(t.pid);
    if (t.kind == PfTrackKind::Thread) {
      notePid(t.pid);
      Thread* th = thread(t.sequence);
      if (th == nullptr) return;
      th->track.tid = t.tid;
      // The writer names an unnamed thread "thread <tid>", as the Chrome trace does.
      th->track.name = t.name == "thread " + std::to_string(t.tid) ? std::string() : t.name;
    }
  }

  void counter(const PfTrack& t, uint32_t sequence, uint64_t, int64_t value) override {
    if (t.kind != PfTrackKind::DropCounter || value < 0) return;
    if (Thread* th = thread(sequence)) th->track.dropped = static_cast<uint64_t>(value);
  }

  void metadata(std::string_view name, std::string_view value) override {
    if (source_.known != nullptr) return;  // the process's own figures are given
    if (name == "cutrace.process" && source_.process != nullptr && !haveHooks_ && error_.empty()) {
      if (!source_.process(value, d_, error_)) return;
      notePid(d_.meta.pid);
      if (d_.hooks.size() > UINT16_MAX) error_ = "hook table too large";
      haveHooks_ = !d_.hooks.empty() && error_.empty();
    } else if (name == "cutrace" && source_.final != nullptr && error_.empty()) {
      source_.final(value, d_, final_, error_);
    }
  }

  bool ok(std::string& error) override {
    if (error_.empty()) return true;
    error = error_;
    return false;
  }

  void slice(const PfSlice& s) override {
    if (s.track->kind == PfTrackKind::Device) {
      device(s);
      return;
    }
    if (s.sequence == kPfProcessSequence) {
      ++info_.skippedEvents;
      return;
    }
    Event e;
    e.start = s.startNs;
    e.end = s.endNs;
    // Slices come in the order the thread recorded its events (END order); a seq left out is
    // the previous one's + 1.
    Thread* th = thread(s.sequence);
    if (th == nullptr) return;
    e.seq = s.seq;
    if (s.category == kCategories[0] || s.category == kCategories[1]) {
      if (!haveHooks_) {
        error_ = "a CUDA call before the cutrace.process metadata (not a cutrace stream?)";
        return;
      }
      if (s.nameIid == 0 || s.nameIid > d_.hooks.size()) {
        ++info_.skippedEvents;
        return;
      }
      if (s.callstackIid >= kMaxStackId) {
        error_ = "callstack iid " + std::to_string(s.callstackIid) + " out of range";
        return;
      }
      // The stack table has the size it has without a window; the stacks of events left out
      // stay empty (nothing written names them).
      if (s.callstackIid != 0) stackTableSize_ = std::max<uint64_t>(stackTableSize_, s.callstackIid + 1);
      if (outside(s.startNs, s.endNs)) {
        noteMemoryBefore(s, e);
        return;
      }
      apiEvent(s, e);
      if (s.find(Ann::Captured)) e.flags |= kEventCaptured;
      if (s.callstackIid != 0) {
        const auto id = static_cast<uint32_t>(s.callstackIid);
        if (d_.stacks.size() <= id) d_.stacks.resize(id + 1);
        if (d_.stacks[id].empty()) {
          for (std::string_view frame : s.frames) d_.stacks[id].push_back(d_.strings.intern(frame));
        }
        memcpy(e.raw + kStackIdOffset, &id, sizeof(id));
      }
    } else if (s.category == kCategories[2]) {
      if (outside(s.startNs, s.instant ? s.startNs : s.endNs)) return;
      const PfAnnotation* range = s.find(Ann::RangeId);
      if (s.instant) {
        e.kind = EventKind::NvtxMark;
      } else if (s.track->kind == PfTrackKind::Span || range != nullptr) {
        e.kind = EventKind::NvtxSpan;
        e.rangeId = range != nullptr ? range->value : 0;
      } else {
        e.kind = EventKind::NvtxRange;
      }
      // An op range stays its parts, as the drain held it: a text per range kept whole would be
      // most of the memory of a trace read back (PyTorch runs: ~110 bytes and an index entry).
      if (e.kind == EventKind::NvtxRange && s.isTorchOp) {
        e.name = d_.strings.intern(s.op.name);
        // The sizes lists repeat; input_op_ids are the range's own.
        e.torch = torchPayload(s.op, s.op.sizes.empty() ? 0 : d_.strings.intern(s.op.sizes),
                               s.op.inputOpIds.empty() ? 0 : d_.strings.keepUnindexed(s.op.inputOpIds));
      } else {
        e.name = d_.strings.intern(s.name);
      }
      if (const PfAnnotation* a = s.find(Ann::Domain)) e.domain = d_.strings.intern(a->text);
      if (const PfAnnotation* a = s.find(Ann::Category)) e.category = static_cast<uint32_t>(a->value);
      if (const PfAnnotation* a = s.find(Ann::CategoryName); a != nullptr && e.category != 0)
        d_.categoryNames[(uint64_t{e.domain} << 32) | e.category] = d_.strings.intern(a->text);
      if (s.find(Ann::Unclosed)) e.flags |= kEventUnclosed;
      if (s.find(Ann::EndLost)) e.flags |= kEventEndLost;
      if (s.find(Ann::Truncated)) e.flags |= kEventTextTruncated;
    } else {
      ++info_.skippedEvents;
      return;
    }
    if (options_.maxEvents != 0 && stored_ >= options_.maxEvents) {
      if (error_.empty()) error_ = "more than " + std::to_string(options_.maxEvents) + " events";
      info_.overMaxEvents = true;
      return;
    }
    ++stored_;
    if (!th->track.events.push_back(e) && error_.empty()) error_ = "out of memory for the events";
  }

  // After the read: threads in the writer's order, the final metadata's per-thread figures, the
  // host links of device work.
  void finish() {
    for (auto& [sequence, th] : threads_) d_.threads.push_back(std::move(th.track));
    for (const auto& [ptr, c] : lastChangeBefore_)
      if (c.alloc) d_.liveBefore.push_back(TraceData::LiveAllocation{ptr, c.bytes, c.device});
    info_.ended = final_.ended;
    info_.metadataEvents = final_.events;
    if (final_.threads.size() == d_.threads.size()) {
      for (std::size_t i = 0; i < d_.threads.size(); ++i) {
        const PfFinalThread& f = final_.threads[i];
        ThreadTrack& t = d_.threads[i];
        if (f.tid != t.tid) continue;
        t.dropped = f.dropped;
        t.lostEnds = f.lostEnds;
        t.seqEnd = f.seqEnd;
      }
    }
    if (stackTableSize_ > d_.stacks.size()) d_.stacks.resize(stackTableSize_);
    if (final_.distinctStacks + 1 > d_.stacks.size() && final_.distinctStacks < kMaxStackId)
      d_.stacks.resize(final_.distinctStacks + 1);
    // Each device event's CUPTI API record (the writer keeps the call's thread and interval):
    // the Chrome and folded writers link device work to host calls from these.
    std::unordered_map<uint32_t, bool> correlations;
    for (const Link& l : links_)
      if (correlations.emplace(l.correlation, true).second)
        d_.apiActivity.push_back(ApiActivity{l.start, l.end, l.tid, l.correlation});
  }

 private:
  struct Thread {
    ThreadTrack track;
  };
  struct Link {
    uint64_t start, end;
    uint32_t tid, correlation;
  };

  // A host event out of the window (counted); its times as TraceData::toTraceNs computes them.
  bool outside(uint64_t start, uint64_t end) {
    if (!options_.windowed) return false;
    if (options_.window.holds(d_.toTraceNs(start), d_.toTraceNs(end))) return false;
    ++info_.outsideWindow;
    return true;
  }

  // A CUDA call's event but its stack (slice() checked its hook).
  void apiEvent(const PfSlice& s, Event& e) {
    e.kind = EventKind::Api;
    e.hook = static_cast<uint16_t>(s.nameIid - 1);
    apiPayload(s, d_.hooks[e.hook].kind, e);
    if (const PfAnnotation* a = s.find(Ann::Result)) e.result = static_cast<int32_t>(a->asInt());
  }

  // A driver allocation or free left out before the window: the memory counters inside it
  // start from what was live at its start. Calls come in each thread's order, not in time
  // order over threads, so each pointer's latest change is kept (memory follows the pointers
  // allocated, not the calls), and at the end those that are allocations are live. That is the
  // state the Chrome writer's MemoryCounters reaches where a pointer's allocations and frees
  // alternate, as the driver hands them out.
  void noteMemoryBefore(const PfSlice& s, Event& e) {
    if (!changesMemory(d_.hooks[static_cast<std::size_t>(s.nameIid - 1)])) return;
    apiEvent(s, e);
    MemoryChange c;
    if (!memoryChangeOf(d_, e, c) || d_.toTraceNs(c.ns) >= options_.window.fromNs) return;
    auto [it, fresh] = lastChangeBefore_.try_emplace(c.ptr, c);
    if (!fresh && c.ns >= it->second.ns) it->second = c;
  }

  // Stack ids are the writer's StackTable ids (at most Config::maxStacks, 2^16): one far past
  // that is not a cutrace stream, and would cost the rebuild a table of its size.
  static constexpr uint64_t kMaxStackId = uint64_t{1} << 20;

  // Threads are sequences (2 + the thread's ordinal: every thread the process ever had, not
  // only those alive at once). Each costs the read about 1.6 KB at its peak (its track, its
  // first events, and its sequence's state until the writer ends the sequence; 70,000 short
  // threads read back at a process's exit), so a file naming more than a million is refused:
  // that is about 1.7 GB.
  static constexpr std::size_t kMaxThreads = std::size_t{1} << 20;
  Thread* thread(uint32_t sequence) {
    auto it = threads_.find(sequence);
    if (it != threads_.end()) return &it->second;
    if (threads_.size() >= kMaxThreads) {
      error_ = "more than " + std::to_string(kMaxThreads) + " threads";
      info_.overMaxThreads = true;
      return nullptr;
    }
    return &threads_[sequence];
  }

  void notePid(uint32_t pid) {
    if (pid == 0) return;
    if (pid_ != 0 && pid != pid_)
      error_ = "the file holds more than one process (pids " + std::to_string(pid_) + " and " + std::to_string(pid) +
               "); rebuild one process per file";
    pid_ = pid;
  }

  // "KERNEL<<<[gx,gy,gz], [bx,by,bz], SHARED, STREAM>>>" (perfetto_writer.h); the kernel name
  // may hold anything, the part after its last "<<<" nothing but this.
  bool parseLaunch(std::string_view text, LaunchPayload& l) {
    const std::size_t at = text.rfind("<<<");
    if (at == std::string_view::npos || at == 0 || !text.ends_with(">>>")) return false;
    std::string_view rest = text.substr(at + 3, text.size() - at - 6);
    auto field = [&](std::string_view& out) {
      const std::size_t comma = rest.find(rest.starts_with("[") ? "], " : ", ");
      if (comma == std::string_view::npos) {
        out = rest;
        rest = {};
      } else {
        const std::size_t cut = comma + (rest.starts_with("[") ? 1 : 0);
        out = rest.substr(0, cut);
        rest = rest.substr(cut + 2);
      }
    };
    std::string_view grid, block, shared, stream;
    field(grid);
    field(block);
    field(shared);
    field(stream);
    uint64_t g[3], b[3], sharedMem = 0, streamValue = 0;
    auto number = [](std::string_view t, int base, uint64_t& v) {
      if (t.empty() || t.size() > (base == 16 ? 16u : 18u)) return false;
      v = 0;
      for (char c : t) {
        const int d = c >= '0' && c <= '9' ? c - '0' : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return false;
        v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
      }
      return true;
    };
    if (!parseDims(grid, g) || !parseDims(block, b) || !number(shared, 10, sharedMem) ||
        !(stream == "0" || (stream.starts_with("0x") && number(stream.substr(2), 16, streamValue))))
      return false;
    l.kernelName = d_.strings.intern(text.substr(0, at));
    l.gridX = static_cast<uint32_t>(g[0]);
    l.gridY = static_cast<uint16_t>(g[1]);
    l.gridZ = static_cast<uint16_t>(g[2]);
    l.block = LaunchPayload::packBlock(static_cast<unsigned>(std::min<uint64_t>(b[0], 1u << 20)),
                                       static_cast<unsigned>(std::min<uint64_t>(b[1], 1u << 20)),
                                       static_cast<unsigned>(std::min<uint64_t>(b[2], 1u << 20)));
    l.sharedMem = static_cast<uint32_t>(sharedMem);
    l.stream = streamValue;
    return true;
  }

  // parseLaunch() through the texts parsed last: a loop launches the same kernel the same way
  // over and over, and a compare costs a fraction of a parse (callgrind: ~800 instructions).
  bool parseLaunchCached(std::string_view text, LaunchPayload& l) {
    for (const LaunchParse& c : launchCache_) {
      if (!c.valid || c.text != text) continue;
      const uint32_t stack = l.stack;  // not in the text
      l = c.launch;
      l.stack = stack;
      return true;
    }
    if (!parseLaunch(text, l)) return false;
    LaunchParse& c = launchCache_[launchNext_++ % kLaunchCache];
    c.text.assign(text);
    c.launch = l;
    c.valid = true;
    return true;
  }

  static bool dimsOr(const PfSlice& s, Ann a, uint64_t out[3]) {
    out[0] = out[1] = out[2] = 0;
    const PfAnnotation* x = s.find(a);
    return x != nullptr && parseDims(x->text, out);
  }

  void apiPayload(const PfSlice& s, ApiKind kind, Event& e) {
    // A stream is an interned "0x..." string (or, in older files, a pointer value).
    auto value = [&](Ann a) -> uint64_t {
      const PfAnnotation* x = s.find(a);
      if (x == nullptr) return 0;
      if (x->type != PfAnnotation::Type::String) return x->value;
      uint64_t v = 0;
      if (!x->text.starts_with("0x") || x->text.size() > 18) return 0;
      for (char c : x->text.substr(2)) {
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return 0;
        v = v << 4 | static_cast<uint64_t>(d);
      }
      return v;
    };
    switch (kind) {
      case ApiKind::Launch: {
        if (const PfAnnotation* l = s.find(Ann::Launch); l != nullptr && parseLaunchCached(l->text, e.launch)) break;
        if (const PfAnnotation* k = s.find(Ann::Kernel)) {
          e.launch.kernelName = d_.strings.intern(k->text);
          uint64_t grid[3], block[3];
          dimsOr(s, Ann::Grid, grid);
          dimsOr(s, Ann::Block, block);
          e.launch.gridX = static_cast<uint32_t>(grid[0]);
          e.launch.gridY = static_cast<uint16_t>(grid[1]);
          e.launch.gridZ = static_cast<uint16_t>(grid[2]);
          e.launch.block = LaunchPayload::packBlock(static_cast<unsigned>(std::min<uint64_t>(block[0], 1u << 20)),
                                                    static_cast<unsigned>(std::min<uint64_t>(block[1], 1u << 20)),
                                                    static_cast<unsigned>(std::min<uint64_t>(block[2], 1u << 20)));
          e.launch.sharedMem = static_cast<uint32_t>(value(Ann::Shared));
        }
        e.launch.stream = value(Ann::Stream);
        break;
      }
      default:
        if (carriesMemory(kind)) {
          e.mem.bytes = value(Ann::Bytes);
          const PfAnnotation* k = s.find(Ann::Kind);
          e.mem.copyKind = k != nullptr ? copyKindOf(k->text) : static_cast<uint8_t>(CopyKind::Unknown);
          e.mem.ptr = value(Ann::Ptr);
          e.mem.stream = value(Ann::Stream);
          const PfAnnotation* dev = s.find(Ann::Device);
          e.mem.device = dev != nullptr ? static_cast<int8_t>(dev->asInt()) : int8_t{-1};
        } else {
          e.handle.handle = value(Ann::Handle);
          e.handle.stream = value(Ann::Stream);
        }
        break;
    }
  }

  void device(const PfSlice& s) {
    DeviceEvent d;
    d.start = s.startNs;
    d.end = s.endNs;
    d.device = s.track->device;
    d.stream = s.track->stream;
    if (s.category == kCategories[3]) d.kind = DeviceKind::Kernel;
    else if (s.category == kCategories[4]) d.kind = DeviceKind::Memcpy;
    else if (s.category == kCategories[5]) d.kind = DeviceKind::Memset;
    else {
      ++info_.skippedEvents;
      return;
    }
    if (options_.windowed && !options_.window.holds(d_.toTraceNs(s.startNs), d_.toTraceNs(s.endNs)))
      return;
    auto value = [&](Ann a) -> uint64_t {
      const PfAnnotation* x = s.find(a);
      return x != nullptr ? x->value : 0;
    };
    d.correlation = static_cast<uint32_t>(value(Ann::Correlation));
    if (d.kind == DeviceKind::Kernel) {
      if (s.nameIid != 0) d.name = d_.strings.intern(s.name);
      uint64_t grid[3], block[3];
      dimsOr(s, Ann::Grid, grid);
      dimsOr(s, Ann::Block, block);
      for (int k = 0; k < 3; ++k) {
        d.grid[k] = static_cast<int32_t>(grid[k]);
        d.block[k] = static_cast<int32_t>(block[k]);
      }
      d.registers = static_cast<uint16_t>(value(Ann::Registers));
      d.staticShared = static_cast<int32_t>(value(Ann::SharedStatic));
      d.dynamicShared = static_cast<int32_t>(value(Ann::SharedDynamic));
    } else {
      d.bytes = value(Ann::Bytes);
      if (d.kind == DeviceKind::Memcpy) {
        const std::string_view prefix = "Memcpy ";
        const std::string_view kind = s.name.starts_with(prefix) ? s.name.substr(prefix.size()) : std::string_view();
        for (std::size_t k = 0; k < sizeof(kCuptiCopyKinds) / sizeof(kCuptiCopyKinds[0]); ++k) {
          if (kind == kCuptiCopyKinds[k]) {
            d.copyKind = static_cast<uint8_t>(k);
            break;
          }
        }
      }
    }
    d.streamLinked = s.flowOut;
    if (const PfAnnotation* op = s.find(Ann::Op); op != nullptr && !op->text.empty()) {
      d.streamOp = d_.strings.intern(op->text);
      const PfAnnotation* opId = s.find(Ann::OpId);
      d.streamHasOpId = opId != nullptr;
      d.streamOpId = opId != nullptr ? opId->value : 0;
    }
    const PfAnnotation* tid = s.find(Ann::HostTid);
    const PfAnnotation* start = s.find(Ann::HostStart);
    const PfAnnotation* end = s.find(Ann::HostEnd);
    if (tid != nullptr && start != nullptr && end != nullptr && start->value <= end->value)
      links_.push_back(Link{start->value, end->value, static_cast<uint32_t>(tid->value), d.correlation});
    d_.device.push_back(d);
  }

  TraceData& d_;
  PfRebuildInfo& info_;
  const PfMetadataSource& source_;
  const PfRebuildOptions& options_;
  uint64_t stackTableSize_ = 0;  // the largest callstack iid seen + 1
  PfFinalMetadata final_;
  std::string error_;
  uint64_t stored_ = 0;  // host events stored (PfRebuildOptions::maxEvents)
  uint32_t pid_ = 0;
  bool haveHooks_ = false;
  std::map<uint32_t, Thread> threads_;  // by sequence: the writer's thread order
  std::vector<Link> links_;
  std::unordered_map<uint64_t, MemoryChange> lastChangeBefore_;  // noteMemoryBefore(), by pointer
  struct LaunchParse {
    std::string text;
    LaunchPayload launch{};
    bool valid = false;
  };
  static constexpr std::size_t kLaunchCache = 4;
  LaunchParse launchCache_[kLaunchCache];
  std::size_t launchNext_ = 0;
};

bool rebuild(Input& in, TraceData& out, const PfMetadataSource& source, std::string& error, PfRebuildInfo* infoOut,
             const PfRebuildOptions& options) {
  PfRebuildInfo info;
  Rebuild visitor(out, info, source, options);
  if (!readInput(in, visitor, error, &info.stats)) {
    if (infoOut != nullptr) *infoOut = info;
    return false;
  }
  visitor.finish();
  if (infoOut != nullptr) *infoOut = info;
  return true;
}

int openInput(const std::string& path, std::string& error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) error = path + ": " + strerror(errno);
  return fd;
}

}  // namespace

bool readPerfetto(const std::string& path, PerfettoVisitor& visitor, std::string& error, PfReadStats* stats) {
  const int fd = openInput(path, error);
  if (fd < 0) return false;
  Input in(fd);
  const bool ok = readInput(in, visitor, error, stats);
  close(fd);
  if (!ok) error = path + ": " + error;
  return ok;
}

bool readPerfettoBytes(std::string_view bytes, PerfettoVisitor& visitor, std::string& error, PfReadStats* stats) {
  Input in(bytes);
  return readInput(in, visitor, error, stats);
}

bool rebuildPerfetto(const std::string& path, const PfMetadataSource& source, TraceData& out, std::string& error,
                     PfRebuildInfo* info, const PfRebuildOptions& options) {
  const int fd = openInput(path, error);
  if (fd < 0) return false;
  Input in(fd);
  const bool ok = rebuild(in, out, source, error, info, options);
  close(fd);
  if (!ok) error = path + ": " + error;
  return ok;
}

bool rebuildPerfettoBytes(std::string_view bytes, const PfMetadataSource& source, TraceData& out, std::string& error,
                          PfRebuildInfo* info, const PfRebuildOptions& options) {
  Input in(bytes);
  return rebuild(in, out, source, error, info, options);
}

}  // namespace cutrace
