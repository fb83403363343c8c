// Routing of the specification's team reductions through the collective library (src/coll).
//
// When TESSERA_SHMEM_COLL_MIN is set (default: off, see coll_route.cc for why), a team reduction of at
// least that many bytes, on a type and operation the library supports
// (8/32/64-bit integers, float, double; sum, prod, min, max), runs as tesseraAllReduce on a communicator
// made for the team on first use and kept in Team::coll_state; smaller ones, other types (short, long
// double, complex) and bitwise operations keep the direct shared-memory algorithm of coll_algos.h. Both
// choices depend only on arguments every member passes alike, so members always agree.
// The communicator is destroyed with the team (shmem_team_destroy) or at shmem_finalize (world, shared).
#pragma once
#include <shmem.h>
#include <tessera/coll.h>

#include <cstddef>
#include <type_traits>

#include "capi/coll_algos.h"
#include "pgas/team.h"

namespace tessera::capi::coll {

template <typename T>
constexpr int library_dtype() {
  if constexpr (std::is_same_v<T, float>) return tesseraFloat32;
  else if constexpr (std::is_same_v<T, double>) return tesseraFloat64;
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if constexpr (sizeof(T) == 1) return std::is_signed_v<T> ? tesseraInt8 : tesseraUint8;
    else if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? tesseraInt32 : tesseraUint32;
    else if constexpr (sizeof(T) == 8) return std::is_signed_v<T> ? tesseraInt64 : tesseraUint64;
    else return -1;
  } else {
    return -1;
  }
}

template <typename Op>
constexpr int library_op() {
  if constexpr (std::is_same_v<Op, OpSum>) return tesseraSum;
  else if constexpr (std::is_same_v<Op, OpProd>) return tesseraProd;
  else if constexpr (std::is_same_v<Op, OpMin>) return tesseraMin;
  else if constexpr (std::is_same_v<Op, OpMax>) return tesseraMax;
  else return -1;
}

// Smallest reduction (bytes) routed to the library; SIZE_MAX disables routing.
size_t route_min_bytes();
// The team's communicator, created (collectively) on first use.
tesseraComm_t team_comm(const char* routine, pgas::Team* t, shmem_team_t handle);
// Destroys the team's communicator if it has one (collective over the team).
void release_team_comm(pgas::Team* t);

// Runs the reduction in the library when it should; false: the caller runs its own algorithm.
template <typename T, typename Op>
bool route_reduce(const char* routine, pgas::Team* t, shmem_team_t handle, T* dest, const T* source, size_t n) {
  constexpr int dt = library_dtype<T>(), op = library_op<Op>();
  if constexpr (dt < 0 || op < 0) {
    return false;
  } else {
    if (t->size == 1 || n == 0 || n * sizeof(T) < route_min_bytes()) return false;
    tesseraComm_t comm = team_comm(routine, t, handle);
    tesseraResult_t r = tesseraAllReduce(source, dest, n, static_cast<tesseraDataType_t>(dt),
                                         static_cast<tesseraRedOp_t>(op), comm);
    if (r != tesseraSuccess) log::fatal("{}: {}", routine, tesseraGetLastError());
    return true;
  }
}

}  // namespace tessera::capi::coll
