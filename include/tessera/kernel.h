/* Tessera SPMD kernels and operators from C: the C form of tessera/kernel.hpp's launch and operators, on a
 * stream or blocking.
 *
 * A kernel is a function run by block_num blocks (worker threads of this PE), each knowing its index; blocks
 * share a workspace, each owns a scratch buffer, and all meet at tesseraBlockSync (kernel.hpp states the
 * contracts: block 0 runs on the launching thread, every block calls sync the same number of times, a
 * kernel does not launch another).
 *
 * Streams are coll.h's tesseraStream_t: one stream type carries collectives and kernels, and events join
 * them in both directions with no host thread in between:
 *   tesseraKernelLaunch(backward, &grads, NULL, compute);   // compute writes the gradients
 *   tesseraEventRecord(ready, compute);
 *   tesseraStreamWaitEvent(comm_stream, ready);              // the allreduce starts once they are written
 *   tesseraAllReduceAsync(g, g, n, tesseraFloat32, tesseraSum, comm, comm_stream);
 *   tesseraEventRecord(reduced, comm_stream);
 *   tesseraStreamWaitEvent(compute, reduced);                // the update kernel reads the reduced gradients
 *   tesseraKernelLaunch(update, &params, NULL, compute);
 * With a NULL stream every call below runs now and returns when done. With a stream it is enqueued and
 * returns at once: its buffers (and `arg`) must stay valid until an event recorded after it completes, the
 * options and tensor descriptors are copied, and an error found when it runs (an operator's shape check,
 * say) fails the stream's item: the stream's error is then sticky (tesseraStreamSynchronize returns
 * tesseraStreamError and tesseraGetLastError names the item). Errors found at the call (a null function,
 * a type no kernel takes, a rank above 8) are returned at once, stream or not. */
#ifndef TESSERA_KERNEL_H
#define TESSERA_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <tessera/coll.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a block knows about itself; valid only inside the kernel call that received it. */
typedef struct tesseraBlock* tesseraBlock_t;
typedef void (*tesseraKernelFn_t)(tesseraBlock_t block, void* arg);

#define TESSERA_AUTO_BLOCKS (-1) /* TESSERA_KERNEL_BLOCKS, else the number of CPUs this PE may use */

typedef struct {
  int block_num;          /* 1..TESSERA_KERNEL_MAX_BLOCKS, or TESSERA_AUTO_BLOCKS */
  size_t workspace_bytes; /* the blocks' shared workspace; contents undefined at launch */
  const char* name;       /* names the kernel in errors, timeouts and traces; NULL: "kernel" */
} tesseraLaunchOptions_t;

/* Runs fn(block, arg) on every block. opts NULL: automatic block count, no workspace. */
tesseraResult_t tesseraKernelLaunch(tesseraKernelFn_t fn, void* arg, const tesseraLaunchOptions_t* opts,
                                    tesseraStream_t stream);
int tesseraBlockIdx(tesseraBlock_t block);
int tesseraBlockNum(tesseraBlock_t block);
/* Grid-wide barrier: returns when every block of the launch has called it; stores before it are visible to
 * every block after it. */
void tesseraBlockSync(tesseraBlock_t block);
/* This block's scratch and the launch's workspace (64-byte aligned); *bytes, when not NULL, gets the size. */
void* tesseraBlockScratch(tesseraBlock_t block, size_t* bytes);
void* tesseraBlockWorkspace(tesseraBlock_t block, size_t* bytes);

/* Operators over contiguous row-major tensors of tesseraFloat32, tesseraFloat16 or tesseraBfloat16 (the
 * elements of coll.h's one list that the kernels take); arithmetic and results as kernel.hpp states. */
#define TESSERA_MAX_TENSOR_RANK 8
typedef struct {
  void* data;
  tesseraDataType_t dtype;
  int rank;
  int64_t dims[TESSERA_MAX_TENSOR_RANK];
} tesseraTensor_t;

typedef struct {
  int block_num; /* TESSERA_AUTO_BLOCKS or a count; results are identical run to run for a fixed count */
} tesseraOpOptions_t;

#define TESSERA_ALL_AXES INT32_MIN
/* y = op over `axis` of x (negative counts from the end; TESSERA_ALL_AXES: every element). op: tesseraSum,
 * tesseraProd, tesseraMin, tesseraMax or tesseraAvg (the mean). */
tesseraResult_t tesseraTensorReduce(tesseraRedOp_t op, const tesseraTensor_t* x, const tesseraTensor_t* y, int axis,
                                    const tesseraOpOptions_t* opts, tesseraStream_t stream);
/* Softmax / LogSoftmax along the last axis. y may equal x. */
tesseraResult_t tesseraSoftmax(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraOpOptions_t* opts,
                               tesseraStream_t stream);
tesseraResult_t tesseraLogSoftmax(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraOpOptions_t* opts,
                                  tesseraStream_t stream);
/* LayerNorm / RMSNorm over the last axis; weight and bias: NULL (1 and 0) or tensors of the last dimension. */
tesseraResult_t tesseraLayerNorm(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraTensor_t* weight,
                                 const tesseraTensor_t* bias, float eps, const tesseraOpOptions_t* opts,
                                 tesseraStream_t stream);
tesseraResult_t tesseraRMSNorm(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraTensor_t* weight,
                               const tesseraTensor_t* bias, float eps, const tesseraOpOptions_t* opts,
                               tesseraStream_t stream);

/* BatchNorm over x of shape [N, C, ...] (channel axis 1): per-channel statistics over N and the spatial axes.
 * Channel vectors are float arrays of C elements (NULL: absent). Start from TESSERA_BATCH_NORM_PARAMS_INIT:
 * a zeroed struct has eps = 0 and momentum = 0. */
typedef struct {
  const float* weight; /* NULL: 1 */
  const float* bias;   /* NULL: 0 */
  float eps;
  float momentum;     /* training: running = (1 - momentum) * running + momentum * batch */
  float* running_mean; /* training: updated if set; inference: required */
  float* running_var;  /* training: updated with the unbiased variance if set; inference: required */
} tesseraBatchNormParams_t;
#define TESSERA_BATCH_NORM_PARAMS_INIT {NULL, NULL, 1e-5f, 0.1f, NULL, NULL}
/* Per-channel mean and biased variance (either output may be NULL). */
tesseraResult_t tesseraBatchNormStats(const tesseraTensor_t* x, float* mean, float* var,
                                      const tesseraOpOptions_t* opts, tesseraStream_t stream);
/* Training: normalises with the batch statistics, writes them to save_mean / save_var (biased; either may be
 * NULL) and updates the running statistics. y may equal x. */
tesseraResult_t tesseraBatchNormTrain(const tesseraTensor_t* x, const tesseraTensor_t* y,
                                      const tesseraBatchNormParams_t* params, float* save_mean, float* save_var,
                                      const tesseraOpOptions_t* opts, tesseraStream_t stream);
/* Inference: normalises with params->running_mean / running_var. */
tesseraResult_t tesseraBatchNormInfer(const tesseraTensor_t* x, const tesseraTensor_t* y,
                                      const tesseraBatchNormParams_t* params, const tesseraOpOptions_t* opts,
                                      tesseraStream_t stream);

/* Softmax / LogSoftmax over a last dimension sharded across the PEs of the job (vocabulary-parallel): PE p
 * holds columns [c_p, c_p + n_p) of every row, x = [rows, n_p] (n_p may differ between PEs and may be 0). The
 * kernel's blocks exchange each row's partial max and sum of exponentials with put-with-signal; every PE
 * gets the same row statistics bit for bit. lse (NULL or float[rows]) receives each full row's log-sum-exp.
 * Needs an initialised OpenSHMEM job. Create and Destroy are collective (symmetric allocations); every PE
 * calls the operator with the same rows, in the same order; calls on one object are ordered (all on one
 * stream, or that stream synchronized before a call elsewhere). */
typedef struct tesseraShardedSoftmaxState* tesseraShardedSoftmax_t;
tesseraResult_t tesseraShardedSoftmaxCreate(int64_t max_rows, tesseraShardedSoftmax_t* out);
tesseraResult_t tesseraShardedSoftmaxDestroy(tesseraShardedSoftmax_t sm);
tesseraResult_t tesseraShardedSoftmax(tesseraShardedSoftmax_t sm, const tesseraTensor_t* x, const tesseraTensor_t* y,
                                      float* lse, const tesseraOpOptions_t* opts, tesseraStream_t stream);
tesseraResult_t tesseraShardedLogSoftmax(tesseraShardedSoftmax_t sm, const tesseraTensor_t* x,
                                         const tesseraTensor_t* y, float* lse, const tesseraOpOptions_t* opts,
                                         tesseraStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_KERNEL_H */
