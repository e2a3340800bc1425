#pragma once
// Protocol-buffer wire encoding, append-only (after Perfetto's protozero): scalar fields are
// appended as they come; a nested message reserves a length byte when it starts and patches it
// when it ends, moving the body up in the rare case the length needs more bytes.
// Nothing is ever read back or reordered, so a finished top-level message is final bytes.
//
// Allocation: the buffer is the writer's own, reused (clear() keeps its capacity). It is not a
// std::string: std::string's members are compiled into libstdc++ (extern templates), so every
// byte appended was a call the compiler could not inline, a third of the drain's time.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace cutrace::proto {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

constexpr std::size_t varintSize(uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

class Writer {
 public:
  // A nested message in progress: where its reserved length bytes are.
  struct Nested {
    std::size_t lengthAt;
  };

  [[gnu::always_inline]] void varint(uint32_t field, uint64_t v) {
    rawVarint(field << 3 | kVarint);
    rawVarint(v);
  }
  // Signed values as two's complement varints (int32/int64 fields; negative costs 10 bytes).
  void int64(uint32_t field, int64_t v) { varint(field, static_cast<uint64_t>(v)); }
  void boolean(uint32_t field, bool v) { varint(field, v ? 1 : 0); }
  void fixed64(uint32_t field, uint64_t v) { close(putFixed64(open(varintSize(field << 3) + 8), field, v)); }
  void bytes(uint32_t field, std::string_view s) {
    rawVarint(field << 3 | kLengthDelimited);
    rawVarint(s.size());
    append(s.data(), s.size());
  }
  // Packed repeated varints (one length-delimited field).
  template <typename It>
  void packedVarints(uint32_t field, It first, It last) {
    const Nested n = begin(field);
    for (; first != last; ++first) rawVarint(static_cast<uint64_t>(*first));
    end(n);
  }

  Nested begin(uint32_t field) {
    rawVarint(field << 3 | kLengthDelimited);
    const Nested n{size_};
    room(1);
    ++size_;
    return n;
  }
  // One byte is reserved for the length: most bodies (a track event, an annotation, a packet)
  // are shorter than 128 bytes and stay where they are; a longer one moves up to make room.
  [[gnu::always_inline]] void end(Nested n) {
    const std::size_t body = size_ - n.lengthAt - 1;
    if (__builtin_expect(body < 0x80, 1)) {
      data_[n.lengthAt] = static_cast<char>(body);
      return;
    }
    endLong(n, body);
  }

  // Several fields after one room check (the hot packets): open(n) gives a cursor with room for
  // n bytes, the put* functions advance it, close() takes it back. Between open and close only
  // cursor functions may be used.
  [[gnu::always_inline]] char* open(std::size_t n) {
    room(n);
    return data_.get() + size_;
  }
  [[gnu::always_inline]] void close(char* cursor) { size_ = static_cast<std::size_t>(cursor - data_.get()); }
  [[gnu::always_inline]] static char* putVarint(char* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
    return p;
  }
  [[gnu::always_inline]] static char* putField(char* p, uint32_t field, uint64_t v) {
    return putVarint(putVarint(p, field << 3 | kVarint), v);
  }
  // fixed64() at a cursor: varintSize(field << 3) + 8 bytes.
  [[gnu::always_inline]] static char* putFixed64(char* p, uint32_t field, uint64_t v) {
    p = putVarint(p, field << 3 | kFixed64);
    memcpy(p, &v, 8);  // little-endian hosts only, as fixed64()
    return p + 8;
  }
  // begin() at a cursor: its length byte reserved, finished by end() after close().
  [[gnu::always_inline]] char* beginAt(char* p, uint32_t field, Nested& n) {
    p = putVarint(p, field << 3 | kLengthDelimited);
    n.lengthAt = static_cast<std::size_t>(p - data_.get());
    return p + 1;
  }

  [[gnu::always_inline]] void rawVarint(uint64_t v) {
    room(10);
    char* p = data_.get() + size_;
    std::size_t n = 0;
    while (v >= 0x80) {
      p[n++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    p[n++] = static_cast<char>(v);
    size_ += n;
  }
  // Bytes as they are (a body built elsewhere).
  void append(const char* s, std::size_t n) {
    if (n == 0) return;
    room(n);
    memcpy(data_.get() + size_, s, n);
    size_ += n;
  }

  std::string_view buffer() const { return {data_.get(), size_}; }
  const char* at(std::size_t offset) const { return data_.get() + offset; }
  std::size_t size() const { return size_; }
  void clear() { size_ = 0; }
  // Room for `n` more bytes now, so that writing them allocates nothing.
  void reserve(std::size_t n) {
    if (capacity_ - size_ < n) grow(n);
  }

 private:
  void endLong(Nested n, std::size_t body) {
    const std::size_t need = varintSize(body);
    room(need - 1);
    char* p = data_.get() + n.lengthAt;
    memmove(p + need, p + 1, body);
    uint64_t v = body;
    for (std::size_t i = 0; i < need; ++i, v >>= 7) p[i] = static_cast<char>((v & 0x7f) | (i + 1 < need ? 0x80 : 0));
    size_ += need - 1;
  }
  [[gnu::always_inline]] void room(std::size_t n) {
    if (__builtin_expect(capacity_ - size_ < n, 0)) grow(n);
  }
  void grow(std::size_t n) {
    std::size_t capacity = capacity_ < 256 ? 256 : capacity_ * 2;
    while (capacity - size_ < n) capacity *= 2;
    std::unique_ptr<char[]> bigger(new char[capacity]);
    if (size_ != 0) memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// Reads what Writer writes: one field at a time from a byte range. Every read is bounds-checked;
// malformed input sets failed() and reads as the end, so a hostile file can never over-read.
class Reader {
 public:
  Reader() = default;
  Reader(const char* data, std::size_t size) : p_(reinterpret_cast<const uint8_t*>(data)), end_(p_ + size) {}
  explicit Reader(std::string_view s) : Reader(s.data(), s.size()) {}

  struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t value = 0;        // varint / fixed64 / fixed32
    std::string_view bytes;    // length-delimited
    Reader nested() const { return Reader(bytes); }
  };

  // The next field, or false at the end (or on malformed input: then failed()).
  bool next(Field& f) {
    if (p_ >= end_ || failed_) return false;
    uint64_t tag;
    if (!readVarint(tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return fail();
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<uint32_t>(tag & 7);
    switch (f.wire) {
      case kVarint:
        return readVarint(f.value) || fail();
      case kFixed64:
        if (end_ - p_ < 8) return fail();
        memcpy(&f.value, p_, 8);
        p_ += 8;
        return true;
      case kFixed32: {
        if (end_ - p_ < 4) return fail();
        uint32_t v;
        memcpy(&v, p_, 4);
        f.value = v;
        p_ += 4;
        return true;
      }
      case kLengthDelimited: {
        uint64_t len;
        if (!readVarint(len) || len > static_cast<uint64_t>(end_ - p_)) return fail();
        f.bytes = std::string_view(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        return true;
      }
      default:
        return fail();
    }
  }
  bool failed() const { return failed_; }

  // Packed varints of a length-delimited field; false on malformed bytes.
  template <typename F>
  static bool forEachPacked(std::string_view bytes, F&& f) {
    Reader r(bytes);
    while (r.p_ < r.end_) {
      uint64_t v;
      if (!r.readVarint(v)) return false;
      f(v);
    }
    return true;
  }

 private:
  bool fail() {
    failed_ = true;
    return false;
  }
  // One byte (field tags below 16 and small values, most of what cutrace writes) without the loop.
  [[gnu::always_inline]] bool readVarint(uint64_t& v) {
    if (__builtin_expect(p_ < end_ && *p_ < 0x80, 1)) {
      v = *p_++;
      return true;
    }
    return readLongVarint(v);
  }
  bool readLongVarint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return false;
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }

  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool failed_ = false;
};

}  // namespace cutrace::proto
