#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collector/python_frames.h"
#include "collector/stack_table.h"
#include "collector/symbolizer.h"

using namespace cutrace;

namespace {

std::vector<uint64_t> stackNumber(uint32_t n) {
  // Stacks differ in length and in one frame in the middle, like call sites of one program.
  std::vector<uint64_t> frames;
  for (uint32_t i = 0; i < 4 + n % 13; ++i) frames.push_back(0x400000 + i * 0x40 + (i == 2 ? n * 8 : 0));
  return frames;
}

}  // namespace

TEST_CASE("stack table: same stack same id, frames read back exactly", "[stacks]") {
  StackTable t;
  REQUIRE(t.reserve(64, 64 * 24));
  const std::vector<uint64_t> a{1, 2, 3}, b{1, 2, 4}, c{1, 2};
  const uint32_t ia = t.insert(hashFrames(a.data(), 3), a.data(), 3);
  const uint32_t ib = t.insert(hashFrames(b.data(), 3), b.data(), 3);
  const uint32_t ic = t.insert(hashFrames(c.data(), 2), c.data(), 2);
  REQUIRE(std::set<uint32_t>{ia, ib, ic} == std::set<uint32_t>{1, 2, 3});
  REQUIRE(t.find(hashFrames(a.data(), 3)) == ia);
  REQUIRE(t.insert(hashFrames(a.data(), 3), a.data(), 3) == ia);
  REQUIRE(t.find(hashFrames(a.data(), 2)) == ic);  // {1,2} is c
  const StackTable::Frames f = t.frames(ib);
  REQUIRE(std::vector<uint64_t>(f.frames, f.frames + f.depth) == b);
  REQUIRE(t.size() == 3);
  REQUIRE(t.frames(4).depth == 0);
  REQUIRE(t.overflowed() == 0);
}

TEST_CASE("stack hash: stacks that differ in one word, in order or in depth hash apart", "[stacks]") {
  // A stack is found by its hash alone: near stacks (a frame changed, two swapped, one more or
  // less, Python's two words a frame) must not share one.
  std::set<uint64_t> seen;
  std::size_t stacks = 0;
  const auto add = [&](const std::vector<uint64_t>& s) {
    seen.insert(hashFrames(s.data(), static_cast<uint32_t>(s.size())));
    ++stacks;
  };
  std::vector<uint64_t> base;
  for (uint64_t i = 0; i < 56; ++i) base.push_back(0x7f0000401000ull + i * 0x40);
  for (uint32_t depth = 0; depth <= base.size(); ++depth) {
    const std::vector<uint64_t> s(base.begin(), base.begin() + depth);
    add(s);
    for (uint32_t k = 0; k < depth; ++k) {
      for (uint64_t bit = 0; bit < 64; bit += 7) {
        auto flipped = s;
        flipped[k] ^= uint64_t{1} << bit;
        add(flipped);
      }
      if (k + 1 < depth) {
        auto swapped = s;
        std::swap(swapped[k], swapped[k + 1]);
        add(swapped);
      }
    }
  }
  REQUIRE(seen.size() == stacks);
  REQUIRE(seen.count(0) == 0);
}

TEST_CASE("stack hash: Python frames folded from the outermost in hash apart when near", "[stacks]") {
  // With Python frames a stack's hash is its native frames' and its Python frames' folded from
  // the outermost in (a walk reuses the hash of the outer frames it shares with the last one):
  // near stacks (a word of a frame changed, two frames swapped, one frame more or less, the same
  // frames with one native frame more) must not share one.
  std::set<uint64_t> seen;
  std::size_t stacks = 0;
  const std::vector<uint64_t> native = {0x7f0000401000ull, 0x7f0000402040ull, 0x7f0000403080ull};
  const auto add = [&](const std::vector<uint64_t>& py, uint32_t depth) {
    uint64_t h = python::kFramesHashSeed;
    const auto frames = static_cast<uint32_t>(py.size() / 2);
    for (uint32_t i = frames; i-- > 0;) h = python::foldPythonFrame(h, py.data() + 2 * i);  // outermost first
    seen.insert(hashStack(native.data(), depth, h, frames));
    ++stacks;
  };
  std::vector<uint64_t> base;  // innermost first: code object, instruction | entry << 32
  for (uint64_t i = 0; i < 48; ++i) {
    base.push_back(0x7f1234560000ull + i * 0x1a0);
    base.push_back((i * 14) | (i % 5 == 0 ? uint64_t{1} << 32 : 0));
  }
  for (uint32_t frames = 0; frames <= base.size() / 2; ++frames) {
    const std::vector<uint64_t> s(base.begin(), base.begin() + 2 * frames);
    for (uint32_t depth = 0; depth <= native.size(); ++depth) add(s, depth);
    for (uint32_t k = 0; k < 2 * frames; ++k) {
      for (uint64_t bit = 0; bit < 64; bit += 5) {
        auto flipped = s;
        flipped[k] ^= uint64_t{1} << bit;
        add(flipped, 3);
      }
    }
    for (uint32_t k = 0; k + 1 < frames; ++k) {
      auto swapped = s;
      std::swap(swapped[2 * k], swapped[2 * k + 2]);
      std::swap(swapped[2 * k + 1], swapped[2 * k + 3]);
      add(swapped, 3);
    }
  }
  REQUIRE(seen.size() == stacks);
  REQUIRE(seen.count(0) == 0);
}

TEST_CASE("stack table: full table answers 0 and counts, never corrupts", "[stacks]") {
  StackTable t;
  REQUIRE(t.reserve(8, 1000));
  uint32_t stored = 0;
  for (uint32_t n = 0; n < 20; ++n) {
    const auto s = stackNumber(n);
    if (t.insert(hashFrames(s.data(), static_cast<uint32_t>(s.size())), s.data(), static_cast<uint32_t>(s.size())) != 0)
      ++stored;
  }
  REQUIRE(stored == 8);
  REQUIRE(t.overflowed() == 12);
  for (uint32_t id = 1; id <= 8; ++id) REQUIRE(t.frames(id).depth >= 4);
}

namespace {
sigjmp_buf g_outOfCopy;
void jumpOutOfCopy(int) { siglongjmp(g_outOfCopy, 1); }
}  // namespace

TEST_CASE("stack table: an insertion a signal handler jumps out of leaves the stack insertable", "[stacks]") {
  // The frames end in a page that cannot be read: the copy faults half way and the handler jumps
  // out of it, as a SIGALRM handler's siglongjmp would leave a hook's insertion.
  const long page = sysconf(_SC_PAGESIZE);
  auto* mem = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(mem != MAP_FAILED);
  REQUIRE(mprotect(mem + page, page, PROT_NONE) == 0);
  const std::vector<uint64_t> good{0x401000, 0x401100, 0x401200, 0x401300};
  auto* cut = reinterpret_cast<uint64_t*>(mem + page) - 2;  // 2 readable frames, then the fault
  cut[0] = good[0];
  cut[1] = good[1];
  const uint64_t hash = hashFrames(good.data(), 4);

  StackTable t;
  REQUIRE(t.reserve(16, 16 * 8));
  struct sigaction jump {}, old {};
  jump.sa_handler = jumpOutOfCopy;
  sigemptyset(&jump.sa_mask);
  REQUIRE(sigaction(SIGSEGV, &jump, &old) == 0);
  volatile bool jumped = false;
  if (sigsetjmp(g_outOfCopy, 1) == 0) t.insert(hash, cut, 4);
  else jumped = true;
  sigaction(SIGSEGV, &old, nullptr);
  munmap(mem, 2 * page);
  REQUIRE(jumped);
  REQUIRE(t.find(hash) == 0);  // claimed, never named

  // The next thread with that stack stores it itself, after a bounded wait, and every later
  // lookup finds it.
  const uint32_t id = t.insert(hash, good.data(), 4);
  REQUIRE(id != 0);
  REQUIRE(t.find(hash) == id);
  REQUIRE(t.insert(hash, good.data(), 4) == id);
  const StackTable::Frames f = t.frames(id);
  REQUIRE(std::vector<uint64_t>(f.frames, f.frames + f.depth) == good);
  REQUIRE(t.overflowed() == 0);
}

TEST_CASE("stack table: 8 threads interning overlapping stacks agree on every id", "[stacks]") {
  StackTable t;
  constexpr uint32_t kStacks = 500;
  REQUIRE(t.reserve(1024, 1024 * 24));
  std::vector<std::vector<uint32_t>> ids(8, std::vector<uint32_t>(kStacks));
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int th = 0; th < 8; ++th) {
    threads.emplace_back([&, th] {
      while (!go.load()) {
      }
      for (int round = 0; round < 20; ++round) {
        for (uint32_t k = 0; k < kStacks; ++k) {
          const uint32_t n = (k * 7 + static_cast<uint32_t>(th) * 131) % kStacks;  // each thread its own order
          const auto s = stackNumber(n);
          const uint64_t h = hashFrames(s.data(), static_cast<uint32_t>(s.size()));
          uint32_t id = t.find(h);
          if (id == 0) id = t.insert(h, s.data(), static_cast<uint32_t>(s.size()));
          if (round == 0) ids[th][n] = id;
          else if (id != ids[th][n]) ids[th][n] = 0;  // a thread never sees two ids for a stack
        }
      }
    });
  }
  go.store(true);
  for (auto& th : threads) th.join();
  // Never 0 (no thread gives up on a stack another one is storing), and no more ids than stacks
  // but those of a thread that stalled while it stored one (8 threads on 2 cores: a few).
  REQUIRE(t.size() >= kStacks);
  REQUIRE(t.size() < kStacks + 50);
  REQUIRE(t.overflowed() == 0);
  std::set<uint32_t> distinct;
  for (uint32_t n = 0; n < kStacks; ++n) {
    for (int th = 0; th < 8; ++th) REQUIRE(ids[th][n] == ids[0][n]);
    REQUIRE(ids[0][n] != 0);
    distinct.insert(ids[0][n]);
    const StackTable::Frames f = t.frames(ids[0][n]);
    REQUIRE(std::vector<uint64_t>(f.frames, f.frames + f.depth) == stackNumber(n));
  }
  REQUIRE(distinct.size() == kStacks);
}

extern "C" __attribute__((noinline)) void* cutraceTestKnownFunction() {
  asm volatile("");
  return __builtin_return_address(0);
}

namespace ns {
__attribute__((noinline)) void* knownMember(int) {
  asm volatile("");
  return reinterpret_cast<void*>(&knownMember);
}
}  // namespace ns

TEST_CASE("symbolizer: functions of the executable and of libc, demangled; unknown addresses", "[stacks]") {
  Symbolizer s;
  // A return address one byte past the function's start lies inside it.
  const auto known = reinterpret_cast<uint64_t>(&cutraceTestKnownFunction) + 1;
  REQUIRE(s.frameName(known) == "cutraceTestKnownFunction");
  REQUIRE(s.frameName(reinterpret_cast<uint64_t>(ns::knownMember(0)) + 1) == "ns::knownMember(int)");
  REQUIRE(s.frameName(reinterpret_cast<uint64_t>(&getpid) + 1) == "getpid");
  REQUIRE(s.frameName(0x10) == "[unknown]");
}

namespace {

// A copy of a file the build made (tests/meson.build: the dlopen and debug_target libraries).
void copyFile(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  REQUIRE(in.good());
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  REQUIRE(out.good());
}

// A layout of debug files in a temporary directory, removed with it.
struct DebugLayout {
  std::string root;
  std::vector<std::string> files, dirs;
  DebugLayout() {
    char dir[] = "/tmp/cutrace-debug-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    root = dir;
  }
  ~DebugLayout() {
    for (auto f = files.rbegin(); f != files.rend(); ++f) unlink(f->c_str());
    for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) rmdir(d->c_str());
    rmdir(root.c_str());
  }
  std::string dir(const std::string& relative) {
    std::string path = root;
    for (std::size_t at = 0; at < relative.size();) {
      const std::size_t slash = std::min(relative.find('/', at), relative.size());
      path += "/" + relative.substr(at, slash - at);
      if (mkdir(path.c_str(), 0700) == 0) dirs.push_back(path);
      at = slash + 1;
    }
    return path;
  }
  std::string put(const std::string& built, const std::string& relativeDir, const std::string& name) {
    const std::string path = (relativeDir.empty() ? root : dir(relativeDir)) + "/" + name;
    copyFile(std::string(CUTRACE_DEBUG_TARGETS) + "/" + built, path);
    files.push_back(path);
    return path;
  }
};

// The build id of a debug_target library as the path under .build-id/ names it ("ab/cdef...").
std::string buildIdPath(const std::string& built) {
  std::ifstream in(std::string(CUTRACE_DEBUG_TARGETS) + "/" + built, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The note: namesz 4, descsz 20 (SHA-1), type NT_GNU_BUILD_ID (3), "GNU\0", then the id.
  static const char kNote[] = "\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU";
  const std::size_t at = bytes.find(std::string(kNote, sizeof(kNote)));
  REQUIRE(at != std::string::npos);
  std::string hex;
  for (std::size_t i = 0; i < 20; ++i) {
    char two[3];
    snprintf(two, sizeof(two), "%02x", static_cast<unsigned char>(bytes[at + sizeof(kNote) + i]));
    hex += two;
    if (i == 0) hex += '/';
  }
  return hex;
}

// What the symbolizer (given `debugDirs`) calls the local function of the stripped library at
// `path`; "" if it did not load.
std::string hiddenName(const std::string& path, const std::string& debugDirs) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return "";
  auto address = reinterpret_cast<uintptr_t (*)()>(dlsym(lib, "cutraceDebugTargetHiddenAddress"));
  std::string name = "no entry";
  if (address != nullptr) {
    Symbolizer s(debugDirs);
    name = s.frameName(address() + 1);
  }
  dlclose(lib);
  return name;
}

bool unnamed(const std::string& frame, const std::string& module) { return frame.rfind(module + "+0x", 0) == 0; }

}  // namespace

TEST_CASE("symbolizer: a stripped object's local functions named from its separate debug file", "[stacks]") {
  constexpr const char* kHidden = "cutraceDebugTargetHidden";
  DebugLayout t;
  SECTION("by build id under a debug directory; not without it, nor from another build's file") {
    const std::string lib = t.put("debug_target_stripped.so", "lib", "libone.so");
    const std::string id = buildIdPath("debug_target_stripped.so");
    CHECK(unnamed(hiddenName(lib, t.root + "/debug"), "libone.so"));  // nothing installed yet
    const std::string debugName = id.substr(id.find('/') + 1) + ".debug";
    // Another build's debug file where this one's belongs: its build id differs.
    t.put("debug_target_other.debug", "debug/.build-id/" + id.substr(0, 2), debugName);
    CHECK(unnamed(hiddenName(lib, t.root + "/debug"), "libone.so"));
    unlink((t.root + "/debug/.build-id/" + id + ".debug").c_str());
    t.put("debug_target.debug", "debug/.build-id/" + id.substr(0, 2), debugName);
    CHECK(hiddenName(lib, "/nonexistent:" + t.root + "/debug") == kHidden);  // the second directory
    CHECK(unnamed(hiddenName(lib, ""), "libone.so"));  // no debug directory: no lookup at all
  }
  SECTION("by debug link beside the object, in .debug/ beside it, and under a debug directory") {
    const std::string lib = t.put("debug_target_stripped.so", "a/lib", "libtwo.so");
    CHECK(unnamed(hiddenName(lib, "/nonexistent"), "libtwo.so"));
    const std::string beside = t.put("debug_target.debug", "a/lib", "debug_target.debug");
    CHECK(hiddenName(lib, "/nonexistent") == kHidden);
    unlink(beside.c_str());
    t.put("debug_target.debug", "a/lib/.debug", "debug_target.debug");
    CHECK(hiddenName(lib, "/nonexistent") == kHidden);
    // Under a debug directory, by the object's own directory.
    const std::string lib2 = t.put("debug_target_stripped.so", "b", "libthree.so");
    t.put("debug_target.debug", "debug" + t.root + "/b", "debug_target.debug");
    CHECK(hiddenName(lib2, t.root + "/debug") == kHidden);
    // The same name, another build's file: refused (build id).
    const std::string lib3 = t.put("debug_target_stripped.so", "c", "libfour.so");
    t.put("debug_target_other.debug", "c", "debug_target.debug");
    CHECK(unnamed(hiddenName(lib3, "/nonexistent"), "libfour.so"));
  }
  SECTION("MiniDebugInfo: the functions its compressed symbol table has, with no debug directory") {
    const std::string built = std::string(CUTRACE_DEBUG_TARGETS) + "/debug_target_mini.so";
    if (access(built.c_str(), R_OK) != 0) {
      WARN("no xz to make MiniDebugInfo with: not checked");
      return;
    }
    const std::string lib = t.put("debug_target_mini.so", "e", "libsix.so");
    Symbolizer::prepare();  // as the collector does at start-up: liblzma
    CHECK(hiddenName(lib, "") == kHidden);
    // The same object with the section's bytes damaged: no name, no crash.
    std::string bytes;
    {
      std::ifstream in(lib, std::ios::binary);
      bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    const std::size_t xz = bytes.find("\xfd" "7zXZ");
    REQUIRE(xz != std::string::npos);
    for (std::size_t i = xz + 64; i < xz + 96 && i < bytes.size(); ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    const std::string damaged = t.root + "/e/libseven.so";
    std::ofstream(damaged, std::ios::binary) << bytes;
    t.files.push_back(damaged);
    CHECK(unnamed(hiddenName(damaged, ""), "libseven.so"));
  }
  SECTION("an object without a build id: the debug link's CRC decides") {
    const std::string lib = t.put("debug_target_noid_stripped.so", "d", "libfive.so");
    // The right name, the wrong bytes: another build's debug file.
    const std::string wrong = t.put("debug_target_other.debug", "d", "debug_target_noid.debug");
    CHECK(unnamed(hiddenName(lib, "/nonexistent"), "libfive.so"));
    unlink(wrong.c_str());
    t.put("debug_target_noid.debug", "d", "debug_target_noid.debug");
    CHECK(hiddenName(lib, "/nonexistent") == kHidden);
  }
}

TEST_CASE("symbolizer: module list read while another thread dlopens a library", "[stacks]") {
  // The path is padded to a multiple of 8 bytes: that length is what made ThreadSanitizer's
  // dl_iterate_phdr interceptor leave the name's terminator unreset (a false race that CI hit).
  char dir[] = "/tmp/cutrace-dlopen-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/";
  const std::string base = "libtarget.so";
  path.append((8 - (path.size() + base.size()) % 8) % 8, 'x');
  path += base;
  REQUIRE(path.size() % 8 == 0);
  copyFile(CUTRACE_DLOPEN_TARGET, path);

  Symbolizer s;
  std::atomic<bool> started{false};
  std::atomic<bool> loaded{false};
  std::atomic<int> misnamed{0};  // Catch2's REQUIRE is not for other threads
  std::thread reader([&] {
    started = true;
    // Each unknown address re-reads the module list.
    for (uint64_t i = 0; !loaded.load() || i < 200; ++i)
      if (s.frameName(0x10 + i) != "[unknown]") ++misnamed;
  });
  while (!started.load()) {
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  loaded = true;
  reader.join();
  REQUIRE(misnamed == 0);
  REQUIRE(handle != nullptr);
  auto* fn = reinterpret_cast<int (*)(int)>(dlsym(handle, "cutraceDlopenTarget"));
  REQUIRE(fn != nullptr);
  REQUIRE(fn(2) == 7);
  REQUIRE(s.frameName(reinterpret_cast<uint64_t>(fn) + 1) == "cutraceDlopenTarget");
  dlclose(handle);
  unlink(path.c_str());
  rmdir(dir);
}
