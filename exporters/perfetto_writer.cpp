#include "exporters/perfetto_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "exporters/json_writer.h"
#include "exporters/output_files.h"
#include "exporters/perfetto_fields.h"
#include "exporters/trace_view.h"

#ifndef CUTRACE_VERSION
#define CUTRACE_VERSION "unknown"
#endif

namespace cutrace {

namespace {

using proto::Writer;

constexpr uint32_t kProcessSequence = 1;
// A thread's sequence: numbered by the thread's ordinal (TraceData::ordinal), after the process's.
uint32_t threadSequence(uint32_t ordinal) { return 2 + ordinal; }

uint64_t clockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string dims(uint32_t x, uint32_t y, uint32_t z) {
  return "[" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + "]";
}

const char* cuptiCopyKind(uint8_t k) {
  return k < sizeof(kCuptiCopyKinds) / sizeof(kCuptiCopyKinds[0]) ? kCuptiCopyKinds[k] : "unknown";
}

// Text into a proto `string` field. Perfetto's schema declares them UTF-8 (protobuf's own
// parsers refuse or complain about anything else), so each byte that does not start a valid
// sequence becomes U+FFFD, as the Chrome and folded writers show it.
void utf8(Writer& w, uint32_t field, std::string_view s) {
  std::size_t i = asciiRun(s);
  for (std::size_t n; i < s.size(); i += n) {
    n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8SequenceLength(s, i);
    if (n == 0) break;
  }
  if (i == s.size()) {
    w.bytes(field, s);
    return;
  }
  std::string fixed(s.substr(0, i));
  while (i < s.size()) {
    const std::size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8SequenceLength(s, i);
    if (n == 0) {
      fixed += "\xef\xbf\xbd";
      ++i;
    } else {
      fixed.append(s.substr(i, n));
      i += n;
    }
  }
  w.bytes(field, fixed);
}

void describeTrack(Writer& w, uint64_t uuid, uint64_t parent, std::string_view name) {
  const auto d = w.begin(pf::TracePacket::kTrackDescriptor);
  w.varint(pf::TrackDescriptor::kUuid, uuid);
  if (parent != 0) w.varint(pf::TrackDescriptor::kParentUuid, parent);
  utf8(w, pf::TrackDescriptor::kName, name);
  w.end(d);
}

}  // namespace

bool PerfettoWriter::needFirst(std::vector<bool>& sent, std::size_t iid) {
  if (iid >= sent.size()) sent.resize(std::max<std::size_t>(iid + 1, sent.size() * 2), false);
  if (sent[iid]) return false;
  sent[iid] = true;
  return true;
}

[[gnu::always_inline]] inline char* PerfettoWriter::packetAt(char* c, Sequence& seq, uint64_t ns, Writer::Nested& packet) {
  c = w_.beginAt(c, pf::Trace::kPacket, packet);
  if (seq.id == kProcessSequence) {
    c = Writer::putField(c, pf::TracePacket::kTimestamp, ns);  // the sequence's default clock: MONOTONIC
  } else if (ns >= seq.lastNs) {
    c = Writer::putField(c, pf::TracePacket::kTimestamp, ns - seq.lastNs);
    seq.lastNs = ns;
  } else {
    // Earlier than the previous packet (a range written when it ended): absolute, leaving the
    // incremental clock where it was.
    c = Writer::putField(c, pf::TracePacket::kTimestamp, ns);
    c = Writer::putField(c, pf::TracePacket::kTimestampClockId, pf::BuiltinClock::kMonotonic);
  }
  return Writer::putField(c, pf::TracePacket::kTrustedPacketSequenceId, seq.id);
}

Writer::Nested PerfettoWriter::beginPacket(Sequence& seq, uint64_t ns) {
  Writer::Nested p;
  w_.close(packetAt(w_.open(kPacketHeaderBytes), seq, ns, p));
  return p;
}

void PerfettoWriter::flushInterned() {
  if (interned_.size() == 0) return;
  w_.bytes(pf::TracePacket::kInternedData, interned_.buffer());
  interned_.clear();
}

void PerfettoWriter::needName(Sequence& seq, uint64_t iid, std::string_view text) {
  if (!need(seq.names, iid)) return;
  const auto e = interned_.begin(pf::InternedData::kEventNames);
  interned_.varint(pf::InternedEntry::kIid, iid);
  utf8(interned_, pf::InternedEntry::kName, text);
  interned_.end(e);
}

void PerfettoWriter::needCategory(Sequence& seq, uint32_t iid) {
  if (!need(seq.categories, iid)) return;
  const auto e = interned_.begin(pf::InternedData::kEventCategories);
  interned_.varint(pf::InternedEntry::kIid, iid);
  interned_.bytes(pf::InternedEntry::kName, kCategories[iid - 1]);
  interned_.end(e);
}

void PerfettoWriter::internAnnotation(uint32_t iid) {
  const auto e = interned_.begin(pf::InternedData::kDebugAnnotationNames);
  interned_.varint(pf::InternedEntry::kIid, iid);
  interned_.bytes(pf::InternedEntry::kName, kAnnotationNames[iid - 1]);
  interned_.end(e);
}

void PerfettoWriter::needText(Sequence& seq, uint64_t iid, std::string_view text) {
  if (!need(seq.strings, iid)) return;
  const auto e = interned_.begin(pf::InternedData::kDebugAnnotationStringValues);
  interned_.varint(pf::InternedEntry::kIid, iid);
  utf8(interned_, pf::InternedEntry::kName, text);
  interned_.end(e);
}

uint64_t PerfettoWriter::needString(const TraceData& data, Sequence& seq, uint32_t poolId, bool demangle) {
  if (poolId >= stringIids_.size()) stringIids_.resize(std::max<std::size_t>(poolId + 1, stringIids_.size() * 2), 0);
  uint64_t& iid = stringIids_[poolId];
  if (iid == 0) iid = nextStringIid_++;
  if (seq.strings.size() <= iid || !seq.strings[iid])
    needText(seq, iid, demangle ? std::string_view(demangle_(data, poolId)) : data.strings.get(poolId));
  return iid;
}

uint64_t PerfettoWriter::needStream(Sequence& seq, uint64_t stream) {
  auto [it, fresh] = streamIids_.try_emplace(stream, nextStringIid_);
  if (fresh) ++nextStringIid_;
  if (seq.strings.size() > it->second && seq.strings[it->second]) return it->second;
  Sink text;
  text.putHex(stream);
  needText(seq, it->second, text.text());
  return it->second;
}

uint64_t PerfettoWriter::needLaunch(const TraceData& data, Sequence& seq, const LaunchPayload& l) {
  auto [it, fresh] = launchIids_.try_emplace(
      std::tuple{l.kernelName, l.gridX, l.gridY, l.gridZ, l.block, l.sharedMem, l.stream}, nextStringIid_);
  if (fresh) ++nextStringIid_;
  if (seq.strings.size() > it->second && seq.strings[it->second]) return it->second;
  // CUDA's launch syntax, so the UI shows it as the call was written.
  Sink text;
  text.put(demangle_(data, l.kernelName));
  text.put("<<<");
  text.put(dims(l.gridX, l.gridY, l.gridZ));
  text.put(", ");
  text.put(dims(l.blockX(), l.blockY(), l.blockZ()));
  text.put(", ");
  text.putUint(l.sharedMem);
  text.put(", ");
  if (l.stream == 0) text.put('0');
  else text.putHex(l.stream);
  text.put(">>>");
  needText(seq, it->second, text.text());
  return it->second;
}

void PerfettoWriter::needStack(const TraceData& data, Sequence& seq, uint32_t stack) {
  if (!need(seq.stacks, stack)) return;
  const std::vector<uint32_t>& frames = data.stacks[stack];
  for (uint32_t name : frames) {
    if (!need(seq.frames, std::size_t{name} + 1)) continue;
    auto f = interned_.begin(pf::InternedData::kFunctionNames);
    interned_.varint(pf::InternedEntry::kIid, std::size_t{name} + 1);
    utf8(interned_, pf::InternedEntry::kName, data.strings.get(name));
    interned_.end(f);
    f = interned_.begin(pf::InternedData::kFrames);
    interned_.varint(pf::Frame::kIid, std::size_t{name} + 1);
    interned_.varint(pf::Frame::kFunctionNameId, std::size_t{name} + 1);
    interned_.end(f);
  }
  const auto c = interned_.begin(pf::InternedData::kCallstacks);
  interned_.varint(pf::Callstack::kIid, stack);
  frameIids_.clear();
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) frameIids_.push_back(std::size_t{*it} + 1);  // bottom first
  interned_.packedVarints(pf::Callstack::kFrameIds, frameIids_.begin(), frameIids_.end());
  interned_.end(c);
}

// Inlined: several per event (an op range's seq, op_id and sizes), a call each cost as much as the writing.
[[gnu::always_inline]] inline void PerfettoWriter::annotation(Ann a, uint32_t valueField, uint64_t v) {
  // Every length is known before it is written (at most 14 bytes: a one-byte name iid, a value
  // field of two tag bytes at most): one room check, no length to patch.
  static_assert(static_cast<uint32_t>(Ann::Count) < 0x80 && (pf::TrackEvent::kDebugAnnotations << 3) < 0x80);
  char* p = w_.open(2 + 14);
  *p++ = static_cast<char>(pf::TrackEvent::kDebugAnnotations << 3 | proto::kLengthDelimited);
  *p++ = static_cast<char>(2 + proto::varintSize(uint64_t{valueField} << 3) + proto::varintSize(v));
  p = Writer::putField(p, pf::DebugAnnotation::kNameIid, static_cast<uint32_t>(a) + 1);
  w_.close(Writer::putField(p, valueField, v));
}
void PerfettoWriter::annotationString(Ann a, std::string_view v) {
  // A short ASCII text (valid UTF-8 as it is: an op range's input_op_ids, a copy's kind): every
  // length is one byte, known before it is written.
  constexpr std::size_t kShort = 0x80 - 4;
  if (v.size() < kShort && asciiRun(v) == v.size()) {
    static_assert(pf::DebugAnnotation::kStringValue < 16 && pf::DebugAnnotation::kNameIid < 16);
    char* p = w_.open(2 + 4 + kShort);
    *p++ = static_cast<char>(pf::TrackEvent::kDebugAnnotations << 3 | proto::kLengthDelimited);
    *p++ = static_cast<char>(4 + v.size());
    p = Writer::putField(p, pf::DebugAnnotation::kNameIid, static_cast<uint32_t>(a) + 1);
    *p++ = static_cast<char>(pf::DebugAnnotation::kStringValue << 3 | proto::kLengthDelimited);
    *p++ = static_cast<char>(v.size());
    memcpy(p, v.data(), v.size());
    w_.close(p + v.size());
    return;
  }
  const auto d = w_.begin(pf::TrackEvent::kDebugAnnotations);
  w_.varint(pf::DebugAnnotation::kNameIid, static_cast<uint32_t>(a) + 1);
  utf8(w_, pf::DebugAnnotation::kStringValue, v);
  w_.end(d);
}

void PerfettoWriter::startProcess(const TraceData& data) {
  const TraceMeta& m = data.meta;
  process_.id = kProcessSequence;
  process_.uuid = processUuid(m.pid);
  // The clocks at one moment, so trace_processor maps MONOTONIC (cutrace's) onto its BOOTTIME
  // and files of several processes and hosts line up on REALTIME.
  const uint64_t boot = clockNs(CLOCK_BOOTTIME), mono = clockNs(CLOCK_MONOTONIC), real = clockNs(CLOCK_REALTIME);
  auto p = w_.begin(pf::Trace::kPacket);
  w_.varint(pf::TracePacket::kTrustedPacketSequenceId, kProcessSequence);
  auto cs = w_.begin(pf::TracePacket::kClockSnapshot);
  for (auto [id, ts] : {std::pair{pf::BuiltinClock::kBoottime, boot}, std::pair{pf::BuiltinClock::kMonotonic, mono},
                        std::pair{pf::BuiltinClock::kRealtime, real}}) {
    const auto c = w_.begin(pf::ClockSnapshot::kClocks);
    w_.varint(pf::ClockSnapshotClock::kClockId, id);
    w_.varint(pf::ClockSnapshotClock::kTimestamp, ts);
    w_.end(c);
  }
  w_.end(cs);
  w_.end(p);

  p = w_.begin(pf::Trace::kPacket);
  w_.varint(pf::TracePacket::kTimestamp, mono);
  w_.varint(pf::TracePacket::kTrustedPacketSequenceId, kProcessSequence);
  w_.varint(pf::TracePacket::kSequenceFlags, pf::TracePacket::kSeqIncrementalStateCleared);
  w_.boolean(pf::TracePacket::kFirstPacketOnSequence, true);
  auto defaults = w_.begin(pf::TracePacket::kTracePacketDefaults);
  w_.varint(pf::TracePacketDefaults::kTimestampClockId, pf::BuiltinClock::kMonotonic);
  w_.end(defaults);
  auto d = w_.begin(pf::TracePacket::kTrackDescriptor);
  w_.varint(pf::TrackDescriptor::kUuid, process_.uuid);
  auto pd = w_.begin(pf::TrackDescriptor::kProcess);
  w_.varint(pf::ProcessDescriptor::kPid, m.pid);
  for (const std::string& arg : m.commandLine) utf8(w_, pf::ProcessDescriptor::kCmdline, arg);
  utf8(w_, pf::ProcessDescriptor::kProcessName, m.exe);
  w_.end(pd);
  w_.end(d);
  w_.end(p);

  // What the process is, for readers that rebuild the Chrome trace's metadata.
  Sink json;
  json.put("{\"tool\":");
  putJsonString(json, m.tool);
  json.put(",\"version\":");
  putJsonString(json, CUTRACE_VERSION);
  json.put(",\"pid\":");
  json.putUint(m.pid);
  json.put(",\"exe\":");
  putJsonString(json, m.exe);
  json.put(",\"hostname\":");
  putJsonString(json, m.hostname);
  json.put(",\"rank\":");
  json.putInt(m.rank);
  json.put(",\"capture\":");
  putJsonString(json, m.capture);
  json.put(",\"clock_source\":");
  putJsonString(json, m.clockSource);
  json.put(",\"ts_origin_ns\":");
  json.putUint(m.originMonotonicNs);
  json.put(",\"realtime_minus_monotonic_ns\":");
  json.putInt(m.realtimeMinusMonotonicNs);
  json.put(",\"command_line\":[");
  for (std::size_t i = 0; i < m.commandLine.size(); ++i) {
    if (i) json.put(',');
    putJsonString(json, m.commandLine[i]);
  }
  json.put("],\"hooks\":[");
  for (std::size_t i = 0; i < data.hooks.size(); ++i) {
    if (i) json.put(',');
    json.put("{\"name\":");
    putJsonString(json, data.hooks[i].displayName);
    json.put(",\"layer\":");
    json.putUint(static_cast<uint64_t>(data.hooks[i].layer));
    json.put(",\"kind\":");
    json.putUint(static_cast<uint64_t>(data.hooks[i].kind));
    json.put('}');
  }
  json.put("]}");
  p = w_.begin(pf::Trace::kPacket);
  w_.varint(pf::TracePacket::kTrustedPacketSequenceId, kProcessSequence);
  auto ce = w_.begin(pf::TracePacket::kChromeEvents);
  auto md = w_.begin(pf::ChromeEventBundle::kMetadata);
  w_.bytes(pf::ChromeMetadata::kName, "cutrace.process");
  w_.bytes(pf::ChromeMetadata::kJsonValue, json.text());
  w_.end(md);
  w_.end(ce);
  w_.end(p);
  process_.started = true;
  processStarted_ = true;
}

void PerfettoWriter::startThread(const TraceData& data, std::size_t index, uint64_t ns) {
  ThreadMark& mark = threads_[index];
  Sequence& seq = mark.seq;
  seq.id = threadSequence(data.ordinal(index));
  seq.uuid = threadUuid(data.meta.pid, data.ordinal(index));
  const auto p = w_.begin(pf::Trace::kPacket);
  w_.varint(pf::TracePacket::kTimestamp, ns);
  w_.varint(pf::TracePacket::kTimestampClockId, pf::BuiltinClock::kMonotonic);
  w_.varint(pf::TracePacket::kTrustedPacketSequenceId, seq.id);
  w_.varint(pf::TracePacket::kSequenceFlags, pf::TracePacket::kSeqIncrementalStateCleared);
  w_.boolean(pf::TracePacket::kFirstPacketOnSequence, true);
  auto defaults = w_.begin(pf::TracePacket::kTracePacketDefaults);
  w_.varint(pf::TracePacketDefaults::kTimestampClockId, pf::BuiltinClock::kSequenceIncremental);
  auto ted = w_.begin(pf::TracePacketDefaults::kTrackEventDefaults);
  w_.varint(pf::TrackEventDefaults::kTrackUuid, seq.uuid);
  w_.end(ted);
  w_.end(defaults);
  auto cs = w_.begin(pf::TracePacket::kClockSnapshot);
  auto c = w_.begin(pf::ClockSnapshot::kClocks);
  w_.varint(pf::ClockSnapshotClock::kClockId, pf::BuiltinClock::kMonotonic);
  w_.varint(pf::ClockSnapshotClock::kTimestamp, ns);
  w_.end(c);
  c = w_.begin(pf::ClockSnapshot::kClocks);
  w_.varint(pf::ClockSnapshotClock::kClockId, pf::BuiltinClock::kSequenceIncremental);
  w_.varint(pf::ClockSnapshotClock::kTimestamp, ns);
  w_.boolean(pf::ClockSnapshotClock::kIsIncremental, true);
  w_.end(c);
  w_.end(cs);
  w_.end(p);
  seq.lastNs = ns;
  seq.started = true;
  describeThread(data, index);
}

void PerfettoWriter::describeThread(const TraceData& data, std::size_t index) {
  const ThreadTrack& t = data.threads[index];
  ThreadMark& mark = threads_[index];
  mark.name = t.name;
  const auto p = beginPacket(mark.seq, mark.seq.lastNs);
  auto d = w_.begin(pf::TracePacket::kTrackDescriptor);
  w_.varint(pf::TrackDescriptor::kUuid, mark.seq.uuid);
  w_.varint(pf::TrackDescriptor::kParentUuid, processUuid(data.meta.pid));
  auto td = w_.begin(pf::TrackDescriptor::kThread);
  w_.varint(pf::ThreadDescriptor::kPid, data.meta.pid);
  w_.varint(pf::ThreadDescriptor::kTid, t.tid);
  utf8(w_, pf::ThreadDescriptor::kThreadName, t.name.empty() ? "thread " + std::to_string(t.tid) : t.name);
  w_.end(td);
  w_.end(d);
  w_.end(p);
}

uint64_t PerfettoWriter::beginEvent(const TraceData& data, std::size_t thread, const Event& e) {
  Sequence& seq = threads_[thread].seq;
  const uint64_t start = e.start;
  // Where it is left out, the reader takes the previous BEGIN's seq + 1 (seqs are taken as
  // calls begin; BEGINs are in that order but for what came in another pass).
  const bool withSeq = !seq.seqWritten || seq.lastSeq + 1 != e.seq;
  seq.seqWritten = true;
  seq.lastSeq = e.seq;
  const uint32_t hookCount = static_cast<uint32_t>(data.hooks.size());
  const uint32_t stack = stackIdOf(e);
  const bool withStack = stack != 0 && stack < data.stacks.size() && !data.stacks[stack].empty();
  Sequence::EventTemplate* cached = nullptr;
  const uint16_t key = templateKey(data, e);
  if (key != UINT16_MAX) {
    bool matched = false;
    cached = templateSlot(seq, e, key, matched);
    if (matched && cached->withStack == withStack) {
      if (withSeq) needAnnotation(seq, Ann::Seq);
      Writer::Nested p, te;
      if (interned_.size() == 0) {
        // One room check for the lot; the whole body array is copied (a fixed-size copy, inlined).
        char* c = packetAt(w_.open(kPacketHeaderBytes + 2 + sizeof(cached->body)), seq, start, p);
        c = w_.beginAt(c, pf::TracePacket::kTrackEvent, te);
        memcpy(c, cached->body, sizeof(cached->body));
        w_.close(c + cached->size);
      } else {
        p = beginPacket(seq, start);
        flushInterned();
        te = w_.begin(pf::TracePacket::kTrackEvent);
        w_.append(cached->body, cached->size);
      }
      if (withSeq) annotationUint(Ann::Seq, e.seq);
      if (flows_) flowOut(data, thread, e, start);
      w_.end(te);
      w_.end(p);
      return 0;
    }
  }
  uint64_t track = 0;  // 0: the thread's own (the sequence's default)
  if (e.kind == EventKind::NvtxSpan) {
    // A start/end range may overlap anything: a track of its own under the thread.
    track = spanUuid(data.meta.pid, seq.spans++ + (uint64_t{thread} << 16));
    const auto p = beginPacket(seq, start);
    describeTrack(w_, track, seq.uuid, e.domain != 0 ? data.strings.get(e.domain) : std::string_view("nvtx ranges"));
    w_.end(p);
  } else if ((e.kind == EventKind::NvtxRange || e.kind == EventKind::NvtxMark) && e.domain != 0) {
    // Each non-default NVTX domain keeps its own stack: a child track per domain.
    auto it = std::find(seq.domainSlots.begin(), seq.domainSlots.end(), e.domain);
    std::size_t slot = static_cast<std::size_t>(it - seq.domainSlots.begin());
    if (it == seq.domainSlots.end()) {
      slot = std::min<std::size_t>(seq.domainSlots.size(), kMaxDomainSlots - 1);
      if (seq.domainSlots.size() < kMaxDomainSlots) seq.domainSlots.push_back(e.domain);
      const auto p = beginPacket(seq, start);
      describeTrack(w_, seq.uuid + 1 + slot, seq.uuid,
                    slot + 1 < kMaxDomainSlots ? data.strings.get(e.domain) : std::string_view("nvtx domains"));
      w_.end(p);
    }
    track = seq.uuid + 1 + slot;
  }

  // BEGIN (or INSTANT): interned entries first, then the event.
  uint32_t category;
  uint64_t nameIid;
  std::string_view nameText;
  if (e.kind == EventKind::Api) {
    const HookDescriptor& h = data.hooks[e.hook < hookCount ? e.hook : 0];
    category = h.layer == ApiLayer::Runtime ? 1 : 2;
    nameIid = std::size_t{e.hook} + 1;
    nameText = h.displayName;
  } else {
    category = 3;
    // A transient name (StringPool) is written with its event, never interned: it is a one-off.
    nameIid = StringPool::isTransient(e.name) ? 0 : std::size_t{hookCount} + 1 + e.name;
    nameText = data.strings.get(e.name);
  }
  // One of PyTorch's op ranges, taken apart when it was decoded (Event::torch): its name is the
  // op name, its fields are annotations (the sizes list interned once kept: it repeats), and the
  // reader renders the text again (perfetto_reader.cpp, torchText).
  const bool torchParts = e.kind == EventKind::NvtxRange && (e.torch.fields & kTorchParts);
  uint64_t sizesIid = 0, inputOpIdsIid = 0;
  if (torchParts) {
    ++opRanges_;
    if (e.torch.fields & kTorchSeq) needAnnotation(seq, e.torch.fields & kTorchStashed ? Ann::StashedSeq : Ann::OpSeq);
    if (e.torch.fields & kTorchOpId) needAnnotation(seq, Ann::OpId);
    if (e.torch.sizes != 0) {
      needAnnotation(seq, Ann::Sizes);
      if (!StringPool::isTransient(e.torch.sizes)) sizesIid = needString(data, seq, e.torch.sizes, false);
    }
    if (e.torch.inputOpIds != 0) {
      needAnnotation(seq, Ann::InputOpIds);
      if (!StringPool::isTransient(e.torch.inputOpIds)) inputOpIdsIid = needString(data, seq, e.torch.inputOpIds, false);
    }
  }
  needCategory(seq, category);
  if (nameIid != 0) needName(seq, nameIid, nameText);
  if (withSeq) needAnnotation(seq, Ann::Seq);
  if (withStack) needStack(data, seq, stack);
  const HookDescriptor* hook = e.kind == EventKind::Api && e.hook < hookCount ? &data.hooks[e.hook] : nullptr;
  uint32_t categoryName = 0;  // the name nvtxNameCategory gave, as the Chrome trace shows it
  if (hook == nullptr && e.category != 0) {
    auto it = data.categoryNames.find((uint64_t{e.domain} << 32) | e.category);
    if (it != data.categoryNames.end()) categoryName = it->second;
  }
  uint64_t launchIid = 0, domainIid = 0, categoryNameIid = 0, stream = 0, streamIid = 0;
  if (hook != nullptr) {
    if (hook->kind == ApiKind::Launch) {
      if (e.launch.kernelName != 0) {
        needAnnotation(seq, Ann::Launch);
        launchIid = needLaunch(data, seq, e.launch);
      } else {
        stream = e.launch.stream;
      }
    } else if (carriesMemory(hook->kind)) {
      for (Ann a : {Ann::Bytes, Ann::Kind, Ann::Ptr, Ann::Device}) needAnnotation(seq, a);
      stream = e.mem.stream;
    } else {
      needAnnotation(seq, Ann::Handle);
      stream = e.handle.stream;
    }
    if (stream != 0) {
      needAnnotation(seq, Ann::Stream);
      streamIid = needStream(seq, stream);
    }
    if (e.result != 0) needAnnotation(seq, Ann::Result);
    if (e.flags & kEventCaptured) needAnnotation(seq, Ann::Captured);
  } else {
    if (e.domain != 0) {
      needAnnotation(seq, Ann::Domain);
      domainIid = needString(data, seq, e.domain);
    }
    if (e.category != 0) needAnnotation(seq, Ann::Category);
    if (categoryName != 0) {
      needAnnotation(seq, Ann::CategoryName);
      categoryNameIid = needString(data, seq, categoryName);
    }
    if (e.flags & kEventUnclosed) needAnnotation(seq, Ann::Unclosed);
    if (e.flags & kEventEndLost) needAnnotation(seq, Ann::EndLost);
    if (e.flags & kEventTextTruncated) needAnnotation(seq, Ann::Truncated);
    if (e.kind == EventKind::NvtxSpan) needAnnotation(seq, Ann::RangeId);
  }

  const auto p = beginPacket(seq, start);
  flushInterned();
  const auto te = w_.begin(pf::TracePacket::kTrackEvent);
  const std::size_t bodyAt = w_.size();
  w_.varint(pf::TrackEvent::kType, e.kind == EventKind::NvtxMark ? pf::TrackEvent::kTypeInstant : pf::TrackEvent::kTypeSliceBegin);
  if (track != 0) w_.varint(pf::TrackEvent::kTrackUuid, track);
  w_.varint(pf::TrackEvent::kCategoryIids, category);
  if (nameIid != 0) w_.varint(pf::TrackEvent::kNameIid, nameIid);
  else utf8(w_, pf::TrackEvent::kName, nameText);
  if (hook != nullptr) {
    if (hook->kind == ApiKind::Launch) {
      if (launchIid != 0) annotationInterned(Ann::Launch, launchIid);
    } else if (carriesMemory(hook->kind)) {
      annotationUint(Ann::Bytes, e.mem.bytes);
      if (e.mem.copyKind != static_cast<uint8_t>(CopyKind::Unknown)) annotationString(Ann::Kind, copyKindName(e.mem.copyKind));
      if (e.mem.ptr != 0) annotationPointer(Ann::Ptr, e.mem.ptr);
      if (e.mem.device >= 0) annotationInt(Ann::Device, e.mem.device);
    } else if (e.handle.handle != 0) {
      annotationPointer(Ann::Handle, e.handle.handle);
    }
    if (streamIid != 0) annotationInterned(Ann::Stream, streamIid);
    if (e.result != 0) annotationInt(Ann::Result, e.result);
    if (e.flags & kEventCaptured) annotationBool(Ann::Captured);
  } else {
    if (e.domain != 0) annotationInterned(Ann::Domain, domainIid);
    if (e.category != 0) annotationUint(Ann::Category, e.category);
    if (categoryName != 0) annotationInterned(Ann::CategoryName, categoryNameIid);
    if (e.flags & kEventUnclosed) annotationBool(Ann::Unclosed);
    if (e.flags & kEventEndLost) annotationBool(Ann::EndLost);
    if (e.flags & kEventTextTruncated) annotationBool(Ann::Truncated);
    if (e.kind == EventKind::NvtxSpan) annotationUint(Ann::RangeId, e.rangeId);
    if (torchParts) {
      if (e.torch.fields & kTorchSeq) annotationUint(e.torch.fields & kTorchStashed ? Ann::StashedSeq : Ann::OpSeq, e.torch.seq);
      if (e.torch.fields & kTorchOpId) annotationUint(Ann::OpId, e.torch.opId);
      for (const auto& [a, id, iid] : {std::tuple{Ann::Sizes, e.torch.sizes, sizesIid},
                                      std::tuple{Ann::InputOpIds, e.torch.inputOpIds, inputOpIdsIid}}) {
        if (iid != 0) annotationInterned(a, iid);
        else if (id != 0) annotationString(a, data.strings.get(id));
      }
    }
  }
  if (withStack) w_.varint(pf::TrackEvent::kCallstackIid, stack);
  // What a repeat of this call writes as it is: everything but seq and flow.
  const std::size_t bodySize = w_.size() - bodyAt;
  if (cached != nullptr && track == 0 && bodySize <= sizeof(cached->body)) {
    cached->hook = key;
    cached->result = e.result;
    cached->name = e.name;
    cached->flags = e.flags;
    cached->withStack = withStack;
    memcpy(cached->raw, e.raw, sizeof(e.raw));
    cached->size = static_cast<uint8_t>(bodySize);
    memcpy(cached->body, w_.at(bodyAt), bodySize);
  }
  if (withSeq) annotationUint(Ann::Seq, e.seq);
  if (flows_) flowOut(data, thread, e, start);
  w_.end(te);
  w_.end(p);
  return track;
}

void PerfettoWriter::flowOut(const TraceData& data, std::size_t thread, const Event& e, uint64_t start) {
  if (startsFlow(data, e)) w_.fixed64(pf::TrackEvent::kFlowIds, flowCall(data, thread, e, start));
}

uint64_t PerfettoWriter::flowCall(const TraceData& data, std::size_t thread, const Event& e, uint64_t start) {
  const ThreadTrack& t = data.threads[thread];
  FlowCall call{start, e.end, e.seq};
  const auto op = std::lower_bound(t.launchOps.begin(), t.launchOps.end(), e.seq,
                                   [](const ThreadTrack::LaunchOp& o, uint64_t seq) { return o.seq < seq; });
  if (op != t.launchOps.end() && op->seq == e.seq) {
    TorchOp parts;
    if (op->loose) {
      parseTorchRange(data.strings.get(op->name), parts);  // true: noteLaunchOp parsed the same text
    } else {
      parts.name = data.strings.get(op->name);
      if (op->sizes != 0) parts.sizes = data.strings.get(op->sizes);
      parts.opId = op->opId;
      parts.hasOpId = op->hasOpId;
    }
    call.op = opText(parts.name);
    if (!parts.sizes.empty() && call.op != nullptr) call.sizes = opText(parts.sizes);
    call.opId = parts.opId;
    call.hasOpId = parts.hasOpId;
  }
  if (lastFlowCalls_ == nullptr || lastFlowTid_ != t.tid) {
    lastFlowCalls_ = &flowCalls_[t.tid];
    lastFlowTid_ = t.tid;
  }
  lastFlowCalls_->push(call);
  return launchFlowId(data.meta.pid, t.tid, e.seq);
}

void PerfettoWriter::FlowCalls::grow() {
  std::vector<FlowCall> bigger(std::max<std::size_t>(ring_.size() * 2, 16));
  for (std::size_t i = 0; i < count_; ++i) bigger[i] = at(i);
  ring_ = std::move(bigger);
  head_ = 0;
}

const PerfettoWriter::FlowCall* PerfettoWriter::FlowCalls::lastStartingBy(uint64_t ns) const {
  std::size_t lo = 0, hi = count_;  // the first to start after `ns` is in [lo, hi]
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (at(mid).start <= ns) lo = mid + 1;
    else hi = mid;
  }
  return lo == 0 ? nullptr : &at(lo - 1);
}

const PerfettoWriter::OpText* PerfettoWriter::opText(std::string_view text) {
  if (const auto it = opTexts_.find(text); it != opTexts_.end()) return &*it;
  if (opTexts_.size() >= kMaxOpTexts) return nullptr;
  return &*opTexts_.emplace(std::string(text), nextStringIid_++).first;
}

// Every call's END on its thread's track, the most frequent packet: its length is known before
// its body is written (at most 11 + 6 + 4 bytes, one length byte), so it is written at a cursor
// with room for kEndBytes, with no length to patch. `ns` is at or after seq.lastNs.
[[gnu::always_inline]] inline char* PerfettoWriter::putThreadEnd(char* c, Sequence& seq, uint64_t ns) {
  char* p = Writer::putField(c + 2, pf::TracePacket::kTimestamp, ns - seq.lastNs);
  seq.lastNs = ns;
  p = Writer::putField(p, pf::TracePacket::kTrustedPacketSequenceId, seq.id);
  p = Writer::putVarint(p, pf::TracePacket::kTrackEvent << 3 | proto::kLengthDelimited);
  *p++ = 2;  // the type field below
  p = Writer::putField(p, pf::TrackEvent::kType, pf::TrackEvent::kTypeSliceEnd);
  static_assert((pf::Trace::kPacket << 3 | proto::kLengthDelimited) < 0x80);
  c[0] = static_cast<char>(pf::Trace::kPacket << 3 | proto::kLengthDelimited);
  c[1] = static_cast<char>(p - (c + 2));
  return p;
}

[[gnu::always_inline]] inline uint16_t PerfettoWriter::templateKey(const TraceData& data, const Event& e) {
  if (e.kind == EventKind::Api) return e.hook < data.hooks.size() ? e.hook : UINT16_MAX;
  // A one-off (transient) name is written inline and never repeats; a named domain's range goes
  // on a track of its own; a category may be named later (its name is looked up every time); an
  // op range's numbers change every time.
  if (e.kind == EventKind::NvtxRange && e.domain == 0 && e.category == 0 && !StringPool::isTransient(e.name) &&
      e.torch.fields == 0)
    return Sequence::EventTemplate::kRange;
  return UINT16_MAX;
}

[[gnu::always_inline]] inline PerfettoWriter::Sequence::EventTemplate* PerfettoWriter::findTemplate(Sequence& seq,
                                                                                                const Event& e) {
  // An API template is found by hook alone (a call's payload changes its body), a range's by name.
  Sequence::EventTemplate* found = nullptr;
  if (e.kind == EventKind::Api) {
    for (std::size_t i = 0; i < Sequence::kTemplates && found == nullptr; ++i)
      if (seq.templates[i].hook == e.hook) found = &seq.templates[i];
  } else {
    for (std::size_t i = Sequence::kTemplates; i < Sequence::kTemplates + Sequence::kRangeTemplates; ++i)
      if (seq.templates[i].hook == Sequence::EventTemplate::kRange && seq.templates[i].name == e.name)
        found = &seq.templates[i];
  }
  return found;
}

[[gnu::always_inline]] inline bool PerfettoWriter::Sequence::EventTemplate::matches(const Event& e) const {
  // Word by word, not memcmp: where the compiler calls the library's it costs twice as much.
  static_assert(sizeof(raw) == 4 * sizeof(uint64_t));
  uint64_t a[4], b[4];
  memcpy(a, raw, sizeof(a));
  memcpy(b, e.raw, sizeof(b));
  return result == e.result && flags == e.flags && ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0;
}

[[gnu::always_inline]] inline PerfettoWriter::Sequence::EventTemplate* PerfettoWriter::templateSlot(
    Sequence& seq, const Event& e, uint16_t key, bool& matched) {
  if (!seq.templates)
    seq.templates = std::make_unique<Sequence::EventTemplate[]>(Sequence::kTemplates + Sequence::kRangeTemplates);
  Sequence::EventTemplate* slot = findTemplate(seq, e);
  matched = slot != nullptr && slot->matches(e);
  if (slot != nullptr) return slot;
  if (key == Sequence::EventTemplate::kRange) {
    slot = &seq.templates[Sequence::kTemplates + seq.nextRangeTemplate];
    seq.nextRangeTemplate = (seq.nextRangeTemplate + 1) % Sequence::kRangeTemplates;
  } else {
    slot = &seq.templates[seq.nextTemplate];
    seq.nextTemplate = (seq.nextTemplate + 1) % Sequence::kTemplates;
  }
  slot->hook = UINT16_MAX;  // refilled by beginEvent
  return slot;
}

// Inlined into encodeThreadEvents: most events of a loop take it.
[[gnu::always_inline]] inline bool PerfettoWriter::fromTemplate(const TraceData& data, std::size_t thread, Sequence& seq,
                                                                  const Event& e, bool leaf) {
  // What beginEvent() would write as it is, from the template, with no seq (the previous BEGIN's
  // + 1), its flow where it has one, no interned entry pending, on the thread's track with a
  // later timestamp.
  if (interned_.size() != 0 || !seq.templates || !seq.seqWritten || seq.lastSeq + 1 != e.seq ||
      e.start < seq.lastNs || e.end < e.start || seq.id == kProcessSequence)
    return false;
  const Sequence::EventTemplate* cached =
      e.kind == EventKind::Api || templateKey(data, e) == Sequence::EventTemplate::kRange ? findTemplate(seq, e) : nullptr;
  if (cached == nullptr || !cached->matches(e)) return false;
  const uint32_t stack = stackIdOf(e);
  const bool withStack = stack != 0 && stack < data.stacks.size() && !data.stacks[stack].empty();
  if (cached->withStack != withStack) return false;
  const uint64_t dt = e.start - seq.lastNs;
  const bool flow = flows_ && startsFlow(data, e);
  constexpr std::size_t kFlowBytes = proto::varintSize(pf::TrackEvent::kFlowIds << 3) + 8;
  const std::size_t event = cached->size + (flow ? kFlowBytes : 0);
  // The BEGIN packet's body: timestamp, sequence id, the TrackEvent (tag, one length byte, body).
  const std::size_t body = 1 + proto::varintSize(dt) + 1 + proto::varintSize(seq.id) + 2 + event;
  if (body >= 0x80 || event >= 0x80) return false;
  // Room for a whole 32-byte copy of a short body (most are): a fixed-size copy is a few moves.
  char* c = w_.open(2 + body + 32 + (leaf ? kEndBytes : 0));  // (body counts the flow)
  c[0] = static_cast<char>(pf::Trace::kPacket << 3 | proto::kLengthDelimited);
  c[1] = static_cast<char>(body);
  char* p = Writer::putField(c + 2, pf::TracePacket::kTimestamp, dt);
  p = Writer::putField(p, pf::TracePacket::kTrustedPacketSequenceId, seq.id);
  static_assert((pf::TracePacket::kTrackEvent << 3 | proto::kLengthDelimited) < 0x80);
  *p++ = static_cast<char>(pf::TracePacket::kTrackEvent << 3 | proto::kLengthDelimited);
  *p++ = static_cast<char>(event);
  if (cached->size <= 32) memcpy(p, cached->body, 32);
  else memcpy(p, cached->body, cached->size);
  p += cached->size;
  if (flow) p = Writer::putFixed64(p, pf::TrackEvent::kFlowIds, flowCall(data, thread, e, e.start));
  seq.lastNs = e.start;
  seq.lastSeq = e.seq;
  w_.close(leaf ? putThreadEnd(p, seq, e.end) : p);
  return true;
}

[[gnu::always_inline]] inline void PerfettoWriter::writeLeaf(const TraceData& data, std::size_t thread, Sequence& seq,
                                                             const Event& e) {
  if (!fromTemplate(data, thread, seq, e, true)) endOf(seq, e, beginEvent(data, thread, e));
}

[[gnu::always_inline]] inline uint64_t PerfettoWriter::writeBegin(const TraceData& data, std::size_t thread,
                                                                  Sequence& seq, const Event& e) {
  return fromTemplate(data, thread, seq, e, false) ? 0 : beginEvent(data, thread, e);
}

void PerfettoWriter::endEvent(Sequence& seq, uint64_t ns, uint64_t track) {
  if (track == 0 && seq.id != kProcessSequence && ns >= seq.lastNs) {
    w_.close(putThreadEnd(w_.open(kEndBytes), seq, ns));
    return;
  }
  Writer::Nested p, te;
  char* c = packetAt(w_.open(kPacketHeaderBytes + 16), seq, ns, p);
  c = w_.beginAt(c, pf::TracePacket::kTrackEvent, te);
  c = Writer::putField(c, pf::TrackEvent::kType, pf::TrackEvent::kTypeSliceEnd);
  if (track != 0) c = Writer::putField(c, pf::TrackEvent::kTrackUuid, track);
  w_.close(c);
  w_.end(te);
  w_.end(p);
}

void PerfettoWriter::endBegun(Sequence& seq, const Event& e, uint64_t track) {
  constexpr uint8_t kEndFlags = kEventUnclosed | kEventEndLost;
  if (!(e.flags & kEndFlags)) return endEvent(seq, e.end, track);
  // Its BEGIN was written before these were known: they go on the END, whose annotations
  // trace_processor (and our reader) add to the slice's.
  if (e.flags & kEventUnclosed) needAnnotation(seq, Ann::Unclosed);
  if (e.flags & kEventEndLost) needAnnotation(seq, Ann::EndLost);
  const auto p = beginPacket(seq, e.end);
  flushInterned();
  const auto te = w_.begin(pf::TracePacket::kTrackEvent);
  w_.varint(pf::TrackEvent::kType, pf::TrackEvent::kTypeSliceEnd);
  if (track != 0) w_.varint(pf::TrackEvent::kTrackUuid, track);
  if (e.flags & kEventUnclosed) annotationBool(Ann::Unclosed);
  if (e.flags & kEventEndLost) annotationBool(Ann::EndLost);
  w_.end(te);
  w_.end(p);
}

void PerfettoWriter::takeBegun(ThreadMark& mark, Node& n) {
  auto& begun = mark.begun;
  const auto at = std::lower_bound(begun.begin(), begun.end(), n.event->seq,
                                   [](const ThreadMark::Begun& b, uint64_t seq) { return b.seq < seq; });
  if (at == begun.end() || at->seq != n.event->seq) return;
  n.track = kBegunBit | at->track;
  // Ranges begun inside it whose events never came stay: no longer listed, they are owed their
  // ENDs below (encodeThreadEvents), before this one's.
  begun.erase(at);
}

// Whether the events of `events` from `base` on, nested as encodeThreadEvents nests them (an event
// wraps the latest unwrapped ones that began at or after it), make roots that wrap nothing or
// only the event recorded just before them, which wraps nothing: a loop's calls, ranges with
// nothing recorded inside them, runtime calls each with the driver call it made.
static bool shallowForest(const BlockList<Event>& events, std::size_t base) {
  uint64_t rootStart = 0, previousRootStart = 0;  // the last two roots' starts
  bool roots = false, twoRoots = false, lastIsLeaf = false;
  for (std::size_t i = base; i < events.size();) {
    const auto run = events.run(i);
    for (std::size_t k = 0; k < run.count; ++k, ++i) {
      const uint64_t start = run.at[k].start;
      if (!roots || rootStart < start) {  // wraps nothing: a root of its own
        twoRoots = roots;
        previousRootStart = rootStart;
        lastIsLeaf = true;
      } else if (!lastIsLeaf || (twoRoots && previousRootStart >= start)) {
        return false;  // it would wrap a parent, or more than one root
      } else {
        lastIsLeaf = false;  // wraps the last root alone, which nested nothing
      }
      rootStart = start;
      roots = true;
    }
  }
  return true;
}

void PerfettoWriter::encodeThreadEvents(const TraceData& data, std::size_t thread) {
  ThreadMark& mark = threads_[thread];
  const ThreadTrack& track = data.threads[thread];
  const auto& events = track.events;
  const std::size_t base = mark.events > track.released ? static_cast<std::size_t>(mark.events - track.released) : 0;
  // A loop's pass, with nothing open and nothing written ahead (ThreadMark::begun), whose forest
  // below would be roots that nest nothing or a single event that nests nothing (a runtime call
  // and its driver call): written in one go, without building it (most of what a plain call
  // costs the drain was the forest). An event's parent, if any, is the next one recorded.
  if (mark.begun.empty() && track.openRanges.empty() && shallowForest(events, base)) {
    Sequence& seq = mark.seq;
    // Each event waits for the next one, which may be its parent (began no later than it).
    const Event* waiting = nullptr;
    for (std::size_t i = base; i < events.size();) {
      const auto run = events.run(i);
      for (std::size_t k = 0; k < run.count; ++k, ++i) {
        const Event& e = run.at[k];
        noteMemoryChange(data, e);
        if (waiting == nullptr) {
          waiting = &e;
        } else if (e.start <= waiting->start) {
          const uint64_t where = writeBegin(data, thread, seq, e);
          writeLeaf(data, thread, seq, *waiting);
          endOf(seq, e, where);
          waiting = nullptr;
        } else {
          writeLeaf(data, thread, seq, *waiting);
          waiting = &e;
        }
      }
    }
    if (waiting != nullptr) writeLeaf(data, thread, seq, *waiting);
    mark.events = track.released + events.size();
    return;
  }
  nodes_.clear();
  roots_.clear();
  for (std::size_t i = base; i < events.size();) {
    const auto run = events.run(i);
    for (std::size_t k = 0; k < run.count; ++k, ++i) {
      // Wraps the latest unwrapped events that began at or after it: they ended first, so they
      // are its children (or overlap it; the reader pairs by position, never by time).
      const Event& e = run.at[k];
      const uint64_t start = e.start;
      noteMemoryChange(data, e);
      const auto self = static_cast<uint32_t>(i - base);
      std::size_t keep = roots_.size();
      uint32_t height = 0;
      while (keep > 0) {
        const Node& r = nodes_[roots_[keep - 1]];
        if (r.start < start || std::max(height, r.height) + 1 > kMaxNesting) break;
        height = std::max(height, r.height);
        --keep;
      }
      const uint32_t first = keep < roots_.size() ? nodes_[roots_[keep]].first : self;
      roots_.resize(keep);
      roots_.push_back(self);
      nodes_.push_back(Node{&e, start, 0, first, height + 1});
      // A range ending that was written ahead: at most one a pass for most threads (a step).
      if (__builtin_expect(!mark.begun.empty(), 0) && (e.kind == EventKind::NvtxRange || e.kind == EventKind::NvtxSpan) &&
          e.seq <= mark.begun.back().seq)
        takeBegun(mark, nodes_.back());
    }
  }
  mark.events = track.released + events.size();
  // Ranges open now (ThreadTrack::openRanges, by seq): those written ahead before stay (one no
  // longer listed lost its event: its END is owed); the others, up to kMaxBegun in all, get
  // their BEGINs in this pass, among the roots by start (what began at or after a range's start
  // is inside it, as an event wraps what began inside it).
  const std::vector<Event>& open = track.openRanges;
  {
    auto& begun = mark.begun;
    std::size_t b = 0, kept = 0;
    toBegin_.clear();
    for (uint32_t i = 0; i < open.size(); ++i) {
      for (; b < begun.size() && begun[b].seq < open[i].seq; ++b) staleEnds_.push_back(begun[b].track);
      if (b < begun.size() && begun[b].seq == open[i].seq) begun[kept++] = begun[b++];
      else if (kept + toBegin_.size() < kMaxBegun) toBegin_.push_back(i);
    }
    for (; b < begun.size(); ++b) staleEnds_.push_back(begun[b].track);
    begun.resize(kept);
  }
  std::size_t nextBegin = 0;
  // Depth first: BEGIN, the children, END (instants have no END). A node without children (most
  // calls) ends at once, while its event is at hand.
  Sequence& seq = mark.seq;
  // An event that nested nothing: BEGIN and END; leafWritten() where no template wrote it. (This is
  // writeLeaf() with its fallback kept out of line: with writeLeaf() at both sites below, a plain
  // call cost the drain 16 more instructions, the loop path above 35 more a launch.)
  const auto leafWritten = [&](const Node& n) {
    if (n.track & kBegunBit) endBegun(seq, *n.event, n.track & ~kBegunBit);
    else endOf(seq, *n.event, beginEvent(data, thread, *n.event));
  };
  const auto leaf = [&](const Node& n) {
    if (__builtin_expect(n.track & kBegunBit, 0) || !fromTemplate(data, thread, seq, *n.event, true)) leafWritten(n);
  };
  // The BEGIN of one that nests others; returns where it went (Node::track).
  const auto begin = [&](const Node& n) {
    if (__builtin_expect(n.track & kBegunBit, 0)) return n.track;
    return writeBegin(data, thread, seq, *n.event);
  };
  const auto beginOpen = [&] {
    const Event& e = open[toBegin_[nextBegin++]];
    const uint64_t where = beginEvent(data, thread, e);
    auto& begun = mark.begun;
    begun.insert(std::upper_bound(begun.begin(), begun.end(), e.seq,
                                  [](uint64_t seq, const ThreadMark::Begun& b) { return seq < b.seq; }),
                 ThreadMark::Begun{e.seq, where});
  };
  for (const uint64_t where : staleEnds_) endEvent(seq, seq.lastNs, where);
  staleEnds_.clear();
  for (uint32_t root : roots_) {
    while (nextBegin < toBegin_.size() && open[toBegin_[nextBegin]].start <= nodes_[root].start) beginOpen();
    const uint32_t first = nodes_[root].first;
    if (first == root) {  // a call that nested nothing (most of them): leaf(), inlined here
      const Node& n = nodes_[root];
      if (__builtin_expect(n.track & kBegunBit, 0) || !fromTemplate(data, thread, seq, *n.event, true)) leafWritten(n);
      continue;
    }
    if (first + 1 == root) {  // one child, which nested nothing: a runtime call and the driver call it made
      const uint64_t track = begin(nodes_[root]);
      leaf(nodes_[first]);
      endOf(seq, *nodes_[root].event, track);
      continue;
    }
    walk_.assign(1, {root, false});
    while (!walk_.empty()) {
      auto& [index, begun] = walk_.back();
      const uint32_t at = index;
      const Event& e = *nodes_[at].event;
      if (begun) {
        endOf(seq, e, nodes_[at].track);
        walk_.pop_back();
        continue;
      }
      begun = true;
      const uint32_t first = nodes_[at].first;
      if (first == at) {
        leaf(nodes_[at]);
        walk_.pop_back();
        continue;
      }
      nodes_[at].track = begin(nodes_[at]);
      // Its children, last first: the first child is popped first.
      for (uint32_t c = at - 1;; c = nodes_[c].first - 1) {
        walk_.emplace_back(c, false);
        if (nodes_[c].first == first) break;
      }
    }
  }
  while (nextBegin < toBegin_.size()) beginOpen();
}

void PerfettoWriter::encodeMemoryCounters(const TraceData& data) {
  // Stable: changes at the same time keep the order of threads, then of recording.
  std::stable_sort(memoryChanges_.begin(), memoryChanges_.end(),
                   [](const MemoryChange& a, const MemoryChange& b) { return a.ns < b.ns; });
  for (const MemoryChange& c : memoryChanges_) {
    const bool fresh = c.alloc && !memory_.seen(c.device);  // a device's first change allocates
    int8_t device = 0;
    uint64_t total = 0;
    if (!memory_.apply(c, device, total)) continue;
    const uint64_t ns = c.ns;
    const uint64_t track = memoryCounterUuid(data.meta.pid, device);
    if (fresh) {
      auto p = beginPacket(process_, ns);
      auto d = w_.begin(pf::TracePacket::kTrackDescriptor);
      w_.varint(pf::TrackDescriptor::kUuid, track);
      w_.varint(pf::TrackDescriptor::kParentUuid, process_.uuid);
      w_.bytes(pf::TrackDescriptor::kName, memoryCounterName(device));
      auto cd = w_.begin(pf::TrackDescriptor::kCounter);
      w_.varint(pf::CounterDescriptor::kUnit, pf::CounterDescriptor::kUnitSizeBytes);
      w_.end(cd);
      w_.end(d);
      w_.end(p);
    }
    auto p = beginPacket(process_, ns);
    auto te = w_.begin(pf::TracePacket::kTrackEvent);
    w_.varint(pf::TrackEvent::kType, pf::TrackEvent::kTypeCounter);
    w_.varint(pf::TrackEvent::kTrackUuid, track);
    w_.int64(pf::TrackEvent::kCounterValue, static_cast<int64_t>(total));
    w_.end(te);
    w_.end(p);
  }
  memoryChanges_.clear();
}

void PerfettoWriter::encodePass(const TraceData& data, uint64_t nowNs, bool passEnd) {
  if (!processStarted_) startProcess(data);
  flows_ = data.cupti.state == "on";
  if (threads_.size() < data.threads.size()) threads_.resize(data.threads.size());
  if (memoryHooks_.size() != data.hooks.size()) {
    memoryHooks_.resize(data.hooks.size());
    for (std::size_t h = 0; h < data.hooks.size(); ++h) memoryHooks_[h] = changesMemory(data.hooks[h]);
  }
  // Threads that ended and left their slot since the last pass: nothing more is written on
  // their sequences, which say so (incremental state cleared, nothing set) so that readers can
  // let go of what they keep for each (interned entries: a process may have had a million
  // threads). One that wrote nothing never had its sequence started.
  for (; exitedSeen_ < data.exitedThreads.size(); ++exitedSeen_) {
    const ExitedThread& x = data.exitedThreads[exitedSeen_];
    if (x.events == 0 && x.dropped == 0) continue;
    const auto p = w_.begin(pf::Trace::kPacket);
    w_.varint(pf::TracePacket::kTrustedPacketSequenceId, threadSequence(x.ordinal));
    w_.varint(pf::TracePacket::kSequenceFlags, pf::TracePacket::kSeqIncrementalStateCleared);
    w_.end(p);
  }
  data.forEachChanged([&](std::size_t i) {
    const ThreadTrack& t = data.threads[i];
    ThreadMark& mark = data.slotState(threads_, i);  // a slot another thread left: a new sequence
    if (mark.events == t.released + t.events.size() && mark.dropped == t.dropped && (!mark.seq.started || mark.name == t.name) &&
        mark.begun.size() == std::min(t.openRanges.size(), kMaxBegun))
      return;
    if (!mark.seq.started) {
      const std::size_t next = mark.events > t.released ? static_cast<std::size_t>(mark.events - t.released) : 0;
      uint64_t first = t.events.size() > next ? t.events[next].start : nowNs;
      if (!t.openRanges.empty()) first = std::min(first, t.openRanges.front().start);
      startThread(data, i, first);
    } else if (mark.name != t.name) {
      describeThread(data, i);
    }
    encodeThreadEvents(data, i);
    if (mark.dropped != t.dropped) {
      // Ring drops happen before encoding: a counter with the running total gives each loss a
      // time (previous_packet_dropped would make readers distrust the interned state).
      Sequence& seq = mark.seq;
      const uint64_t counter = seq.uuid + kDropCounterSlot;
      auto p = beginPacket(seq, nowNs);
      if (mark.dropped == 0) {
        auto d = w_.begin(pf::TracePacket::kTrackDescriptor);
        w_.varint(pf::TrackDescriptor::kUuid, counter);
        w_.varint(pf::TrackDescriptor::kParentUuid, seq.uuid);
        w_.bytes(pf::TrackDescriptor::kName, "dropped events");
        auto cd = w_.begin(pf::TrackDescriptor::kCounter);
        w_.varint(pf::CounterDescriptor::kUnit, pf::CounterDescriptor::kUnitCount);
        w_.end(cd);
        w_.end(d);
        w_.end(p);
        p = beginPacket(seq, nowNs);
      }
      auto te = w_.begin(pf::TracePacket::kTrackEvent);
      w_.varint(pf::TrackEvent::kType, pf::TrackEvent::kTypeCounter);
      w_.varint(pf::TrackEvent::kTrackUuid, counter);
      w_.int64(pf::TrackEvent::kCounterValue, static_cast<int64_t>(t.dropped));
      w_.end(te);
      w_.end(p);
      mark.dropped = t.dropped;
    }
    // A thread that exited repeats nothing more (ThreadTrack::exited): its templates go (1 KB a
    // thread: 30 MB for a program of 30,000 short threads).
    if (t.exited) mark.seq.templates.reset();
  });
  if (!passEnd) return;
  encodeMemoryCounters(data);
  encodeDevice(data, nowNs, false);
  if (!flowCalls_.empty() && nowNs >= flowPrunedNs_ + 1000000000) {
    flowPrunedNs_ = nowNs;
    lastFlowCalls_ = nullptr;
    for (auto it = flowCalls_.begin(); it != flowCalls_.end();) {
      if (it->second.empty() || it->second.back().end + kFlowCallAgeNs < nowNs) it = flowCalls_.erase(it);
      else ++it;
    }
  }
}

void PerfettoWriter::encodeDevice(const TraceData& data, uint64_t anchorNs, bool last) {
  // The CUDA calls CUPTI reported (thread, interval, correlation id), kept until the device work
  // they caused arrives, which may be passes later: the most recent kMaxApiRecords.
  for (; apiSeen_ < data.apiActivity.size(); ++apiSeen_) {
    const ApiActivity& a = data.apiActivity[apiSeen_];
    if (api_.insert_or_assign(a.correlation, a).second) apiOrder_.push_back(a.correlation);
    if (apiOrder_.size() > kMaxApiRecords) {
      api_.erase(apiOrder_.front());
      apiOrder_.pop_front();
    }
  }
  if (devicesEncoded_ >= data.device.size() && heldDevice_.empty()) return;
  // CUPTI names a thread by its OS tid, or by pthread_self() when a program's own profiler set
  // it so: written as the OS tid the thread's track carries.
  std::unordered_map<uint32_t, uint32_t> osTid;
  auto learn = [&](uint32_t tid, uint32_t pthreadLow) {
    osTid.emplace(tid, tid);
    if (pthreadLow != 0) osTid.emplace(pthreadLow, tid);
  };
  for (const ThreadTrack& t : data.threads)
    if (!t.vacant()) learn(t.tid, t.pthreadLow);
  for (const ExitedThread& t : data.exitedThreads) learn(t.tid, t.pthreadLow);  // a launch's record may come after the exit
  // Its CUDA call as CUPTI reported it, and the tagged call that overlaps CUPTI's interval: the
  // last to start before it ends (calls on one thread do not overlap; those nested in another
  // are not tagged).
  struct Link {
    const ApiActivity* api = nullptr;
    uint32_t hostTid = 0;
    const FlowCall* call = nullptr;
  };
  const auto linkOf = [&](const DeviceEvent& d) {
    Link l;
    const auto a = api_.find(d.correlation);
    if (a == api_.end()) return l;
    l.api = &a->second;
    const auto tid = osTid.find(l.api->tid);
    l.hostTid = tid != osTid.end() ? tid->second : l.api->tid;
    if (auto calls = flowCalls_.find(l.hostTid); calls != flowCalls_.end()) {
      const FlowCall* c = calls->second.lastStartingBy(l.api->end);
      if (c != nullptr && c->end >= l.api->start) l.call = c;
    }
    return l;
  };
  // Device work whose call is not written yet may be held one pass (not at the end): CUPTI can
  // deliver a kernel in the pass whose anchor its launch ended after (the launch's record then
  // waits for the next pass), or before its call's own record.
  // Each event's link is found once (nothing below changes the calls it points into).
  std::vector<DeviceEvent> held;
  held.swap(heldDevice_);
  std::vector<std::pair<const DeviceEvent*, Link>> order;
  for (const DeviceEvent& d : held) order.emplace_back(&d, linkOf(d));
  for (std::size_t i = devicesEncoded_; i < data.device.size(); ++i) {
    const DeviceEvent& d = data.device[i];
    const Link l = linkOf(d);
    if (!last && flows_ && l.call == nullptr && (l.api == nullptr || l.api->end + kDeviceHoldNs > anchorNs)) {
      heldDevice_.push_back(d);
      continue;
    }
    order.emplace_back(&d, l);
  }
  // Under a capture mode CUPTI records from the first CUDA call on: device work whose call
  // CUPTI reported but cutrace did not record (made outside the capture) is left out.
  if (flows_ && data.meta.capture != "all") {
    const auto outside = [](const auto& o) { return o.second.api != nullptr && o.second.call == nullptr; };
    const auto kept = std::remove_if(order.begin(), order.end(), outside);
    outsideCapture_ += static_cast<uint64_t>(order.end() - kept);
    order.erase(kept, order.end());
  }
  devicesEncoded_ = data.device.size();
  // In time order per device, its streams together: a reader's GPU busy time (the union of a
  // device's work) then takes each piece in order (tools/report_model.cpp, BusyTime).
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    const DeviceEvent& x = *a.first;
    const DeviceEvent& y = *b.first;
    if (x.device != y.device) return x.device < y.device;
    if (x.start != y.start) return x.start < y.start;
    return x.stream < y.stream;
  });
  const uint32_t hookCount = static_cast<uint32_t>(data.hooks.size());
  for (const auto& [event, link] : order) {
    const DeviceEvent& d = *event;
    const uint64_t track = deviceUuid(data.meta.pid, d.device, d.stream);
    if (deviceTracks_.insert(track).second) {
      const auto p = beginPacket(process_, d.start);
      describeTrack(w_, track, process_.uuid, "GPU " + std::to_string(d.device) + " stream " + std::to_string(d.stream));
      w_.end(p);
    }
    const uint32_t category = d.kind == DeviceKind::Kernel ? 4 : d.kind == DeviceKind::Memcpy ? 5 : 6;
    needCategory(process_, category);
    for (Ann a : {Ann::Correlation, Ann::Grid, Ann::Block, Ann::Registers, Ann::SharedStatic, Ann::SharedDynamic, Ann::Bytes,
                  Ann::HostTid, Ann::HostStart, Ann::HostEnd})
      needAnnotation(process_, a);
    const bool named = d.kind == DeviceKind::Kernel && d.name != 0;
    if (named) needName(process_, std::size_t{hookCount} + 1 + d.name, demangle_(data, d.name));
    const auto [api, hostTid, call] = link;
    if (call != nullptr && call->op != nullptr) {
      for (Ann a : {Ann::Op, Ann::Sizes, Ann::OpId}) needAnnotation(process_, a);
      for (const OpText* text : {call->op, call->sizes})
        if (text != nullptr) needText(process_, text->second, text->first);
    }
    auto p = beginPacket(process_, d.start);
    flushInterned();
    auto te = w_.begin(pf::TracePacket::kTrackEvent);
    w_.varint(pf::TrackEvent::kType, pf::TrackEvent::kTypeSliceBegin);
    w_.varint(pf::TrackEvent::kTrackUuid, track);
    w_.varint(pf::TrackEvent::kCategoryIids, category);
    if (named) w_.varint(pf::TrackEvent::kNameIid, std::size_t{hookCount} + 1 + d.name);
    else w_.bytes(pf::TrackEvent::kName, d.kind == DeviceKind::Kernel ? std::string("kernel")
                                         : d.kind == DeviceKind::Memcpy ? std::string("Memcpy ") + cuptiCopyKind(d.copyKind)
                                                                        : std::string("Memset"));
    annotationUint(Ann::Correlation, d.correlation);
    if (d.kind == DeviceKind::Kernel) {
      annotationString(Ann::Grid, dims(static_cast<uint32_t>(d.grid[0]), static_cast<uint32_t>(d.grid[1]), static_cast<uint32_t>(d.grid[2])));
      annotationString(Ann::Block, dims(static_cast<uint32_t>(d.block[0]), static_cast<uint32_t>(d.block[1]), static_cast<uint32_t>(d.block[2])));
      annotationUint(Ann::Registers, d.registers);
      annotationInt(Ann::SharedStatic, d.staticShared);
      annotationInt(Ann::SharedDynamic, d.dynamicShared);
    } else {
      annotationUint(Ann::Bytes, d.bytes);
    }
    if (api != nullptr) {
      annotationUint(Ann::HostTid, hostTid);
      annotationUint(Ann::HostStart, api->start);
      annotationUint(Ann::HostEnd, api->end);
    }
    if (call != nullptr) {
      if (call->op != nullptr) {
        annotationInterned(Ann::Op, call->op->second);
        if (call->sizes != nullptr) annotationInterned(Ann::Sizes, call->sizes->second);
        if (call->hasOpId) annotationUint(Ann::OpId, call->opId);
      }
      w_.fixed64(pf::TrackEvent::kFlowIds, launchFlowId(data.meta.pid, hostTid, call->seq));
      ++linkedDevice_;
    }
    w_.end(te);
    w_.end(p);
    p = beginPacket(process_, d.end);
    te = w_.begin(pf::TracePacket::kTrackEvent);
    w_.varint(pf::TrackEvent::kType, pf::TrackEvent::kTypeSliceEnd);
    w_.varint(pf::TrackEvent::kTrackUuid, track);
    w_.end(te);
    w_.end(p);
  }
}

void PerfettoWriter::encodeEnd(const TraceData& data, uint64_t nowNs, std::string_view metadataJson) {
  encodePass(data, nowNs);
  // Threads that recorded nothing still have a name and a line in the metadata: describe them.
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    if (!threads_[i].seq.started) startThread(data, i, nowNs);
  }
  encodeDevice(data, nowNs, true);
  auto p = w_.begin(pf::Trace::kPacket);
  w_.varint(pf::TracePacket::kTrustedPacketSequenceId, kProcessSequence);
  auto ce = w_.begin(pf::TracePacket::kChromeEvents);
  auto md = w_.begin(pf::ChromeEventBundle::kMetadata);
  w_.bytes(pf::ChromeMetadata::kName, "cutrace");
  w_.bytes(pf::ChromeMetadata::kJsonValue, metadataJson);
  w_.end(md);
  w_.end(ce);
  w_.end(p);
}

bool StreamFile::create(const std::string& dir, const std::string& stem, std::string& error) {
  if (!makeDirectories(dir, error)) return false;
  for (int attempt = 0; attempt < kStemAttempts; ++attempt) {
    const std::string candidate = numberedStem(stem, attempt);
    if (file_.create(dir, candidate + ".pftrace")) {
      stem_ = candidate;
      return true;
    }
    if (errno != EEXIST && errno != ELOOP) break;
  }
  error = "cannot create a .pftrace in " + dir + ": " + strerror(errno);
  return false;
}

bool StreamFile::append(std::string_view bytes) {
  if (!isOpen()) return false;
  return bytes.empty() || file_.append(bytes.data(), bytes.size()) == WriteStatus::Ok;
}

void StreamFile::forget() {
  file_.forget();
  stem_.clear();
}

}  // namespace cutrace
