// The calls of the public collective APIs, one function each, shared by the C forms (capi/coll_api.cc) and
// the C++ forms (coll/api.cc): each checks the communicator handle, builds the engine's Args and runs the
// call (handle.h). `routine` names the API routine in error messages ("tesseraAllReduce: ..."). Counts,
// displacements and in-place conventions are coll.h's. Blocking and collective as coll.h says, except
// send/recv, which are point-to-point (and queued inside a group).
#pragma once
#include <cstddef>

#include "base/status.h"
#include "coll/handle.h"
#include "coll/types.h"

namespace tessera::coll::call {

Status allreduce(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op);
Status reduce_scatter(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op);
Status reduce_scatterv(const char* routine, tesseraComm* h, const void* s, void* r, const size_t* rcounts, DType t,
                       Op op);
Status allgather(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t);
Status allgatherv(const char* routine, tesseraComm* h, const void* s, size_t count, void* r, const size_t* rcounts,
                  const size_t* displs, DType t);
Status broadcast(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root);
Status reduce(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op, int root);
Status gather(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root);
Status scatter(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root);
Status gatherv(const char* routine, tesseraComm* h, const void* s, size_t count, void* r, const size_t* rcounts,
               const size_t* displs, DType t, int root);
Status scatterv(const char* routine, tesseraComm* h, const void* s, const size_t* scounts, const size_t* displs,
                void* r, size_t count, DType t, int root);
Status alltoall(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t);
Status alltoallv(const char* routine, tesseraComm* h, const void* s, const size_t* scounts, const size_t* sdispls,
                 void* r, const size_t* rcounts, const size_t* rdispls, DType t);
Status barrier(const char* routine, tesseraComm* h);
Status send(const char* routine, tesseraComm* h, const void* buf, size_t count, DType t, int peer);
Status recv(const char* routine, tesseraComm* h, void* buf, size_t count, DType t, int peer);

}  // namespace tessera::coll::call
