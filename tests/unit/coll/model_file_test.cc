// The cost model's file (TESSERA_COLL_MODEL) and per-host cache: what parse_model accepts, what it refuses
// and says, and that format_model's text reads back as the same values.
#include "coll/select/model_file.h"

#include <gtest/gtest.h>

namespace tessera::coll {
namespace {

std::string error_of(std::string_view text, bool need_cma = false) {
  ModelParams m;
  const Status st = parse_model(text, "model.txt", need_cma, &m);
  return st.is_ok() ? "" : st.message();
}

TEST(ModelFile, ReadsTheThreeRequiredValuesAndDefaultsTheRest) {
  ModelParams m;
  ASSERT_TRUE(parse_model("alpha=1e-6 beta=2.5e-10\ngamma=1e-10  # a comment = not a token\n", "f", false, &m).is_ok());
  EXPECT_EQ(m.alpha, 1e-6);
  EXPECT_EQ(m.beta, 2.5e-10);
  EXPECT_EQ(m.gamma, 1e-10);
  EXPECT_EQ(m.cma_beta, 3 * 2.5e-10);
  EXPECT_EQ(m.cma_beta_mem, m.cma_beta);
  EXPECT_EQ(m.cache_bytes, ModelParams{}.cache_bytes);
  EXPECT_EQ(m.beta_mem, m.beta) << "a file without the memory's rates prices every footprint alike";
  EXPECT_EQ(m.gamma_mem, m.gamma);
  EXPECT_EQ(m.oversub_alpha, ModelParams{}.oversub_alpha);
}

TEST(ModelFile, FormatReadsBackExactly) {
  ModelParams m;
  m.alpha = 4.123456789012345e-7, m.beta = 1.0 / 7.3e9, m.gamma = 1.0 / 11.1e9, m.oversub_alpha = 3.3e-6;
  m.cma_beta = 1.0 / 2.9e9, m.cma_beta_mem = 1.0 / 1.7e9, m.cache_bytes = 3 * 1048576.0;
  m.beta_mem = 1.0 / 6.1e9, m.gamma_mem = 1.0 / 4.3e9;
  ModelParams back;
  ASSERT_TRUE(parse_model(format_model(m), "cache", true, &back).is_ok()) << format_model(m);
  for (auto f : {&ModelParams::alpha, &ModelParams::beta, &ModelParams::gamma, &ModelParams::oversub_alpha,
                 &ModelParams::cma_beta, &ModelParams::cma_beta_mem, &ModelParams::cache_bytes,
                 &ModelParams::beta_mem, &ModelParams::gamma_mem})
    EXPECT_EQ(back.*f, m.*f) << format_model(m);
}

TEST(ModelFile, RefusesWhatItCannotUseAndSaysWhy) {
  EXPECT_NE(error_of("alpha=1e-6 beta=1e-10").find("gamma is missing"), std::string::npos);
  // a key given twice does not stand in for a missing one
  EXPECT_NE(error_of("alpha=1e-6 alpha=2e-6 beta=1e-10").find("alpha is given twice"), std::string::npos);
  EXPECT_NE(error_of("alpha=1e-6 beta=1e-10 gama=1e-10").find("unknown key \"gama\""), std::string::npos);
  EXPECT_NE(error_of("alpha=1e-6 beta=1e-10 gamma=1e-10 fast").find("\"fast\" is not key=value"), std::string::npos);
  using namespace std::string_literals;
  // "2": more than a second per byte; "1e-9\0x": the NUL would hide the rest of the token from strtod
  for (const std::string& bad : {"0"s, "-1e-9"s, "inf"s, "nan"s, "1e999"s, "1e-9x"s, ""s, "2"s, "1e-9\0x"s}) {
    const std::string e = error_of("alpha=1e-6 beta=1e-10 gamma=" + bad);
    EXPECT_NE(e.find("gamma="), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("above 0 and at most 1"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("model.txt"), std::string::npos) << e;
  }
  // the cache must carry the single-copy figures (an older cache is measured again)
  EXPECT_NE(error_of("alpha=1e-6 beta=1e-10 gamma=1e-10 cache_bytes=1e19").find("at most 1e+18"), std::string::npos);
  EXPECT_NE(error_of("alpha=1e-6 beta=1e-10 gamma=1e-10", true).find("cma_beta is missing"), std::string::npos);
  // a cache written before the memory's rates were measured (v3) is measured again
  EXPECT_NE(error_of("alpha=1e-6 beta=1e-10 gamma=1e-10 cma_beta=3e-10 cma_beta_mem=3e-10 cache_bytes=4e6", true)
                .find("beta_mem is missing"),
            std::string::npos);
}

TEST(ModelFile, AnErrorLeavesTheParametersAsTheyWere) {
  ModelParams m;
  m.alpha = 7e-7;
  EXPECT_FALSE(parse_model("alpha=1e-6 beta=1e-10 gamma=0", "f", false, &m).is_ok());
  EXPECT_EQ(m.alpha, 7e-7);
}

}  // namespace
}  // namespace tessera::coll
