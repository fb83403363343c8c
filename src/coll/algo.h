// Algorithms are data: one record per (collective, algorithm), listed in one table (algos/registry.cc and,
// for communicators that span hosts, hier/rows.cc). Selection (select/select.h) filters by the row's scope
// and supports(), takes the lowest cost(), then applies TESSERA_ALGO.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "coll/hier/compress.h"
#include "coll/select/model.h"
#include "coll/types.h"

namespace tessera::coll {

class Exec;
struct Communicator;

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

// A communicator whose members span hosts (coll/hier.h): its layout and link, rank 0's, so the same on
// every member.
struct NetShape {
  int hosts = 2;
  int ppn = 1;              // members per host (the largest host's count when they differ)
  bool equal = true;        // every host has ppn members
  double contention = 1;    // PEs of the job per CPU of this machine, when above 1 (hier/rows.cc)
  LinkParams link;
  // The phase between hosts of float32 sums and averages coded for the wire (hier/compress.h), with error
  // feedback or without; the same on every member (tesseraCommSetCompression, TESSERA_COMPRESS).
  Compress compress = Compress::kNone;
  bool feedback = true;
  // The phase between hosts of float32 allgathers coded (no feedback): every member decodes every block, its
  // own too (tesseraCommSetAllGatherCompression, TESSERA_COMPRESS_ALLGATHER).
  Compress gather_compress = Compress::kNone;
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
  bool cma = false;       // every member can read every member's memory (coll/single_copy.h)
  bool bound = false;     // every member is bound to one CPU: oversubscribed LL calls wait in order (comm.h)
  bool symmetric = false; // Args::symmetric
  // Set when the members span hosts: only rows with `compose` apply, and the rest of the shape (slot,
  // oversubscription, the model priced with) is the host-local communicator's.
  const NetShape* net = nullptr;
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
  // Rows of one host's shared-memory engine: run under an Exec, returning the number of steps used (the
  // same on every member).
  uint64_t (*run)(Exec&, const Args&) = nullptr;
  // Rows of a communicator that spans hosts (hier/rows.cc): compose collectives of its host-local
  // communicator and patterns between hosts. A row has `run` or `compose`, never both.
  Status (*compose)(Communicator&, const Args&) = nullptr;
};

// Whether row `a` applies to shape `s`: its scope (one host or several) and supports().
inline bool fits(const Algorithm& a, const Shape& s) { return (a.compose != nullptr) == (s.net != nullptr) && a.supports(s); }

std::span<const Algorithm> algorithms();
const Algorithm* find_algorithm(Kind k, uint8_t id);
const Algorithm* find_algorithm(Kind k, const char* name);

// Helpers for cost functions.
inline double alpha_of(const Shape& s, const ModelParams& m) { return s.oversubscribed ? m.oversub_alpha : m.alpha; }
inline double chunks(size_t bytes, size_t chunk) { return chunk ? static_cast<double>((bytes + chunk - 1) / chunk) : 1; }

}  // namespace tessera::coll
