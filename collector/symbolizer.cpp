#include "collector/symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <string_view>
#include <tuple>
#include <cstdlib>
#include <cstring>

#include "collector/dwarf_unwind.h"
#include "collector/private_files.h"

namespace cutrace {

namespace {

// CRC-32 as .gnu_debuglink records a debug file's (the IEEE polynomial, reflected: zlib's crc32).
uint32_t crc32(const unsigned char* p, std::size_t n) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

// An ELF64 image: a file mapped read-only, or bytes in memory (a MiniDebugInfo section
// decompressed). Every offset read from it is checked against its size, so a truncated or
// hostile image yields less, never a bad read.
class ElfFile {
 public:
  ElfFile() = default;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ElfFile(ElfFile&& o) noexcept { *this = std::move(o); }
  ElfFile& operator=(ElfFile&& o) noexcept {
    std::swap(map_, o.map_);
    std::swap(heap_, o.heap_);
    std::swap(base_, o.base_);
    std::swap(size_, o.size_);
    std::swap(sections_, o.sections_);
    std::swap(count_, o.count_);
    std::swap(names_, o.names_);
    return *this;
  }
  ~ElfFile() {
    if (map_ != nullptr) munmap(map_, size_);
  }

  // False where `path` is no regular file, or no ELF64 file with section headers.
  bool open(const std::string& path) {
    void* map = nullptr;
    std::size_t size = 0;
    // O_NONBLOCK: a FIFO where a debug file is looked for must not hang the drain.
    privateFiles::run([&] {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) return;
      struct stat st {};
      if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr))) {
        size = static_cast<std::size_t>(st.st_size);
        map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      }
      ::close(fd);
    });
    if (map == nullptr || map == MAP_FAILED) return false;
    *this = ElfFile();
    map_ = map;
    return parse(static_cast<const unsigned char*>(map), size);
  }
  // The same from bytes it keeps.
  bool adopt(std::unique_ptr<unsigned char[]> bytes, std::size_t size) {
    *this = ElfFile();
    heap_ = std::move(bytes);
    return parse(heap_.get(), size);
  }

  const unsigned char* base() const { return base_; }
  std::size_t size() const { return size_; }
  const Elf64_Shdr* sections() const { return sections_; }
  unsigned count() const { return count_; }
  bool has(uint32_t type) const {
    for (unsigned i = 0; i < count_; ++i)
      if (sections_[i].sh_type == type) return true;
    return false;
  }
  // The section named `name`, or nullptr.
  const Elf64_Shdr* section(std::string_view name) const {
    for (unsigned i = 0; i < count_; ++i) {
      if (sections_[i].sh_name >= names_.size()) continue;
      const std::string_view at = names_.substr(sections_[i].sh_name);
      if (at.size() > name.size() && at.compare(0, name.size(), name) == 0 && at[name.size()] == '\0') return &sections_[i];
    }
    return nullptr;
  }
  // A section's bytes in the file; empty where it has none there (NOBITS, a debug file's code).
  std::string_view bytes(const Elf64_Shdr& s) const {
    if (s.sh_type == SHT_NOBITS || s.sh_offset > size_ || s.sh_size > size_ - s.sh_offset) return {};
    return {reinterpret_cast<const char*>(base() + s.sh_offset), static_cast<std::size_t>(s.sh_size)};
  }

  // The linker's build id (NT_GNU_BUILD_ID), or empty.
  std::string_view buildId() const {
    for (unsigned i = 0; i < count_; ++i) {
      if (sections_[i].sh_type != SHT_NOTE) continue;
      std::string_view notes = bytes(sections_[i]);
      while (notes.size() >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr n;
        memcpy(&n, notes.data(), sizeof(n));
        const std::size_t name = (uint64_t{n.n_namesz} + 3) & ~uint64_t{3}, desc = (uint64_t{n.n_descsz} + 3) & ~uint64_t{3};
        if (name > notes.size() - sizeof(n) || desc > notes.size() - sizeof(n) - name) break;
        if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && memcmp(notes.data() + sizeof(n), "GNU", 4) == 0 &&
            n.n_descsz != 0 && n.n_descsz <= 64)
          return notes.substr(sizeof(n) + name, n.n_descsz);
        notes.remove_prefix(sizeof(n) + name + desc);
      }
    }
    return {};
  }

  // .gnu_debuglink: the debug file's name (no directory) and the CRC-32 of its bytes.
  bool debugLink(std::string_view& name, uint32_t& crc) const {
    const Elf64_Shdr* s = section(".gnu_debuglink");
    if (s == nullptr) return false;
    const std::string_view link = bytes(*s);
    const std::size_t end = link.find('\0');
    const std::size_t crcAt = (end + 4) & ~std::size_t{3};
    if (end == 0 || end == std::string_view::npos || end > 255 || crcAt + 4 > link.size()) return false;
    name = link.substr(0, end);
    if (name.find('/') != std::string_view::npos || name == "." || name == "..") return false;
    memcpy(&crc, link.data() + crcAt, 4);
    return true;
  }

 private:
  bool parse(const unsigned char* base, std::size_t size) {
    base_ = base;
    size_ = size;
    if (size < sizeof(Elf64_Ehdr)) return false;
    Elf64_Ehdr eh;
    memcpy(&eh, base, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return false;
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0 || eh.e_shoff > size || eh.e_shoff % 8 != 0 ||
        uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > size - eh.e_shoff)
      return false;
    sections_ = reinterpret_cast<const Elf64_Shdr*>(base + eh.e_shoff);
    count_ = eh.e_shnum;
    if (eh.e_shstrndx < count_) names_ = bytes(sections_[eh.e_shstrndx]);
    return true;
  }

  void* map_ = nullptr;  // what open() mapped (base_), or nothing
  std::unique_ptr<unsigned char[]> heap_;  // what adopt() took (base_), or nothing
  const unsigned char* base_ = nullptr;
  std::size_t size_ = 0;
  const Elf64_Shdr* sections_ = nullptr;
  unsigned count_ = 0;
  std::string_view names_;  // section names
};

// liblzma's one-call decoder (lzma.h; liblzma.so.5's ABI), loaded by Symbolizer::prepare(): a link
// dependency of the preload would be the program's too.
using LzmaStreamBufferDecode = int (*)(uint64_t* memlimit, uint32_t flags, const void* allocator, const uint8_t* in,
                                       std::size_t* inPos, std::size_t inSize, uint8_t* out, std::size_t* outPos,
                                       std::size_t outSize);
constexpr int kLzmaOk = 0, kLzmaBufError = 10;

std::atomic<LzmaStreamBufferDecode> g_lzmaDecode{nullptr};  // Symbolizer::prepare()

// The ELF image in `file`'s .gnu_debugdata (MiniDebugInfo, as Fedora and RHEL ship every binary:
// an xz-compressed ELF whose .symtab holds the functions .dynsym does not), or an empty one.
ElfFile miniDebugInfoOf(const ElfFile& file) {
  ElfFile mini;
  const Elf64_Shdr* s = file.section(".gnu_debugdata");
  const std::string_view packed = s != nullptr ? file.bytes(*s) : std::string_view();
  const LzmaStreamBufferDecode decode = packed.empty() ? nullptr : g_lzmaDecode.load(std::memory_order_acquire);
  if (decode == nullptr) return mini;
  // Its size is known only once decoded: room grows until it fits, up to a bound.
  constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
  for (std::size_t room = std::max<std::size_t>(packed.size() * 8, 1 << 16); room <= kMaxBytes; room *= 2) {
    auto out = std::make_unique<unsigned char[]>(room);
    uint64_t memlimit = kMaxBytes;
    std::size_t inPos = 0, outPos = 0;
    const int rc = decode(&memlimit, 0, nullptr, reinterpret_cast<const uint8_t*>(packed.data()), &inPos, packed.size(),
                          out.get(), &outPos, room);
    if (rc == kLzmaOk) {
      if (!mini.adopt(std::move(out), outPos)) mini = ElfFile();
      return mini;
    }
    if (rc != kLzmaBufError) break;
  }
  return mini;
}

// The separate debug file of `file` (at `path`, which has no .symtab), as gdb finds one: by build
// id under each debug directory (.build-id/ab/cdef....debug), then by its .gnu_debuglink name
// beside it, in .debug/ beside it, and under each debug directory by its own directory. A
// candidate is taken only with a symbol table and the same build id (or, for a file with none,
// the debug link's CRC): a stale or foreign one would name every frame wrong.
ElfFile debugFileOf(const ElfFile& file, const std::string& path, const std::vector<std::string>& dirs) {
  const std::string_view id = file.buildId();
  std::string_view link;
  uint32_t crc = 0;
  const bool linked = file.debugLink(link, crc);
  std::vector<std::string> candidates;
  if (id.size() >= 2) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (const char c : id) {
      hex += kHex[static_cast<unsigned char>(c) >> 4];
      hex += kHex[static_cast<unsigned char>(c) & 15];
    }
    for (const std::string& dir : dirs) candidates.push_back(dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug");
  }
  if (linked) {
    const std::string here = path.substr(0, path.rfind('/'));
    candidates.push_back(here + "/" + std::string(link));
    candidates.push_back(here + "/.debug/" + std::string(link));
    for (const std::string& dir : dirs) candidates.push_back(dir + here + "/" + std::string(link));
  }
  for (const std::string& candidate : candidates) {
    if (candidate == path) continue;
    ElfFile debug;
    if (!debug.open(candidate) || !debug.has(SHT_SYMTAB)) continue;
    if (!id.empty() ? debug.buildId() == id : linked && crc32(debug.base(), debug.size()) == crc) return debug;
  }
  return ElfFile();
}

}  // namespace

struct Symbolizer::ElfSymbols {
  struct Symbol {
    uint64_t value;
    uint64_t size;
    const char* name;  // into the mapped file
    // Its rank among aliases (load), read once: exported over local, unversioned over versioned
    // (`memcpy@GLIBC_2.2.5`), then the fewest leading '_'.
    bool local, versioned;
    uint32_t underscores;
  };
  ElfFile file;  // the file the names are in: the object, or its separate debug file
  ElfFile mini;  // the object's MiniDebugInfo, decompressed, where names are in it too
  std::vector<Symbol> symbols;  // sorted by value

  // Reads the function symbols of the ELF file at `path`; where it has no .symtab of its own (a
  // stripped distribution binary), those of its separate debug file (found under `debugDirs`),
  // else those of .dynsym and of its MiniDebugInfo.
  void load(const std::string& path, const std::vector<std::string>& debugDirs) {
    if (!file.open(path)) return;
    if (!file.has(SHT_SYMTAB) && !debugDirs.empty())
      if (ElfFile debug = debugFileOf(file, path, debugDirs); debug.base() != nullptr) file = std::move(debug);
    // .symtab has everything .dynsym has plus local functions; read .dynsym only without it.
    if (file.has(SHT_SYMTAB)) {
      read(file, SHT_SYMTAB);
    } else {
      read(file, SHT_DYNSYM);
      mini = miniDebugInfoOf(file);
      read(mini, SHT_SYMTAB);
    }
    // Aliases share an address: prefer a sized one, then the name the object exports
    // (`__libc_start_main`, not a debug file's `__libc_start_main_impl`), then one without a
    // symbol version (`memcpy@GLIBC_2.2.5`), then the fewest leading '_'; then by name, so the
    // choice is the same every run.
    const auto rank = [](const Symbol& s) { return std::tuple(s.size == 0, s.local, s.versioned, s.underscores); };
    std::sort(symbols.begin(), symbols.end(), [&](const Symbol& a, const Symbol& b) {
      if (a.value != b.value) return a.value < b.value;
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return std::strcmp(a.name, b.name) < 0;
    });
    symbols.erase(std::unique(symbols.begin(), symbols.end(),
                              [](const Symbol& a, const Symbol& b) { return a.value == b.value; }),
                  symbols.end());
  }

  // Adds the function symbols of `elf`'s tables of `type`.
  void read(const ElfFile& elf, uint32_t type) {
    const Elf64_Shdr* sh = elf.sections();
    for (unsigned i = 0; i < elf.count(); ++i) {
      if (sh[i].sh_type != type || sh[i].sh_link >= elf.count() || sh[i].sh_entsize != sizeof(Elf64_Sym)) continue;
      const std::string_view entries = elf.bytes(sh[i]), strings = elf.bytes(sh[sh[i].sh_link]);
      const std::size_t count = entries.size() / sizeof(Elf64_Sym);
      for (std::size_t k = 0; k < count; ++k) {
        Elf64_Sym s;
        memcpy(&s, entries.data() + k * sizeof(Elf64_Sym), sizeof(s));
        const unsigned kind = ELF64_ST_TYPE(s.st_info);
        if ((kind != STT_FUNC && kind != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
        if (s.st_name >= strings.size()) continue;
        const char* name = strings.data() + s.st_name;
        if (memchr(name, '\0', strings.size() - s.st_name) == nullptr || *name == '\0') continue;
        symbols.push_back({s.st_value, s.st_size, name, ELF64_ST_BIND(s.st_info) == STB_LOCAL,
                           std::strchr(name, '@') != nullptr, static_cast<uint32_t>(std::strspn(name, "_"))});
      }
    }
  }

  // Names the part split off `function` (dwarf::splitPartOf) when no symbol covers it; the
  // object is loaded at `bias`.
  void nameSplitPart(const char* function, const char* partName, uint64_t bias) {
    auto it = std::find_if(symbols.begin(), symbols.end(), [&](const Symbol& s) { return std::strcmp(s.name, function) == 0; });
    uint64_t begin = 0, end = 0;
    if (it == symbols.end() || !dwarf::splitPartOf(bias + it->value, begin, end) || begin < bias) return;
    const Symbol part{begin - bias, end - begin, partName, true, false, 0};
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

void Symbolizer::prepare() {
  if (g_lzmaDecode.load(std::memory_order_acquire) != nullptr) return;
  // libunwind.so.8 links it too: most often this only counts one more reference.
  void* lib = dlopen("liblzma.so.5", RTLD_NOW | RTLD_LOCAL);
  if (lib != nullptr)
    g_lzmaDecode.store(reinterpret_cast<LzmaStreamBufferDecode>(dlsym(lib, "lzma_stream_buffer_decode")),
                       std::memory_order_release);
}

Symbolizer::Symbolizer(std::string_view debugDirs) {
  while (!debugDirs.empty()) {
    const std::size_t colon = debugDirs.find(':');
    if (colon != 0) debugDirs_.emplace_back(debugDirs.substr(0, colon));
    if (colon == std::string_view::npos) break;
    debugDirs.remove_prefix(colon + 1);
  }
}
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
        file->load(m->path, debugDirs_);
        // A profile-guided CPython build (Debian's, Ubuntu's) runs most of its eval loop in the
        // part split off it, and a stripped one names nothing there: the Python frames of a stack
        // would have no native frame to go under (isPythonEvalLoop).
        file->nameSplitPart(kPythonEvalLoop, kPythonEvalLoopPart, m->bias);
      }
      m->symbols = file;
    }
    const ElfSymbols::Symbol* s = m->symbols ? m->symbols->find(pc - m->bias) : nullptr;
    if (s != nullptr) {
      name = demangle(std::string(s->name, std::strcspn(s->name, "@")));  // no symbol version
    } else {
      char off[32];
      snprintf(off, sizeof(off), "+0x%llx", static_cast<unsigned long long>(pc - m->bias));
      name = m->shortName + off;
    }
  }
  return cache_.emplace(returnAddress, std::move(name)).first->second;
}

}  // namespace cutrace
