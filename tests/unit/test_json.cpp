#include <catch2/catch.hpp>

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
