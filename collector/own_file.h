#pragma once
// How cutrace writes bytes without harming the program it traces.
//
// - File descriptors: the program may close any descriptor and open its own files under the
//   same numbers at any time (daemons close 0-2 and open their log as 2; some programs close
//   every descriptor they did not open). cutrace therefore keeps no descriptor between writes:
//   a file it appends to while the program runs is an OwnFile, whose descriptor is checked to be
//   the very file cutrace created (st_dev, st_ino) before each append, and opened again by path
//   when it is not. That descriptor is kept out of the program's way: it lives in cutrace's
//   own descriptor table (collector/private_files.h), where the program can neither close it
//   nor see its number taken. Where that table cannot be had, it is in the program's, moved to
//   a high number (the lowest free one, which open() gives, is the program's to get: a daemon
//   closes 0 and opens /dev/null as its stdin, and cutrace must not hold 0 at that moment).
//   Its stderr lines go to fd 2 only while fd 2 is the file that was stderr when cutrace
//   initialised.
// - RLIMIT_FSIZE: a write that starts at or past the soft limit kills the process with SIGXFSZ
//   (one that crosses it is cut short, and the next one kills). writeFully() never issues a
//   write that would cross the limit; it refuses the whole write instead. Every byte cutrace
//   writes to a file goes through it.
//
// Everything here is usable from the drain thread and at exit. writeDiagnostic() is also
// usable in hooks and signal handlers: no allocation, no lock, errno kept.

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace cutrace {

// `fd` moved to a high number (the low one closed; its close-on-exec flag set), or left where it
// is if it cannot be; errno kept. Only system calls: usable in hooks and signal handlers.
int moveHigh(int fd);

enum class WriteStatus : uint8_t {
  Ok,
  Error,          // write(2) failed (a full disk, EIO, ...)
  FileSizeLimit,  // the write would have passed the soft RLIMIT_FSIZE: nothing was written
  NotOurs,        // an OwnFile was removed or replaced since cutrace created it
};

// Writes all of [data, data + size) to `fd` (EINTR and short writes retried), or nothing when
// that would take a regular file past the soft RLIMIT_FSIZE. A refusal for the limit is
// remembered for the process (fileSizeLimitReached).
WriteStatus writeFully(int fd, const void* data, std::size_t size);

// The soft RLIMIT_FSIZE in bytes, or UINT64_MAX when unlimited.
uint64_t fileSizeLimit();
// Some cutrace write was refused for the file-size limit in this process.
bool fileSizeLimitReached();

// Records which file is fd 2 now (call once, at initialisation; again in a new process image).
void rememberStderr();
// Writes `text` to fd 2 if fd 2 is still the stderr rememberStderr() found (same device and
// inode); otherwise drops it. The only way cutrace writes to stderr.
void writeDiagnostic(const char* text);

// Where writeDiagnostic puts the lines of a thread that must not write to fd 2 itself (the
// helper of collector/private_files.h, whose fd 2 is not the program's): kept whole, in order,
// while they fit, for another thread to write.
struct HeldDiagnostics {
  char text[4096];
  std::size_t size = 0;
};
// The calling thread's lines go to `into` from now on; nullptr: to fd 2 again.
void holdDiagnostics(HeldDiagnostics* into);

// A file cutrace created and appends to while the program runs. One thread at a time (the
// drain thread, or the exiting thread once the drain thread has stopped).
class OwnFile {
 public:
  OwnFile() = default;
  OwnFile(const OwnFile&) = delete;
  OwnFile& operator=(const OwnFile&) = delete;

  // Creates `name` in the directory at the absolute path `dir`, with
  // O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC (mode 0644) and remembers its identity. False with
  // errno set when it cannot (EEXIST or ELOOP: the name is taken, try another).
  bool create(const std::string& dir, const std::string& name);

  // Appends [data, data + size) as one unit, to the descriptor checked to be still the file
  // create() made (else opened again by path: O_WRONLY|O_APPEND|O_NOFOLLOW|O_CLOEXEC). Any
  // status but Ok stops the file for good, with one warning (Collector::warnOnce): nothing is
  // written to it again.
  WriteStatus append(const void* data, std::size_t size);
  // Gives back the disk blocks append() reserved past the end of the file (see kReserveBytes).
  // Call when no more appends are expected (the stream's end); a later append reserves again.
  void releaseReserve();

  bool created() const { return !path_.empty(); }
  bool stopped() const { return stopped_; }
  const std::string& path() const { return path_; }

  // Removes the file if it is still the one create() made; forgets it either way.
  void remove();
  // Forgets the file without writing to it (a forked child: the file is the parent's; the
  // descriptor it inherited is closed, if it is still that file).
  void forget();

 private:
  // create()'s descriptor work, as a private-files job: no allocation.
  bool createIn(const char* dir, const char* name);
  // Whether `fd` is the regular file create() made (same st_dev, st_ino; `st` is its stat).
  bool ours(int fd, struct stat& st) const;
  // The descriptor of the file, while its path still names it: checked (ours()), opened again
  // by path and moved high when the one kept is not the file any more (closed, or its number
  // reused by the program: not closed then, it is the program's); -1 with errno set (ENOENT,
  // or ESTALE where the path names another file now) when it cannot be had. Every write to
  // the file goes through it.
  int descriptor(struct stat& st);
  // Closes the kept descriptor if it is still the file (the program's number otherwise).
  void closeDescriptor();
  // Reserves the next kReserveBytes past `size` when the appended bytes reach the reserve.
  void reserve(int fd, uint64_t size, std::size_t adding);

  std::string path_;
  int fd_ = -1;  // O_WRONLY|O_APPEND, moved high (own_file.cpp, moveHigh), checked before each use
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool stopped_ = false;
  // On ext4, appends grow the file into blocks reserved ahead with fallocate(FALLOC_FL_KEEP_SIZE):
  // the size, and so every reader, never sees them. Each page written into a reserved block
  // skips ext4's delayed-allocation bookkeeping: 3.0 instead of 4.8-5.6 ns of kernel time per
  // 32 bytes (an event) in 512 KB appends, 400 MB, on this project's VM; 4 MB reserves save as
  // much as 64 MB ones. Up to kReserveBytes stay reserved past the end when the process dies
  // before releaseReserve() (SIGKILL): disk space only, freed by any truncate of the file.
  // Not on tmpfs (a reserve is memory) nor where fallocate is not supported.
  static constexpr uint64_t kReserveBytes = uint64_t{4} << 20;
  bool reserves_ = false;
  uint64_t reservedTo_ = 0;  // file offset the reserve reaches
};

}  // namespace cutrace
