#include "collector/loaded_symbols.h"

#include <cstdint>
#include <cstring>

namespace cutrace {
namespace {

struct Tables {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* gnuHash = nullptr;
  const uint32_t* sysvHash = nullptr;
  const ElfW(Half)* versym = nullptr;
};

// The loader rewrites the address entries of a writable dynamic section to run-time addresses
// and leaves those of a read-only one as they are in the file (offsets from the load base); an
// offset is below the base of any object loaded above address 0.
const void* address(const struct link_map* lm, ElfW(Addr) value) {
  return reinterpret_cast<const void*>(lm->l_addr != 0 && value < lm->l_addr ? value + lm->l_addr : value);
}

Tables tablesOf(const struct link_map* lm) {
  Tables t;
  if (lm == nullptr || lm->l_ld == nullptr) return t;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: t.symtab = static_cast<const ElfW(Sym)*>(address(lm, d->d_un.d_ptr)); break;
      case DT_STRTAB: t.strtab = static_cast<const char*>(address(lm, d->d_un.d_ptr)); break;
      case DT_GNU_HASH: t.gnuHash = static_cast<const uint32_t*>(address(lm, d->d_un.d_ptr)); break;
      case DT_HASH: t.sysvHash = static_cast<const uint32_t*>(address(lm, d->d_un.d_ptr)); break;
      case DT_VERSYM: t.versym = static_cast<const ElfW(Half)*>(address(lm, d->d_un.d_ptr)); break;
      default: break;
    }
  }
  return t;
}

// Symbol `index` is `name`, defined here, in its default version.
void* match(const struct link_map* lm, const Tables& t, uint32_t index, const char* name) {
  const ElfW(Sym)& s = t.symtab[index];
  if (s.st_shndx == SHN_UNDEF || s.st_value == 0) return nullptr;
  const unsigned type = ELF64_ST_TYPE(s.st_info);
  if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE) return nullptr;
  if (ELF64_ST_BIND(s.st_info) == STB_LOCAL) return nullptr;
  if (t.versym != nullptr && (t.versym[index] & 0x8000) != 0) return nullptr;  // hidden version
  if (strcmp(t.strtab + s.st_name, name) != 0) return nullptr;
  return reinterpret_cast<void*>(lm->l_addr + s.st_value);
}

void* gnuLookup(const struct link_map* lm, const Tables& t, const char* name) {
  uint32_t hash = 5381;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c != 0; ++c) hash = hash * 33 + *c;
  const uint32_t buckets = t.gnuHash[0], symOffset = t.gnuHash[1], bloomWords = t.gnuHash[2], shift = t.gnuHash[3];
  if (buckets == 0 || bloomWords == 0) return nullptr;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(t.gnuHash + 4);
  constexpr unsigned kBits = sizeof(ElfW(Addr)) * 8;
  const ElfW(Addr) word = bloom[(hash / kBits) & (bloomWords - 1)];
  const ElfW(Addr) mask = (ElfW(Addr){1} << (hash % kBits)) | (ElfW(Addr){1} << ((hash >> shift) % kBits));
  if ((word & mask) != mask) return nullptr;
  const auto* bucket = reinterpret_cast<const uint32_t*>(bloom + bloomWords);
  const uint32_t* chain = bucket + buckets;
  uint32_t index = bucket[hash % buckets];
  if (index < symOffset) return nullptr;
  for (;; ++index) {
    const uint32_t h = chain[index - symOffset];
    if ((h | 1) == (hash | 1))
      if (void* p = match(lm, t, index, name)) return p;
    if (h & 1) return nullptr;  // the end of this bucket's chain
  }
}

void* sysvLookup(const struct link_map* lm, const Tables& t, const char* name) {
  uint32_t hash = 0;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c != 0; ++c) {
    hash = (hash << 4) + *c;
    const uint32_t g = hash & 0xf0000000u;
    if (g != 0) hash ^= g >> 24;
    hash &= ~g;
  }
  const uint32_t buckets = t.sysvHash[0], chains = t.sysvHash[1];
  if (buckets == 0) return nullptr;
  const uint32_t* bucket = t.sysvHash + 2;
  const uint32_t* chain = bucket + buckets;
  // Bounded by the chain count, so a damaged table cannot loop.
  uint32_t steps = 0;
  for (uint32_t index = bucket[hash % buckets]; index != 0 && index < chains && steps++ < chains; index = chain[index])
    if (void* p = match(lm, t, index, name)) return p;
  return nullptr;
}

}  // namespace

void* definedSymbol(const struct link_map* lm, const char* name) {
  const Tables t = tablesOf(lm);
  if (t.symtab == nullptr || t.strtab == nullptr || name == nullptr) return nullptr;
  if (t.gnuHash != nullptr) return gnuLookup(lm, t, name);
  if (t.sysvHash != nullptr) return sysvLookup(lm, t, name);
  return nullptr;
}

}  // namespace cutrace
