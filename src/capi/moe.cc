// The C API of tessera/moe.h: handles and error codes over tessera::moe::Dispatcher.
#include <tessera/moe.h>

#include <tessera/moe.hpp>

#include <algorithm>
#include <iterator>
#include <string>

#include "base/log.h"

namespace {
thread_local std::string t_error;

// tessera_moe_dtype_t keeps its C spelling; it converts to tessera::moe::DType (generated from the one list,
// tessera/dtypes.h) by a cast, so the two must agree value by value and in count: pinned here.
struct DTypeRow {
  tessera_moe_dtype_t c;
  tessera::moe::DType cpp;
};
constexpr DTypeRow kDTypeRows[] = {
    {.c = TESSERA_MOE_F32, .cpp = tessera::moe::DType::kFloat32},
    {.c = TESSERA_MOE_BF16, .cpp = tessera::moe::DType::kBFloat16},
};
static_assert(std::size(kDTypeRows) == 0 TESSERA_MOE_DTYPES(TESSERA_LIST_ONE), "a MoE data type is missing");
static_assert(std::ranges::all_of(kDTypeRows, [](const DTypeRow& r) {
                return static_cast<int>(r.c) == static_cast<int>(r.cpp);
              }),
              "tessera_moe_dtype_t and tessera::moe::DType differ");

int failed(const std::exception& e) {
  t_error = e.what();
  tessera::log::write_line(tessera::log::Level::kError, t_error);
  return -1;
}
}  // namespace

struct tessera_moe {
  tessera::moe::Dispatcher d;
  explicit tessera_moe(const tessera::moe::Config& c) : d(c) {}
};

extern "C" {

int tessera_moe_create(const tessera_moe_config_t* cfg, tessera_moe_t* out) {
  if (!cfg || !out) return failed(tessera::Error("tessera_moe_create: cfg or out is null"));
  tessera::moe::Config c;
  c.num_experts = cfg->num_experts;
  c.hidden = cfg->hidden;
  if (static_cast<unsigned>(cfg->dtype) >= std::size(kDTypeRows))
    return failed(tessera::Error("tessera_moe_create: dtype " + std::to_string(cfg->dtype) + " is not TESSERA_MOE_F32 or TESSERA_MOE_BF16"));
  c.dtype = static_cast<tessera::moe::DType>(cfg->dtype);
  if (cfg->mode != TESSERA_MOE_THROUGHPUT && cfg->mode != TESSERA_MOE_LOW_LATENCY)
    return failed(tessera::Error("tessera_moe_create: mode " + std::to_string(cfg->mode) + " is not a tessera_moe_mode_t"));
  c.top_k = cfg->top_k;
  c.max_tokens = cfg->max_tokens;
  c.capacity = cfg->capacity;
  c.mode = cfg->mode == TESSERA_MOE_LOW_LATENCY ? tessera::moe::Mode::kLowLatency : tessera::moe::Mode::kThroughput;
  c.block_num = cfg->block_num > 0 ? cfg->block_num : -1;
  try {
    *out = new tessera_moe(c);
    return 0;
  } catch (const std::exception& e) {
    *out = nullptr;
    return failed(e);
  }
}

int tessera_moe_destroy(tessera_moe_t moe) {
  delete moe;
  return 0;
}

int tessera_moe_dispatch(tessera_moe_t moe, const void* tokens, int n_tokens, const int32_t* ids, const float* w) {
  if (!moe) return failed(tessera::Error("tessera_moe_dispatch: the handle is null"));
  try {
    moe->d.dispatch(tokens, n_tokens, ids, w);
    return 0;
  } catch (const std::exception& e) {
    return failed(e);
  }
}

int tessera_moe_combine_expert(tessera_moe_t moe, int local_expert) {
  if (!moe) return failed(tessera::Error("tessera_moe_combine_expert: the handle is null"));
  try {
    moe->d.combine_expert(local_expert);
    return 0;
  } catch (const std::exception& e) {
    return failed(e);
  }
}

int tessera_moe_combine(tessera_moe_t moe, void* out) {
  if (!moe) return failed(tessera::Error("tessera_moe_combine: the handle is null"));
  try {
    moe->d.combine(out);
    return 0;
  } catch (const std::exception& e) {
    return failed(e);
  }
}

int tessera_moe_local_experts(tessera_moe_t moe) { return moe ? moe->d.local_experts() : -1; }
int tessera_moe_first_expert(tessera_moe_t moe) { return moe ? moe->d.first_expert() : -1; }

int tessera_moe_count(tessera_moe_t moe, int le) {
  if (!moe) return failed(tessera::Error("tessera_moe_count: the handle is null"));
  try {
    return moe->d.count(le);
  } catch (const std::exception& e) {
    return failed(e);
  }
}

void* tessera_moe_expert_tokens(tessera_moe_t moe, int le) {
  if (!moe) return failed(tessera::Error("tessera_moe_expert_tokens: the handle is null")), nullptr;
  try {
    return moe->d.expert_tokens(le);
  } catch (const std::exception& e) {
    failed(e);
    return nullptr;
  }
}

long tessera_moe_dropped(tessera_moe_t moe) { return moe ? static_cast<long>(moe->d.dropped()) : -1; }
const char* tessera_moe_last_error(void) { return t_error.c_str(); }

}  // extern "C"
