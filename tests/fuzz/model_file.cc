// The cost model's file (TESSERA_COLL_MODEL) and per-host cache (coll/select/model_file.h): any text is
// parameters or an error naming the file, never an end of the process. Properties of accepted text: every
// value finite and above 0; alpha, beta and gamma each appear as a key; format_model's text reads back as
// exactly the same values.
#include <cmath>
#include <string>

#include "coll/select/model_file.h"
#include "fuzz.h"

using tessera::coll::ModelParams;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool need_cma = data[0] & 1;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  ModelParams m;
  const tessera::Status st = tessera::coll::parse_model(text, "fuzz.txt", need_cma, &m);
  if (!st.is_ok()) {
    FUZZ_CHECK(st.message().find("fuzz.txt") != std::string::npos);
    return 0;
  }
  constexpr double ModelParams::*kFields[] = {&ModelParams::alpha, &ModelParams::beta, &ModelParams::gamma,
                                              &ModelParams::oversub_alpha, &ModelParams::cma_beta,
                                              &ModelParams::cma_beta_mem, &ModelParams::cache_bytes};
  for (auto f : kFields) FUZZ_CHECK(std::isfinite(m.*f) && m.*f > 0);
  for (const char* key : {"alpha=", "beta=", "gamma="}) FUZZ_CHECK(text.find(key) != std::string::npos);
  ModelParams back;
  FUZZ_CHECK(tessera::coll::parse_model(tessera::coll::format_model(m), "again", true, &back).is_ok());
  for (auto f : kFields) FUZZ_CHECK(back.*f == m.*f);
  return 0;
}
