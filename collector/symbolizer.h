#pragma once
// Return addresses to names, off the hot path (the drain thread and the final flush).
//
// Names come from the ELF symbol tables (.symtab, else .dynsym) of every object mapped in the
// process, read from the files on disk, demangled, cached per address. An object stripped of its
// .symtab (a distribution's binaries) is named from its separate debug file where one is
// installed (Debian's -dbgsym and -dbg packages, Fedora's -debuginfo: /usr/lib/debug), else from
// its MiniDebugInfo where it has one (Fedora's and RHEL's binaries). The module list is
// re-read whenever an address falls outside every known module, so objects loaded later with
// dlopen are found; the drain resolves new stacks every pass, so an object unloaded before exit
// is usually still named. Frames of stripped code fall back to `module+0xoffset`.
//
// Not thread-safe: one thread at a time (the collector's drain mutex).

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collector/config.h"

namespace cutrace {

// CPython's eval loop, each of whose native frames ran one group of a stack's Python frames, and
// the name given to the part of it a compiler split off (GCC's ".cold") where no symbol names it.
inline constexpr const char* kPythonEvalLoop = "_PyEval_EvalFrameDefault";
inline constexpr const char* kPythonEvalLoopPart = "_PyEval_EvalFrameDefault.cold";
// A frame of it: its name, or a part of it (".cold", ".part.0").
bool isPythonEvalLoop(const std::string& name);

// A C++ symbol name demangled; names that are not mangled ("_Z...") come back as they are.
std::string demangle(const std::string& name);

class Symbolizer {
 public:
  // `debugDirs`: where separate debug files are looked for, ':' between directories (the
  // setting CUTRACE_DEBUG_DIR); empty: nowhere, not even beside the object.
  explicit Symbolizer(std::string_view debugDirs = kDefaultDebugDirs);

  // Loads what reading names may need later (liblzma.so.5, for MiniDebugInfo). Call it where a
  // dlopen is safe, at start-up: the drain resolves names holding its lock, and a dlopen there
  // waits for the loader's lock, which a thread in dlopen holds while a constructor of the library
  // it loads may be waiting for the drain's (forking, exiting). Without it, no MiniDebugInfo.
  static void prepare();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frame of a return address: "function" (demangled) when a symbol covers the call site,
  // else "module+0xoffset", else "[unknown]".
  const std::string& frameName(uint64_t returnAddress);

  struct ElfSymbols;

 private:
  struct Module {
    uint64_t begin = 0;  // lowest and highest address of its loaded segments
    uint64_t end = 0;
    uint64_t bias = 0;  // dlpi_addr: symbol values are relative to it
    std::string path;
    std::string shortName;
    std::shared_ptr<ElfSymbols> symbols;  // loaded on first use
  };
  void refreshModules();
  Module* moduleOf(uint64_t pc);

  std::vector<std::string> debugDirs_;
  std::vector<Module> modules_;  // sorted by begin
  std::unordered_map<std::string, std::shared_ptr<ElfSymbols>> files_;
  std::unordered_map<uint64_t, std::string> cache_;
};

}  // namespace cutrace
