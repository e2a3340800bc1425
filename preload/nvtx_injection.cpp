// NVTX v3 is header-only: every library carrying NVTX calls InitializeInjectionNvtx2 from the
// library named by NVTX_INJECTION64_PATH (libtrace.so itself, see preload_main.cpp) and lets
// the tool fill its function tables. This file is that tool side: push/pop, start/end, marks,
// domains, registered strings, and category and thread names.
//
// Messages are copied into the thread's ring at call time (the caller's buffer is gone after
// the call). Push/pop pairing happens in the drain; here each push and pop carries its level
// within (thread, domain) so a dropped record cannot mis-pair the ranges around it. NVTX calls
// may come from signal handlers (RecordSection in collector/collector.h says how they are kept
// apart from the call they interrupt).

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <atomic>
#include <cstring>
#include <cwchar>
#include <string_view>

#include "collector/capture.h"
#include "preload/hook_support.h"

namespace cutrace {
namespace {

// Domain handles point into this fixed table (no allocation inside NVTX calls). Index 0 is
// the default domain; nvtxDomainCreate with a name already created returns the same handle.
// The last index is shared by every domain created once the others are taken: their ranges
// keep one stack of their own, apart from the default domain's, under kOverflowDomainName.
struct Domain {
  std::atomic<uint32_t> nameId{0};
};
Domain domains[kMaxNvtxDomains];
std::atomic<uint32_t> domainCount{1};
constexpr uint32_t kOverflowDomain = kMaxNvtxDomains - 1;
constexpr std::string_view kOverflowDomainName = "(more NVTX domains)";

uint32_t domainIndex(nvtxDomainHandle_t h) {
  if (h == nullptr) return 0;
  const auto* d = reinterpret_cast<const Domain*>(h);
  if (d < domains || d >= domains + kMaxNvtxDomains) return 0;
  return static_cast<uint32_t>(d - domains);
}

uint32_t domainName(uint32_t index) { return domains[index].nameId.load(std::memory_order_acquire); }

// Text of an NVTX message: ASCII is used in place, wide strings are converted to UTF-8 into
// `buf`, registered strings are carried by id.
struct Message {
  Message() {}  // `head` is left as it is: a pop's empty message costs nothing
  const char* text = nullptr;
  std::size_t length = 0;
  uint32_t registered = 0;
  bool truncated = false;
  // A short text's bytes, and whatever follows them in its page (shortText): copied to the
  // ring as a whole.
  bool inHead = false;
  alignas(16) char head[kShortText];
};

std::size_t boundedLength(const char* s, bool& truncated) {
  const std::size_t n = strnlen(s, kMaxTextBytes + 1);
  truncated = n > kMaxTextBytes;
  return truncated ? kMaxTextBytes : n;
}

// A text shorter than kShortText (most labels: "forward", "step 12") is found and copied 16
// bytes at a time: one or two loads, each within the text's page (a load that does not cross a
// page boundary cannot fault, whatever lies past the NUL), where strnlen and memcpy took about
// 60 of a push's 240 instructions. The bytes past the NUL go to the ring but are never read.
// The sanitizers would report the read past the NUL (it is within the page, not the object).
#if defined(__SSE2__)
[[gnu::no_sanitize("address", "thread")]] inline bool shortText(const char* s, Message& m) {
  const auto at = reinterpret_cast<uintptr_t>(s);
  const __m128i zero = _mm_setzero_si128();
  for (std::size_t off = 0; off < kShortText; off += 16) {
    if (((at + off) & 4095) > 4096 - 16) return false;
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + off));
    _mm_store_si128(reinterpret_cast<__m128i*>(m.head + off), v);
    if (const auto nul = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero))); nul != 0) {
      m.length = off + static_cast<std::size_t>(__builtin_ctz(nul));
      m.inHead = true;
      return true;
    }
  }
  return false;
}
#else
inline bool shortText(const char*, Message&) { return false; }
#endif

// Whether a push of `m` repeats the thread's last push in the ring (ThreadState::lastPush*):
// its bytes and its NUL equal, what follows the NUL ignored. A loop's label then takes no text
// block: a third of the ring a range, and of what the drain reads.
[[gnu::always_inline]] inline bool sameAsLastPush(const ThreadState* s, const Message& m) {
#if defined(__SSE2__)
  if (!m.inHead || s->lastPushLength != m.length) return false;
  const auto lane = [&](std::size_t off) {
    const __m128i a = _mm_load_si128(reinterpret_cast<const __m128i*>(m.head + off));
    const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(s->lastPushText + off));
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
  };
  uint32_t equal = lane(0);
  if (m.length >= 16) equal |= lane(16) << 16;
  const uint32_t need = m.length >= 31 ? UINT32_MAX : (uint32_t{2} << m.length) - 1;
  return (equal & need) == need;
#else
  (void)s;
  (void)m;
  return false;
#endif
}

[[gnu::always_inline]] inline Message asciiMessage(const char* s) {
  Message m;
  if (s == nullptr) return m;
  m.text = s;
  if (!shortText(s, m)) m.length = boundedLength(s, m.truncated);
  return m;
}

Message wideMessage(const wchar_t* w, char (&buf)[kMaxTextBytes]) {
  Message m;
  if (w == nullptr) return m;
  std::size_t n = 0;
  for (; *w != L'\0'; ++w) {
    auto c = static_cast<uint32_t>(*w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    char enc[4];
    std::size_t len;
    if (c < 0x80) {
      enc[0] = static_cast<char>(c);
      len = 1;
    } else if (c < 0x800) {
      enc[0] = static_cast<char>(0xC0 | (c >> 6));
      enc[1] = static_cast<char>(0x80 | (c & 0x3F));
      len = 2;
    } else if (c < 0x10000) {
      enc[0] = static_cast<char>(0xE0 | (c >> 12));
      enc[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      enc[2] = static_cast<char>(0x80 | (c & 0x3F));
      len = 3;
    } else {
      enc[0] = static_cast<char>(0xF0 | (c >> 18));
      enc[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      enc[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      enc[3] = static_cast<char>(0x80 | (c & 0x3F));
      len = 4;
    }
    if (n + len > sizeof(buf)) {
      m.truncated = true;
      break;
    }
    memcpy(buf + n, enc, len);
    n += len;
  }
  m.text = buf;
  m.length = n;
  return m;
}

Message attributeMessage(const nvtxEventAttributes_t* a, char (&buf)[kMaxTextBytes]) {
  if (a == nullptr || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return asciiMessage(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return wideMessage(a->message.unicode, buf);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      Message m;
      m.registered = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(a->message.registered));
      return m;
    }
    default: return {};
  }
}

uint32_t attributeCategory(const nvtxEventAttributes_t* a) {
  if (a == nullptr || a->size < offsetof(nvtxEventAttributes_t, category) + sizeof(a->category)) return 0;
  return a->category;
}

[[gnu::always_inline]] inline ThreadState* nvtxThread() {
  if (!hookRecording(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)))) return nullptr;
  return currentThread();
}

// The records that are events of their own, each with a number takeSeq() gave: a pop or an end
// closes its push's or start's event, a category's name is none.
constexpr bool isEvent(RecordType type) {
  return type == RecordType::NvtxPush || type == RecordType::NvtxMark || type == RecordType::NvtxStart;
}

// Inside a RecordSection. Returns false when the ring had no room (the loss is counted).
[[gnu::always_inline]] inline bool appendNvtx(ThreadState* s, RecordType type, uint64_t seq, uint32_t domain, uint32_t category, uint16_t depth,
                uint64_t rangeId, const Message& m) {
  // A push of a level below 32 takes a pop credit while a quarter of the ring is not held so; a
  // pop whose push holds one uses it. A push finding its level's credit still held (the pop of
  // the last push there was not recorded: capture was off) takes that one over.
  const uint32_t bit = depth < 32 ? uint32_t{1} << depth : 0;
  const bool held = (s->nvtxPopCredited[domain] & bit) != 0;
  const bool credit = type == RecordType::NvtxPush && bit != 0 && !held && s->popCredits < s->ring.capacity() / 4;
  const bool credited = type == RecordType::NvtxPop && held;
  const uint32_t keepFree = credit ? s->popCredits + 1 : credited ? s->popCredits - 1 : s->popCredits;
  if (credited) {
    s->nvtxPopCredited[domain] &= ~bit;
    --s->popCredits;
  }
  // Written in place, field by field (the payload whole, its padding zeroed).
  const bool push = type == RecordType::NvtxPush;
  const bool same = push && sameAsLastPush(s, m);
  if (Record* r = m.inHead ? newRecordShort(s, m.head, same ? 0 : m.length, keepFree)
                           : newRecord(s, m.text, m.registered ? 0 : m.length, keepFree)) {
    r->type = type;
    r->hook = 0;
    r->result = 0;
    r->seq = seq;
    r->t0 = r->t1 = Clock::now();
    NvtxPayload p{};
    p.rangeId = rangeId;
    p.domain = domainName(domain);
    p.category = category;
    p.message = m.registered;
    p.depth = depth;
    p.length = static_cast<uint16_t>(m.length);
    p.truncated = m.truncated ? 1 : 0;
    p.insideCall = s->apiDepth != 0 && insideActiveCall(s, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)));
    p.sameText = same ? 1 : 0;
    r->nvtx = p;
    commitRecord(s, r, isEvent(type));
    if (push && !same) {
      // In the ring now, in the order the drain decodes: what the next push compares with.
      s->lastPushLength = m.inHead ? static_cast<uint8_t>(m.length) : ThreadState::kNoLastPush;
      if (m.inHead) memcpy(s->lastPushText, m.head, kShortText);
    }
    if (credit) {
      s->nvtxPopCredited[domain] |= bit;
      ++s->popCredits;
    }
    return true;
  }
  if (isEvent(type)) countDrop(s);
  else if (type == RecordType::NvtxPop || type == RecordType::NvtxEnd) ownerAdd(s->lostEnds, 1);
  return false;
}

// The drain pairs a pop with the open push of its level. When the push of a level is not in
// the ring (dropped: a full ring, or not captured) while an older range of that level lost its
// own pop, recording the pop would close that older range with this pop's time. So the pop of
// a missing push is not recorded: the older range ends, flagged end_lost, where the drain next
// learns its level was left. Levels from 32 on are not tracked (pairing as before).
void notePush(ThreadState* s, uint32_t domain, uint16_t level, bool inRing) {
  if (level >= 32) return;
  if (inRing) s->nvtxPushMissing[domain] &= ~(uint32_t{1} << level);
  else s->nvtxPushMissing[domain] |= uint32_t{1} << level;
}

bool popOfMissingPush(ThreadState* s, uint32_t domain, uint16_t level) {
  if (level >= 32 || !(s->nvtxPushMissing[domain] & (uint32_t{1} << level))) return false;
  s->nvtxPushMissing[domain] &= ~(uint32_t{1} << level);
  return true;
}

// The push/pop level of (thread, domain) changes with one read-modify-write instruction
// (signalAtomicCas): a signal handler's push or pop on the same thread (recorded or dropped, see
// RecordSection) may land between any two instructions of the interrupted one. Each record is stamped, and carries
// its level, inside the section that changed the level, so ring order and levels agree and the
// drain pairs ranges by level correctly.
uint16_t& depthOf(ThreadState* s, uint32_t domain) { return s->nvtxDepth[domain]; }

[[gnu::always_inline]] inline int push(uint32_t domain, uint32_t category, const Message& m) {
  ErrnoKeeper keepErrno;
  ThreadState* s = nvtxThread();
  if (s == nullptr) return 0;
  RecordSection section(s);
  uint16_t depth = __atomic_load_n(&depthOf(s, domain), __ATOMIC_RELAXED);
  while (depth < UINT16_MAX && !signalAtomicCas(depthOf(s, domain), depth, static_cast<uint16_t>(depth + 1))) {
  }
  // Depth is kept while paused, so pops after a capture window starts still pair correctly.
  if (capture::watchesNvtx()) {
    // A registered string's text is in the name table: a range pushed by handle (PyTorch's, a
    // library's per-step label) opens a capture window, or counts as a step, as its text would.
    const std::string_view text = m.registered ? Collector::names().get(m.registered) : std::string_view(m.text, m.length);
    capture::onNvtxPush(text.data(), text.size(), s->tid, depth);
  }
  if (!section.owned()) {
    // A signal handler's push while this thread records another event: it and its pop (in the
    // same handler run) are dropped; pairing state is the interrupted section's alone.
    if (capture::on()) section.dropEvent();
    return depth;
  }
  const bool inRing = capture::on() && appendNvtx(s, RecordType::NvtxPush, takeSeq(s), domain, category, depth, 0, m);
  notePush(s, domain, depth, inRing);
  return depth;
}

[[gnu::always_inline]] inline int pop(uint32_t domain) {
  ErrnoKeeper keepErrno;
  ThreadState* s = nvtxThread();
  if (s == nullptr) return 0;
  RecordSection section(s);
  uint16_t depth = __atomic_load_n(&depthOf(s, domain), __ATOMIC_RELAXED);
  do {
    if (depth == 0) return -1;  // NVTX: a pop without a push is an error
  } while (!signalAtomicCas(depthOf(s, domain), depth, static_cast<uint16_t>(depth - 1)));
  --depth;
  if (!section.owned()) {
    if (capture::on()) section.dropEnd();
  } else if (!popOfMissingPush(s, domain, depth) && capture::on()) {
    appendNvtx(s, RecordType::NvtxPop, 0, domain, 0, depth, 0, Message{});
  }
  if (capture::watchesNvtx()) capture::onNvtxPop(s->tid, depth);
  return depth;
}

void mark(uint32_t domain, uint32_t category, const Message& m) {
  ErrnoKeeper keepErrno;
  if (!capture::on()) return;
  ThreadState* s = nvtxThread();
  if (s == nullptr) return;
  RecordSection section(s);
  if (section.owned()) appendNvtx(s, RecordType::NvtxMark, takeSeq(s), domain, category, 0, 0, m);
  else section.dropEvent();
}

std::atomic<uint64_t> nextRangeId{1};

nvtxRangeId_t start(uint32_t domain, uint32_t category, const Message& m) {
  ErrnoKeeper keepErrno;
  const uint64_t id = nextRangeId.fetch_add(1, std::memory_order_relaxed);
  if (!capture::on()) return id;
  ThreadState* s = nvtxThread();
  if (s == nullptr) return id;
  RecordSection section(s);
  if (section.owned()) appendNvtx(s, RecordType::NvtxStart, takeSeq(s), domain, category, 0, id, m);
  else section.dropEvent();
  return id;
}

void end(nvtxRangeId_t id) {
  ErrnoKeeper keepErrno;
  if (!capture::on()) return;
  ThreadState* s = nvtxThread();
  if (s == nullptr) return;
  RecordSection section(s);
  if (section.owned()) appendNvtx(s, RecordType::NvtxEnd, 0, 0, 0, 0, id, Message{});
  else section.dropEnd();
}

// Names are not events: one a signal handler gives while a section is open is not kept.
void nameCategory(uint32_t domain, uint32_t category, const Message& m) {
  ErrnoKeeper keepErrno;
  ThreadState* s = nvtxThread();
  if (s == nullptr) return;
  RecordSection section(s);
  if (section.owned()) appendNvtx(s, RecordType::CategoryName, 0, domain, category, 0, 0, m);
}

void nameThread(uint32_t tid, const Message& m) {
  ErrnoKeeper keepErrno;
  ThreadState* s = nvtxThread();
  if (s == nullptr) return;
  RecordSection section(s);
  if (!section.owned()) return;
  Record r;
  r.type = RecordType::ThreadName;
  r.hook = 0;
  r.result = 0;
  r.seq = 0;
  r.t0 = r.t1 = Clock::now();
  r.threadName = ThreadNamePayload{};
  r.threadName.tid = tid;
  r.threadName.length = static_cast<uint16_t>(m.length);
  appendRecord(s, r, m.text, m.length);
}

// ---- core module
void markEx(const nvtxEventAttributes_t* a) {
  char buf[kMaxTextBytes];
  mark(0, attributeCategory(a), attributeMessage(a, buf));
}
void markA(const char* s) { mark(0, 0, asciiMessage(s)); }
void markW(const wchar_t* w) {
  char buf[kMaxTextBytes];
  mark(0, 0, wideMessage(w, buf));
}
nvtxRangeId_t rangeStartEx(const nvtxEventAttributes_t* a) {
  char buf[kMaxTextBytes];
  return start(0, attributeCategory(a), attributeMessage(a, buf));
}
nvtxRangeId_t rangeStartA(const char* s) { return start(0, 0, asciiMessage(s)); }
nvtxRangeId_t rangeStartW(const wchar_t* w) {
  char buf[kMaxTextBytes];
  return start(0, 0, wideMessage(w, buf));
}
void rangeEnd(nvtxRangeId_t id) { end(id); }
int rangePushEx(const nvtxEventAttributes_t* a) {
  char buf[kMaxTextBytes];
  return push(0, attributeCategory(a), attributeMessage(a, buf));
}
int rangePushA(const char* s) { return push(0, 0, asciiMessage(s)); }
int rangePushW(const wchar_t* w) {
  char buf[kMaxTextBytes];
  return push(0, 0, wideMessage(w, buf));
}
int rangePop() { return pop(0); }
void nameCategoryA(uint32_t category, const char* name) { nameCategory(0, category, asciiMessage(name)); }
void nameCategoryW(uint32_t category, const wchar_t* name) {
  char buf[kMaxTextBytes];
  nameCategory(0, category, wideMessage(name, buf));
}
void nameOsThreadA(uint32_t tid, const char* name) { nameThread(tid, asciiMessage(name)); }
void nameOsThreadW(uint32_t tid, const wchar_t* name) {
  char buf[kMaxTextBytes];
  nameThread(tid, wideMessage(name, buf));
}

// ---- core2 module (domains)
void domainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  char buf[kMaxTextBytes];
  mark(domainIndex(d), attributeCategory(a), attributeMessage(a, buf));
}
nvtxRangeId_t domainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  char buf[kMaxTextBytes];
  return start(domainIndex(d), attributeCategory(a), attributeMessage(a, buf));
}
void domainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }
int domainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  char buf[kMaxTextBytes];
  return push(domainIndex(d), attributeCategory(a), attributeMessage(a, buf));
}
int domainRangePop(nvtxDomainHandle_t d) { return pop(domainIndex(d)); }
nvtxResourceHandle_t domainResourceCreate(nvtxDomainHandle_t, nvtxResourceAttributes_t*) { return nullptr; }
void domainResourceDestroy(nvtxResourceHandle_t) {}
void domainNameCategoryA(nvtxDomainHandle_t d, uint32_t category, const char* name) {
  nameCategory(domainIndex(d), category, asciiMessage(name));
}
void domainNameCategoryW(nvtxDomainHandle_t d, uint32_t category, const wchar_t* name) {
  char buf[kMaxTextBytes];
  nameCategory(domainIndex(d), category, wideMessage(name, buf));
}

nvtxStringHandle_t registerString(const Message& m) {
  ErrnoKeeper keepErrno;
  if (currentMode() == Mode::Uninitialized) initializePreload();
  if (m.text == nullptr) return nullptr;
  ReentrancyGuard guard;
  const uint32_t id = Collector::names().intern(std::string_view(m.text, m.length));
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id));
}
nvtxStringHandle_t domainRegisterStringA(nvtxDomainHandle_t, const char* s) { return registerString(asciiMessage(s)); }
nvtxStringHandle_t domainRegisterStringW(nvtxDomainHandle_t, const wchar_t* w) {
  char buf[kMaxTextBytes];
  return registerString(wideMessage(w, buf));
}

nvtxDomainHandle_t createDomain(const Message& m) {
  ErrnoKeeper keepErrno;
  if (currentMode() == Mode::Uninitialized) initializePreload();
  if (m.text == nullptr) return nullptr;
  ReentrancyGuard guard;
  const uint32_t nameId = Collector::names().intern(std::string_view(m.text, m.length));
  if (nameId == 0) return nullptr;
  const uint32_t count = domainCount.load(std::memory_order_acquire);
  for (uint32_t i = 1; i < count && i < kOverflowDomain; ++i)
    if (domains[i].nameId.load(std::memory_order_acquire) == nameId) return reinterpret_cast<nvtxDomainHandle_t>(&domains[i]);
  const uint32_t index = count < kOverflowDomain ? domainCount.fetch_add(1, std::memory_order_acq_rel) : kOverflowDomain;
  if (index < kOverflowDomain) {
    domains[index].nameId.store(nameId, std::memory_order_release);
    return reinterpret_cast<nvtxDomainHandle_t>(&domains[index]);
  }
  // Past the table. Not NULL, which the NVTX calls would take for the default domain, pairing
  // this domain's pushes and pops with its ranges.
  Domain& overflow = domains[kOverflowDomain];
  if (overflow.nameId.load(std::memory_order_acquire) == 0) {
    const uint32_t overflowId = Collector::names().intern(kOverflowDomainName);
    if (overflowId == 0) return nullptr;
    overflow.nameId.store(overflowId, std::memory_order_release);
  }
  return reinterpret_cast<nvtxDomainHandle_t>(&overflow);
}
nvtxDomainHandle_t domainCreateA(const char* name) { return createDomain(asciiMessage(name)); }
nvtxDomainHandle_t domainCreateW(const wchar_t* name) {
  char buf[kMaxTextBytes];
  return createDomain(wideMessage(name, buf));
}
void domainDestroy(nvtxDomainHandle_t) {}
void initialize(const void*) {}

template <typename F>
void install(NvtxFunctionTable table, unsigned size, unsigned slot, F fn) {
  if (table != nullptr && slot < size && table[slot] != nullptr) *table[slot] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace cutrace

// Called once per library that carries its own NVTX copy (PyTorch calls it more than once).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable) {
  using namespace cutrace;
  ErrnoKeeper keepErrno;
  if (currentMode() == Mode::Uninitialized) initializePreload();
  if (getExportTable == nullptr || !Collector::config().enabled || !Collector::config().nvtx) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(getExportTable(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;

  NvtxFunctionTable core = nullptr;
  unsigned coreSize = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &coreSize) == 0) return 0;
  install(core, coreSize, NVTX_CBID_CORE_MarkEx, markEx);
  install(core, coreSize, NVTX_CBID_CORE_MarkA, markA);
  install(core, coreSize, NVTX_CBID_CORE_MarkW, markW);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartEx, rangeStartEx);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartA, rangeStartA);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartW, rangeStartW);
  install(core, coreSize, NVTX_CBID_CORE_RangeEnd, rangeEnd);
  install(core, coreSize, NVTX_CBID_CORE_RangePushEx, rangePushEx);
  install(core, coreSize, NVTX_CBID_CORE_RangePushA, rangePushA);
  install(core, coreSize, NVTX_CBID_CORE_RangePushW, rangePushW);
  install(core, coreSize, NVTX_CBID_CORE_RangePop, rangePop);
  install(core, coreSize, NVTX_CBID_CORE_NameCategoryA, nameCategoryA);
  install(core, coreSize, NVTX_CBID_CORE_NameCategoryW, nameCategoryW);
  install(core, coreSize, NVTX_CBID_CORE_NameOsThreadA, nameOsThreadA);
  install(core, coreSize, NVTX_CBID_CORE_NameOsThreadW, nameOsThreadW);

  NvtxFunctionTable core2 = nullptr;
  unsigned core2Size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2Size) != 0) {
    install(core2, core2Size, NVTX_CBID_CORE2_DomainMarkEx, domainMarkEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangeStartEx, domainRangeStartEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangeEnd, domainRangeEnd);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangePushEx, domainRangePushEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangePop, domainRangePop);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainResourceCreate, domainResourceCreate);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainResourceDestroy, domainResourceDestroy);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainNameCategoryA, domainNameCategoryA);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainNameCategoryW, domainNameCategoryW);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRegisterStringA, domainRegisterStringA);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRegisterStringW, domainRegisterStringW);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainCreateA, domainCreateA);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainCreateW, domainCreateW);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainDestroy, domainDestroy);
    install(core2, core2Size, NVTX_CBID_CORE2_Initialize, initialize);
  }
  return 1;
}
