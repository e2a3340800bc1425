#pragma once
// Buffered output and JSON text helpers shared by the exporters.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collector/own_file.h"

namespace cutrace {

// A sink that buffers into a string and hands full chunks to a file descriptor (writeFully:
// never past the file-size limit), or keeps everything in memory (fd -1, tests), or only counts
// it (kCountOnly). After the first failed write it writes nothing more; status() says why.
class Sink {
 public:
  // In place of a descriptor: what is put is counted (bytesWritten) and dropped chunk by chunk,
  // in small chunks (a measure takes little memory, even in a process short of it).
  static constexpr int kCountOnly = -2;

  explicit Sink(int fd = -1) : fd_(fd), chunk_(fd == kCountOnly ? kCountChunk : kChunk) {
    if (fd != -1) buffer_.reserve(chunk_);  // in memory: as large as what is put, no more
  }
  ~Sink() { flush(); }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void put(std::string_view s) {
    buffer_.append(s);
    if (buffer_.size() >= chunk_) flush();
  }
  void put(char c) {
    buffer_.push_back(c);
    if (buffer_.size() >= chunk_) flush();
  }
  void putUint(uint64_t v);
  void putInt(int64_t v);
  // Nanoseconds as microseconds with up to three decimals, trailing zeros dropped.
  void putMicros(int64_t ns);
  void putHex(uint64_t v);  // "0x..." without quotes

  bool flush();
  bool ok() const { return status_ == WriteStatus::Ok; }
  WriteStatus status() const { return status_; }
  uint64_t bytesWritten() const { return written_ + buffer_.size(); }
  // For in-memory sinks (fd -1): everything put so far.
  const std::string& text() const { return buffer_; }

 private:
  static constexpr std::size_t kChunk = 1 << 20;
  static constexpr std::size_t kCountChunk = 16 << 10;
  int fd_;
  std::size_t chunk_;
  std::string buffer_;
  uint64_t written_ = 0;
  WriteStatus status_ = WriteStatus::Ok;
};

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
