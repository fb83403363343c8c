// The public C++ API (tessera/kernel.hpp): thin wrappers that turn a Status into tessera::kernel::Error.
#include <string>

#include "base/status.h"
#include "kernel/dtype.h"
#include "kernel/ops/ops.h"
#include "kernel/ops/scalar.h"
#include "kernel/runtime/runtime.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel {
namespace {
void throw_if_error(const Status& st) {
  if (!st.is_ok()) throw Error(st.message());
}

// An operator now, or with opts.stream set one item of that stream, which runs the same call later with
// the stream cleared.
template <typename Call>
void run_op(const char* op, ConstTensor x, const OpOptions& opts, Call call) {
  if (!opts.stream) {
    throw_if_error(call(opts));
    return;
  }
  OpOptions later = opts;
  later.stream = nullptr;
  opts.stream->enqueue(std::string(op) + " " + to_string(x.shape) + " " + dtype_name(x.dtype),
                       [call, later] { throw_if_error(call(later)); });
}
}  // namespace

void launch_raw(const LaunchOptions& opts, KernelFn fn, void* arg) { throw_if_error(rt::launch(opts, fn, arg)); }

int default_block_num() {
  auto r = rt::resolve_block_num(kAutoBlocks, "default_block_num");
  return r.is_ok() ? r.value() : 1;
}

size_t dtype_size(DType t) { return valid(t) ? ::tessera::dtype_size(entry_of(t)) : 0; }
const char* dtype_name(DType t) { return valid(t) ? ::tessera::dtype_abbr(entry_of(t)) : "?"; }
const char* reduce_op_name(ReduceOp op) { return valid(op) ? ::tessera::op_tensor_name(entry_of(op)) : "?"; }

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank && i < kMaxRank; ++i) {
    if (i) out += ",";
    out += std::to_string(s.dims[i]);
  }
  return out + "]";
}

float bf16_to_f32(uint16_t h) noexcept { return ops::bf16_bits_to_f32(h); }
uint16_t f32_to_bf16(float f) noexcept { return ops::f32_to_bf16_bits(f); }
float f16_to_f32(uint16_t h) noexcept { return ops::f16_bits_to_f32(h); }
uint16_t f32_to_f16(float f) noexcept { return ops::f32_to_f16_bits(f); }

void reduce(ReduceOp op, ConstTensor x, Tensor y, int axis, const OpOptions& opts) {
  run_op(reduce_op_name(op), x, opts, [=](const OpOptions& o) { return ops::reduce(op, x, y, axis, o); });
}
void softmax(ConstTensor x, Tensor y, const OpOptions& opts) {
  run_op("softmax", x, opts, [=](const OpOptions& o) { return ops::softmax(x, y, false, o); });
}
void log_softmax(ConstTensor x, Tensor y, const OpOptions& opts) {
  run_op("log_softmax", x, opts, [=](const OpOptions& o) { return ops::softmax(x, y, true, o); });
}
void layer_norm(ConstTensor x, Tensor y, const NormParams& p, const OpOptions& opts) {
  run_op("layer_norm", x, opts, [=](const OpOptions& o) { return ops::layer_norm(x, y, p, false, o); });
}
void rms_norm(ConstTensor x, Tensor y, const NormParams& p, const OpOptions& opts) {
  run_op("rms_norm", x, opts, [=](const OpOptions& o) { return ops::layer_norm(x, y, p, true, o); });
}
void batch_norm_stats(ConstTensor x, float* mean, float* var, const OpOptions& opts) {
  run_op("batch_norm_stats", x, opts, [=](const OpOptions& o) { return ops::batch_norm_stats(x, mean, var, o); });
}
void batch_norm_train(ConstTensor x, Tensor y, const BatchNormParams& p, float* save_mean, float* save_var,
                      const OpOptions& opts) {
  run_op("batch_norm_train", x, opts,
         [=](const OpOptions& o) { return ops::batch_norm_train(x, y, p, save_mean, save_var, o); });
}
void batch_norm_infer(ConstTensor x, Tensor y, const BatchNormParams& p, const OpOptions& opts) {
  run_op("batch_norm_infer", x, opts, [=](const OpOptions& o) { return ops::batch_norm_infer(x, y, p, o); });
}

}  // namespace tessera::kernel
