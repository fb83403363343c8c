#include "base/config.h"

#include <gtest/gtest.h>

namespace tessera::config {
namespace {

TEST(ParseSize, Suffixes) {
  EXPECT_EQ(parse_size("X", "0").value(), 0u);
  EXPECT_EQ(parse_size("X", "4096").value(), 4096u);
  EXPECT_EQ(parse_size("X", "64K").value(), 64u << 10);
  EXPECT_EQ(parse_size("X", "2m").value(), 2u << 20);
  EXPECT_EQ(parse_size("X", "1G").value(), 1ull << 30);
  EXPECT_EQ(parse_size("X", "1GiB").value(), 1ull << 30);
  EXPECT_EQ(parse_size("X", "1.5K").value(), 1536u);
  EXPECT_EQ(parse_size("X", "2T").value(), 2ull << 40);
}

// Whole numbers are exact up to 2^64-1, beyond a double's 2^53 (found by tests/fuzz/config_values).
TEST(ParseSize, WholeNumbersAreExact) {
  EXPECT_EQ(parse_size("X", "23372036884775807").value(), 23372036884775807ull);
  EXPECT_EQ(parse_size("X", "18446744073709551615").value(), UINT64_MAX);
  EXPECT_FALSE(parse_size("X", "18446744073709551616").is_ok());
  EXPECT_EQ(parse_size("X", "16777215T").value(), 16777215ull << 40);
  EXPECT_FALSE(parse_size("X", "16777216T").is_ok());
}

TEST(ParseSize, ErrorsNameValueAndLimit) {
  auto r = parse_size("SHMEM_SYMMETRIC_SIZE", "12Q");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("SHMEM_SYMMETRIC_SIZE"), std::string::npos);
  EXPECT_NE(r.status().message().find("12Q"), std::string::npos);
  EXPECT_FALSE(parse_size("X", "").is_ok());
  EXPECT_FALSE(parse_size("X", "-5").is_ok());
  EXPECT_FALSE(parse_size("X", "abc").is_ok());
  auto big = parse_size("X", "99999999999T");
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.status().message().find("out of range"), std::string::npos);
}

TEST(ParseBool, AcceptsCommonSpellings) {
  for (auto t : {"1", "yes", "TRUE", "on", "y"}) EXPECT_TRUE(parse_bool("X", t).value()) << t;
  for (auto f : {"0", "no", "false", "OFF", ""}) EXPECT_FALSE(parse_bool("X", f).value()) << f;
  EXPECT_FALSE(parse_bool("X", "maybe").is_ok());
}

TEST(ParseInt, RangeAndJunk) {
  EXPECT_EQ(parse_int("X", "42").value(), 42);
  EXPECT_EQ(parse_int("X", "-7").value(), -7);
  EXPECT_EQ(parse_int("X", "0x10").value(), 16);
  EXPECT_FALSE(parse_int("X", "12abc").is_ok());
  EXPECT_FALSE(parse_int("X", "99999999999999999999999").is_ok());
}

TEST(ParseDouble, Values) {
  EXPECT_DOUBLE_EQ(parse_double("X", "2.5").value(), 2.5);
  EXPECT_FALSE(parse_double("X", "fast").is_ok());
  EXPECT_FALSE(parse_double("X", "inf").is_ok());
}

TEST(FormatSize, Readable) {
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_size(2048), "2 KiB");
  EXPECT_EQ(format_size(3ull << 30), "3 GiB");
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  // Above 2^53 a double rounds to a whole unit that the size is not (found by tests/fuzz/config_values).
  EXPECT_EQ(format_size(9223372036854775847ull), "8388608.0 TiB");
  EXPECT_EQ(format_size(((1ull << 53) + 1) << 10), "9007199254740993 KiB");
}

TEST(Registry, DeclaredVariablesAreListed) {
  static const Var<int64_t> v{"TESSERA_TEST_ONLY_VAR", 5, "a variable of this test"};
  bool found = false;
  for (const VarInfo* i : all()) found = found || i->name == "TESSERA_TEST_ONLY_VAR";
  EXPECT_TRUE(found);
  EXPECT_EQ(v.get(), 5);
}

}  // namespace
}  // namespace tessera::config
