// Algorithm selection: filter the table by supports() (and, in deterministic mode, by canonical order),
// take the lowest cost, then apply the TESSERA_ALGO override ("allreduce=ring,allgather=bruck").
// Pure function of (shape, model, environment), so every member of a communicator picks the same record.
#pragma once
#include <string>
#include <vector>

#include "coll/algo.h"

namespace tessera::coll {

struct Candidate {
  const Algorithm* algo;
  double cost;      // seconds (model estimate)
  bool supported;   // supports(shape)
  bool allowed;     // not excluded by deterministic mode
};

struct Choice {
  const Algorithm* algo = nullptr;
  std::string why;  // "lowest cost", "TESSERA_ALGO", ...
};

// The rows of the shape's collective and scope (one host, or across hosts), each priced.
std::vector<Candidate> candidates(const Shape& s, const ModelParams& m, bool deterministic);
Choice select(const Shape& s, const ModelParams& m, bool deterministic);
// The model's estimate (seconds) for running `a` on `s`: the figure select() compares, which
// tessera-perf --json reports beside the measured time.
double estimate(const Algorithm& a, const Shape& s, const ModelParams& m);

bool deterministic_mode();          // TESSERA_DETERMINISTIC
int check_level();                  // TESSERA_CHECK (0 cheap, 1 thorough)
// The override for a collective, or null.
const Algorithm* override_for(Kind k);

}  // namespace tessera::coll
