/* Tessera mixture-of-experts routing, C API (the C++ API and its contracts: tessera/moe.hpp).
 *
 *   tessera_moe_config_t cfg = {.num_experts = 16, .hidden = 4096, .dtype = TESSERA_MOE_F32, .top_k = 2,
 *                               .max_tokens = 512};
 *   tessera_moe_t moe;
 *   tessera_moe_create(&cfg, &moe);                       collective
 *   tessera_moe_dispatch(moe, x, n_tokens, expert_ids, weights);
 *   for (int e = 0; e < tessera_moe_local_experts(moe); ++e)
 *     run_expert(tessera_moe_expert_tokens(moe, e), tessera_moe_count(moe, e));   outputs in place
 *     (optionally tessera_moe_combine_expert(moe, e): expert e's outputs home now, during the next one)
 *   tessera_moe_combine(moe, y);
 *   tessera_moe_destroy(moe);                             collective
 *
 * Functions returning int give 0 on success and -1 on bad arguments, after printing the reason (the value
 * and the limit); tessera_moe_last_error() returns that text. */
#ifndef TESSERA_MOE_H
#define TESSERA_MOE_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The values of tessera::moe::DType (tessera/moe.hpp), entries of the one list of tessera/dtypes.h. */
typedef enum { TESSERA_MOE_F32 = 0, TESSERA_MOE_BF16 = 1 } tessera_moe_dtype_t;
typedef enum { TESSERA_MOE_THROUGHPUT = 0, TESSERA_MOE_LOW_LATENCY = 1 } tessera_moe_mode_t;

typedef struct {
  int num_experts;
  int hidden;
  tessera_moe_dtype_t dtype;
  int top_k;
  int max_tokens;
  int capacity;             /* 0: automatic (tessera/moe.hpp) */
  tessera_moe_mode_t mode;
  int block_num;            /* 0 or -1: this PE's share of its host's CPUs (tessera/moe.hpp) */
} tessera_moe_config_t;

typedef struct tessera_moe* tessera_moe_t;

int tessera_moe_create(const tessera_moe_config_t* cfg, tessera_moe_t* out);
int tessera_moe_destroy(tessera_moe_t moe);
int tessera_moe_dispatch(tessera_moe_t moe, const void* tokens, int n_tokens, const int32_t* expert_ids,
                         const float* weights);
/* Optional, before combine: one local expert's outputs home now (tessera::moe::Dispatcher::combine_expert). */
int tessera_moe_combine_expert(tessera_moe_t moe, int local_expert);
int tessera_moe_combine(tessera_moe_t moe, void* out);
int tessera_moe_local_experts(tessera_moe_t moe);  /* -1 for a bad handle */
int tessera_moe_first_expert(tessera_moe_t moe);
int tessera_moe_count(tessera_moe_t moe, int local_expert);  /* -1 for bad arguments */
void* tessera_moe_expert_tokens(tessera_moe_t moe, int local_expert);  /* NULL for bad arguments */
long tessera_moe_dropped(tessera_moe_t moe);
const char* tessera_moe_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
