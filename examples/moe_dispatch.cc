// Mixture-of-experts routing with Tessera: every PE routes its tokens to their top-2 of 8 experts per PE
// (a toy gate), each expert applies its own function in place, and combine brings the outputs home,
// weighted. Prints each PE's expert loads and checks every combined token.
//   build/bin/tessera-run -n 4 build/bin/moe_dispatch [tokens_per_pe] [hidden]
#include <shmem.h>
#include <tessera/moe.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const int T = argc > 1 ? std::atoi(argv[1]) : 256, H = argc > 2 ? std::atoi(argv[2]) : 1024;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  tessera::moe::Config cfg;
  cfg.num_experts = 8 * n;
  cfg.hidden = H;
  cfg.top_k = 2;
  cfg.max_tokens = T;
  tessera::moe::Dispatcher moe(cfg);

  // Tokens and a toy gate: token t's two experts and their softmax-like weights.
  std::vector<float> x(static_cast<size_t>(T) * H), y(x.size());
  std::vector<int32_t> ids(static_cast<size_t>(T) * 2);
  std::vector<float> w(ids.size());
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) x[static_cast<size_t>(t) * H + h] = std::sin(0.01f * (me * T + t) + 0.1f * h);
    ids[2 * t] = (me * 7 + t * 13) % cfg.num_experts;
    ids[2 * t + 1] = (ids[2 * t] + 1 + t % (cfg.num_experts - 1)) % cfg.num_experts;
    w[2 * t] = 0.75f;
    w[2 * t + 1] = 0.25f;
  }
  moe.dispatch(x.data(), T, ids.data(), w.data());
  std::string loads;
  for (int le = 0; le < moe.local_experts(); ++le) {
    const int e = moe.first_expert() + le;
    float* rows = static_cast<float*>(moe.expert_tokens(le));
    for (size_t i = 0; i < static_cast<size_t>(moe.count(le)) * H; ++i) rows[i] *= 1.0f + 0.1f * e;  // expert e
    loads += ' ';
    loads += std::to_string(moe.count(le));
  }
  moe.combine(y.data());
  long bad = 0;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      float want = 0;
      for (int k = 0; k < 2; ++k)
        if (!moe.was_dropped(t, k)) want += w[2 * t + k] * (1.0f + 0.1f * ids[2 * t + k]) * x[static_cast<size_t>(t) * H + h];
      if (std::fabs(y[static_cast<size_t>(t) * H + h] - want) > 1e-5f) ++bad;
    }
  std::printf("PE %d: experts %d..%d received%s tokens; %zu dropped; %s\n", me, moe.first_expert(),
              moe.first_expert() + moe.local_experts() - 1, loads.c_str(), moe.dropped(),
              bad ? "combine WRONG" : "every combined token checked");
  shmem_finalize();
  return bad ? 1 : 0;
}
