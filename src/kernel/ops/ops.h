// Operators, internal interface: same contracts as the public functions in tessera/kernel.hpp, but errors
// come back as Status (the public wrappers in api.cc throw them as tessera::kernel::Error).
#pragma once
#include "base/status.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel::ops {

Status reduce(ReduceOp op, const ConstTensor& x, const Tensor& y, int axis, const OpOptions& opts);
Status softmax(const ConstTensor& x, const Tensor& y, bool log, const OpOptions& opts);
Status layer_norm(const ConstTensor& x, const Tensor& y, const NormParams& p, bool rms, const OpOptions& opts);
Status batch_norm_stats(const ConstTensor& x, float* mean, float* var, const OpOptions& opts);
Status batch_norm_train(const ConstTensor& x, const Tensor& y, const BatchNormParams& p, float* save_mean,
                        float* save_var, const OpOptions& opts);
Status batch_norm_infer(const ConstTensor& x, const Tensor& y, const BatchNormParams& p, const OpOptions& opts);

}  // namespace tessera::kernel::ops
