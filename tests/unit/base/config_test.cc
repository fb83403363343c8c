#include "base/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

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

// A variable set for the length of one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

bool declared(std::string_view name) {
  for (const VarInfo* v : all())
    if (v->name == name || std::find(v->aliases.begin(), v->aliases.end(), name) != v->aliases.end()) return true;
  return false;
}

// The lines unknown_shmem_variables() gives about `name`.
std::vector<std::string> shmem_lines_about(std::string_view name) {
  std::vector<std::string> about;
  for (const std::string& line : unknown_shmem_variables())
    if (line.find(std::string(name) + " ") != std::string::npos) about.push_back(line);
  return about;
}

// An SHMEM_* typo is ignored with a warning that names the variable meant and counts the variables as
// `tessera-info --env` lists them (one row each, aliases beside their name).
TEST(Unknown, ShmemTypoWarnsWithTheNearestName) {
  ASSERT_TRUE(declared("SHMEM_SYMMETRIC_SIZE"));  // the library's, loaded with this test
  for (const char* typo : {"SHMEM_SYMETRIC_SIZE", "SHMEM_SYMMETRIC_SZIE", "SHMEM_SYMMETRIC_SIZ"}) {
    ScopedEnv set(typo, "1G");
    const auto lines = shmem_lines_about(typo);
    ASSERT_EQ(lines.size(), 1u) << typo;
    EXPECT_EQ(lines[0], fmt::format("environment: unknown variable {} is ignored; did you mean SHMEM_SYMMETRIC_SIZE? "
                                    "(`tessera-info --env` lists the {} known ones)", typo, all().size()));
  }
}

TEST(Unknown, ShmemNameNearNothingWarnsWithoutAGuess) {
  ScopedEnv set("SHMEM_OFI_PROVIDER", "tcp");  // another library's
  const auto lines = shmem_lines_about("SHMEM_OFI_PROVIDER");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find("did you mean"), std::string::npos) << lines[0];
}

TEST(Unknown, DeclaredShmemNamesAndOtherPrefixesAreNotWarnedOf) {
  ScopedEnv spec("SHMEM_SYMMETRIC_SIZE", "1G"), alias("SMA_INFO", "1"), other("SHMEMX_FOO", "1");
  EXPECT_TRUE(shmem_lines_about("SHMEM_SYMMETRIC_SIZE").empty());
  EXPECT_TRUE(shmem_lines_about("SMA_INFO").empty());
  EXPECT_TRUE(shmem_lines_about("SHMEMX_FOO").empty());
  EXPECT_TRUE(check_unknown().is_ok());
}

// A TESSERA_* typo ends the job; its message names the variable meant, with the same count.
TEST(Unknown, TesseraTypoIsAnErrorWithTheNearestName) {
  ASSERT_TRUE(declared("TESSERA_TIMEOUT"));
  {
    ScopedEnv set("TESSERA_TIMEOUTT", "5");
    const Status st = check_unknown();
    EXPECT_EQ(st.message(), fmt::format("environment: unknown variable TESSERA_TIMEOUTT; did you mean TESSERA_TIMEOUT? "
                                        "(`tessera-info --env` lists the {} known ones)", all().size()));
  }
  {
    ScopedEnv set("TESSERA_NOTHING_LIKE_IT", "1");
    const Status st = check_unknown();
    EXPECT_FALSE(st.is_ok());
    EXPECT_EQ(st.message().find("did you mean"), std::string::npos) << st.message();
  }
  ScopedEnv launcher("TESSERA_JOB_ANYTHING", "1");  // tessera-run's own
  EXPECT_TRUE(check_unknown().is_ok());
}

}  // namespace
}  // namespace tessera::config
