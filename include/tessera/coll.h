/* Tessera collective communication library: C API in the style of NCCL/HCCL.
 *
 * A communicator is an ordered group of PEs (all PEs, a team, or a split of another communicator), on one
 * host or spanning several. User buffers are ordinary memory. Within a host, data moves through
 * per-communicator shared staging buffers (TESSERA_BUFFSIZE bytes per PE) read directly by the peers; a
 * communicator that spans hosts runs each collective in two levels, shared memory inside each host and
 * messages between hosts, and its API and semantics are the same.
 * Start-up: shmem_init (or tessera::Runtime) first, under tessera-run, a PMIx launcher, or your own
 * launcher with TESSERA_BOOTSTRAP (tessera_bootstrap_uid in shmem.h, the ncclGetUniqueId analogue); then
 * tesseraCommInitAll. Destroy every communicator before shmem_finalize.
 *
 * Semantics
 * - Collective calls are blocking: when a call returns, the receive buffer holds the result and the send
 *   buffer may be reused. Every member must make the same collective calls, in the same order, with the
 *   same count, type, op and root; a mismatch ends the job with a message naming the collective, the
 *   ranks and their values (TESSERA_CHECK=1 also compares a hash of replicated results).
 * - Counts follow NCCL: allreduce/broadcast/reduce take `count` elements in and out; reduce-scatter takes
 *   recvcount*nranks in and gives recvcount out; allgather takes sendcount in, gives sendcount*nranks out;
 *   alltoall moves `count` elements to and from every rank. In place: sendbuff == recvbuff (allgather:
 *   sendbuff == recvbuff + rank*sendcount; reduce-scatter: recvbuff == sendbuff + rank*recvcount).
 * - float16/bfloat16 are reduced in float32 and rounded once; integers wrap; avg is sum / nranks
 *   (integer types: truncating division).
 * - Send/recv: blocking unless inside tesseraGroupStart/End, where all queued operations progress together.
 *   Messages between a pair are delivered in order; the receive count must equal the send count.
 * - A hung collective ends the job after TESSERA_TIMEOUT seconds with every member's flight recorder.
 * - Thread safety: a communicator is used by one thread at a time; different communicators may be used
 *   concurrently. Groups are per thread.
 * Errors: functions return tesseraSuccess or a code; tesseraGetLastError() gives the message.
 */
#ifndef TESSERA_COLL_H
#define TESSERA_COLL_H
#include <stddef.h>

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tesseraComm* tesseraComm_t;
typedef struct tesseraStream* tesseraStream_t;
typedef struct tesseraEvent* tesseraEvent_t;
typedef struct tesseraPlan* tesseraPlan_t;
typedef struct tesseraGraph* tesseraGraph_t;

typedef enum {
  tesseraSuccess = 0,
  tesseraInvalidArgument = 1,
  tesseraUnsupported = 2,
  tesseraSystemError = 3,
  tesseraInternalError = 4,
  tesseraStreamError = 5, /* an earlier work item of the stream failed; tesseraGetLastError names it */
  tesseraInProgress = 6,  /* tesseraEventQuery: the event has not completed yet */
  tesseraPeerFailed = 7,  /* resilient mode: a member failed; tesseraGetLastError names it (docs/resilience.md) */
  tesseraRevoked = 8      /* resilient mode: the communicator was revoked (tesseraCommRevoke) */
} tesseraResult_t;

/* Element types and reduction operators: the one list of tessera/dtypes.h, in its order and numbering. */
typedef enum {
  tesseraInt8 = 0, tesseraUint8 = 1, tesseraInt32 = 2, tesseraUint32 = 3, tesseraInt64 = 4, tesseraUint64 = 5,
  tesseraFloat16 = 6, tesseraBfloat16 = 7, tesseraFloat32 = 8, tesseraFloat64 = 9,
  /* Beyond NCCL's set, for OpenSHMEM's reductions: long double as the platform has it, complex as two floats. */
  tesseraInt16 = 10, tesseraUint16 = 11, tesseraLongDouble = 12, tesseraComplex64 = 13, tesseraComplex128 = 14,
  tesseraNumTypes = 15
} tesseraDataType_t;

/* tesseraBand/Bor/Bxor apply to integer types only; tesseraMin/Max not to complex types. */
typedef enum {
  tesseraSum = 0, tesseraProd = 1, tesseraMin = 2, tesseraMax = 3, tesseraAvg = 4,
  tesseraBand = 5, tesseraBor = 6, tesseraBxor = 7, tesseraNumOps = 8
} tesseraRedOp_t;

#define TESSERA_SPLIT_NOCOLOR (-1)

/* Communicators (collective over the members; Split is collective over the parent). */
tesseraResult_t tesseraCommInitAll(tesseraComm_t* comm);
tesseraResult_t tesseraCommInitTeam(shmem_team_t team, tesseraComm_t* comm);
tesseraResult_t tesseraCommSplit(tesseraComm_t comm, int color, int key, tesseraComm_t* newcomm);
tesseraResult_t tesseraCommDestroy(tesseraComm_t comm);
tesseraResult_t tesseraCommCount(const tesseraComm_t comm, int* count);
tesseraResult_t tesseraCommUserRank(const tesseraComm_t comm, int* rank);

/* Resilient mode (tessera-run --on-failure continue; docs/resilience.md), as MPI's ULFM. After a member
 * fails, calls on the communicator return tesseraPeerFailed (tesseraGetLastError names the PE) and the
 * communicator is broken: the survivors shrink it (on one host or across hosts).
 * Revoke: every member's pending and later calls fail with tesseraRevoked (any member, not collective).
 * Agree: collective over the survivors; *flag becomes the bitwise AND of their flags (and of any flag a
 *   failed member published before it died), and every survivor learns the same failed set.
 * Shrink: agrees, then makes the communicator of the survivors (ranks in the old order).
 * Failed: the members this PE knows to have failed (world PE numbers, ascending); *count may exceed
 *   max_pes, then the first max_pes are written.
 * Grow (tessera-run --restarts N starts a replacement under a failed PE's number): collective over comm's
 *   survivors and the replacements, which pass comm = NULL; *newcomm has the survivors and the replacements
 *   of comm's failed members (and of those it was shrunk from), ranks in world order. One host.
 * Incarnation: 0 in a PE started with the job, k in the k-th replacement of its PE. */
tesseraResult_t tesseraCommRevoke(tesseraComm_t comm);
tesseraResult_t tesseraCommAgree(tesseraComm_t comm, int* flag);
tesseraResult_t tesseraCommShrink(tesseraComm_t comm, tesseraComm_t* newcomm);
tesseraResult_t tesseraCommFailed(const tesseraComm_t comm, int* pes, int max_pes, int* count);
tesseraResult_t tesseraCommGrow(tesseraComm_t comm, tesseraComm_t* newcomm);
tesseraResult_t tesseraIncarnation(int* incarnation);

/* Collectives. */
tesseraResult_t tesseraAllReduce(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                 tesseraRedOp_t op, tesseraComm_t comm);
tesseraResult_t tesseraReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     tesseraDataType_t datatype, tesseraRedOp_t op, tesseraComm_t comm);
tesseraResult_t tesseraReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                      tesseraDataType_t datatype, tesseraRedOp_t op, tesseraComm_t comm);
tesseraResult_t tesseraAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, tesseraDataType_t datatype,
                                 tesseraComm_t comm);
tesseraResult_t tesseraAllGatherV(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t* recvcounts,
                                  const size_t* displs, tesseraDataType_t datatype, tesseraComm_t comm);
tesseraResult_t tesseraBroadcast(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                 int root, tesseraComm_t comm);
tesseraResult_t tesseraReduce(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                              tesseraRedOp_t op, int root, tesseraComm_t comm);
tesseraResult_t tesseraGather(const void* sendbuff, void* recvbuff, size_t sendcount, tesseraDataType_t datatype,
                              int root, tesseraComm_t comm);
tesseraResult_t tesseraScatter(const void* sendbuff, void* recvbuff, size_t recvcount, tesseraDataType_t datatype,
                               int root, tesseraComm_t comm);
/* v variants of gather and scatter (MPI_Gatherv, MPI_Scatterv): counts and displacements in elements, read
 * at the root only; every member's own count must match the root's entry for it (else the job ends naming
 * both). */
tesseraResult_t tesseraGatherV(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t* recvcounts,
                               const size_t* displs, tesseraDataType_t datatype, int root, tesseraComm_t comm);
tesseraResult_t tesseraScatterV(const void* sendbuff, const size_t* sendcounts, const size_t* displs, void* recvbuff,
                                size_t recvcount, tesseraDataType_t datatype, int root, tesseraComm_t comm);
tesseraResult_t tesseraAllToAll(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                tesseraComm_t comm);
tesseraResult_t tesseraAllToAllV(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                                 void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                                 tesseraDataType_t datatype, tesseraComm_t comm);
tesseraResult_t tesseraBarrier(tesseraComm_t comm);

/* Point to point. */
tesseraResult_t tesseraSend(const void* sendbuff, size_t count, tesseraDataType_t datatype, int peer, tesseraComm_t comm);
tesseraResult_t tesseraRecv(void* recvbuff, size_t count, tesseraDataType_t datatype, int peer, tesseraComm_t comm);
tesseraResult_t tesseraGroupStart(void);
tesseraResult_t tesseraGroupEnd(void);

/* Comm streams and events (the C form of coll.hpp's Stream and Event): work enqueued on a stream runs in
 * order on the stream's own progress thread and the call returns at once, after checking its handles.
 * Buffers must stay valid until an event recorded after the work has completed. A communicator used on a
 * stream belongs to it until the stream is synchronized. The first failing item makes the stream's error
 * sticky: later items are skipped, and tesseraStreamSynchronize / tesseraEventSynchronize of events
 * recorded after it return tesseraStreamError (tesseraGetLastError names the item and its error). Waits
 * end the job after TESSERA_TIMEOUT seconds, naming the running item. Destroy waits for the queue. */
tesseraResult_t tesseraStreamCreate(tesseraStream_t* stream);
tesseraResult_t tesseraStreamDestroy(tesseraStream_t stream);
tesseraResult_t tesseraStreamSynchronize(tesseraStream_t stream);
tesseraResult_t tesseraStreamWaitEvent(tesseraStream_t stream, tesseraEvent_t event);
tesseraResult_t tesseraEventCreate(tesseraEvent_t* event);
tesseraResult_t tesseraEventDestroy(tesseraEvent_t event);
tesseraResult_t tesseraEventRecord(tesseraEvent_t event, tesseraStream_t stream);
tesseraResult_t tesseraEventQuery(tesseraEvent_t event); /* tesseraSuccess or tesseraInProgress */
tesseraResult_t tesseraEventSynchronize(tesseraEvent_t event);
/* Collectives on a stream: the blocking call's arguments, then the stream. */
tesseraResult_t tesseraAllReduceAsync(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                      tesseraRedOp_t op, tesseraComm_t comm, tesseraStream_t stream);
tesseraResult_t tesseraReduceScatterAsync(const void* sendbuff, void* recvbuff, size_t recvcount,
                                          tesseraDataType_t datatype, tesseraRedOp_t op, tesseraComm_t comm,
                                          tesseraStream_t stream);
tesseraResult_t tesseraAllGatherAsync(const void* sendbuff, void* recvbuff, size_t sendcount, tesseraDataType_t datatype,
                                      tesseraComm_t comm, tesseraStream_t stream);
tesseraResult_t tesseraBroadcastAsync(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                      int root, tesseraComm_t comm, tesseraStream_t stream);
tesseraResult_t tesseraReduceAsync(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                   tesseraRedOp_t op, int root, tesseraComm_t comm, tesseraStream_t stream);
tesseraResult_t tesseraAllToAllAsync(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                     tesseraComm_t comm, tesseraStream_t stream);
tesseraResult_t tesseraBarrierAsync(tesseraComm_t comm, tesseraStream_t stream);
/* Captured schedules (a CUDA graph's role; stream.hpp's Stream::begin_capture): between BeginCapture and
 * EndCapture the stream records what is enqueued on it instead of running it, and every collective enqueued
 * meanwhile (the Async calls, tesseraStart) is made into a persistent plan at once (collective: every member
 * captures the same sequence, on an idle communicator); tesseraGraphLaunch enqueues the recorded items again,
 * in order, on any stream not capturing, as often as wanted. Waiting for or recording an event on a capturing
 * stream is an error. */
tesseraResult_t tesseraStreamBeginCapture(tesseraStream_t stream);
tesseraResult_t tesseraStreamEndCapture(tesseraStream_t stream, tesseraGraph_t* graph);
tesseraResult_t tesseraGraphLaunch(tesseraGraph_t graph, tesseraStream_t stream);
tesseraResult_t tesseraGraphDestroy(tesseraGraph_t graph);

/* Registered buffers (NCCL's ncclCommRegister): a member's own buffer made reachable by the other members of
 * its host once, so that collectives on it read and write it in place as they do symmetric-heap buffers.
 * Collective, in the same order on every member, each with its own buffer (sizes may differ); *handle is
 * the registration (the same handle, counted once more, for a buffer registered again). The buffer keeps
 * its address and contents. It must be private, writable memory and must not overlap (in whole pages)
 * another buffer registered on the communicator; it must be deregistered before it is freed. A buffer that
 * starts on a page boundary and spans whole pages on every member becomes shared memory of this host, in
 * place (same addresses and contents); another one is registered without that, and calls on it take their
 * usual paths. A collective whose send and receive buffers both lie in shared registered buffers of a
 * communicator within one host takes the in-place algorithms: every member must then pass its own
 * registered buffers at the same offsets (allreduce, broadcast, allgather, alltoall).
 * Across hosts a registration is accepted and changes nothing. Deregister drops one count; the last one
 * gives the pages back as private memory. Errors name the buffer, the limit, or the member that refused. */
tesseraResult_t tesseraCommRegister(tesseraComm_t comm, void* buff, size_t size, void** handle);
tesseraResult_t tesseraCommDeregister(tesseraComm_t comm, void* handle);

/* Compressed collectives across hosts: on a communicator whose members span hosts, the phase between hosts
 * of float32 sum and average allreduces (and of the reductions made of them: reduce, reduce-scatter) is
 * coded for the wire as bfloat16, fp8 (e4m3) or int8, the last two with a float32 scale per block of 256
 * values; the host-local phases stay float32, and every member gets the same bits. With error_feedback
 * (nonzero) what the code loses on a buffer is added to that buffer's next call (per communicator, send
 * buffer and count), so repeated steps on one buffer do not drift. Collective: every member passes the same
 * values (checked); it applies to the calls after it, until set again; TESSERA_COMPRESS=none|bf16|fp8|int8
 * sets the start value of every communicator (with feedback). The cost model prices the coded rows (fewer
 * bytes, the coding's CPU time) and picks them when they pay. Other types and operators, and deterministic
 * mode's canonical rows, are not coded. Within one host it is accepted and changes nothing. */
typedef enum {
  tesseraCompressNone = 0, tesseraCompressBf16 = 1, tesseraCompressFp8 = 2, tesseraCompressInt8 = 3
} tesseraCompress_t;
tesseraResult_t tesseraCommSetCompression(tesseraComm_t comm, tesseraCompress_t mode, int error_feedback);
/* The same for allgathers (ZeRO++'s quantized weights): with a mode set, tesseraAllGather and tesseraAllGatherV
 * of tesseraFloat32 send each member's block between hosts as its code, and every member gets every block
 * decoded, its own too, so all members hold the same bits and none its exact input. No error feedback (an
 * allgather's result is not summed again). Collective, checked as above; TESSERA_COMPRESS_ALLGATHER sets the
 * start value; within one host it is accepted and changes nothing. Off by default, apart from the
 * reductions' setting: coding the parameters as well as the gradients is a choice of its own. */
tesseraResult_t tesseraCommSetAllGatherCompression(tesseraComm_t comm, tesseraCompress_t mode);

/* Persistent plans (MPI-4's persistent collectives, MPI_Allreduce_init + MPI_Start): an Init takes the
 * blocking call's arguments and returns a plan of that call, its arguments checked, its algorithm chosen and
 * its count arrays copied once; tesseraStart runs it, blocking when stream is NULL (as the blocking call),
 * else enqueued on the stream (as the Async calls). Init is collective like the call: the members compare
 * their calls once (collective, type, operator, root, size, algorithm; allgatherv/reduce_scatterv also the
 * count arrays), and a refused argument or a difference fails Init on every member, with the same message.
 * The buffers are fixed by Init and their contents read at each start; when every member's buffers are
 * symmetric (shmem_malloc) at the same offsets within one host, the plan may read and write them in place.
 * Each start is one collective call: members start their plans in the same order as their other calls.
 * tesseraPlanFree is local; starts already queued on a stream still run. tesseraPlanAlgorithm gives the
 * name of the algorithm the plan runs (tessera-info --coll lists them). */
tesseraResult_t tesseraAllReduceInit(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                     tesseraRedOp_t op, tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraReduceScatterInit(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         tesseraDataType_t datatype, tesseraRedOp_t op, tesseraComm_t comm,
                                         tesseraPlan_t* plan);
tesseraResult_t tesseraReduceScatterVInit(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                          tesseraDataType_t datatype, tesseraRedOp_t op, tesseraComm_t comm,
                                          tesseraPlan_t* plan);
tesseraResult_t tesseraAllGatherInit(const void* sendbuff, void* recvbuff, size_t sendcount, tesseraDataType_t datatype,
                                     tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraAllGatherVInit(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t* recvcounts,
                                      const size_t* displs, tesseraDataType_t datatype, tesseraComm_t comm,
                                      tesseraPlan_t* plan);
tesseraResult_t tesseraBroadcastInit(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                     int root, tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraReduceInit(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                  tesseraRedOp_t op, int root, tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraGatherInit(const void* sendbuff, void* recvbuff, size_t sendcount, tesseraDataType_t datatype,
                                  int root, tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraScatterInit(const void* sendbuff, void* recvbuff, size_t recvcount, tesseraDataType_t datatype,
                                   int root, tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraGatherVInit(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t* recvcounts,
                                   const size_t* displs, tesseraDataType_t datatype, int root, tesseraComm_t comm,
                                   tesseraPlan_t* plan);
tesseraResult_t tesseraScatterVInit(const void* sendbuff, const size_t* sendcounts, const size_t* displs,
                                    void* recvbuff, size_t recvcount, tesseraDataType_t datatype, int root,
                                    tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraAllToAllInit(const void* sendbuff, void* recvbuff, size_t count, tesseraDataType_t datatype,
                                    tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraAllToAllVInit(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                                     void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                                     tesseraDataType_t datatype, tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraBarrierInit(tesseraComm_t comm, tesseraPlan_t* plan);
tesseraResult_t tesseraStart(tesseraPlan_t plan, tesseraStream_t stream);
tesseraResult_t tesseraPlanFree(tesseraPlan_t plan);
tesseraResult_t tesseraPlanAlgorithm(const tesseraPlan_t plan, const char** name);

const char* tesseraGetErrorString(tesseraResult_t result);
/* Message of the last error of this thread ("" if none). */
const char* tesseraGetLastError(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_COLL_H */
