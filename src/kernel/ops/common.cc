#include "kernel/ops/common.h"

#include "kernel/dtype.h"

namespace tessera::kernel::ops {

Status check_tensor(const char* op, const char* arg, const ConstTensor& t) {
  if (!valid(t.dtype))
    return invalid_arg("{}: {}.dtype={} is not f32, f16 or bf16", op, arg, static_cast<int>(t.dtype));
  if (t.shape.rank < 0 || t.shape.rank > kMaxRank)
    return invalid_arg("{}: {}.shape.rank={} must be in 0..{}", op, arg, t.shape.rank, kMaxRank);
  for (int i = 0; i < t.shape.rank; ++i)
    if (t.shape.dims[i] < 0)
      return invalid_arg("{}: {}.shape {} has a negative dimension", op, arg, to_string(t.shape));
  if (!t.data && t.shape.numel() > 0)
    return invalid_arg("{}: {}.data is null (shape {}, {} elements)", op, arg, to_string(t.shape), t.shape.numel());
  return Status::ok();
}

Status check_like(const char* op, const char* arg, const ConstTensor& x, const ConstTensor& y) {
  TS_RETURN_IF_ERROR(check_tensor(op, arg, y));
  if (y.dtype != x.dtype)
    return invalid_arg("{}: {}.dtype={} differs from x.dtype={}", op, arg, dtype_name(y.dtype), dtype_name(x.dtype));
  if (!(y.shape == x.shape))
    return invalid_arg("{}: {}.shape {} differs from x.shape {}", op, arg, to_string(y.shape), to_string(x.shape));
  return Status::ok();
}

Status check_vector(const char* op, const char* arg, const ConstTensor& v, int64_t n, DType dt) {
  TS_RETURN_IF_ERROR(check_tensor(op, arg, v));
  if (v.shape.rank != 1 || v.shape.dims[0] != n)
    return invalid_arg("{}: {}.shape {} must be [{}] (the normalised dimension)", op, arg, to_string(v.shape), n);
  if (v.dtype != DType::kF32 && v.dtype != dt)
    return invalid_arg("{}: {}.dtype={} must be f32 or x.dtype={}", op, arg, dtype_name(v.dtype), dtype_name(dt));
  return Status::ok();
}

Result<int> normalize_axis(const char* op, int axis, int rank) {
  if (axis < -rank || axis >= rank) {
    if (rank == 0) return invalid_arg("{}: axis {} out of range: x has rank 0 (use kAllAxes)", op, axis);
    return invalid_arg("{}: axis {} out of range for rank {} (allowed {}..{})", op, axis, rank, -rank, rank - 1);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tessera::kernel::ops
