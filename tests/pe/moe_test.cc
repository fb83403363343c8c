// MoE dispatch and combine (tessera/moe.hpp, tessera/moe.h) against a reference every PE computes itself:
// tokens, expert choices and weights are functions of (PE, token, k), so each PE knows what every expert must
// receive and what every token's combined output must be. Both modes, f32 and bf16, top-1/2/8, experts
// that do not divide the PEs (some PEs own none), PEs with no tokens, capacity overflow, repeated calls.
#include <tessera/moe.h>
#include <tessera/moe.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "pe_main.h"

namespace {
using namespace tessera::moe;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

struct Case {
  Mode mode;
  DType dtype;
  int experts, top_k, hidden, max_tokens, capacity;
};

// Tokens of PE p in call c: a few per PE, PE 1 none in odd calls (a PE may have nothing to send).
int tokens_of(int pe, int call, int max_tokens) {
  if (pe == 1 && call % 2 == 1) return 0;
  return std::min(max_tokens, 5 + (pe * 7 + call * 3) % 11);
}
// Expert of (pe, t, k): distinct over k while top_k <= experts; -1 (no expert) for some pairs.
int expert_of(int pe, int t, int k, const Case& c) {
  if ((pe + t + k) % 13 == 12) return -1;
  const int start = (pe * 31 + t * 17) % c.experts;
  return k < c.experts ? (start + k) % c.experts : -1;
}
float weight_of(int k) { return static_cast<float>(k + 1) / 8.0f; }
// Element h of token t of PE p: element 0 names the PE, 1 the token, the rest a pattern; all exact in bf16.
float elem(int pe, int t, int h) {
  if (h == 0) return static_cast<float>(pe);
  if (h == 1) return static_cast<float>(t);
  return static_cast<float>((pe * 5 + t * 3 + h) % 9) - 4.0f;
}
// Expert e's function: a power of two, so outputs stay exact in bf16.
float scale_of(int e) { return static_cast<float>(1 << (e % 4)); }

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float get(const void* rows, DType t, size_t i) {
  return t == DType::kFloat32 ? static_cast<const float*>(rows)[i] : from_bf16(static_cast<const uint16_t*>(rows)[i]);
}
void set(void* rows, DType t, size_t i, float v) {
  if (t == DType::kFloat32) static_cast<float*>(rows)[i] = v;
  else static_cast<uint16_t*>(rows)[i] = to_bf16(v);
}

// early: some local experts go home by combine_expert before combine, each right after its rows are
// scaled (alternate experts, alternating by call) or, a few more, afterwards in reverse order.
void run_case(const Case& c, int calls = 3, bool early = false) {
  Config cfg;
  cfg.num_experts = c.experts;
  cfg.hidden = c.hidden;
  cfg.dtype = c.dtype;
  cfg.top_k = c.top_k;
  cfg.max_tokens = c.max_tokens;
  cfg.capacity = c.capacity;
  cfg.mode = c.mode;
  cfg.block_num = 2;
  Dispatcher d(cfg);
  const size_t esz = c.dtype == DType::kFloat32 ? 4 : 2;
  const int n = npes();
  for (int call = 0; call < calls; ++call) {
    const int nt = tokens_of(me(), call, c.max_tokens);
    std::vector<char> x(static_cast<size_t>(nt) * c.hidden * esz), y(x.size());
    std::vector<int32_t> ids(static_cast<size_t>(nt) * c.top_k);
    std::vector<float> w(ids.size());
    for (int t = 0; t < nt; ++t) {
      for (int h = 0; h < c.hidden; ++h) set(x.data(), c.dtype, static_cast<size_t>(t) * c.hidden + h, elem(me(), t, h));
      for (int k = 0; k < c.top_k; ++k) {
        ids[t * c.top_k + k] = expert_of(me(), t, k, c);
        w[t * c.top_k + k] = weight_of(k);
      }
    }
    d.dispatch(x.data(), nt, ids.data(), w.data());
    // What every expert of this PE must receive: every (pe, t, k) routed to it.
    std::map<int, int> routed;  // expert -> pairs
    for (int pe = 0; pe < n; ++pe)
      for (int t = 0; t < tokens_of(pe, call, c.max_tokens); ++t)
        for (int k = 0; k < c.top_k; ++k)
          if (int e = expert_of(pe, t, k, c); e >= 0) ++routed[e];
    long received = 0;
    for (int le = 0; le < d.local_experts(); ++le) {
      const int e = d.first_expert() + le, cnt = d.count(le);
      received += cnt;
      const int want = c.mode == Mode::kThroughput ? std::min(routed[e], d.capacity()) : routed[e];
      ASSERT_EQ(cnt, want) << "expert " << e << " call " << call;
      void* rows = d.expert_tokens(le);
      for (int r = 0; r < cnt; ++r) {
        const size_t base = static_cast<size_t>(r) * c.hidden;
        const int pe = static_cast<int>(get(rows, c.dtype, base)), t = static_cast<int>(get(rows, c.dtype, base + 1));
        ASSERT_TRUE(pe >= 0 && pe < n && t >= 0 && t < tokens_of(pe, call, c.max_tokens)) << "row from PE " << pe << " token " << t;
        bool to_me = false;
        for (int k = 0; k < c.top_k; ++k) to_me = to_me || expert_of(pe, t, k, c) == e;
        ASSERT_TRUE(to_me) << "expert " << e << " got token " << t << " of PE " << pe << ", which did not choose it";
        for (int h = 2; h < c.hidden; ++h) ASSERT_EQ(get(rows, c.dtype, base + h), elem(pe, t, h));
        for (int h = 0; h < c.hidden; ++h) set(rows, c.dtype, base + h, get(rows, c.dtype, base + h) * scale_of(e));
      }
      if (early && (le + call) % 2 == 0) d.combine_expert(le);
    }
    if (early)
      for (int le = d.local_experts() - 1; le >= 0; --le)
        if ((le + call) % 2 == 1 && le % 3 == 0) d.combine_expert(le);
    // Pairs kept plus pairs dropped, over all PEs, are all the routed pairs.
    long* sums = static_cast<long*>(shmem_calloc(4, sizeof(long)));
    sums[0] = received;
    sums[1] = static_cast<long>(d.dropped());
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sums + 2, sums, 2);
    const long kept = sums[2], dropped = sums[3];
    shmem_free(sums);
    long all_routed = 0;
    for (const auto& [e, k] : routed) all_routed += k;
    EXPECT_EQ(kept + dropped, all_routed) << "call " << call;
    if (c.capacity) {
      EXPECT_GT(dropped, 0) << "capacity " << c.capacity << " never overflowed: the case tests nothing";
    }
    if (c.mode == Mode::kLowLatency) {
      EXPECT_EQ(d.dropped(), 0u);
    }

    d.combine(y.data());
    for (int t = 0; t < nt; ++t)
      for (int h = 0; h < c.hidden; ++h) {
        float want = 0;
        for (int k = 0; k < c.top_k; ++k) {
          const int e = ids[t * c.top_k + k];
          if (e < 0 || d.was_dropped(t, k)) continue;
          want += w[t * c.top_k + k] * scale_of(e) * elem(me(), t, h);
        }
        if (c.dtype == DType::kBFloat16) want = from_bf16(to_bf16(want));
        ASSERT_EQ(get(y.data(), c.dtype, static_cast<size_t>(t) * c.hidden + h), want) << "token " << t << " element " << h;
      }
  }
}

TEST(Moe, ThroughputF32TopTwo) { run_case({Mode::kThroughput, DType::kFloat32, 8, 2, 33, 32, 0}); }
TEST(Moe, ThroughputBf16TopEight) { run_case({Mode::kThroughput, DType::kBFloat16, 16, 8, 64, 32, 0}); }
TEST(Moe, ThroughputTopOneFewerExpertsThanPes) { run_case({Mode::kThroughput, DType::kFloat32, 3, 1, 16, 16, 0}); }
TEST(Moe, ThroughputCapacityOverflowDropsAndReports) {
  run_case({Mode::kThroughput, DType::kFloat32, 4, 2, 8, 32, 2});
}
TEST(Moe, LowLatencyF32TopTwo) { run_case({Mode::kLowLatency, DType::kFloat32, 8, 2, 33, 16, 0}); }
TEST(Moe, LowLatencyBf16TopEight) { run_case({Mode::kLowLatency, DType::kBFloat16, 16, 8, 64, 16, 0}); }
TEST(Moe, LowLatencyOddExperts) { run_case({Mode::kLowLatency, DType::kBFloat16, 5, 2, 8, 16, 0}); }
TEST(Moe, ThroughputExpertsSentHomeEarly) { run_case({Mode::kThroughput, DType::kFloat32, 8, 2, 33, 32, 0}, 3, true); }
TEST(Moe, ThroughputDropsWithExpertsSentHomeEarly) {
  run_case({Mode::kThroughput, DType::kFloat32, 4, 2, 8, 32, 2}, 3, true);
}
TEST(Moe, LowLatencyExpertsSentHomeEarly) { run_case({Mode::kLowLatency, DType::kBFloat16, 16, 8, 64, 16, 0}, 3, true); }

TEST(Moe, BadArgumentsThrowNamingTheValue) {
  Config cfg;
  cfg.num_experts = 4;
  cfg.hidden = 4;
  cfg.top_k = 1;
  cfg.max_tokens = 2;
  Dispatcher d(cfg);
  float x[12] = {};
  float w[3] = {1, 1, 1};
  int32_t bad[2] = {0, 4};
  try {
    d.dispatch(x, 2, bad, w);
    ADD_FAILURE() << "expert 4 of 4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expert id 4"), std::string::npos) << e.what();
  }
  int32_t ok[3] = {0, 1, 2};
  try {
    d.dispatch(x, 3, ok, w);
    ADD_FAILURE() << "3 tokens accepted with max_tokens 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_tokens"), std::string::npos) << e.what();
  }
  // Low latency: a token that names an expert twice would overrun its source's region at that expert.
  Config ll = cfg;
  ll.top_k = 2;
  ll.mode = Mode::kLowLatency;
  Dispatcher dl(ll);
  EXPECT_EQ(dl.capacity(), npes() * ll.max_tokens);  // every source's region
  int32_t twice[4] = {0, 1, 3, 3};
  float w4[4] = {1, 1, 1, 1};
  try {
    dl.dispatch(x, 2, twice, w4);
    ADD_FAILURE() << "expert 3 named twice by one token accepted in low-latency mode";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 1 names expert 3 twice"), std::string::npos) << e.what();
  }
  // combine_expert: before a dispatch, out of range, and twice in one call.
  try {
    d.combine_expert(0);
    ADD_FAILURE() << "combine_expert before any dispatch accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no dispatch to combine"), std::string::npos) << e.what();
  }
  int32_t mine[2] = {me() % 4, (me() + 1) % 4};
  d.dispatch(x, 2, mine, w);
  try {
    d.combine_expert(d.local_experts());
    ADD_FAILURE() << "local expert " << d.local_experts() << " of " << d.local_experts() << " accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  if (d.local_experts() > 0) {
    d.combine_expert(0);
    try {
      d.combine_expert(0);
      ADD_FAILURE() << "local expert 0 sent home twice";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sent home already"), std::string::npos) << e.what();
    }
  }
  float y[8];
  d.combine(y);
  cfg.top_k = 9;
  EXPECT_THROW(Dispatcher{cfg}, Error);  // thrown before any collective step, on every PE alike
}

TEST(MoeCApi, DispatchCombineAndErrors) {
  tessera_moe_config_t cfg = {};
  cfg.num_experts = 2 * npes();
  cfg.hidden = 4;
  cfg.dtype = TESSERA_MOE_F32;
  cfg.top_k = 1;
  cfg.max_tokens = 4;
  tessera_moe_t moe = nullptr;
  ASSERT_EQ(tessera_moe_create(&cfg, &moe), 0);
  ASSERT_EQ(tessera_moe_local_experts(moe), 2);
  // Token t goes to expert (me + t) % experts; every expert doubles its rows.
  float x[16], y[16];
  int32_t ids[4];
  float w[4] = {1, 1, 1, 1};
  for (int t = 0; t < 4; ++t) {
    ids[t] = (me() + t) % cfg.num_experts;
    for (int h = 0; h < 4; ++h) x[t * 4 + h] = static_cast<float>(me() * 100 + t * 10 + h);
  }
  ASSERT_EQ(tessera_moe_dispatch(moe, x, 4, ids, w), 0);
  for (int le = 0; le < 2; ++le) {
    float* rows = static_cast<float*>(tessera_moe_expert_tokens(moe, le));
    for (int i = 0; i < tessera_moe_count(moe, le) * 4; ++i) rows[i] *= 2;
    if (le == 1) {
      ASSERT_EQ(tessera_moe_combine_expert(moe, le), 0);  // home before the others
    }
  }
  EXPECT_EQ(tessera_moe_combine_expert(moe, 1), -1);
  EXPECT_NE(std::string(tessera_moe_last_error()).find("sent home already"), std::string::npos);
  ASSERT_EQ(tessera_moe_combine(moe, y), 0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], 2 * x[i]);
  EXPECT_EQ(tessera_moe_count(moe, 2), -1);
  EXPECT_NE(std::string(tessera_moe_last_error()).find("out of range"), std::string::npos);
  EXPECT_EQ(tessera_moe_destroy(moe), 0);
}
}  // namespace
