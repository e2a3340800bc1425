#include "exporters/json_writer.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace cutrace {

Sink::Sink(int fd) : fd_(fd) {
  const std::size_t size = fd == -1 ? kInMemoryStart : fd == kCountOnly ? kCountChunk : kChunk;
  buffer_.reset(new char[size]);
  begin_ = at_ = buffer_.get();
  end_ = begin_ + size;
}

void Sink::writeOut(const char* data, std::size_t size) {
  if (fd_ >= 0 && ok()) status_ = writeFully(fd_, data, size);
  written_ += size;
}

bool Sink::flush() {
  if (fd_ == -1 || at_ == begin_) return ok();
  writeOut(begin_, static_cast<std::size_t>(at_ - begin_));
  at_ = begin_;
  return ok();
}

void Sink::makeRoom(std::size_t n) {
  if (fd_ != -1) {
    flush();
    if (n <= static_cast<std::size_t>(end_ - at_)) return;
  }
  // In memory (or a piece larger than a file's chunk, see putLarge): a buffer twice as large.
  const std::size_t used = static_cast<std::size_t>(at_ - begin_);
  const std::size_t size = std::max(2 * static_cast<std::size_t>(end_ - begin_), used + n);
  std::unique_ptr<char[]> larger(new char[size]);
  memcpy(larger.get(), begin_, used);
  buffer_ = std::move(larger);
  begin_ = buffer_.get();
  at_ = begin_ + used;
  end_ = begin_ + size;
}

void Sink::putLarge(std::string_view s) {
  if (fd_ != -1 && s.size() > static_cast<std::size_t>(end_ - begin_)) {
    // Larger than the whole chunk: written as it is, after what came before it.
    flush();
    writeOut(s.data(), s.size());
    return;
  }
  makeRoom(s.size());
  memcpy(at_, s.data(), s.size());
  at_ += s.size();
}

char* writeUint(char* p, uint64_t v) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  static constexpr uint64_t kPowers[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                         10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                         100000000000ull, 1000000000000ull, 10000000000000ull,
                                         100000000000000ull, 1000000000000000ull, 10000000000000000ull,
                                         100000000000000000ull, 1000000000000000000ull,
                                         10000000000000000000ull};
  // Digits from the bit length (log10(2) ~ 1233 / 4096), then one compare.
  const unsigned guess = static_cast<unsigned>(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
  const unsigned digits = guess + (v >= kPowers[guess]);
  char* end = p + (digits == 0 ? 1 : digits);
  char* q = end;
  while (v >= 100) {
    const auto pair = static_cast<unsigned>(v % 100) * 2;
    v /= 100;
    *--q = kPairs[pair + 1];
    *--q = kPairs[pair];
  }
  if (v >= 10) {
    *--q = kPairs[v * 2 + 1];
    *--q = kPairs[v * 2];
  } else {
    *--q = static_cast<char>('0' + v);
  }
  return end;
}

void Sink::putUint(uint64_t v) { commit(writeUint(room(20), v)); }

void Sink::putInt(int64_t v) {
  char* p = room(21);
  if (v < 0) {
    *p++ = '-';
    commit(writeUint(p, 0 - static_cast<uint64_t>(v)));
  } else {
    commit(writeUint(p, static_cast<uint64_t>(v)));
  }
}

void Sink::putMicros(int64_t ns) {
  char* p = room(25);
  uint64_t v = static_cast<uint64_t>(ns);
  if (ns < 0) {
    *p++ = '-';
    v = 0 - v;
  }
  p = writeUint(p, v / 1000);
  const auto frac = static_cast<unsigned>(v % 1000);
  if (frac != 0) {
    p[0] = '.';
    p[1] = static_cast<char>('0' + frac / 100);
    p[2] = static_cast<char>('0' + frac / 10 % 10);
    p[3] = static_cast<char>('0' + frac % 10);
    p += 4;
    while (p[-1] == '0') --p;
  }
  commit(p);
}

void Sink::putHex(uint64_t v) {
  char* p = room(18);
  p[0] = '0';
  p[1] = 'x';
  auto [end, ec] = std::to_chars(p + 2, p + 18, v, 16);
  commit(end);
}

std::size_t asciiRun(std::string_view s, std::size_t from) {
  std::size_t i = from;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ull) break;
  }
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  return i - from;
}

std::size_t utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    if (i + k >= s.size()) return false;
    const auto b = static_cast<unsigned char>(s[i + k]);
    return b >= lo && b <= hi;
  };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (b0 == 0xF0) return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

namespace {

// The one JSON string writer: Sink (the exporters) and std::string (the tools) share it.
struct StringOut {
  std::string& s;
  void put(std::string_view v) { s.append(v); }
  void put(char c) { s.push_back(c); }
};

constexpr std::size_t kPlainMax = 512;

// A byte a JSON string holds as it is: printable ASCII but the quote and the backslash.
constexpr bool plainJsonByte(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }

template <class Out>
void writeJsonString(Out& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.put('"');
  std::size_t runStart = 0;
  std::size_t i = 0;
  auto flushRun = [&] {
    if (i > runStart) out.put(text.substr(runStart, i - runStart));
  };
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (plainJsonByte(c)) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const std::size_t n = utf8SequenceLength(text, i);
      if (n > 0) {
        i += n;
        continue;
      }
    }
    flushRun();
    switch (c) {
      case '"': out.put("\\\""); break;
      case '\\': out.put("\\\\"); break;
      case '\n': out.put("\\n"); break;
      case '\t': out.put("\\t"); break;
      case '\r': out.put("\\r"); break;
      default:
        if (c >= 0x80) {
          out.put("\\ufffd");
        } else {
          const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
          out.put(std::string_view(esc, 6));
        }
    }
    ++i;
    runStart = i;
  }
  flushRun();
  out.put('"');
}

}  // namespace

void putJsonString(Sink& out, std::string_view text) {
  // Most texts (API, kernel and range names) need no escape: checked first, copied whole.
  if (text.size() <= kPlainMax) {
    bool plain = true;
    std::size_t i = 0;
    // Eight bytes at a time: any byte below 0x20, at or above 0x7f, a quote or a backslash.
    constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    const auto hasZero = [](uint64_t w) { return (w - kOnes) & ~w & kHigh; };
    for (; i + 8 <= text.size() && plain; i += 8) {
      uint64_t w;
      memcpy(&w, text.data() + i, 8);
      plain = ((((w - kOnes * 0x20) & ~w) | w) & kHigh) == 0 && hasZero(w ^ (kOnes * 0x7f)) == 0 &&
              hasZero(w ^ (kOnes * '"')) == 0 && hasZero(w ^ (kOnes * '\\')) == 0;
    }
    for (; i < text.size() && plain; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      plain = plainJsonByte(c);
    }
    if (plain) {
      char* p = out.room(text.size() + 2);
      *p++ = '"';
      memcpy(p, text.data(), text.size());
      p += text.size();
      *p++ = '"';
      out.commit(p);
      return;
    }
  }
  writeJsonString(out, text);
}

void putJsonString(std::string& out, std::string_view text) {
  StringOut o{out};
  writeJsonString(o, text);
}

std::string jsonStringLiteral(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  putJsonString(out, text);
  return out;
}

}  // namespace cutrace
