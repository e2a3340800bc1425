#pragma once
// Buffered output and JSON text helpers shared by the exporters.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "collector/own_file.h"

namespace cutrace {

// The largest |time| of a trace, in ns from its origin (about 31 years): the tools' JSON readers
// refuse a 'ts' or 'dur' past it (as microseconds, kMaxTraceMicros), and the stream reader a
// timestamp past it, so a Chrome trace exported from a stream is one they read, and sums and
// differences of two such times never overflow.
inline constexpr int64_t kMaxTraceNs = 1'000'000'000'000'000'000;
inline constexpr double kMaxTraceMicros = 1e15;
static_assert(kMaxTraceMicros * 1000 == static_cast<double>(kMaxTraceNs));

// A sink that buffers and hands full chunks to a file descriptor (writeFully: never past the
// file-size limit), or keeps everything in memory (fd -1, tests), or only counts it
// (kCountOnly). After the first failed write it writes nothing more; status() says why.
// What is put is copied straight into a buffer of fixed size (a file's or a count's), written
// out when the next put does not fit: at exit the Chrome trace puts ~20 pieces per event, so
// each put is a bounds check and a copy, never a string's growth.
class Sink {
 public:
  // In place of a descriptor: what is put is counted (bytesWritten) and dropped chunk by chunk,
  // in small chunks (a measure takes little memory, even in a process short of it).
  static constexpr int kCountOnly = -2;

  explicit Sink(int fd = -1);
  ~Sink() { flush(); }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void put(std::string_view s) {
    if (s.size() > static_cast<std::size_t>(end_ - at_)) return putLarge(s);
    memcpy(at_, s.data(), s.size());
    at_ += s.size();
  }
  void put(char c) {
    if (at_ == end_) makeRoom(1);
    *at_++ = c;
  }
  // Room for `n` bytes (a few hundred at most) at the pointer returned; commit() the end of what
  // was written.
  char* room(std::size_t n) {
    if (n > static_cast<std::size_t>(end_ - at_)) makeRoom(n);
    return at_;
  }
  void commit(char* end) { at_ = end; }
  void putUint(uint64_t v);
  void putInt(int64_t v);
  // Nanoseconds as microseconds with up to three decimals, trailing zeros dropped.
  void putMicros(int64_t ns);
  void putHex(uint64_t v);  // "0x..." without quotes

  bool flush();
  bool ok() const { return status_ == WriteStatus::Ok; }
  WriteStatus status() const { return status_; }
  uint64_t bytesWritten() const { return written_ + static_cast<uint64_t>(at_ - begin_); }
  // For in-memory sinks (fd -1): everything put so far.
  std::string text() const { return std::string(begin_, at_); }

 private:
  static constexpr std::size_t kChunk = 1 << 20;
  static constexpr std::size_t kCountChunk = 16 << 10;
  static constexpr std::size_t kInMemoryStart = 256;
  // Makes room for `n` more bytes: writes the buffer out (file, count) or grows it (in memory).
  void makeRoom(std::size_t n);
  void putLarge(std::string_view s);
  void writeOut(const char* data, std::size_t size);

  int fd_;
  std::unique_ptr<char[]> buffer_;
  char* begin_ = nullptr;
  char* at_ = nullptr;
  char* end_ = nullptr;
  uint64_t written_ = 0;
  WriteStatus status_ = WriteStatus::Ok;
};

// Writes `v` in decimal at `p`; returns the end (at most 20 bytes).
char* writeUint(char* p, uint64_t v);

// How many bytes of `text`, from `from` on, are ASCII (below 0x80) before the first that is not:
// eight at a time (most names are ASCII through and through).
std::size_t asciiRun(std::string_view text, std::size_t from = 0);

// Length of the valid UTF-8 sequence starting at text[i] (1 for ASCII), or 0 when the bytes
// there are not valid UTF-8 (RFC 3629: no overlongs, surrogates or code points past U+10FFFF).
std::size_t utf8SequenceLength(std::string_view text, std::size_t i);

// Writes `text` as a JSON string literal (with quotes): the project's one JSON string escaper.
// Quotes, backslashes and control bytes are escaped, DEL (0x7f) too: Perfetto's JSON tokenizer
// fails the whole import on any iscntrl() byte inside a string. Every byte sequence that is not
// valid UTF-8 becomes U+FFFD, so the output is valid UTF-8 JSON whatever bytes the input holds.
void putJsonString(Sink& out, std::string_view text);
// The same, appended to a string; and as a new string (for formatting).
void putJsonString(std::string& out, std::string_view text);
std::string jsonStringLiteral(std::string_view text);

}  // namespace cutrace
