// Tessera mixture-of-experts routing: dispatch tokens to the PEs that own their experts, combine the expert
// outputs back at each token's PE, weighted (in the spirit of DeepEP). C API: tessera/moe.h.
//
//   tessera::moe::Config cfg{.num_experts = 16, .hidden = 4096, .top_k = 2, .max_tokens = 512};
//   tessera::moe::Dispatcher moe(cfg);                       // collective: symmetric buffers
//   moe.dispatch(x, n_tokens, expert_ids, weights);           // tokens travel to their experts' PEs
//   for (int e = 0; e < moe.local_experts(); ++e)
//     run_expert(moe.first_expert() + e, moe.expert_tokens(e), moe.count(e));   // outputs in place
//   moe.combine(y);                                           // y[t] = sum_k weights[t][k] * out(t, k)
//
// Contracts
// - Experts are spread in contiguous blocks: PE p owns experts [p*E/n, (p+1)*E/n) (integer division), so any
//   number of experts per PE works, including none. An expert id of -1 routes nowhere (its weight is ignored).
// - dispatch and combine are collective over all PEs (every PE calls them, in the same order, with its own
//   tokens, possibly none). dispatch returns when every token routed to this PE's experts has arrived; the
//   expert then overwrites its rows in place (expert_tokens) with its outputs, and combine sends each row back
//   to its token's PE and returns there when all of that PE's rows are back, with
//   out[t] = sum over k of weights[t][k] * output(t, k). Arithmetic in f32; bf16 rows and outputs are
//   rounded once at the end.
// - No count exchange precedes the data. Throughput mode: tokens claim their slots at the expert's PE with a
//   remote fetch-and-add (one per kernel block and expert) and are put there straight away; an expert that receives more than `capacity` tokens
//   drops the rest (the sender learns it from the same fetch-and-add): dropped() counts them and
//   was_dropped(t, k) names them, and they count as zero in combine. Low-latency mode (1-128 tokens per PE,
//   decoding): each source PE has its own region at every expert, sized for max_tokens, so nothing is
//   dropped (a token must name distinct experts); across hosts nothing is claimed and the count travels
//   with the data as its signal, on one host slots are claimed as in throughput mode, a cache-line transfer
//   there, and rows land in their final place.
// - Tokens are rows of `hidden` elements (f32 or bf16), contiguous; expert_ids and weights are n_tokens x top_k,
//   row-major. The work is split over kernel blocks (tessera/kernel.hpp), which put straight into the
//   peers' symmetric receive buffers.
// - Bad arguments (an expert id out of range, more tokens than max_tokens, a zero hidden size, top_k beyond 8)
//   throw tessera::Error naming the value and the limit.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <tessera/error.hpp>
#include <tessera/dtypes.h>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tessera::moe {

using Error = tessera::Error;

// MoE's element types, each an entry of the library's one list (tessera/dtypes.h): X(enumerator, entry).
#define TESSERA_MOE_DTYPES(X) X(kFloat32, kFloat32) X(kBFloat16, kBFloat16)
/// Token element types: kFloat32, kBFloat16 (values 0, 1), whose sizes are the list's.
enum class DType : uint8_t { TESSERA_MOE_DTYPES(TESSERA_LIST_ENUMERATOR) };
enum class Mode : uint8_t { kThroughput, kLowLatency };

struct Config {
  int num_experts = 0;  // experts over all PEs
  int hidden = 0;       // elements per token
  DType dtype = DType::kFloat32;
  int top_k = 1;        // experts per token, 1..8
  int max_tokens = 0;   // tokens a PE dispatches per call, at most
  // Tokens an expert takes per call (throughput mode); 0: twice the average share,
  // ceil(2 * max_tokens * top_k * n_pes / num_experts).
  int capacity = 0;
  Mode mode = Mode::kThroughput;
  int block_num = -1;   // kernel blocks for the sends and the weighted sums; -1: this PE's share of its host's
                        // CPUs (kernel::default_block_num() / PEs on the host, at least 1)
};

class Dispatcher {
 public:
  explicit Dispatcher(const Config& cfg);  // collective over all PEs
  ~Dispatcher();                           // collective over all PEs
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void dispatch(const void* tokens, int n_tokens, const int32_t* expert_ids, const float* weights);
  // Optional, before combine: sends one local expert's outputs (its rows of expert_tokens, written in
  // place) home now, so that the network carries them while the next expert computes; combine then sends
  // only the others. Each local expert at most once per dispatch; its rows must not change afterwards.
  void combine_expert(int local_expert);
  void combine(void* out);

  int local_experts() const;  // experts this PE owns
  int first_expert() const;   // global id of local expert 0
  int capacity() const;       // rows per local expert
  int count(int local_expert) const;           // tokens it received in the last dispatch
  void* expert_tokens(int local_expert);       // those rows, [count, hidden]; outputs are written here
  size_t dropped() const;                      // (token, k) pairs of this PE's last dispatch that were dropped
  bool was_dropped(int token, int k) const;
  const Config& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace tessera::moe
