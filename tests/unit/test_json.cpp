#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "exporters/json_writer.h"

using cutrace::Sink;

namespace {

std::string json(std::string_view text) {
  Sink out;
  cutrace::putJsonString(out, text);
  return out.text();
}

std::string micros(int64_t ns) {
  Sink out;
  out.putMicros(ns);
  return out.text();
}

}  // namespace

TEST_CASE("JSON strings escape quotes, backslashes and control bytes", "[json]") {
  REQUIRE(json("plain") == "\"plain\"");
  REQUIRE(json("say \"hi\"") == "\"say \\\"hi\\\"\"");
  REQUIRE(json("a\\b") == "\"a\\\\b\"");
  REQUIRE(json("line\nnext\ttab\rcr") == "\"line\\nnext\\ttab\\rcr\"");
  REQUIRE(json(std::string_view("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001f\\u007f\"");
  REQUIRE(json(std::string_view("nul\0byte", 8)) == "\"nul\\u0000byte\"");
  REQUIRE(json("") == "\"\"");
}

TEST_CASE("JSON strings keep valid UTF-8 and replace every invalid sequence", "[json]") {
  REQUIRE(json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  REQUIRE(json("\xff") == "\"\\ufffd\"");
  REQUIRE(json("a\xc3") == "\"a\\ufffd\"");                       // truncated sequence at the end
  REQUIRE(json("\xc0\xaf") == "\"\\ufffd\\ufffd\"");               // overlong '/'
  REQUIRE(json("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");    // UTF-16 surrogate
  REQUIRE(json("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
  REQUIRE(json("\xe2\x82x") == "\"\\ufffd\\ufffdx\"");             // continuation missing
}

TEST_CASE("microseconds are printed with at most three decimals", "[json]") {
  REQUIRE(micros(0) == "0");
  REQUIRE(micros(1) == "0.001");
  REQUIRE(micros(1500) == "1.5");
  REQUIRE(micros(1234567) == "1234.567");
  REQUIRE(micros(2000000) == "2000");
  REQUIRE(micros(-2500) == "-2.5");
}

TEST_CASE("integers are printed in decimal, every length", "[json]") {
  uint64_t power = 1;
  for (int digits = 1; digits <= 20; ++digits) {
    for (uint64_t v : {power, power - 1, power + 7, power * 9 + (power - 1)}) {
      if (digits == 20 && v != power) continue;  // 10^19 * 9 is past 2^64
      Sink out;
      out.putUint(v);
      CAPTURE(v);
      CHECK(out.text() == std::to_string(v));
    }
    if (digits < 20) power *= 10;
  }
  Sink out;
  out.putUint(UINT64_MAX);
  out.put(' ');
  out.putInt(INT64_MIN);
  out.put(' ');
  out.putInt(-7);
  out.put(' ');
  out.putHex(0xdeadbeefull);
  CHECK(out.text() == "18446744073709551615 -9223372036854775808 -7 0xdeadbeef");
}

TEST_CASE("a special byte is escaped at every position of a longer string", "[json]") {
  // The plain-text check reads eight bytes at a time: each byte that needs care must be found
  // in every lane of a word and in the tail.
  for (const char special : {'"', '\\', '\n', '\x01', '\x1f', '\x7f', '\x80', '\xff'}) {
    for (std::size_t at = 0; at < 19; ++at) {
      std::string text(19, 'a');
      text[at] = special;
      // Each byte as json() writes it alone (a one-byte text takes the byte-by-byte path), unquoted.
      std::string expected = "\"";
      for (std::size_t i = 0; i < text.size(); ++i) {
        const std::string one = json(std::string_view(&text[i], 1));
        expected += one.substr(1, one.size() - 2);
      }
      expected += "\"";
      CAPTURE(static_cast<int>(static_cast<unsigned char>(special)), at);
      CHECK(json(text) == expected);
      CHECK(json(text) != "\"" + text + "\"");
    }
  }
  CHECK(json("just twenty-one bytes") == "\"just twenty-one bytes\"");
  CHECK(json(std::string(600, 'x')) == "\"" + std::string(600, 'x') + "\"");  // past the plain check's reach
}

TEST_CASE("a sink larger than its chunk writes everything in order", "[json]") {
  // In memory it grows; counting, it passes the chunk many times and one piece is larger than it.
  Sink memory;
  Sink counted(Sink::kCountOnly);
  std::string expected;
  for (int i = 0; i < 5000; ++i) {
    const std::string piece = "event " + std::to_string(i) + ";";
    memory.put(piece);
    counted.put(piece);
    memory.putUint(static_cast<uint64_t>(i));
    counted.putUint(static_cast<uint64_t>(i));
    expected += piece + std::to_string(i);
  }
  const std::string big(40000, 'b');
  memory.put(big);
  counted.put(big);
  expected += big;
  CHECK(memory.text() == expected);
  CHECK(memory.bytesWritten() == expected.size());
  CHECK(counted.bytesWritten() == expected.size());
}
