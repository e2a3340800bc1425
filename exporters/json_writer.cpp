#include "exporters/json_writer.h"

#include <charconv>

namespace cutrace {

bool Sink::flush() {
  if (fd_ == -1 || buffer_.empty()) return ok();
  if (fd_ >= 0 && ok()) status_ = writeFully(fd_, buffer_.data(), buffer_.size());
  written_ += buffer_.size();
  buffer_.clear();
  return ok();
}

void Sink::putUint(uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  put(std::string_view(buf, static_cast<std::size_t>(end - buf)));
}

void Sink::putInt(int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  put(std::string_view(buf, static_cast<std::size_t>(end - buf)));
}

void Sink::putMicros(int64_t ns) {
  if (ns < 0) {
    put('-');
    ns = -ns;
  }
  putUint(static_cast<uint64_t>(ns) / 1000);
  unsigned frac = static_cast<unsigned>(static_cast<uint64_t>(ns) % 1000);
  if (frac == 0) return;
  char buf[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                 static_cast<char>('0' + frac % 10)};
  std::size_t len = 4;
  while (buf[len - 1] == '0') --len;
  put(std::string_view(buf, len));
}

void Sink::putHex(uint64_t v) {
  char buf[20] = {'0', 'x'};
  auto [end, ec] = std::to_chars(buf + 2, buf + sizeof(buf), v, 16);
  put(std::string_view(buf, static_cast<std::size_t>(end - buf)));
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
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
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

void putJsonString(Sink& out, std::string_view text) { writeJsonString(out, text); }

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
