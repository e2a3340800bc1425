#include "collector/python_frames.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

// Safety argument for reading another library's structures without its headers or the GIL:
// - Only the owning thread pushes and pops its frames, and while it runs our hook it is inside a
//   C call, so its chain is quiescent: every frame on it is fully linked (frames still in their
//   prologue are skipped by each version's _PyFrame_IsIncomplete rule) and holds a strong
//   reference to its code object, whose names and line table are immutable. Another thread
//   running with the GIL cannot touch this thread's frames.
// - The thread state comes from PyGILState_GetThisThreadState(), which reads the thread's TSS key
//   (pthread_getspecific) in 3.10-3.15 and needs no GIL; the "current" thread state
//   (3.12+ _Py_tss_tstate, 3.10/3.11 _PyRuntime.gilstate.tstate_current) is cleared when the GIL is
//   released; this one is not.
//   It is only called once Py_IsInitialized() (a plain load) says the key exists.
// - Offsets are used only for an interpreter whose version, debug-ness and GIL-ness were
//   checked in initialize(); every code, str and bytes object is type-checked by address against
//   PyCode_Type/PyUnicode_Type/PyBytes_Type before use, and every walk and copy is bounded.

namespace cutrace::python {
namespace {

// Offsets printed by offsetof() against each interpreter's own headers (with Py_BUILD_CORE and
// internal/pycore_frame.h, 3.14's internal/pycore_interpframe_structs.h) from
// /root/.pyenv/versions/{3.10.13,3.11.7,3.12.1,3.13.0} and Debian's libpython3.14-dev 3.14.10 and
// libpython3.15-dev 3.15.2 (3.15's are 3.14's); the layouts are fixed within a minor version for
// release, non-debug builds.
struct Layout {
  int minor;
  uint32_t tstateFrame;    // 3.10 tstate->frame, 3.11/3.12 tstate->cframe, 3.13+ tstate->current_frame
  int32_t cframeCurrent;   // _PyCFrame.current_frame (3.11/3.12), else -1
  uint32_t frameBack;      // f_back / previous
  uint32_t frameCode;      // f_code / f_executable (3.14: a _PyStackRef, tagged: kStackRefTags)
  uint32_t frameInstr;     // f_lasti (int, code units) / prev_instr / instr_ptr (pointers)
  int32_t frameOwner;      // char owner (3.11+), else -1
  int32_t frameIsEntry;    // bool is_entry (3.11 only), else -1
  uint32_t codeFilename;
  uint32_t codeName;       // co_qualname on 3.11+, co_name on 3.10
  uint32_t codeFirstLine;  // int co_firstlineno
  uint32_t codeLineTable;  // bytes co_linetable
  int32_t codeFirstTraceable;  // int _co_firsttraceable (3.11+), in code units
  int32_t codeAdaptive;        // co_code_adaptive: _PyCode_CODE() (3.11+)
  uint32_t asciiSize;          // sizeof(PyASCIIObject)
  uint32_t compactSize;        // sizeof(PyCompactUnicodeObject)
};

constexpr Layout kLayouts[] = {
    {10, 24, -1, 24, 32, 96, -1, -1, 104, 112, 40, 120, -1, -1, 48, 72},
    {11, 56, 8, 48, 32, 56, 69, 68, 112, 128, 72, 136, 168, 184, 48, 72},
    {12, 56, 0, 8, 0, 56, 70, -1, 112, 128, 68, 136, 176, 192, 40, 56},
    {13, 72, -1, 8, 0, 56, 70, -1, 112, 128, 68, 136, 184, 200, 40, 56},
    {14, 72, -1, 8, 0, 56, 74, -1, 112, 128, 68, 136, 192, 208, 40, 56},
    {15, 72, -1, 8, 0, 56, 74, -1, 112, 128, 68, 136, 192, 208, 40, 56},
};
constexpr int kFirstMinor = 10, kLastMinor = 15;
static_assert(sizeof kLayouts / sizeof kLayouts[0] == kLastMinor - kFirstMinor + 1);

// 3.13+ publish the offsets of their own structures for out-of-process debuggers, in
// _PyRuntime.debug_offsets (_Py_DebugOffsets, internal/pycore_debug_offsets.h): where, in that
// struct, each offset the table above hard-codes is found, printed by offsetof() against the same
// headers. initialize() checks the table against them, so a build whose layout differs from the
// one measured (patched, or a release that moved a field) leaves frames off instead of reading
// the wrong memory.
struct DebugOffsetsAt {
  int minor;
  int32_t freeThreaded;  // 3.14+, else -1
  uint32_t tstateFrame, frameBack, frameCode, frameInstr, frameOwner;
  uint32_t codeFilename, codeName, codeLineTable, codeFirstLine, codeAdaptive, asciiSize;
};
constexpr DebugOffsetsAt kDebugOffsetsAt[] = {
    {13, -1, 184, 232, 240, 248, 264, 280, 296, 304, 312, 344, 560},
    {14, 16, 208, 256, 264, 272, 288, 320, 336, 344, 352, 384, 640},
    {15, 16, 208, 320, 328, 336, 352, 384, 400, 408, 416, 448, 736},
};
constexpr int kFirstDebugOffsets = 13;
static_assert(sizeof kDebugOffsetsAt / sizeof kDebugOffsetsAt[0] == kLastMinor - kFirstDebugOffsets + 1);
constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
constexpr uint32_t kDebugVersion = 8;  // uint64_t PY_VERSION_HEX, after the cookie

// Common to 3.10-3.15 (object.h, bytesobject.h, unicodeobject.h).
constexpr uint32_t kObType = 8;
constexpr uint32_t kVarSize = 16;       // PyVarObject.ob_size, PyASCIIObject.length
constexpr uint32_t kBytesData = 32;     // PyBytesObject.ob_sval
constexpr uint32_t kUnicodeState = 32;  // PyASCIIObject.state bitfield word
constexpr uint32_t kStateCompact = 0x20, kStateAscii = 0x40, kStateReady = 0x80;  // ready: <= 3.11
constexpr int kOwnedByGenerator = 1;
// 3.12+: owners from this one on hold no Python frame (_PyFrame_IsIncomplete): 3.12/3.13's
// FRAME_OWNED_BY_CSTACK, the entry frame each _PyEval_EvalFrameDefault pushes; 3.14's
// FRAME_OWNED_BY_INTERPRETER (now that entry frame's) and FRAME_OWNED_BY_CSTACK, moved to 4
// (gone in 3.15).
constexpr int kFirstShimOwner = 3;
// 3.14's f_executable is a _PyStackRef: the code object's address with tag bits (Py_TAG_BITS of
// the GIL build, pycore_stackref.h) that PyStackRef_AsPyObjectBorrow masks off.
constexpr uintptr_t kStackRefTags = 3;

constexpr int kMaxSteps = 4096;           // bounds the walk even on a corrupt (cyclic) chain
constexpr uint32_t kMaxChars = 1024;      // names and file names are cut here
constexpr uint32_t kMaxTable = 1u << 20;  // line tables are cut here (later lines read as 0)
constexpr int kMaxProbes = 64;

constexpr size_t kCodeSlots = size_t{1} << 16;   // code objects
constexpr size_t kFrameSlots = size_t{1} << 18;  // (code, instruction) pairs; id = slot + 1
constexpr size_t kBytesCap = size_t{32} << 20;   // copied names and line tables

// Written once under initMutex before `on` is released; read-only afterwards.
std::atomic<bool> on{false};
Layout layout{};
void* (*getThreadState)() = nullptr;
int (*isInitialized)() = nullptr;
uintptr_t codeType = 0, unicodeType = 0, bytesType = 0;
std::atomic<uint32_t>* codeSlots = nullptr;  // arena offset / 8 + 1 of a CodeRecord; 0 = empty
std::atomic<uint64_t>* frameSlots = nullptr; // record index << 32 | instr; 0 = empty
char* bytes = nullptr;
std::atomic<uint64_t> bytesTop{0};
std::atomic<uint64_t> failures{0};

std::mutex initMutex;
bool initDone = false;
char statusBuffer[160];
std::atomic<const char*> statusLine{"python frames: not initialized"};

// The copy of one code object. The identity fields are the addresses seen at copy time, so a
// code object freed and replaced at the same address by different code is told apart.
struct CodeRecord {
  uint64_t code, name, file, table;
  int32_t firstLine;
  uint32_t nameLen, fileLen, tableLen;
  // name bytes, file bytes, line table bytes follow
};

template <class T>
inline T peek(uintptr_t address) {
  T value;
  std::memcpy(&value, reinterpret_cast<const void*>(address), sizeof value);
  return value;
}

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

const CodeRecord* recordAt(uint32_t index) {
  uint64_t offset = uint64_t{index - 1} * 8;
  if (index == 0 || offset + sizeof(CodeRecord) > bytesTop.load(std::memory_order_acquire) ||
      offset + sizeof(CodeRecord) > kBytesCap)
    return nullptr;
  return reinterpret_cast<const CodeRecord*>(bytes + offset);
}

// A readable str: compact (the only kind code objects hold), a known kind, bounded length.
struct StrView {
  uintptr_t data = 0;
  uint32_t length = 0;
  uint32_t kind = 0;  // 1, 2 or 4 bytes per code point
};

bool viewString(uintptr_t object, StrView& view) {
  if (object == 0 || peek<uintptr_t>(object + kObType) != unicodeType) return false;
  uint32_t state = peek<uint32_t>(object + kUnicodeState);
  if (!(state & kStateCompact)) return false;
  if (layout.minor <= 11 && !(state & kStateReady)) return false;
  uint32_t kind = (state >> 2) & 7;
  if (kind != 1 && kind != 2 && kind != 4) return false;
  int64_t length = peek<int64_t>(object + kVarSize);
  if (length < 0) return false;
  view.kind = kind;
  view.length = length > kMaxChars ? kMaxChars : static_cast<uint32_t>(length);
  view.data = object + ((state & kStateAscii) ? layout.asciiSize : layout.compactSize);
  return true;
}

inline uint32_t codePointAt(const StrView& v, uint32_t i) {
  if (v.kind == 1) return peek<uint8_t>(v.data + i);
  if (v.kind == 2) return peek<uint16_t>(v.data + 2 * i);
  return peek<uint32_t>(v.data + 4 * i);
}

inline uint32_t utf8Length(uint32_t cp) {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp >= 0xd800 && cp < 0xe000) return 1;  // lone surrogate: written as '?'
  if (cp < 0x10000) return 3;
  return cp <= 0x10ffff ? 4 : 1;
}

// UTF-8 size of a string, "?" (1) when it is not readable.
uint32_t utf8Size(uintptr_t object) {
  StrView v;
  if (!viewString(object, v)) return 1;
  uint32_t size = 0;
  for (uint32_t i = 0; i < v.length; ++i) size += utf8Length(codePointAt(v, i));
  return size;
}

void writeUtf8(uintptr_t object, char* out) {
  StrView v;
  if (!viewString(object, v)) {
    *out = '?';
    return;
  }
  auto* o = reinterpret_cast<unsigned char*>(out);
  for (uint32_t i = 0; i < v.length; ++i) {
    uint32_t cp = codePointAt(v, i);
    switch (utf8Length(cp)) {
      case 1:
        *o++ = cp < 0x80 ? static_cast<unsigned char>(cp) : '?';
        break;
      case 2:
        *o++ = static_cast<unsigned char>(0xc0 | (cp >> 6));
        *o++ = static_cast<unsigned char>(0x80 | (cp & 0x3f));
        break;
      case 3:
        *o++ = static_cast<unsigned char>(0xe0 | (cp >> 12));
        *o++ = static_cast<unsigned char>(0x80 | ((cp >> 6) & 0x3f));
        *o++ = static_cast<unsigned char>(0x80 | (cp & 0x3f));
        break;
      default:
        *o++ = static_cast<unsigned char>(0xf0 | (cp >> 18));
        *o++ = static_cast<unsigned char>(0x80 | ((cp >> 12) & 0x3f));
        *o++ = static_cast<unsigned char>(0x80 | ((cp >> 6) & 0x3f));
        *o++ = static_cast<unsigned char>(0x80 | (cp & 0x3f));
        break;
    }
  }
}

bool sameCode(const CodeRecord* r, uintptr_t code, uintptr_t name, uintptr_t file, uintptr_t table,
              int32_t firstLine) {
  return r != nullptr && r->code == code && r->name == name && r->file == file &&
         r->table == table && r->firstLine == firstLine;
}

// Index of the CodeRecord of a live code object, copying it on first sight; 0 when full.
uint32_t internCode(uintptr_t code) {
  if (code == 0 || peek<uintptr_t>(code + kObType) != codeType) return 0;
  const uintptr_t name = peek<uintptr_t>(code + layout.codeName);
  const uintptr_t file = peek<uintptr_t>(code + layout.codeFilename);
  const uintptr_t table = peek<uintptr_t>(code + layout.codeLineTable);
  const int32_t firstLine = peek<int32_t>(code + layout.codeFirstLine);

  const size_t mask = kCodeSlots - 1;
  size_t slot = mix(code) & mask;
  int probes = 0;
  for (; probes < kMaxProbes; ++probes, slot = (slot + 1) & mask) {
    uint32_t index = codeSlots[slot].load(std::memory_order_acquire);
    if (index == 0) break;
    if (sameCode(recordAt(index), code, name, file, table, firstLine)) return index;
  }
  if (probes == kMaxProbes) return 0;

  uint32_t tableLen = 0;
  if (table != 0 && peek<uintptr_t>(table + kObType) == bytesType) {
    int64_t size = peek<int64_t>(table + kVarSize);
    tableLen = size < 0 ? 0 : size > kMaxTable ? kMaxTable : static_cast<uint32_t>(size);
  }
  const uint32_t nameLen = utf8Size(name), fileLen = utf8Size(file);
  const uint64_t size = (sizeof(CodeRecord) + nameLen + fileLen + tableLen + 7) & ~uint64_t{7};
  const uint64_t offset = bytesTop.fetch_add(size, std::memory_order_relaxed);
  if (offset + size > kBytesCap) return 0;  // bytesTop stays past the end: the arena is full for good
  auto* record = reinterpret_cast<CodeRecord*>(bytes + offset);
  *record = CodeRecord{code, name, file, table, firstLine, nameLen, fileLen, tableLen};
  char* text = bytes + offset + sizeof(CodeRecord);
  writeUtf8(name, text);
  writeUtf8(file, text + nameLen);
  if (tableLen) std::memcpy(text + nameLen + fileLen, reinterpret_cast<const void*>(table + kBytesData), tableLen);
  const uint32_t mine = static_cast<uint32_t>(offset / 8 + 1);

  // Publish; a racing thread that copied the same code first wins and this copy is left unused.
  for (; probes < kMaxProbes; ++probes, slot = (slot + 1) & mask) {
    uint32_t expected = 0;
    if (codeSlots[slot].compare_exchange_strong(expected, mine, std::memory_order_acq_rel,
                                                std::memory_order_acquire))
      return mine;
    if (sameCode(recordAt(expected), code, name, file, table, firstLine)) return expected;
  }
  return 0;
}

int readVarint(const uint8_t*& p, const uint8_t* end) {
  if (p >= end) return 0;
  uint32_t read = *p++;
  uint32_t value = read & 63;
  uint32_t shift = 0;
  while ((read & 64) && p < end && shift < 24) {
    read = *p++;
    shift += 6;
    value |= (read & 63) << shift;
  }
  return static_cast<int>(value);
}

int readSignedVarint(const uint8_t*& p, const uint8_t* end) {
  int value = readVarint(p, end);
  return (value & 1) ? -(value >> 1) : (value >> 1);
}

// 3.10 co_linetable (Objects/lnotab_notes.txt, 3.10): (byte delta: unsigned, line delta: signed)
// pairs; line delta -128 = no line. Mirrors PyCode_Addr2Line/_PyCode_CheckLineNumber going forward.
int lineFor310(const uint8_t* p, const uint8_t* end, int firstLine, uint32_t addr) {
  int computed = firstLine, line = -1;
  uint32_t start = 0, stop = 0;
  while (stop <= addr) {
    do {
      if (end - p < 2) return 0;
      start = stop;
      stop += p[0];
      int delta = static_cast<int8_t>(p[1]);
      p += 2;
      if (delta == -128) {
        line = -1;
      } else {
        computed += delta;
        line = computed;
      }
    } while (start == stop);
  }
  return line < 0 ? 0 : line;
}

// 3.11-3.15 location table (Objects/locations.md): an entry starts with a byte 1cccclll,
// l+1 code units long; code 15 = no location, 14 long form, 13 no columns (signed varint line
// delta), 10-12 one-line forms (delta code-10), 0-9 short forms (delta 0).
int lineFor311(const uint8_t* p, const uint8_t* end, int firstLine, uint32_t addr) {
  int computed = firstLine, line = -1;
  uint32_t stop = 0;
  while (stop <= addr) {
    if (p >= end) return 0;
    const uint8_t first = *p;
    const int code = (first >> 3) & 15;
    const uint8_t* q = p + 1;
    int delta = 0;
    if (code == 13 || code == 14) delta = readSignedVarint(q, end);
    else if (code >= 10 && code <= 12) delta = code - 10;
    computed += delta;
    line = code == 15 ? -1 : computed;
    stop += ((first & 7) + 1) * 2;
    do {
      ++p;
    } while (p < end && (*p & 128) == 0);
  }
  return line < 0 ? 0 : line;
}

bool parseVersion(int& major, int& minor, int& micro) {
  // Py_Version (3.11+) is PY_VERSION_HEX; Py_GetVersion() ("3.10.13 (main, ...") covers 3.10.
  if (auto* hex = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"))) {
    major = static_cast<int>((*hex >> 24) & 0xff);
    minor = static_cast<int>((*hex >> 16) & 0xff);
    micro = static_cast<int>((*hex >> 8) & 0xff);
    return true;
  }
  auto getVersion = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
  if (getVersion == nullptr) return false;
  const char* text = getVersion();
  micro = 0;
  return text != nullptr && std::sscanf(text, "%d.%d.%d", &major, &minor, &micro) >= 2;
}

// Why `l` does not fit the running interpreter's own view of its structures, or null when it does
// (DebugOffsetsAt). `minor` >= kFirstDebugOffsets.
const char* differsFromDebugOffsets(const Layout& l, int minor) {
  const auto runtime = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "_PyRuntime"));
  if (runtime == 0) return "no _PyRuntime to check the layout against, frames off";
  if (std::memcmp(reinterpret_cast<const void*>(runtime), kDebugCookie, sizeof kDebugCookie) != 0)
    return "no debug offsets in _PyRuntime, frames off";
  const DebugOffsetsAt& at = kDebugOffsetsAt[minor - kFirstDebugOffsets];
  auto field = [&](uint32_t offset) { return peek<uint64_t>(runtime + offset); };
  if ((field(kDebugVersion) >> 16) != (0x300u | static_cast<unsigned>(minor)))
    return "debug offsets of another version, frames off";
  if (at.freeThreaded >= 0 && field(static_cast<uint32_t>(at.freeThreaded)) != 0) return "free-threaded build unsupported";
  const bool same = field(at.tstateFrame) == l.tstateFrame && field(at.frameBack) == l.frameBack &&
                    field(at.frameCode) == l.frameCode && field(at.frameInstr) == l.frameInstr &&
                    field(at.frameOwner) == static_cast<uint64_t>(l.frameOwner) &&
                    field(at.codeFilename) == l.codeFilename && field(at.codeName) == l.codeName &&
                    field(at.codeLineTable) == l.codeLineTable && field(at.codeFirstLine) == l.codeFirstLine &&
                    field(at.codeAdaptive) == static_cast<uint64_t>(l.codeAdaptive) &&
                    field(at.asciiSize) == l.asciiSize;
  return same ? nullptr : "layout differs from the interpreter's debug offsets, frames off";
}

void setStatus(const char* format, int major, int minor, int micro, const char* what) {
  std::snprintf(statusBuffer, sizeof statusBuffer, format, major, minor, micro, what);
  statusLine.store(statusBuffer, std::memory_order_release);
}

}  // namespace

bool initialize() {
  std::lock_guard<std::mutex> lock(initMutex);
  if (initDone) return on.load(std::memory_order_relaxed);
  initDone = true;

  int major = 0, minor = 0, micro = 0;
  if (!parseVersion(major, minor, micro)) {
    statusLine.store("not a Python process", std::memory_order_release);
    return false;
  }
  const char* bad = nullptr;
  if (major != 3 || minor < kFirstMinor || minor > kLastMinor)
    bad = "unsupported (3.10 to 3.15)";
  // Exported only by Py_REF_DEBUG (debug) builds, whose object header and structs differ.
  else if (dlsym(RTLD_DEFAULT, "_Py_NegativeRefcount") || dlsym(RTLD_DEFAULT, "_Py_RefTotal"))
    bad = "debug build unsupported";
  // Exported only by Py_GIL_DISABLED (free-threaded, "3.13t" and later) builds.
  else if (dlsym(RTLD_DEFAULT, "_Py_DecRefShared") || dlsym(RTLD_DEFAULT, "_Py_MergeZeroLocalRefcount"))
    bad = "free-threaded build unsupported";
  if (bad) {
    setStatus("CPython %d.%d.%d: %s", major, minor, micro, bad);
    return false;
  }

  if (minor >= kFirstDebugOffsets) {
    if (const char* differs = differsFromDebugOffsets(kLayouts[minor - kFirstMinor], minor)) {
      setStatus("CPython %d.%d.%d: %s", major, minor, micro, differs);
      return false;
    }
  }

  getThreadState = reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  isInitialized = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  codeType = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "PyCode_Type"));
  unicodeType = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "PyUnicode_Type"));
  bytesType = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "PyBytes_Type"));
  if (!getThreadState || !isInitialized || !codeType || !unicodeType || !bytesType) {
    setStatus("CPython %d.%d.%d: %s", major, minor, micro, "interpreter symbols missing, frames off");
    return false;
  }

  // One reservation; pages are committed on first touch (MAP_NORESERVE), so an unused table
  // costs address space only.
  const size_t codeBytes = kCodeSlots * sizeof(std::atomic<uint32_t>);
  const size_t frameBytes = kFrameSlots * sizeof(std::atomic<uint64_t>);
  void* arena = mmap(nullptr, codeBytes + frameBytes + kBytesCap, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (arena == MAP_FAILED) {
    setStatus("CPython %d.%d.%d: %s", major, minor, micro, "no memory for the frame arena, frames off");
    return false;
  }
  // Zeroed anonymous memory is a valid all-empty table of lock-free atomics.
  static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free);
  codeSlots = static_cast<std::atomic<uint32_t>*>(arena);
  frameSlots = reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(arena) + codeBytes);
  bytes = static_cast<char*>(arena) + codeBytes + frameBytes;
  layout = kLayouts[minor - kFirstMinor];
  setStatus("CPython %d.%d.%d: %s", major, minor, micro, "frames on");
  on.store(true, std::memory_order_release);
  return true;
}

const char* status() { return statusLine.load(std::memory_order_acquire); }

namespace {

// The thread's innermost frame, or 0 (not Python, no frame, a thread Python never ran on).
[[gnu::always_inline]] inline uintptr_t firstFrame(const Layout& l) {
  // Before Py_Initialize the TSS key is not created yet (3.12 would read key 0).
  if (isInitialized() == 0) return 0;
  const uintptr_t tstate = reinterpret_cast<uintptr_t>(getThreadState());
  if (tstate == 0) return 0;
  const uintptr_t frame = peek<uintptr_t>(tstate + l.tstateFrame);
  return l.cframeCurrent >= 0 && frame != 0 ? peek<uintptr_t>(frame + l.cframeCurrent) : frame;
}

// ChainMemo's reads of one frame: its code, its instruction word (3.10's int f_lasti, a pointer
// later; read for every frame, an entry shim's too, whose fields exist but are not used), its
// owner byte (3.11+) and 3.11's entry byte. By minor version, so that the loops have no branch
// on it (a third of the compare's instructions otherwise).
template <int Minor>
[[gnu::always_inline]] inline ChainMemo::Reads readsOf(const Layout& l, uintptr_t frame) {
  ChainMemo::Reads s;
  s.frame = frame;
  s.code = peek<uintptr_t>(frame + l.frameCode);
  if constexpr (Minor >= 14) s.code &= ~kStackRefTags;
  if constexpr (Minor == 10) {
    s.instr = static_cast<uint32_t>(peek<int>(frame + l.frameInstr));
    s.owner = 0;
  } else {
    s.instr = peek<uintptr_t>(frame + l.frameInstr);
    s.owner = peek<uint8_t>(frame + static_cast<uint32_t>(l.frameOwner));
    if constexpr (Minor == 11) s.owner |= uint32_t{peek<uint8_t>(frame + static_cast<uint32_t>(l.frameIsEntry))} << 8;
  }
  return s;
}

inline bool sameReads(const ChainMemo::Reads& a, const ChainMemo::Reads& b) {
  return ((a.frame ^ b.frame) | (a.code ^ b.code) | (a.instr ^ b.instr) | (a.owner ^ b.owner)) == 0;
}

// The frame one step gives, as two words (frameWords); false when it gives none (an entry shim,
// no code object, a frame still in its prologue). `outermost`: no frame further out;
// `callerOwner`: else the owner byte of the frame further out (3.12+ only, which marks the frame
// _PyEval_EvalFrameDefault was given by linking it to its own entry frame (kFirstShimOwner);
// frames it pushes itself link to their caller).
template <int Minor>
[[gnu::always_inline]] inline bool frameOf(const Layout& l, const ChainMemo::Reads& step, bool outermost, int callerOwner,
                                           uint64_t* words) {
  const int owner = static_cast<int8_t>(step.owner & 0xff);
  if (Minor >= 12 && owner >= kFirstShimOwner) return false;  // a shim: no code to read (3.13+: None)
  const uintptr_t code = step.code;
  if (code == 0 || peek<uintptr_t>(code + kObType) != codeType) return false;
  uint32_t instr = kNotStarted, entry = 1;
  if constexpr (Minor == 10) {
    // Every 3.10 frame runs in its own _PyEval_EvalFrameDefault call.
    const int lasti = static_cast<int>(static_cast<uint32_t>(step.instr));
    if (lasti >= 0) instr = static_cast<uint32_t>(lasti) * 2;
  } else {
    const uintptr_t ip = step.instr;
    const uintptr_t base = code + static_cast<uint32_t>(l.codeAdaptive);
    // _PyFrame_IsIncomplete (3.11-3.15): still in its prologue, not yet a frame Python shows.
    const int firstTraceable = peek<int>(code + static_cast<uint32_t>(l.codeFirstTraceable));
    if (owner != kOwnedByGenerator && ip < base + 2 * static_cast<uintptr_t>(firstTraceable)) return false;
    if (ip >= base) instr = static_cast<uint32_t>(ip - base);
    if constexpr (Minor == 11) entry = (step.owner >> 8) != 0;  // is_entry
    else entry = outermost || callerOwner >= kFirstShimOwner;
  }
  frameWords(RawFrame{code, instr, entry}, words);
  return true;
}

template <int Minor>
bool sameChainOf(const Layout& l, const ChainMemo& memo, uintptr_t frame) {
  int i = memo.steps;
  for (; frame != 0; frame = peek<uintptr_t>(frame + l.frameBack)) {
    if (i == 0) return false;
    const ChainMemo::Reads& m = memo.step[--i].reads;
    if (frame != m.frame || !sameReads(readsOf<Minor>(l, frame), m)) return false;
  }
  return i == 0;
}

}  // namespace

uintptr_t innermostFrame() { return on.load(std::memory_order_acquire) ? firstFrame(layout) : 0; }

bool sameChain(const ChainMemo& memo, uintptr_t frame) {
  if (memo.steps < 0 || !on.load(std::memory_order_acquire)) return false;
  const Layout& l = layout;
  switch (l.minor) {
    case 10: return sameChainOf<10>(l, memo, frame);
    case 11: return sameChainOf<11>(l, memo, frame);
    case 12:
    case 13: return sameChainOf<12>(l, memo, frame);
    default: return sameChainOf<14>(l, memo, frame);
  }
}

namespace {

// From the innermost frame out, every step read afresh: a chain longer than a memo holds, or no
// memo. Its frames' hash is taken afterwards, from the outermost in.
template <int Minor>
int walkOut(const Layout& l, uintptr_t frame, uint64_t* out, int max, uint64_t& hash) {
  int n = 0;
  for (int steps = 0; frame != 0 && n < max && steps < kMaxSteps; ++steps) {
    const ChainMemo::Reads step = readsOf<Minor>(l, frame);
    const uintptr_t back = peek<uintptr_t>(frame + l.frameBack);
    const int callerOwner = Minor >= 12 && back != 0 ? peek<int8_t>(back + l.frameOwner) : 0;
    if (frameOf<Minor>(l, step, back == 0, callerOwner, out + 2 * n)) ++n;
    frame = back;
  }
  hash = kFramesHashSeed;
  for (int i = n; i-- > 0;) hash = foldPythonFrame(hash, out + 2 * i);
  return n;
}

// From the outermost frame in, with the thread's memo: the steps that read what the last walk
// read there, from the outermost on, give what they gave then, with their hash (the callers a
// thread's calls share: a training loop, a model's forward); the first that differs and every
// step after it are read and remembered.
template <int Minor>
int walkIn(const Layout& l, uintptr_t first, uint64_t* out, int max, uint64_t& hash, ChainMemo& memo) {
  // Out to the outermost frame, each step's reads kept: a step's distance from the outermost
  // frame, which places it against the memo, is known only at the end.
  ChainMemo::Reads reads[ChainMemo::kSteps];
  const int most = max < ChainMemo::kSteps ? max : ChainMemo::kSteps;
  int count = 0;
  for (uintptr_t frame = first; frame != 0; frame = peek<uintptr_t>(frame + l.frameBack)) {
    if (count == most) {
      memo.steps = -1;
      return walkOut<Minor>(l, first, out, max, hash);
    }
    reads[count++] = readsOf<Minor>(l, frame);
  }
  // The steps from the outermost in that read what the last walk read there give what they gave.
  const int known = memo.steps < count ? memo.steps : count;
  int shared = 0;
  while (shared < known && sameReads(reads[count - 1 - shared], memo.step[shared].reads)) ++shared;
  uint64_t h = shared > 0 ? memo.step[shared - 1].hash : kFramesHashSeed;
  uint32_t given = shared > 0 ? memo.step[shared - 1].given : 0;
  int callerOwner = shared > 0 ? static_cast<int8_t>(memo.step[shared - 1].reads.owner & 0xff) : 0;
  for (int i = shared; i < count; ++i) {
    ChainMemo::Step& m = memo.step[i];
    m.reads = reads[count - 1 - i];
    uint64_t* words = memo.words + 2 * given;
    if (frameOf<Minor>(l, m.reads, i == 0, callerOwner, words)) {
      h = foldPythonFrame(h, words);
      ++given;
    }
    m.hash = h;
    m.given = given;
    callerOwner = static_cast<int8_t>(m.reads.owner & 0xff);
  }
  memo.steps = count;
  hash = h;
  return static_cast<int>(given);
}

}  // namespace

void heldWords(const ChainMemo& memo, uint64_t* out) {
  const int n = memo.steps > 0 ? static_cast<int>(memo.step[memo.steps - 1].given) : 0;
  for (int i = 0; i < n; ++i) {
    out[2 * i] = memo.words[2 * (n - 1 - i)];
    out[2 * i + 1] = memo.words[2 * (n - 1 - i) + 1];
  }
}

int captureWords(uint64_t* out, int max, uint64_t& hash, ChainMemo* memo, uintptr_t first) {
  hash = kFramesHashSeed;
  if (!on.load(std::memory_order_acquire) || out == nullptr || max <= 0) {
    if (memo != nullptr) memo->steps = -1;
    return 0;
  }
  const Layout& l = layout;
  const uintptr_t frame = first != kFrameNotRead ? first : firstFrame(l);
  switch (l.minor) {
    case 10: return memo != nullptr ? walkIn<10>(l, frame, out, max, hash, *memo) : walkOut<10>(l, frame, out, max, hash);
    case 11: return memo != nullptr ? walkIn<11>(l, frame, out, max, hash, *memo) : walkOut<11>(l, frame, out, max, hash);
    case 12:
    case 13: return memo != nullptr ? walkIn<12>(l, frame, out, max, hash, *memo) : walkOut<12>(l, frame, out, max, hash);
    default:  // 3.14 and 3.15: 3.12's walk, a tagged f_executable
      return memo != nullptr ? walkIn<14>(l, frame, out, max, hash, *memo) : walkOut<14>(l, frame, out, max, hash);
  }
}

int captureRaw(RawFrame* out, int max) {
  constexpr int kMost = 256;
  uint64_t words[2 * kMost];
  uint64_t hash = 0;
  const int n = captureWords(words, max < kMost ? max : kMost, hash);
  for (int i = 0; i < n; ++i) out[i] = rawFrameOf(words + 2 * i);
  return n;
}

uint32_t internFrame(const RawFrame& f) {
  if (!on.load(std::memory_order_acquire)) return 0;
  const uint32_t record = internCode(static_cast<uintptr_t>(f.code));
  if (record == 0) {
    failures.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint64_t key = (uint64_t{record} << 32) | f.instr;  // record >= 1, so key != 0
  const size_t mask = kFrameSlots - 1;
  size_t slot = mix(key) & mask;
  for (int probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & mask) {
    uint64_t seen = frameSlots[slot].load(std::memory_order_acquire);
    if (seen == 0 && frameSlots[slot].compare_exchange_strong(seen, key, std::memory_order_acq_rel,
                                                              std::memory_order_acquire))
      return static_cast<uint32_t>(slot + 1);
    if (seen == key) return static_cast<uint32_t>(slot + 1);
  }
  failures.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

uint64_t internFailures() { return failures.load(std::memory_order_relaxed); }

bool describe(uint32_t id, FrameInfo& out) {
  if (!on.load(std::memory_order_acquire) || id == 0 || id > kFrameSlots) return false;
  const uint64_t key = frameSlots[id - 1].load(std::memory_order_acquire);
  if (key == 0) return false;
  const CodeRecord* r = recordAt(static_cast<uint32_t>(key >> 32));
  if (r == nullptr) return false;
  const uint32_t instr = static_cast<uint32_t>(key);
  const char* text = reinterpret_cast<const char*>(r + 1);
  out.function.assign(text, r->nameLen);
  out.file.assign(text + r->nameLen, r->fileLen);
  const auto* table = reinterpret_cast<const uint8_t*>(text + r->nameLen + r->fileLen);
  if (instr == kNotStarted)
    out.line = r->firstLine;
  else if (layout.minor == 10)
    out.line = lineFor310(table, table + r->tableLen, r->firstLine, instr);
  else
    out.line = lineFor311(table, table + r->tableLen, r->firstLine, instr);
  return true;
}

}  // namespace cutrace::python
