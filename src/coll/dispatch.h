// The front door of every collective: checks arguments, selects the algorithm, runs it under an Exec, runs
// the thorough check when asked, and closes the call. Errors in arguments are returned (nothing has been
// published, so the other members are unaffected... until they wait for this one: the caller must not
// continue with a communicator after an error it does not handle). Consistency mismatches end the job.
#pragma once
#include "base/status.h"
#include "coll/algo.h"
#include "coll/comm.h"

namespace tessera::coll {

// `force` (tests, tessera-perf --algo) runs that algorithm if it supports the shape.
Status dispatch(Communicator& c, Kind kind, const Args& a, const Algorithm* force = nullptr);

// A call whose arguments were checked and whose row was chosen once (coll/plan.h): what dispatch works out
// before it runs a row. `per_rank_bytes` is what selection saw; `total` the call's elements as dispatch
// counts them (the sum of the counts for the v variants).
struct Resolved {
  Kind kind = Kind::kBarrier;
  const Algorithm* algo = nullptr;
  size_t per_rank_bytes = 0;
  size_t total = 0;
};
// Checks `a` as dispatch does and picks the row (TESSERA_ALGO and deterministic mode included); errors name
// the routine as dispatch's do. Local: nothing is exchanged with the other members.
Status resolve(Communicator& c, Kind kind, const Args& a, Resolved* out);
// Runs a resolved call with `a` (the arguments it was resolved with): no checks, no selection.
Status run_resolved(Communicator& c, const Resolved& r, const Args& a);

// A 64-bit hash of n bytes (the thorough check's, and a plan's count arrays): equal bytes, equal hash.
uint64_t hash_bytes(const void* p, size_t n);

// Shape of a call as selection sees it (for tessera-info too).
Shape make_shape(const Communicator& c, Kind kind, size_t bytes);

// The row a call of shape `s` runs, as dispatch picks it: `force` unless deterministic mode overrules it (a
// row that is not canonical), else the model's choice. Null when the forced row does not fit the shape or
// no row supports it (dispatch reports which). `*forced` (when given) says whether `force` was taken.
// tessera-perf reports the same row's estimate.
const Algorithm* row_for(const Shape& s, const ModelParams& m, const Algorithm* force, bool* forced = nullptr);

}  // namespace tessera::coll
