#include "collector/dwarf_unwind.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace cutrace::dwarf {
namespace {

// DWARF register numbers of x86-64.
constexpr unsigned kRbp = 6;
constexpr unsigned kRsp = 7;
constexpr unsigned kRa = 16;

// A rule packed in 64 bits, so a cache entry is published with one store:
//   bits 0-1   kind
//   bit  2     CFA base register is rbp (else rsp)
//   bit  3     CFA = *(base + offset) (the realignment form) instead of base + offset
//   bit  4     rbp is saved at CFA + rbpOffset (else it keeps its value)
//   bit  5     with kind kUnsupported: no loaded object holds the address (not cached)
//   bit  6     with bit 4: rbp is saved at rbp + rbpOffset instead
//   bits 16-31 rbpOffset (signed)
//   bits 32-63 cfaOffset (signed)
// The return address is always at CFA - 8 (checked when the rule is computed).
enum Kind : uint64_t { kEmpty = 0, kFrame = 1, kOutermost = 2, kUnsupported = 3 };
constexpr uint64_t kCfaRbp = 1u << 2;
constexpr uint64_t kCfaDeref = 1u << 3;
constexpr uint64_t kRbpSaved = 1u << 4;
// With kRbpSaved: rbp is saved at rbp + rbpOffset instead of CFA + rbpOffset (GCC's stack
// realignment through a DRAP register describes the saved rbp that way).
constexpr uint64_t kRbpAtRbp = 1u << 6;
// Unsupported because no loaded object holds the address (yet: an object being loaded by
// dlopen may not be known to _dl_find_object while it runs). Not cached.
constexpr uint64_t kNoObject = kUnsupported | (1u << 5);

uint64_t packRule(bool cfaRbp, bool deref, int64_t cfaOffset, bool rbpSaved, bool rbpAtRbp, int64_t rbpOffset) {
  return kFrame | (cfaRbp ? kCfaRbp : 0) | (deref ? kCfaDeref : 0) | (rbpSaved ? kRbpSaved : 0) |
         (rbpAtRbp ? kRbpAtRbp : 0) |
         (static_cast<uint64_t>(static_cast<uint16_t>(static_cast<int16_t>(rbpOffset))) << 16) |
         (static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(cfaOffset))) << 32);
}
int64_t cfaOffsetOf(uint64_t rule) { return static_cast<int32_t>(static_cast<uint32_t>(rule >> 32)); }
int64_t rbpOffsetOf(uint64_t rule) { return static_cast<int16_t>(static_cast<uint16_t>(rule >> 16)); }

// ---------------------------------------------------------------- the rule cache
// Open addressing keyed by code address. An entry is claimed by a CAS on its key and then
// published by storing its rule; a reader that finds the key before the rule computes the rule
// itself. Entries are never removed.
constexpr unsigned kCacheBits = 15;
constexpr std::size_t kCacheSize = std::size_t{1} << kCacheBits;
constexpr int kProbes = 8;

struct Entry {
  std::atomic<uint64_t> pc;
  std::atomic<uint64_t> rule;
};

Entry* g_cache = nullptr;
std::atomic<uint64_t> g_cached{0};

using FindObject = int (*)(void*, struct dl_find_object*);
FindObject g_findObject = nullptr;

std::size_t slotOf(uint64_t pc) { return static_cast<std::size_t>((pc * 0x9e3779b97f4a7c15ull) >> (64 - kCacheBits)); }

uint64_t cachedRule(uint64_t pc) {
  std::size_t i = slotOf(pc);
  for (int p = 0; p < kProbes; ++p, i = (i + 1) & (kCacheSize - 1)) {
    const uint64_t key = g_cache[i].pc.load(std::memory_order_acquire);
    if (key == pc) return g_cache[i].rule.load(std::memory_order_acquire);
    if (key == 0) return kEmpty;
  }
  return kEmpty;
}

void cacheRule(uint64_t pc, uint64_t rule) {
  std::size_t i = slotOf(pc);
  for (int p = 0; p < kProbes; ++p, i = (i + 1) & (kCacheSize - 1)) {
    uint64_t key = g_cache[i].pc.load(std::memory_order_acquire);
    if (key == 0 && g_cache[i].pc.compare_exchange_strong(key, pc, std::memory_order_acq_rel)) {
      g_cache[i].rule.store(rule, std::memory_order_release);
      g_cached.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (key == pc) return;  // another thread has it (or is publishing it)
  }
  // Full around this slot: the rule is recomputed whenever it is needed.
}

// ---------------------------------------------------------------- reading .eh_frame
// Every read of .eh_frame_hdr / .eh_frame stays inside [begin, end): the mapping
// _dl_find_object reported for the object.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool has(std::size_t n) const { return ok && static_cast<std::size_t>(end - p) >= n; }
  template <typename T>
  T fixed() {
    if (!has(sizeof(T))) {
      ok = false;
      return T{};
    }
    T v;
    memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; has(1) && shift < 64; shift += 7) {
      const uint8_t b = *p++;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  int64_t sleb() {
    uint64_t v = 0;
    unsigned shift = 0;
    for (; has(1) && shift < 64;) {
      const uint8_t b = *p++;
      v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
        return static_cast<int64_t>(v);
      }
    }
    ok = false;
    return 0;
  }
  // A pointer in DW_EH_PE encoding `enc`; `dataBase` for datarel. Indirect pointers are not
  // needed for CFA rules (only for personality routines, which are skipped by length).
  uint64_t encoded(uint8_t enc, uint64_t dataBase) {
    if (enc == 0xff) return 0;  // DW_EH_PE_omit
    const uint64_t here = reinterpret_cast<uint64_t>(p);
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00: v = fixed<uint64_t>(); break;                                          // absptr
      case 0x01: v = uleb(); break;                                                     // uleb128
      case 0x02: v = fixed<uint16_t>(); break;                                          // udata2
      case 0x03: v = fixed<uint32_t>(); break;                                          // udata4
      case 0x04: v = fixed<uint64_t>(); break;                                          // udata8
      case 0x09: v = static_cast<uint64_t>(sleb()); break;                              // sleb128
      case 0x0a: v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int16_t>())); break;  // sdata2
      case 0x0b: v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int32_t>())); break;  // sdata4
      case 0x0c: v = fixed<uint64_t>(); break;                                          // sdata8
      default: ok = false; return 0;
    }
    switch (enc & 0x70) {
      case 0x00: break;                   // absolute
      case 0x10: v += here; break;        // pcrel
      case 0x30: v += dataBase; break;    // datarel
      default: ok = false; return 0;      // textrel, funcrel, aligned: not used on x86-64
    }
    if (enc & 0x80) ok = false;  // indirect
    return v;
  }
};

// The CFA program's state for the registers a walk needs.
struct RegRule {
  // Offset: saved at CFA + offset; AtRbp: saved at rbp + offset (DW_CFA_expression "breg6").
  enum Type : uint8_t { Same, Offset, AtRbp, Undefined, Other } type = Same;
  int64_t offset = 0;
};
struct Row {
  unsigned cfaReg = kRsp;
  int64_t cfaOffset = 0;
  bool cfaDeref = false;    // CFA = *(cfaReg + cfaOffset)
  bool cfaOther = false;    // an expression of another shape
  RegRule rbp;
  RegRule ra;
};

struct Cie {
  uint64_t codeAlign = 1;
  int64_t dataAlign = 1;
  unsigned raReg = kRa;
  uint8_t fdeEncoding = 0;  // absptr
  bool augmented = false;   // 'z': FDEs carry an augmentation length
  bool signalFrame = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

bool parseCie(const uint8_t* cie, const uint8_t* limit, Cie& out) {
  Reader r{cie, limit};
  const uint32_t length = r.fixed<uint32_t>();
  if (!r.ok || length == 0 || length == 0xffffffffu || length > static_cast<std::size_t>(limit - r.p)) return false;
  out.end = r.p + length;
  r.end = out.end;
  if (r.fixed<uint32_t>() != 0) return false;  // CIE id
  const uint8_t version = r.fixed<uint8_t>();
  if (version != 1 && version != 3) return false;
  const char* aug = reinterpret_cast<const char*>(r.p);
  const std::size_t augLen = strnlen(aug, static_cast<std::size_t>(r.end - r.p));
  if (augLen == static_cast<std::size_t>(r.end - r.p)) return false;
  r.p += augLen + 1;
  out.codeAlign = r.uleb();
  out.dataAlign = r.sleb();
  out.raReg = version == 1 ? r.fixed<uint8_t>() : static_cast<unsigned>(r.uleb());
  if (augLen > 0) {
    if (aug[0] != 'z') return false;  // without 'z' unknown augmentation cannot be skipped
    out.augmented = true;
    const uint64_t dataLen = r.uleb();
    if (!r.has(dataLen)) return false;
    const uint8_t* dataEnd = r.p + dataLen;
    for (std::size_t i = 1; i < augLen && r.ok; ++i) {
      switch (aug[i]) {
        case 'R': out.fdeEncoding = r.fixed<uint8_t>(); break;
        case 'P': {
          const uint8_t enc = r.fixed<uint8_t>();
          r.encoded(static_cast<uint8_t>(enc & 0x7f), 0);  // skipped: only its size matters
          break;
        }
        case 'L': r.fixed<uint8_t>(); break;
        case 'S': out.signalFrame = true; break;
        default: i = augLen; break;  // the rest is skipped by length
      }
    }
    r.p = dataEnd;
  }
  out.instructions = r.p;
  return r.ok && out.raReg == kRa;
}

// Runs CFA instructions from `r` until the row for `pc` is complete. `initial` is the row after
// the CIE's instructions (for DW_CFA_restore); `loc` the address the row starts at.
bool runCfa(Reader r, const Cie& cie, uint64_t loc, uint64_t pc, const Row& initial, Row& row) {
  Row saved[4];
  int depth = 0;
  auto setRule = [&](uint64_t reg, RegRule rule) {
    if (reg == kRbp) row.rbp = rule;
    else if (reg == kRa) row.ra = rule;
  };
  auto initialRule = [&](uint64_t reg) {
    if (reg == kRbp) row.rbp = initial.rbp;
    else if (reg == kRa) row.ra = initial.ra;
  };
  while (r.has(1)) {
    const uint8_t op = r.fixed<uint8_t>();
    const uint8_t high = op & 0xc0, low = op & 0x3f;
    uint64_t advance = 0;
    if (high == 0x40) {
      advance = low * cie.codeAlign;
    } else if (high == 0x80) {
      setRule(low, {RegRule::Offset, static_cast<int64_t>(r.uleb()) * cie.dataAlign});
    } else if (high == 0xc0) {
      initialRule(low);
    } else {
      switch (op) {
        case 0x00: break;  // nop
        case 0x01: {       // set_loc
          const uint64_t to = r.encoded(cie.fdeEncoding, 0);
          if (to > pc) return r.ok;
          loc = to;
          break;
        }
        case 0x02: advance = r.fixed<uint8_t>() * cie.codeAlign; break;
        case 0x03: advance = r.fixed<uint16_t>() * cie.codeAlign; break;
        case 0x04: advance = r.fixed<uint32_t>() * cie.codeAlign; break;
        case 0x05: {  // offset_extended
          const uint64_t reg = r.uleb();
          setRule(reg, {RegRule::Offset, static_cast<int64_t>(r.uleb()) * cie.dataAlign});
          break;
        }
        case 0x06: initialRule(r.uleb()); break;                 // restore_extended
        case 0x07: setRule(r.uleb(), {RegRule::Undefined, 0}); break;  // undefined
        case 0x08: setRule(r.uleb(), {RegRule::Same, 0}); break;       // same_value
        case 0x09: {  // register: saved in another register
          const uint64_t reg = r.uleb();
          r.uleb();
          setRule(reg, {RegRule::Other, 0});
          break;
        }
        case 0x0a:  // remember_state
          if (depth == 4) return false;
          saved[depth++] = row;
          break;
        case 0x0b:  // restore_state: the CFA rule too, as GCC's epilogues expect (and libgcc does)
          if (depth == 0) return false;
          row = saved[--depth];
          break;
        case 0x0c:  // def_cfa
          row.cfaReg = static_cast<unsigned>(r.uleb());
          row.cfaOffset = static_cast<int64_t>(r.uleb());
          row.cfaDeref = row.cfaOther = false;
          break;
        case 0x0d:  // def_cfa_register
          row.cfaReg = static_cast<unsigned>(r.uleb());
          row.cfaDeref = row.cfaOther = false;
          break;
        case 0x0e:  // def_cfa_offset (only meaningful for a register + offset CFA)
          row.cfaOffset = static_cast<int64_t>(r.uleb());
          row.cfaOther = row.cfaOther || row.cfaDeref;
          break;
        case 0x0f: {  // def_cfa_expression: only "breg N off; deref" is understood
          const uint64_t len = r.uleb();
          if (!r.has(len)) return false;
          Reader e{r.p, r.p + len};
          r.p += len;
          const uint8_t first = e.fixed<uint8_t>();
          row.cfaOther = true;
          if (first >= 0x70 && first <= 0x8f) {  // DW_OP_breg0..31
            const int64_t off = e.sleb();
            if (e.ok && e.has(1) && e.fixed<uint8_t>() == 0x06 && !e.has(1)) {  // DW_OP_deref, then the end
              row.cfaReg = first - 0x70u;
              row.cfaOffset = off;
              row.cfaDeref = true;
              row.cfaOther = false;
            }
          }
          break;
        }
        case 0x10: {  // expression: only rbp's "saved at rbp + offset" is understood
          const uint64_t reg = r.uleb();
          const uint64_t len = r.uleb();
          if (!r.has(len)) return false;
          Reader e{r.p, r.p + len};
          r.p += len;
          RegRule rule{RegRule::Other, 0};
          if (e.fixed<uint8_t>() == 0x76) {  // DW_OP_breg6 (rbp)
            const int64_t off = e.sleb();
            if (e.ok && !e.has(1)) rule = {RegRule::AtRbp, off};
          }
          setRule(reg, rule);
          break;
        }
        case 0x11: {  // offset_extended_sf
          const uint64_t reg = r.uleb();
          setRule(reg, {RegRule::Offset, r.sleb() * cie.dataAlign});
          break;
        }
        case 0x12:  // def_cfa_sf
          row.cfaReg = static_cast<unsigned>(r.uleb());
          row.cfaOffset = r.sleb() * cie.dataAlign;
          row.cfaDeref = row.cfaOther = false;
          break;
        case 0x13:  // def_cfa_offset_sf
          row.cfaOffset = r.sleb() * cie.dataAlign;
          row.cfaOther = row.cfaOther || row.cfaDeref;
          break;
        case 0x14:                                                     // val_offset
        case 0x15: {                                                   // val_offset_sf
          const uint64_t reg = r.uleb();
          if (op == 0x14) r.uleb();
          else r.sleb();
          setRule(reg, {RegRule::Other, 0});
          break;
        }
        case 0x16: {  // val_expression
          const uint64_t reg = r.uleb();
          const uint64_t len = r.uleb();
          if (!r.has(len)) return false;
          r.p += len;
          setRule(reg, {RegRule::Other, 0});
          break;
        }
        case 0x2e: r.uleb(); break;  // GNU_args_size
        case 0x2f: {                 // GNU_negative_offset_extended
          const uint64_t reg = r.uleb();
          setRule(reg, {RegRule::Offset, -static_cast<int64_t>(r.uleb()) * cie.dataAlign});
          break;
        }
        default:
          return false;
      }
    }
    if (!r.ok) return false;
    if (advance != 0) {
      if (loc + advance > pc) return true;
      loc += advance;
    }
  }
  return r.ok;
}

// An FDE read: its CIE, the code range it covers, and where its own instructions and its record
// end.
struct Fde {
  Cie cie;
  uint64_t pcBegin = 0, pcRange = 0;
  Reader instructions{nullptr, nullptr};
  const uint8_t* mapStart = nullptr;
  const uint8_t* mapEnd = nullptr;
};

// Reads the FDE at `fde` of an object mapped at [mapStart, mapEnd).
bool readFde(const uint8_t* fde, const uint8_t* mapStart, const uint8_t* mapEnd, Fde& out) {
  if (fde < mapStart || fde >= mapEnd) return false;
  Reader f{fde, mapEnd};
  const uint32_t length = f.fixed<uint32_t>();
  if (!f.ok || length == 0 || length == 0xffffffffu || length > static_cast<std::size_t>(mapEnd - f.p)) return false;
  f.end = f.p + length;
  const uint8_t* ciePointerAt = f.p;
  const uint32_t ciePointer = f.fixed<uint32_t>();
  if (ciePointer == 0 || ciePointer > static_cast<uint64_t>(ciePointerAt - mapStart)) return false;
  if (!parseCie(ciePointerAt - ciePointer, mapEnd, out.cie)) return false;
  out.pcBegin = f.encoded(out.cie.fdeEncoding, 0);
  out.pcRange = f.encoded(static_cast<uint8_t>(out.cie.fdeEncoding & 0x0f), 0);
  if (!f.ok) return false;
  if (out.cie.augmented) {
    const uint64_t augLen = f.uleb();
    if (!f.has(augLen)) return false;
    f.p += augLen;
  }
  out.instructions = f;
  out.mapStart = mapStart;
  out.mapEnd = mapEnd;
  return true;
}

// The FDE covering code address `lookup`, found through its object's .eh_frame_hdr table.
// kNoObject when no loaded object holds the address, kUnsupported when it has no FDE or an
// unreadable one, else kFrame.
uint64_t findFde(FindObject findObject, uint64_t lookup, Fde& out) {
  struct dl_find_object obj;
  if (findObject(reinterpret_cast<void*>(lookup), &obj) != 0) return kNoObject;
  if (obj.dlfo_eh_frame == nullptr) return kUnsupported;
  const auto* mapEnd = static_cast<const uint8_t*>(obj.dlfo_map_end);
  const auto* hdr = static_cast<const uint8_t*>(obj.dlfo_eh_frame);
  if (hdr >= mapEnd) return kUnsupported;
  Reader r{hdr, mapEnd};
  const uint8_t version = r.fixed<uint8_t>();
  const uint8_t framePtrEnc = r.fixed<uint8_t>();
  const uint8_t countEnc = r.fixed<uint8_t>();
  const uint8_t tableEnc = r.fixed<uint8_t>();
  const auto base = reinterpret_cast<uint64_t>(hdr);
  r.encoded(framePtrEnc, base);
  const uint64_t count = r.encoded(countEnc, base);
  // The binary-search table as every linker writes it: (pc, fde) pairs of datarel sdata4.
  if (!r.ok || version != 1 || tableEnc != 0x3b || count == 0 || !r.has(count * 8)) return kUnsupported;
  const uint8_t* table = r.p;
  auto entry = [&](uint64_t i, int which) {
    int32_t v;
    memcpy(&v, table + i * 8 + static_cast<uint64_t>(which) * 4, 4);
    return base + static_cast<uint64_t>(static_cast<int64_t>(v));
  };
  uint64_t lo = 0, hi = count;  // last entry whose pc <= lookup
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (entry(mid, 0) <= lookup) lo = mid;
    else hi = mid;
  }
  if (entry(lo, 0) > lookup) return kUnsupported;
  const auto* fde = reinterpret_cast<const uint8_t*>(entry(lo, 1));
  if (!readFde(fde, static_cast<const uint8_t*>(obj.dlfo_map_start), mapEnd, out)) return kUnsupported;
  if (lookup < out.pcBegin || lookup - out.pcBegin >= out.pcRange) return kUnsupported;
  return kFrame;
}

// The row of `fde`'s CFA program at `pc`.
bool rowAt(const Fde& fde, uint64_t pc, Row& row) {
  // A return address the CIE does not describe is unknown, not the end of the stack: only an
  // explicit DW_CFA_undefined (as _start and clone3 have) marks the outermost frame.
  row = Row{};
  row.ra = {RegRule::Other, 0};
  if (!runCfa(Reader{fde.cie.instructions, fde.cie.end}, fde.cie, fde.pcBegin, UINT64_MAX, row, row)) return false;
  const Row initial = row;
  return runCfa(fde.instructions, fde.cie, fde.pcBegin, pc, initial, row);
}

// The rule for code address `pc` (`lookup` is pc, or pc - 1 for a return address, so that a
// call ending a function finds that function).
uint64_t computeRule(uint64_t lookup) {
  Fde fde;
  const uint64_t found = findFde(g_findObject, lookup, fde);
  if (found != kFrame) return found;
  Row row;
  if (fde.cie.signalFrame || !rowAt(fde, lookup, row)) return kUnsupported;

  if (row.ra.type == RegRule::Undefined) return kOutermost;
  if (row.cfaOther || (row.cfaReg != kRsp && row.cfaReg != kRbp)) return kUnsupported;
  if (row.ra.type != RegRule::Offset || row.ra.offset != -8) return kUnsupported;
  const bool rbpSaved = row.rbp.type == RegRule::Offset || row.rbp.type == RegRule::AtRbp;
  if (!rbpSaved && row.rbp.type != RegRule::Same) return kUnsupported;
  if (row.cfaOffset < INT32_MIN || row.cfaOffset > INT32_MAX) return kUnsupported;
  if (rbpSaved && (row.rbp.offset < INT16_MIN || row.rbp.offset > INT16_MAX)) return kUnsupported;
  return packRule(row.cfaReg == kRbp, row.cfaDeref, row.cfaOffset, rbpSaved, row.rbp.type == RegRule::AtRbp,
                  row.rbp.offset);
}

// The rule for return address `pc` in code no loaded object holds (a JIT's; CPython's `-X perf`
// trampolines), where the instructions there are an epilogue that fixes the frame exactly:
// `pop %rbp; ret` (the CFA 16 above rsp, rbp saved just below the return address: each of those
// trampolines), `leave; ret` (the same from rbp) or `ret`. Read with process_vm_readv, which
// fails where nothing is mapped instead of faulting: a wrong return address may point anywhere.
// kNoObject for anything else (the walk then gives up, as before).
uint64_t anonymousRule(uint64_t pc) {
  unsigned char code[2];
  iovec local{code, sizeof code}, remote{reinterpret_cast<void*>(pc), sizeof code};
  const ssize_t n = process_vm_readv(static_cast<pid_t>(syscall(SYS_getpid)), &local, 1, &remote, 1, 0);
  if (n >= 1 && code[0] == 0xc3) return packRule(false, false, 8, false, false, 0);
  if (n != 2 || code[1] != 0xc3) return kNoObject;
  if (code[0] == 0x5d) return packRule(false, false, 16, true, false, -16);
  if (code[0] == 0xc9) return packRule(true, false, 16, true, false, -16);
  return kNoObject;
}

// noteDeadEnd()'s set: open addressing by code address, slots claimed by CAS, never emptied.
constexpr std::size_t kDeadEnds = 256;
constexpr int kDeadEndProbes = 8;
std::atomic<uint64_t> g_deadEnds[kDeadEnds];

std::size_t deadEndSlot(uint64_t pc, int probe) {
  return static_cast<std::size_t>(((pc * 0x9e3779b97f4a7c15ull) >> 56) + static_cast<uint64_t>(probe)) % kDeadEnds;
}

bool isDeadEnd(uint64_t pc) {
  for (int i = 0; i < kDeadEndProbes; ++i) {
    const uint64_t at = g_deadEnds[deadEndSlot(pc, i)].load(std::memory_order_relaxed);
    if (at == pc) return true;
    if (at == 0) return false;
  }
  return false;
}

uint64_t ruleFor(uint64_t pc, uint64_t lookup) {
  uint64_t rule = cachedRule(pc);
  if (__builtin_expect(rule == kEmpty, 0)) {
    rule = computeRule(lookup);
    if (rule == kNoObject && lookup != pc) rule = anonymousRule(pc);
    if (rule != kNoObject) cacheRule(pc, rule);
  }
  return rule;
}

}  // namespace

bool initialize() {
  if (g_cache != nullptr) return true;
  g_findObject = reinterpret_cast<FindObject>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  if (g_findObject == nullptr) return false;
  void* mem = mmap(nullptr, kCacheSize * sizeof(Entry), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  g_cache = static_cast<Entry*>(mem);  // zero pages: every entry empty
  return true;
}

uint64_t rulesCached() { return g_cached.load(std::memory_order_relaxed); }

void noteDeadEnd(uint64_t pc) {
  for (int i = 0; i < kDeadEndProbes && pc != 0; ++i) {
    uint64_t expected = 0;
    auto& slot = g_deadEnds[deadEndSlot(pc, i)];
    if (slot.compare_exchange_strong(expected, pc, std::memory_order_relaxed) || expected == pc) return;
  }
}

bool splitPartOf(uint64_t pc, uint64_t& begin, uint64_t& end) {
  // Its own lookup: the symbolizer names frames whichever unwinder took them.
  static const auto findObject = reinterpret_cast<FindObject>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  Fde fde, next;
  if (findObject == nullptr || findFde(findObject, pc, fde) != kFrame) return false;
  const uint8_t* after = fde.instructions.end;  // the next record: a CIE, an FDE or the terminator
  if (!readFde(after, fde.mapStart, fde.mapEnd, next) || next.pcRange == 0) return false;
  // A part split off is entered by a jump from inside its function, in the middle of its frame;
  // a function (the next one of the compilation unit, wherever the linker put it) is entered by
  // a call: the return address just pushed, the CFA at rsp + 8.
  Row entry;
  if (!rowAt(next, next.pcBegin, entry)) return false;
  if (entry.cfaReg == kRsp && entry.cfaOffset == 8 && !entry.cfaDeref && !entry.cfaOther &&
      entry.rbp.type == RegRule::Same)
    return false;
  begin = next.pcBegin;
  end = next.pcBegin + next.pcRange;
  return true;
}

namespace {

// The walk from frame (pc, sp, bp); `lo`: the walking function's own rsp, below which nothing
// is read. Reads other frames of the thread's stack: not instrumented, since those words lie in
// frames (and, under ASan, redzones) that the walking function does not own.
// Not replayed (replay() first where it may be).
__attribute__((always_inline, no_sanitize_address)) inline int walk(uint64_t pc, uint64_t sp, uint64_t bp, uint64_t lo,
                                                                   uint64_t* out, int max, uintptr_t stackHi,
                                                                   ThreadMemo& memo) {
  memo.replayed = false;
  memo.stoppedAt = 0;
  const int before = memo.lastCount;
  memo.lastCount = 0;
  memo.repeated = false;
  memo.replayable = false;
  if (stackHi <= lo || sp < lo || max <= 0) return -1;
  const uint64_t startPc = pc, startSp = sp, startBp = bp;
  // The words the walk's result depends on, for the replay (past kReads, counted only: the walk
  // is then not replayable). A saved rbp counts only once a rule uses rbp (useBp): compiled
  // without frame pointers most frames save rbp and never use it, and the replay then compares
  // one word per frame.
  int reads = 0;
  auto record = [&](uint64_t at, uint64_t value) {
    if (reads < ThreadMemo::kReads) memo.read[reads] = {at, value};
    ++reads;
  };
  auto load = [&](uint64_t at) {
    const uint64_t value = *reinterpret_cast<const volatile uint64_t*>(at);
    record(at, value);
    return value;
  };
  uint64_t bpReadAt = 0;  // where the current rbp was read from, while no rule has used it
  auto loadBp = [&](uint64_t at) {
    bpReadAt = at;
    return *reinterpret_cast<const volatile uint64_t*>(at);
  };
  auto useBp = [&] {
    if (bpReadAt != 0) record(bpReadAt, bp);
    bpReadAt = 0;
  };
  // Every word read is an aligned word of this thread's stack: a wrong rule ends the walk.
  auto inStack = [&](uint64_t addr) { return addr >= lo && addr <= stackHi - 8 && (addr & 7) == 0; };
  // The frames walked from the memo: all of them, and as many as the walk before, repeat it.
  int hits = 0;
  auto done = [&](int count) {
    memo.lastCount = count;
    memo.repeated = count == before && hits == count;
    if (reads <= ThreadMemo::kReads && count <= ThreadMemo::kDepth) {
      memo.replayable = true;
      memo.max = max;
      memo.reads = reads;
      memo.pc = startPc;
      memo.sp = startSp;
      memo.bp = startBp;
      memo.lo = lo;
      memo.hi = stackHi;
      for (int k = 0; k < count; ++k) memo.pcs[k] = out[k];
    }
    return count;
  };
  int n = 0;
  while (n < max) {
    if (n < ThreadMemo::kDepth) {
      const ThreadMemo::Frame& f = memo.frame[n];
      if (f.pc == pc && f.sp == sp && f.bp == bp) {
        out[n++] = pc;
        ++hits;
        if (f.usesBp) useBp();
        uint64_t cfa = f.cfa;
        if (__builtin_expect(f.cfaAt != 0, 0)) {
          // Read afresh, so checked as the full walk checks it (cfa - 8 is then inside the stack).
          cfa = load(f.cfaAt);
          if (cfa <= sp || cfa > stackHi || (cfa & 7) != 0) return -1;
        } else if (cfa == 0) {
          return done(n);
        }
        const uint64_t ra = load(cfa - 8);
        if (f.bpAt != 0) bp = loadBp(f.bpAt);
        sp = cfa;
        if (ra == 0) return done(n);
        pc = ra;
        continue;
      }
    }
    // A return address is looked up one byte back: the call may be the function's last
    // instruction, and pc itself then belongs to the next function. Frame 0 is no return
    // address (and the memo keeps depths apart, so it never lends its rule to one).
    uint64_t rule = ruleFor(pc, n == 0 ? pc : pc - 1);
    if (__builtin_expect(rule == kNoObject, 0) && n > 0) {
      // Code in no object that no epilogue fixes (a JIT's). A dead end (noteDeadEnd) ends the
      // stack, as libunwind's did. Else, as libunwind does there, one frame-pointer step (the CFA
      // 16 above rbp, rbp saved below the return address), taken only where the return address it
      // finds lies in code a rule covers. Else the walk gives up, saying where.
      uint64_t next = kUnsupported;
      if (isDeadEnd(pc)) {
        rule = kOutermost;
      } else if (inStack(bp) && bp >= sp && inStack(bp + 8)) {
        const uint64_t ra = load(bp + 8);
        if (ra > 1) next = ruleFor(ra, ra - 1) & 3;
      }
      if (next == kFrame || next == kOutermost) rule = packRule(true, false, 16, true, false, -16);
      else if (rule == kNoObject) memo.stoppedAt = pc;
    }
    const uint64_t kind = rule & 3;
    out[n] = pc;
    if (kind == kOutermost) {
      if (n < ThreadMemo::kDepth) memo.frame[n] = {pc, sp, bp, 0, 0, 0, false};
      return done(n + 1);
    }
    if (kind != kFrame) return -1;
    const bool usesBp = (rule & (kCfaRbp | kRbpAtRbp)) != 0;
    if (usesBp) useBp();
    uint64_t cfa = ((rule & kCfaRbp) ? bp : sp) + static_cast<uint64_t>(cfaOffsetOf(rule));
    uint64_t cfaAt = 0;
    if (rule & kCfaDeref) {
      if (!inStack(cfa)) return -1;
      cfaAt = cfa;
      cfa = load(cfa);
    }
    if (cfa <= sp || cfa > stackHi || !inStack(cfa - 8)) return -1;
    const uint64_t ra = load(cfa - 8);
    uint64_t bpAt = 0;
    if (rule & kRbpSaved) {
      bpAt = ((rule & kRbpAtRbp) ? bp : cfa) + static_cast<uint64_t>(rbpOffsetOf(rule));
      if (!inStack(bpAt)) return -1;
    }
    // A CFA read from the stack may differ next time, and so would an rbp saved relative to it.
    if (n < ThreadMemo::kDepth && !(cfaAt != 0 && (rule & kRbpSaved) && !(rule & kRbpAtRbp)))
      memo.frame[n] = {pc, sp, bp, cfa, cfaAt, bpAt, usesBp};
    ++n;
    if (bpAt != 0) bp = loadBp(bpAt);
    sp = cfa;
    if (ra == 0) return done(n);  // some thread entry points end the chain with a null return address
    pc = ra;
  }
  return done(n);
}

}  // namespace

__attribute__((noinline, no_sanitize_address)) int backtrace(uint64_t* out, int max, uintptr_t stackHi,
                                                            ThreadMemo& memo) {
  const WalkStart here = walkStart();
  const int n = replay(here, here.sp, out, max, stackHi, memo, true);
  return n >= 0 ? n : walk(here.pc, here.sp, here.bp, here.sp, out, max, stackHi, memo);
}

__attribute__((noinline, no_sanitize_address)) int walkFrom(const WalkStart& from, uint64_t lo, uint64_t* out, int max,
                                                           uintptr_t stackHi, ThreadMemo& memo) {
  return walk(from.pc, from.sp, from.bp, lo, out, max, stackHi, memo);
}

}  // namespace cutrace::dwarf
