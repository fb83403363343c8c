// One random collective call of the collective layer, with its buffers and the expected result on this
// rank: built once, then run through the C++ Comm API (blocking or on a comm stream) or through dispatch()
// with an algorithm forced, and verified the same way. Inputs of reductions are the exactly representable
// ones of coll/reduce/reference.h; inputs of data movement are fill_pattern() of a key every rank derives
// from the shared generator, so each rank computes what every other rank sent.
#pragma once
#include <vector>

#include "coll/algo.h"
#include "soak.h"

namespace tessera::soak {

struct CollCase {
  coll::Kind kind = coll::Kind::kAllreduce;
  coll::DType t = coll::DType::kFloat32;
  coll::Op op = coll::Op::kSum;
  size_t count = 0;  // as coll::Args::count (per rank; this rank's for v variants that take one)
  int root = 0;
  bool inplace = false;
  std::vector<size_t> scounts, sdispls, rcounts, rdispls;  // v variants (elements, n entries)
  const char* send = nullptr;
  char* recv = nullptr;
  size_t recv_bytes = 0;     // the part of recv checked
  std::vector<char> expect;  // expected recv[0, recv_bytes); empty and recv_bytes 0: nothing to check here
  std::vector<char> own_send, own_recv;  // local buffers (when not symmetric)

  coll::Args args(bool symmetric) const;
  std::string describe() const;
};

// Builds a case of `kind` for rank r of n from the shared generator g. symmetric: buffers in the symmetric
// arena (same offsets on every rank, no in-place); else local vectors. max_bytes bounds one rank's payload.
CollCase make_case(Soak& s, Rng& g, coll::Kind kind, int r, int n, bool symmetric, size_t max_bytes);
// Checks recv against expect (counts one verified op of `cat` or fails naming `how`).
void verify_case(Soak& s, const CollCase& c, int cat, const std::string& how);

}  // namespace tessera::soak
