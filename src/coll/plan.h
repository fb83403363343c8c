// Persistent plans (coll.h: tesseraAllReduceInit ... tesseraStart, tesseraPlanFree; coll.hpp: Plan), as
// MPI-4's persistent collectives (MPI_Allreduce_init, MPI_Start): one call described once, with its buffers,
// and started many times.
//
// What Init does once, so that Start does none of it: the arguments are checked (the errors dispatch would
// give), the row is chosen (the cost model, TESSERA_ALGO, deterministic mode), the count arrays are copied,
// and the members compare their descriptions in one exchange: the same collective, type, operator, root,
// size and row on every member, and for allgatherv/reduce_scatterv the same count arrays. A member whose
// arguments were refused, or a description that differs, fails Init on every member with the same verdict,
// so no member is left holding a plan the others lack. When every member's send and receive buffers lie in
// symmetric memory at the same offsets (shmem_malloc'd on a communicator within one host), the plan is made
// with Args::symmetric, so the model may choose the rows that read and write peers' buffers in place.
//
// Start runs the resolved call (dispatch.h: run_resolved): no checks, no selection. Each start is still one
// collective call of the communicator (numbered, recorded, compared with the peers' calls like any other),
// so every member must start its plans in the same order as its other calls.
//
// A handle carries a magic word that tesseraPlanFree overwrites; freed handles are kept, as communicator
// handles are (handle.h), so a start after free is reported. Starts already queued on a stream keep the
// plan alive (shared ownership) and still run after free.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "coll/calls.h"
#include "coll/dispatch.h"
#include "coll/handle.h"

namespace tessera::coll {

struct PlanState {
  tesseraComm* h = nullptr;
  const char* init = nullptr;  // the routine that made it (messages)
  Args a;                      // its count arrays point into the vectors below
  Resolved r;
  std::vector<size_t> scounts, sdispls, rcounts, rdispls;
  uint64_t send_word = 0, recv_word = 0;  // the symmetric words of its buffers, when made in place
  bool registered = false;                 // in place on registered buffers (checked at each start)
};

}  // namespace tessera::coll

struct tesseraPlan {
  uint64_t magic;
  std::shared_ptr<tessera::coll::PlanState> p;
};

namespace tessera::coll {

inline constexpr uint64_t kPlanMagic = 0x91a40c0a'11c0ffeeull;

// OK for a live plan handle; otherwise an invalid-argument Status naming `routine` and what the handle is.
Status bad_plan(const char* routine, const tesseraPlan* h);
inline Status check_plan(const char* routine, const tesseraPlan* h) {
  if (h && h->magic == kPlanMagic) [[likely]] return {};
  return bad_plan(routine, h);
}

// Makes the plan of the one call that `make(go)` makes: it must call one collective of calls.h with `go`,
// which records the call instead of running it. Collective over the communicator, like the call itself.
// `refused` (say, a null place for the plan) is this member's verdict on its own arguments before any
// check of the call's: the member still joins the exchange, so every member fails alike.
template <typename Make>
Result<tesseraPlan*> plan_init(const char* routine, tesseraComm* h, Make make, const Status& refused = Status::ok());

// Runs the plan's call once, blocking, under the communicator's one-call-at-a-time guard.
Status plan_run(const char* routine, PlanState& p);

// Enqueues one start of the plan on a stream (a failure fails the item); the item keeps the plan alive, so
// it runs even if the plan's handle is freed first.
void plan_enqueue(Stream& s, std::shared_ptr<PlanState> p);

// The row the plan runs ("ll", "ring", ...), for tesseraPlanAlgorithm and tests.
const char* plan_row(const PlanState& p);

// Not collective. The handle stays readable (dead) for the checks above.
void plan_free(tesseraPlan* h);

// ---- implementation of plan_init's template part

struct Recorded {
  Communicator* c = nullptr;
  Kind kind = Kind::kBarrier;
  Args a;
  bool done = false;
};
Recorded*& recording();  // this thread's slot, set during plan_init
Status record(const char* routine, Communicator& c, Kind kind, const Args& a);  // a call::Runner
Result<tesseraPlan*> plan_make(const char* routine, tesseraComm* h, const Recorded& rec, const Status& refused);

template <typename Make>
Result<tesseraPlan*> plan_init(const char* routine, tesseraComm* h, Make make, const Status& refused) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  Recorded rec;
  recording() = &rec;
  Status st = make(&record);
  recording() = nullptr;
  if (!st.is_ok()) return st;
  return plan_make(routine, h, rec, refused);
}

}  // namespace tessera::coll
