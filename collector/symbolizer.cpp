#include "collector/symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "collector/dwarf_unwind.h"
#include "collector/private_files.h"

namespace cutrace {

struct Symbolizer::ElfSymbols {
  struct Symbol {
    uint64_t value;
    uint64_t size;
    const char* name;  // into the mapped file
  };
  void* map = nullptr;
  std::size_t mapSize = 0;
  std::vector<Symbol> symbols;  // sorted by value

  ~ElfSymbols() {
    if (map != nullptr) munmap(map, mapSize);
  }

  // Reads the function symbols of an ELF file; every offset is checked against the file size,
  // so a truncated or hostile file yields fewer symbols, never a bad read.
  void load(const std::string& path) {
    privateFiles::run([&] {
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;
      struct stat st {};
      if (fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr))) {
        mapSize = static_cast<std::size_t>(st.st_size);
        map = mmap(nullptr, mapSize, PROT_READ, MAP_PRIVATE, fd, 0);
      }
      close(fd);
    });
    if (map == MAP_FAILED) map = nullptr;
    if (map == nullptr) return;
    const auto* base = static_cast<const unsigned char*>(map);
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) return;
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff == 0 ||
        eh->e_shoff + uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) > mapSize)
      return;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    // .symtab has everything .dynsym has plus local functions; read .dynsym only without it.
    bool haveSymtab = false;
    for (unsigned i = 0; i < eh->e_shnum; ++i) haveSymtab |= sh[i].sh_type == SHT_SYMTAB;
    for (unsigned i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type != (haveSymtab ? SHT_SYMTAB : SHT_DYNSYM)) continue;
      if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym)) continue;
      const Elf64_Shdr& strtab = sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > mapSize || strtab.sh_offset + strtab.sh_size > mapSize) continue;
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
      const std::size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
      const char* strings = reinterpret_cast<const char*>(base + strtab.sh_offset);
      for (std::size_t k = 0; k < count; ++k) {
        const Elf64_Sym& s = syms[k];
        const unsigned type = ELF64_ST_TYPE(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
        if (s.st_name >= strtab.sh_size) continue;
        const char* name = strings + s.st_name;
        if (memchr(name, '\0', strtab.sh_size - s.st_name) == nullptr || *name == '\0') continue;
        symbols.push_back({s.st_value, s.st_size, name});
      }
    }
    // Aliases share an address: prefer a sized, global-looking name (fewest leading '_').
    std::sort(symbols.begin(), symbols.end(), [](const Symbol& a, const Symbol& b) {
      if (a.value != b.value) return a.value < b.value;
      if ((a.size != 0) != (b.size != 0)) return a.size != 0;
      return std::strspn(a.name, "_") < std::strspn(b.name, "_");
    });
    symbols.erase(std::unique(symbols.begin(), symbols.end(),
                              [](const Symbol& a, const Symbol& b) { return a.value == b.value; }),
                  symbols.end());
  }

  // Names the part split off `function` (dwarf::splitPartOf) when no symbol covers it; the
  // object is loaded at `bias`.
  void nameSplitPart(const char* function, const char* partName, uint64_t bias) {
    auto it = std::find_if(symbols.begin(), symbols.end(), [&](const Symbol& s) { return std::strcmp(s.name, function) == 0; });
    uint64_t begin = 0, end = 0;
    if (it == symbols.end() || !dwarf::splitPartOf(bias + it->value, begin, end) || begin < bias) return;
    const Symbol part{begin - bias, end - begin, partName};
    if (find(part.value) != nullptr) return;  // a full symbol table names it already (".cold")
    symbols.insert(std::upper_bound(symbols.begin(), symbols.end(), part.value,
                                    [](uint64_t v, const Symbol& s) { return v < s.value; }),
                   part);
  }

  const Symbol* find(uint64_t value) const {
    auto it = std::upper_bound(symbols.begin(), symbols.end(), value,
                               [](uint64_t v, const Symbol& s) { return v < s.value; });
    if (it == symbols.begin()) return nullptr;
    --it;
    // An unsized symbol (hand-written assembly) covers up to the next one.
    if (it->size != 0 && value >= it->value + it->size) return nullptr;
    return &*it;
  }
};

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

namespace {

std::string executablePath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

bool isPythonEvalLoop(const std::string& name) {
  const std::size_t n = std::strlen(kPythonEvalLoop);
  return name.compare(0, n, kPythonEvalLoop) == 0 && (name.size() == n || name[n] == '.');
}

std::string demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    free(out);
    return name;
  }
  std::string result(out);
  free(out);
  return result;
}

namespace {

// The length of a name the loader owns, read without ThreadSanitizer's instrumentation.
// dl_iterate_phdr holds the loader's lock, so the name cannot change under us, but TSan does not
// see that lock: its dl_iterate_phdr interceptor clears the shadow of dlpi_name's characters and
// not of its terminating zero, so the strlen interceptor reported a race with the malloc of a
// library dlopen'ed on another thread whenever the path's length was a multiple of 8 (CI's path
// to the stand-in libcuda.so.1 is 56 bytes).
__attribute__((no_sanitize_thread)) std::size_t loaderStringLength(const char* s) {
  const volatile char* p = s;
  std::size_t n = 0;
  while (p[n] != '\0') ++n;
  return n;
}

}  // namespace

void Symbolizer::refreshModules() {
  std::vector<Module> found;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, std::size_t, void* data) {
        Module m;
        m.bias = info->dlpi_addr;
        m.begin = UINT64_MAX;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          m.begin = std::min<uint64_t>(m.begin, info->dlpi_addr + ph.p_vaddr);
          m.end = std::max<uint64_t>(m.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (m.begin == UINT64_MAX) return 0;
        if (info->dlpi_name != nullptr) m.path.assign(info->dlpi_name, loaderStringLength(info->dlpi_name));
        static_cast<std::vector<Module>*>(data)->push_back(std::move(m));
        return 0;
      },
      &found);
  // The first entry dl_iterate_phdr reports is the main program, whose name it leaves empty.
  if (!found.empty() && found.front().path.empty()) found.front().path = executablePath();
  for (Module& m : found) {
    const std::size_t slash = m.path.rfind('/');
    m.shortName = slash == std::string::npos ? m.path : m.path.substr(slash + 1);
    if (m.shortName.empty()) m.shortName = "[vdso]";
  }
  std::sort(found.begin(), found.end(), [](const Module& a, const Module& b) { return a.begin < b.begin; });
  modules_ = std::move(found);
}

Symbolizer::Module* Symbolizer::moduleOf(uint64_t pc) {
  auto lookup = [&]() -> Module* {
    auto it = std::upper_bound(modules_.begin(), modules_.end(), pc,
                               [](uint64_t v, const Module& m) { return v < m.begin; });
    if (it == modules_.begin()) return nullptr;
    --it;
    return pc < it->end ? &*it : nullptr;
  };
  Module* m = lookup();
  if (m == nullptr) {
    refreshModules();
    m = lookup();
  }
  return m;
}

const std::string& Symbolizer::frameName(uint64_t returnAddress) {
  auto cached = cache_.find(returnAddress);
  if (cached != cache_.end()) return cached->second;
  // A return address points after the call; the call itself is the byte before it.
  const uint64_t pc = returnAddress - 1;
  std::string name = "[unknown]";
  if (Module* m = moduleOf(pc)) {
    if (!m->symbols && !m->path.empty() && m->path[0] == '/') {
      auto& file = files_[m->path];
      if (!file) {
        file = std::make_shared<ElfSymbols>();
        file->load(m->path);
        // A profile-guided CPython build (Debian's, Ubuntu's) runs most of its eval loop in the
        // part split off it, and a stripped one names nothing there: the Python frames of a stack
        // would have no native frame to go under (isPythonEvalLoop).
        file->nameSplitPart(kPythonEvalLoop, kPythonEvalLoopPart, m->bias);
      }
      m->symbols = file;
    }
    const ElfSymbols::Symbol* s = m->symbols ? m->symbols->find(pc - m->bias) : nullptr;
    if (s != nullptr) {
      name = demangle(s->name);
    } else {
      char off[32];
      snprintf(off, sizeof(off), "+0x%llx", static_cast<unsigned long long>(pc - m->bias));
      name = m->shortName + off;
    }
  }
  return cache_.emplace(returnAddress, std::move(name)).first->second;
}

}  // namespace cutrace
