// Algorithms are data: one record per (collective, algorithm), listed in one table (algos/registry.cc).
// Selection (select/select.h) filters by supports(), takes the lowest cost(), then applies TESSERA_ALGO.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "coll/select/model.h"
#include "coll/types.h"

namespace tessera::coll {

class Exec;

// What a call asks for. Element counts are per rank as in NCCL: allreduce/broadcast/reduce: count elements
// in and out; reduce_scatter: count out, n*count in; allgather/gather: count in, n*count out; alltoall:
// count per peer; v variants use the arrays (element counts and displacements, n entries each).
struct Args {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DType dtype = DType::kFloat32;
  Op op = Op::kSum;
  int root = 0;
  const size_t* scounts = nullptr;
  const size_t* sdispls = nullptr;
  const size_t* rcounts = nullptr;
  const size_t* rdispls = nullptr;
  // Every member's send and recv lie in symmetric memory (the PGAS heap or data segment) at the same
  // offsets, and every member passes the flag alike: the OpenSHMEM collectives' contract. Algorithms
  // may then read and write peers' buffers in place with no agreement step (algos/symmetric.cc).
  bool symmetric = false;
};

// What selection sees (identical on every member).
struct Shape {
  Kind kind = Kind::kAllreduce;
  int n = 1;
  size_t bytes = 0;       // count * element size (per-rank payload as in Args)
  DType dtype = DType::kFloat32;
  Op op = Op::kSum;
  size_t slot_bytes = 0;  // staging slot size
  bool oversubscribed = false;
  bool cma = false;       // every member can read every member's memory (coll/cma.h)
  bool bound = false;     // every member is bound to one CPU: oversubscribed LL calls wait in order (comm.h)
  bool symmetric = false; // Args::symmetric
};

// Rows are written with designated initializers (algos/registry.cc), so the fields keep this order.
struct Algorithm {
  Kind kind;
  uint8_t id;             // unique within the kind, recorded in call records
  const char* name;       // unique within the kind (TESSERA_ALGO, tessera-info)
  const char* description;
  bool canonical;         // reduces every element in rank order 0..n-1 in one pass (deterministic mode)
  // LL protocol (no steps, well under a microsecond): its start is stamped in the flight recorder only if it
  // has to wait, which saves a clock read (a sizeable part of such a call) on the calls whose latency
  // matters most.
  bool ll = false;
  // Reads peers' buffers where they are (the symmetric rows, and the single-copy rows through
  // process_vm_readv) instead of copying them through staging. With symmetric buffers up to a staging slot,
  // only such rows and LL compete where the collective has one (select.cc).
  bool in_place = false;
  bool (*supports)(const Shape&);
  double (*cost)(const Shape&, const ModelParams&);
  uint64_t (*run)(Exec&, const Args&);  // returns the number of steps used (same on every member)
};

std::span<const Algorithm> algorithms();
const Algorithm* find_algorithm(Kind k, uint8_t id);
const Algorithm* find_algorithm(Kind k, const char* name);

// Helpers for cost functions.
inline double alpha_of(const Shape& s, const ModelParams& m) { return s.oversubscribed ? m.oversub_alpha : m.alpha; }
inline double chunks(size_t bytes, size_t chunk) { return chunk ? static_cast<double>((bytes + chunk - 1) / chunk) : 1; }

}  // namespace tessera::coll
