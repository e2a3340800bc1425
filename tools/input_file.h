#pragma once
// How every `cutrace` command reads the inputs named on its command line (traces, reports,
// folded stacks): a path, or "-" for standard input. A regular file is read by its size; a pipe,
// FIFO, socket or character device (`<(cmd)`, /dev/stdin) as a stream, which can be read once.
// Memory stays bounded whatever the input is: an input read whole stops at a byte cap, a line
// at a line cap, and a NUL byte (never in a text file; all of /dev/zero) is refused as soon as
// it is read. Every failure is one message naming the input; commands exit kExitBadInput.

#include <cstddef>
#include <string>
#include <string_view>

namespace cutrace::tools {

// Spare bytes allocated (zeroed) past the end of an InputBytes, so a parser that reads ahead
// (simdjson's SIMDJSON_PADDING) can work on the buffer in place.
inline constexpr std::size_t kInputPadding = 64;

// An input read whole. Grown with realloc, which moves large blocks by remapping pages: a
// stream of unknown length costs its size in memory, not twice it, and nothing is copied.
class InputBytes {
 public:
  InputBytes() = default;
  ~InputBytes();
  InputBytes(InputBytes&& other) noexcept;
  InputBytes& operator=(InputBytes&& other) noexcept;
  InputBytes(const InputBytes&) = delete;
  InputBytes& operator=(const InputBytes&) = delete;

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data_, size_}; }
  void clear();  // frees the memory
  // A copy of `bytes` (text made in memory, e.g. a trace converted). False when out of memory.
  bool assign(std::string_view bytes);

 private:
  friend class InputStream;
  // Room for `bytes` plus the padding. False when out of memory.
  bool reserve(std::size_t bytes);

  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // without the padding
};

// The most bytes of one input held whole in memory (a JSON document, which simdjson needs
// entire): 4 GiB (Perfetto UI stops opening Chrome JSON far below that), or a quarter of the
// address-space limit (RLIMIT_AS) when one is set, so a limited process gets this message
// rather than running out of memory.
std::size_t wholeInputCap();

// "<stdin>" for "-", else the path: how messages name an input.
std::string inputName(const std::string& path);
// Whether reading `path` again gives the same bytes (a regular file; not "-" or a pipe).
bool isRereadable(const std::string& path);

class InputStream {
 public:
  InputStream() = default;
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Opens `path` ("-": standard input). False with a message (missing, unreadable, a
  // directory).
  bool open(const std::string& path, std::string& error);
  // False where the input can be read only once: standard input (even redirected from a
  // regular file, which a reader opening the path "-" would not find), anything not a regular file.
  bool rereadable() const { return regular_ && ownsFd_; }
  const std::string& name() const { return name_; }

  // The next line, without its '\n' and a '\r' before it; valid until the next call. False at
  // the end of the input or on an error (then `error` is set): a line longer than `maxLine`
  // bytes, a NUL byte, a read error.
  bool nextLine(std::string_view& line, std::size_t maxLine, std::string& error);
  // The number of the line nextLine returned last (1-based).
  std::size_t lineNumber() const { return line_; }

  // Everything left, into `out`. False with a message past `maxBytes` (naming the cap), on a
  // NUL byte (unless binary), a read error or when out of memory.
  bool readAll(std::size_t maxBytes, InputBytes& out, std::string& error);

  // The first bytes (up to `n`, fewer where the input is shorter), read ahead and not consumed,
  // NUL bytes included: a caller tells a binary input from text by them. False on a read error.
  bool peek(std::size_t n, std::string_view& head, std::string& error);
  // Binary inputs (a .pftrace) may hold NUL bytes; text inputs (the default) refuse them, those
  // already read ahead by peek() included. False (with the message) when one was read.
  bool setBinary(bool binary, std::string& error);

 private:
  // Reads more into buffer_ (at least one byte unless at the end). False at the end or on an
  // error (error set then).
  bool fill(std::string& error);
  bool checkNul(std::string_view bytes, std::size_t offset, std::string& error) const;

  int fd_ = -1;
  bool ownsFd_ = false;
  bool regular_ = false;
  bool eof_ = false;
  bool binary_ = false;
  std::size_t size_ = 0;      // regular files: st_size when opened
  std::size_t consumed_ = 0;  // bytes before buffer_[pos_]
  std::size_t line_ = 0;
  std::string name_;
  std::string buffer_;
  std::size_t pos_ = 0;
};

// The whole input at `path` in `out`, at most `maxBytes`. False with a message naming the input.
bool readInputFile(const std::string& path, std::size_t maxBytes, InputBytes& out, std::string& error);

}  // namespace cutrace::tools
