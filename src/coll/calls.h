// The calls of the public collective APIs, one function each, shared by the C forms (capi/coll_api.cc) and
// the C++ forms (coll/api.cc): each checks the communicator handle, builds the engine's Args and runs the
// call (handle.h). `routine` names the API routine in error messages ("tesseraAllReduce: ..."). Counts,
// displacements and in-place conventions are coll.h's. Blocking and collective as coll.h says, except
// send/recv, which are point-to-point (and queued inside a group). `go` (Runner) is what runs the call.
#pragma once
#include <cstddef>

#include "base/status.h"
#include "coll/handle.h"
#include "coll/types.h"

namespace tessera::coll::call {

// What a call does once its handle is checked and its Args built: run it (handle.h's run, the default), or,
// for a persistent plan (plan.h), record it.
using Runner = Status (*)(const char* routine, Communicator& c, Kind kind, const Args& a);

Status allreduce(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op, Runner go = run);
Status reduce_scatter(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op, Runner go = run);
Status reduce_scatterv(const char* routine, tesseraComm* h, const void* s, void* r, const size_t* rcounts, DType t,
                       Op op, Runner go = run);
Status allgather(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Runner go = run);
Status allgatherv(const char* routine, tesseraComm* h, const void* s, size_t count, void* r, const size_t* rcounts,
                  const size_t* displs, DType t, Runner go = run);
Status broadcast(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root, Runner go = run);
Status reduce(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op, int root, Runner go = run);
Status gather(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root, Runner go = run);
Status scatter(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root, Runner go = run);
Status gatherv(const char* routine, tesseraComm* h, const void* s, size_t count, void* r, const size_t* rcounts,
               const size_t* displs, DType t, int root, Runner go = run);
Status scatterv(const char* routine, tesseraComm* h, const void* s, const size_t* scounts, const size_t* displs,
                void* r, size_t count, DType t, int root, Runner go = run);
Status alltoall(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Runner go = run);
Status alltoallv(const char* routine, tesseraComm* h, const void* s, const size_t* scounts, const size_t* sdispls,
                 void* r, const size_t* rcounts, const size_t* rdispls, DType t, Runner go = run);
Status barrier(const char* routine, tesseraComm* h, Runner go = run);
Status send(const char* routine, tesseraComm* h, const void* buf, size_t count, DType t, int peer);
Status recv(const char* routine, tesseraComm* h, void* buf, size_t count, DType t, int peer);

}  // namespace tessera::coll::call
