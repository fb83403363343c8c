// The C API of tessera/kernel.h: kernels and operators, blocking or on a stream, over the C++ API of
// tessera/kernel.hpp (launch(stream, ...) and OpOptions::stream do the enqueueing, so a C item behaves as a
// C++ one: ordered, captured by a capturing stream, its failure sticky). This layer checks what C adds (null
// descriptors, element types outside the kernels' set, ranks above 8, unknown operators) and turns errors
// into result codes, the message kept for tesseraGetLastError.
#include <tessera/kernel.h>
#include <tessera/kernel.hpp>

#include <optional>
#include <string>

#include "capi/last_error.h"
#include "coll/handle.h"
#include "kernel/dtype.h"
#include "pgas/runtime.h"

using namespace tessera;
namespace tk = tessera::kernel;

// The C handle of a sharded softmax: the C++ object, whose symmetric buffers it owns.
struct tesseraShardedSoftmaxState {
  explicit tesseraShardedSoftmaxState(int64_t max_rows) : sm(max_rows) {}
  tk::ShardedSoftmax sm;
};

static_assert(TESSERA_AUTO_BLOCKS == tk::kAutoBlocks, "kernel.h and kernel.hpp name different automatic counts");
static_assert(TESSERA_MAX_TENSOR_RANK == tk::kMaxRank, "kernel.h and kernel.hpp allow different ranks");
static_assert(TESSERA_ALL_AXES == tk::kAllAxes, "kernel.h and kernel.hpp name all axes differently");

namespace {

using capi::to_result;

tesseraResult_t failed(const char* routine, const std::exception& e) {
  return to_result(invalid_arg("{}: {}", routine, e.what()));
}

// A C descriptor as the C++ one; `what` names it in errors ("x", "weight").
Result<tk::Tensor> tensor(const char* routine, const char* what, const tesseraTensor_t* t) {
  if (!t) return invalid_arg("{}: the descriptor of {} is null", routine, what);
  const std::optional<tk::DType> k =
      static_cast<unsigned>(t->dtype) < static_cast<unsigned>(tesseraNumTypes)
          ? tk::kernel_dtype(static_cast<::tessera::DType>(t->dtype))
          : std::nullopt;
  if (!k)
    return invalid_arg("{}: {}.dtype={} is not tesseraFloat32, tesseraFloat16 or tesseraBfloat16", routine, what,
                       static_cast<int>(t->dtype));
  if (t->rank < 0 || t->rank > tk::kMaxRank)
    return invalid_arg("{}: {}.rank={} must be in 0..{}", routine, what, t->rank, tk::kMaxRank);
  tk::Tensor out{t->data, *k, {}};
  out.shape.rank = t->rank;
  for (int i = 0; i < t->rank; ++i) out.shape.dims[i] = t->dims[i];
  return out;
}

tk::OpOptions op_options(const tesseraOpOptions_t* o, tesseraStream_t stream) {
  tk::OpOptions out;
  if (o) out.block_num = o->block_num;
  out.stream = stream ? stream->s.get() : nullptr;
  return out;
}

// The checks every operator call shares: the stream (when given) and the two tensors.
struct OpCall {
  tk::Tensor x, y;
  tk::OpOptions opts;
};
Result<OpCall> op_call(const char* routine, const tesseraTensor_t* x, const tesseraTensor_t* y,
                       const tesseraOpOptions_t* opts, tesseraStream_t stream) {
  if (stream)
    if (Status st = coll::check_stream(routine, stream); !st.is_ok()) return st;
  Result<tk::Tensor> tx = tensor(routine, "x", x);
  if (!tx.is_ok()) return tx.status();
  Result<tk::Tensor> ty = tensor(routine, "y", y);
  if (!ty.is_ok()) return ty.status();
  return OpCall{tx.value(), ty.value(), op_options(opts, stream)};
}

template <typename F>
tesseraResult_t run(const char* routine, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return failed(routine, e);
  }
  return tesseraSuccess;
}

tesseraResult_t norm(const char* routine, const tesseraTensor_t* x, const tesseraTensor_t* y,
                     const tesseraTensor_t* weight, const tesseraTensor_t* bias, float eps,
                     const tesseraOpOptions_t* opts, tesseraStream_t stream, bool rms) {
  Result<OpCall> c = op_call(routine, x, y, opts, stream);
  if (!c.is_ok()) return to_result(c.status());
  tk::NormParams p;
  p.eps = eps;
  if (weight) {
    Result<tk::Tensor> w = tensor(routine, "weight", weight);
    if (!w.is_ok()) return to_result(w.status());
    p.weight = w.value();
  }
  if (bias) {
    Result<tk::Tensor> b = tensor(routine, "bias", bias);
    if (!b.is_ok()) return to_result(b.status());
    p.bias = b.value();
  }
  const OpCall& k = c.value();
  return run(routine, [&] { rms ? tk::rms_norm(k.x, k.y, p, k.opts) : tk::layer_norm(k.x, k.y, p, k.opts); });
}

tesseraResult_t softmax(const char* routine, const tesseraTensor_t* x, const tesseraTensor_t* y,
                        const tesseraOpOptions_t* opts, tesseraStream_t stream, bool log) {
  Result<OpCall> c = op_call(routine, x, y, opts, stream);
  if (!c.is_ok()) return to_result(c.status());
  const OpCall& o = c.value();
  return run(routine, [&] { log ? tk::log_softmax(o.x, o.y, o.opts) : tk::softmax(o.x, o.y, o.opts); });
}

tk::BlockContext& block_of(tesseraBlock_t b) { return *reinterpret_cast<tk::BlockContext*>(b); }

Result<tk::BatchNormParams> batch_norm_params(const char* routine, const tesseraBatchNormParams_t* p) {
  if (!p) return invalid_arg("{}: params is null (start from TESSERA_BATCH_NORM_PARAMS_INIT)", routine);
  tk::BatchNormParams out;
  out.weight = p->weight;
  out.bias = p->bias;
  out.eps = p->eps;
  out.momentum = p->momentum;
  out.running_mean = p->running_mean;
  out.running_var = p->running_var;
  return out;
}

tesseraResult_t batch_norm(const char* routine, const tesseraTensor_t* x, const tesseraTensor_t* y,
                           const tesseraBatchNormParams_t* params, float* save_mean, float* save_var,
                           const tesseraOpOptions_t* opts, tesseraStream_t stream, bool train) {
  Result<tk::BatchNormParams> p = batch_norm_params(routine, params);
  if (!p.is_ok()) return to_result(p.status());
  Result<OpCall> c = op_call(routine, x, y, opts, stream);
  if (!c.is_ok()) return to_result(c.status());
  const OpCall& k = c.value();
  return run(routine, [&] {
    train ? tk::batch_norm_train(k.x, k.y, p.value(), save_mean, save_var, k.opts)
          : tk::batch_norm_infer(k.x, k.y, p.value(), k.opts);
  });
}

tesseraResult_t sharded_softmax(const char* routine, tesseraShardedSoftmax_t sm, const tesseraTensor_t* x,
                                const tesseraTensor_t* y, float* lse, const tesseraOpOptions_t* opts,
                                tesseraStream_t stream, bool log) {
  if (!sm) return to_result(invalid_arg("{}: the sharded softmax handle is null", routine));
  Result<OpCall> c = op_call(routine, x, y, opts, stream);
  if (!c.is_ok()) return to_result(c.status());
  const OpCall& k = c.value();
  return run(routine, [&] { log ? sm->sm.log_softmax(k.x, k.y, lse, k.opts) : sm->sm.softmax(k.x, k.y, lse, k.opts); });
}
}  // namespace

extern "C" {

tesseraResult_t tesseraKernelLaunch(tesseraKernelFn_t fn, void* arg, const tesseraLaunchOptions_t* opts,
                                    tesseraStream_t stream) {
  constexpr const char* kRoutine = "tesseraKernelLaunch";
  if (!fn) return to_result(invalid_arg("{}: the kernel function is null", kRoutine));
  if (stream)
    if (Status st = coll::check_stream(kRoutine, stream); !st.is_ok()) return to_result(st);
  tk::LaunchOptions o;
  if (opts) {
    o.block_num = opts->block_num;
    o.workspace_bytes = opts->workspace_bytes;
    if (opts->name) o.name = opts->name;  // copied by launch(stream, ...) when enqueued
  }
  auto body = [fn, arg](tk::BlockContext& b) { fn(reinterpret_cast<tesseraBlock_t>(&b), arg); };
  return run(kRoutine, [&] { stream ? tk::launch(*stream->s, o, body) : tk::launch(o, body); });
}

int tesseraBlockIdx(tesseraBlock_t b) { return block_of(b).block_idx(); }
int tesseraBlockNum(tesseraBlock_t b) { return block_of(b).block_num(); }
void tesseraBlockSync(tesseraBlock_t b) { block_of(b).sync(); }
void* tesseraBlockScratch(tesseraBlock_t b, size_t* bytes) {
  if (bytes) *bytes = block_of(b).scratch_bytes();
  return block_of(b).scratch();
}
void* tesseraBlockWorkspace(tesseraBlock_t b, size_t* bytes) {
  if (bytes) *bytes = block_of(b).workspace_bytes();
  return block_of(b).workspace();
}

tesseraResult_t tesseraTensorReduce(tesseraRedOp_t op, const tesseraTensor_t* x, const tesseraTensor_t* y, int axis,
                                    const tesseraOpOptions_t* opts, tesseraStream_t stream) {
  constexpr const char* kRoutine = "tesseraTensorReduce";
  const std::optional<tk::ReduceOp> k = static_cast<unsigned>(op) < static_cast<unsigned>(tesseraNumOps)
                                            ? tk::kernel_op(static_cast<::tessera::ReduceOp>(op))
                                            : std::nullopt;
  if (!k)
    return to_result(invalid_arg("{}: op={} is not tesseraSum, tesseraProd, tesseraMin, tesseraMax or tesseraAvg",
                                 kRoutine, static_cast<int>(op)));
  Result<OpCall> c = op_call(kRoutine, x, y, opts, stream);
  if (!c.is_ok()) return to_result(c.status());
  const OpCall& o = c.value();
  return run(kRoutine, [&] { tk::reduce(*k, o.x, o.y, axis, o.opts); });
}

tesseraResult_t tesseraSoftmax(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraOpOptions_t* opts,
                               tesseraStream_t stream) {
  return softmax("tesseraSoftmax", x, y, opts, stream, false);
}

tesseraResult_t tesseraLogSoftmax(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraOpOptions_t* opts,
                                  tesseraStream_t stream) {
  return softmax("tesseraLogSoftmax", x, y, opts, stream, true);
}

tesseraResult_t tesseraLayerNorm(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraTensor_t* weight,
                                 const tesseraTensor_t* bias, float eps, const tesseraOpOptions_t* opts,
                                 tesseraStream_t stream) {
  return norm("tesseraLayerNorm", x, y, weight, bias, eps, opts, stream, false);
}

tesseraResult_t tesseraRMSNorm(const tesseraTensor_t* x, const tesseraTensor_t* y, const tesseraTensor_t* weight,
                               const tesseraTensor_t* bias, float eps, const tesseraOpOptions_t* opts,
                               tesseraStream_t stream) {
  return norm("tesseraRMSNorm", x, y, weight, bias, eps, opts, stream, true);
}

tesseraResult_t tesseraBatchNormStats(const tesseraTensor_t* x, float* mean, float* var,
                                      const tesseraOpOptions_t* opts, tesseraStream_t stream) {
  constexpr const char* kRoutine = "tesseraBatchNormStats";
  Result<OpCall> c = op_call(kRoutine, x, x, opts, stream);
  if (!c.is_ok()) return to_result(c.status());
  const OpCall& k = c.value();
  return run(kRoutine, [&] { tk::batch_norm_stats(k.x, mean, var, k.opts); });
}

tesseraResult_t tesseraBatchNormTrain(const tesseraTensor_t* x, const tesseraTensor_t* y,
                                      const tesseraBatchNormParams_t* params, float* save_mean, float* save_var,
                                      const tesseraOpOptions_t* opts, tesseraStream_t stream) {
  return batch_norm("tesseraBatchNormTrain", x, y, params, save_mean, save_var, opts, stream, true);
}

tesseraResult_t tesseraBatchNormInfer(const tesseraTensor_t* x, const tesseraTensor_t* y,
                                      const tesseraBatchNormParams_t* params, const tesseraOpOptions_t* opts,
                                      tesseraStream_t stream) {
  return batch_norm("tesseraBatchNormInfer", x, y, params, nullptr, nullptr, opts, stream, false);
}

tesseraResult_t tesseraShardedSoftmaxCreate(int64_t max_rows, tesseraShardedSoftmax_t* out) {
  constexpr const char* kRoutine = "tesseraShardedSoftmaxCreate";
  if (!out) return to_result(invalid_arg("{}: out is null", kRoutine));
  *out = nullptr;
  if (max_rows < 0) return to_result(invalid_arg("{}: max_rows={} must be >= 0", kRoutine, max_rows));
  if (!pgas::is_initialized())
    return to_result(invalid_arg("{}: called before shmem_init (or after shmem_finalize)", kRoutine));
  try {
    *out = new tesseraShardedSoftmaxState(max_rows);
  } catch (const std::exception& e) {  // max_rows too large for the symmetric heap: every PE fails alike
    return failed(kRoutine, e);
  }
  return tesseraSuccess;
}

tesseraResult_t tesseraShardedSoftmaxDestroy(tesseraShardedSoftmax_t sm) {
  if (!sm) return to_result(invalid_arg("tesseraShardedSoftmaxDestroy: the sharded softmax handle is null"));
  delete sm;
  return tesseraSuccess;
}

tesseraResult_t tesseraShardedSoftmax(tesseraShardedSoftmax_t sm, const tesseraTensor_t* x, const tesseraTensor_t* y,
                                      float* lse, const tesseraOpOptions_t* opts, tesseraStream_t stream) {
  return sharded_softmax("tesseraShardedSoftmax", sm, x, y, lse, opts, stream, false);
}

tesseraResult_t tesseraShardedLogSoftmax(tesseraShardedSoftmax_t sm, const tesseraTensor_t* x,
                                         const tesseraTensor_t* y, float* lse, const tesseraOpOptions_t* opts,
                                         tesseraStream_t stream) {
  return sharded_softmax("tesseraShardedLogSoftmax", sm, x, y, lse, opts, stream, true);
}

}  // extern "C"
