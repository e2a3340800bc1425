#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <new>
#include <string>

#include "collector/own_file.h"
#include "collector/private_files.h"
#include "exporters/json_writer.h"

using namespace cutrace;

namespace {

std::string tempDir() {
  char dir[] = "/tmp/cutrace-ownfile-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  return dir;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Lowers the soft RLIMIT_FSIZE for one scope (the hard limit stays, so it can be raised back).
struct SoftFileSizeLimit {
  rlimit saved{};
  explicit SoftFileSizeLimit(rlim_t bytes) {
    REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    rlimit lower = saved;
    lower.rlim_cur = bytes;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lower) == 0);
  }
  ~SoftFileSizeLimit() { setrlimit(RLIMIT_FSIZE, &saved); }
};

struct Dir {
  std::string path = tempDir();
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ~Dir() {
    close(fd);
    std::string cmd = "rm -rf '" + path + "'";
    (void)system(cmd.c_str());
  }
};

}  // namespace

TEST_CASE("own file: appends reopen the file by path and keep no descriptor", "[own_file]") {
  Dir dir;
  OwnFile file;
  REQUIRE(file.create(dir.path, "a.pftrace"));
  CHECK(file.path() == dir.path + "/a.pftrace");
  // No descriptor of cutrace's stays open: the next open gets the number create() used.
  const int probe = open("/dev/null", O_RDONLY);
  const int before = probe;
  close(probe);
  CHECK(file.append("one ", 4) == WriteStatus::Ok);
  CHECK(file.append("two", 3) == WriteStatus::Ok);
  const int after = open("/dev/null", O_RDONLY);
  CHECK(after == before);
  close(after);
  CHECK(readFile(file.path()) == "one two");

  OwnFile again;
  CHECK_FALSE(again.create(dir.path, "a.pftrace"));  // never over an existing file
  CHECK(errno == EEXIST);
  REQUIRE(symlink((dir.path + "/target").c_str(), (dir.path + "/link").c_str()) == 0);
  CHECK_FALSE(again.create(dir.path, "link"));  // nor through a symlink
  CHECK(access((dir.path + "/target").c_str(), F_OK) != 0);

  file.remove();
  CHECK(access((dir.path + "/a.pftrace").c_str(), F_OK) != 0);
}

TEST_CASE("own file: a file replaced or removed is never written again", "[own_file]") {
  Dir dir;
  SECTION("replaced by rename") {
    OwnFile file;
    REQUIRE(file.create(dir.path, "x"));
    REQUIRE(file.append("cutrace", 7) == WriteStatus::Ok);
    writeFile(dir.path + "/other", "program's");
    REQUIRE(rename((dir.path + "/other").c_str(), file.path().c_str()) == 0);
    CHECK(file.append("more", 4) == WriteStatus::NotOurs);
    CHECK(file.stopped());
    CHECK(file.append("more", 4) == WriteStatus::Error);
    CHECK(readFile(dir.path + "/x") == "program's");
    file.remove();  // not ours: stays
    CHECK(readFile(dir.path + "/x") == "program's");
  }
  SECTION("replaced by a symlink") {
    OwnFile file;
    REQUIRE(file.create(dir.path, "x"));
    writeFile(dir.path + "/victim", "program's");
    REQUIRE(unlink((dir.path + "/x").c_str()) == 0);
    REQUIRE(symlink((dir.path + "/victim").c_str(), (dir.path + "/x").c_str()) == 0);
    CHECK(file.append("more", 4) == WriteStatus::NotOurs);
    CHECK(readFile(dir.path + "/victim") == "program's");
  }
  SECTION("removed") {
    OwnFile file;
    REQUIRE(file.create(dir.path, "x"));
    REQUIRE(unlink(file.path().c_str()) == 0);
    CHECK(file.append("more", 4) == WriteStatus::NotOurs);
    CHECK(access((dir.path + "/x").c_str(), F_OK) != 0);  // not created again
  }
}

TEST_CASE("own file: writes stop before the file-size limit, the process is not signalled", "[own_file]") {
  Dir dir;
  OwnFile file;
  REQUIRE(file.create(dir.path, "limited"));
  const std::string kb(1000, 'x');
  {
    SoftFileSizeLimit limit(2500);
    CHECK(file.append(kb.data(), kb.size()) == WriteStatus::Ok);
    const std::string rest(1500, 'z');
    CHECK(file.append(rest.data(), rest.size()) == WriteStatus::Ok);  // up to the limit exactly
    CHECK(file.append("y", 1) == WriteStatus::FileSizeLimit);  // would start at the limit: SIGXFSZ
    CHECK(fileSizeLimitReached());
  }
  struct stat st {};
  REQUIRE(stat(file.path().c_str(), &st) == 0);
  CHECK(st.st_size == 2500);

  // The exporters' Sink: a write that would cross the limit is refused whole.
  const int fd = openat(dir.fd, "sink", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  {
    SoftFileSizeLimit limit(1500);
    Sink out(fd);
    out.put(kb);
    CHECK(out.flush());
    out.put(kb);
    CHECK_FALSE(out.flush());
    CHECK(out.status() == WriteStatus::FileSizeLimit);
  }
  REQUIRE(fstat(fd, &st) == 0);
  CHECK(st.st_size == 1000);
  close(fd);
}

TEST_CASE("diagnostics go only to the stderr found at start", "[own_file]") {
  Dir dir;
  const int saved = dup(STDERR_FILENO);
  REQUIRE(saved >= 0);
  const int first = open((dir.path + "/stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int second = open((dir.path + "/program-log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  REQUIRE(dup2(first, STDERR_FILENO) == STDERR_FILENO);
  rememberStderr();
  writeDiagnostic("one\n");
  // The program closes fd 2 and opens its log there.
  REQUIRE(dup2(second, STDERR_FILENO) == STDERR_FILENO);
  writeDiagnostic("two\n");
  close(STDERR_FILENO);
  writeDiagnostic("three\n");
  REQUIRE(dup2(first, STDERR_FILENO) == STDERR_FILENO);
  writeDiagnostic("four\n");
  REQUIRE(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
  rememberStderr();
  close(saved);
  close(first);
  close(second);
  CHECK(readFile(dir.path + "/stderr") == "one\nfour\n");
  CHECK(readFile(dir.path + "/program-log").empty());
}

TEST_CASE("own file: on ext4 appends go into blocks reserved ahead, given back at the end", "[own_file]") {
  Dir dir;
  struct statfs fs {};
  REQUIRE(statfs(dir.path.c_str(), &fs) == 0);
  if (fs.f_type != 0xEF53) {
    WARN("not ext4 here: nothing is reserved, nothing to check");
    return;
  }
  const auto allocated = [](const std::string& path) {
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    return uint64_t(st.st_blocks) * 512;
  };
  OwnFile file;
  REQUIRE(file.create(dir.path, "r.pftrace"));
  const std::string chunk(100000, 'p');
  REQUIRE(file.append(chunk.data(), chunk.size()) == WriteStatus::Ok);
  // The size is what was written; the blocks reach 4 MB past it.
  CHECK(readFile(file.path()) == chunk);
  CHECK(allocated(file.path()) >= chunk.size() + (uint64_t{4} << 20));
  REQUIRE(file.append("end", 3) == WriteStatus::Ok);
  file.releaseReserve();
  CHECK(readFile(file.path()) == chunk + "end");
  CHECK(allocated(file.path()) < chunk.size() + 3 + 65536);

  // Never reserved past the file-size limit (and no SIGXFSZ for trying).
  OwnFile limited;
  REQUIRE(limited.create(dir.path, "limited"));
  {
    SoftFileSizeLimit limit(200000);
    REQUIRE(limited.append(chunk.data(), chunk.size()) == WriteStatus::Ok);
    CHECK(allocated(limited.path()) <= 200000 + 4096);
  }
}

TEST_CASE("private files: a job's descriptors are not the program's, its lines are the caller's", "[own_file]") {
  Dir dir;
  // The lowest free number in the program's table, before and after the jobs.
  const int lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(lowest >= 0);
  close(lowest);
  int inJob = -1;
  privateFiles::run([&] { inJob = open("/dev/null", O_RDONLY | O_CLOEXEC); });
  if (privateFiles::helperThreads() == 0) {
    WARN("no table of cutrace's own here (unshare refused): jobs ran in the program's table");
    close(inJob);
    return;
  }
  // The helper's table is empty but for the job's own: its first descriptor is 0, and it stays
  // open there, out of the program's table, whose lowest free number is the same as before.
  CHECK(inJob == 0);
  const int after = open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK(after == lowest);
  close(after);
  int closed = -1;
  privateFiles::run([&] { closed = close(inJob); });
  CHECK(closed == 0);

  // A job that runs a job runs it where it is, in the same table.
  int nested = -1;
  privateFiles::run([&] {
    const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    privateFiles::run([&] { nested = fd; });
    close(fd);
  });
  CHECK(nested == 0);

  // Lines written in a job reach the program's fd 2 (the helper has none), after the job.
  const int saved = dup(STDERR_FILENO);
  const int err = open((dir.path + "/stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  REQUIRE(dup2(err, STDERR_FILENO) == STDERR_FILENO);
  rememberStderr();
  privateFiles::run([&] {
    writeDiagnostic("from a job\n");
    writeDiagnostic("and another\n");
  });
  REQUIRE(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
  rememberStderr();
  close(saved);
  close(err);
  CHECK(readFile(dir.path + "/stderr") == "from a job\nand another\n");

  // What a job throws is thrown again to its caller; the helper runs on.
  CHECK_THROWS_AS(privateFiles::run([] { throw std::bad_alloc(); }), std::bad_alloc);
  int ran = 0;
  privateFiles::run([&] { ran = 1; });
  CHECK(ran == 1);
}
