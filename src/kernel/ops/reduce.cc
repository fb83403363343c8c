// ReduceSum/Mean/Max/Min/Prod over every element or one axis.
//
// x is viewed as [outer, len, inner] with the reduced axis in the middle (kAllAxes: [1, numel, 1]).
// Work is cut into units (o, column chunk, segment of the axis) of equal size and dealt to blocks in
// contiguous ranges:
//   inner == 1 (rows):    unit = a segment of one contiguous row; SIMD reduction straight from memory.
//   inner  > 1 (columns): unit = `cw` columns over a range of rows; the f32 column partials live in the
//                         block's scratch (L1), so memory is read once, sequentially, 4 rows at a time.
// When the axis is split into S > 1 segments (few long rows or columns), each unit leaves a partial in the
// workspace and the partials are combined after a grid sync: per output in segment order, or, when there is
// a single output record and one segment per block, with grid_combine (flat or tree).
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernel/dtype.h"
#include "kernel/ops/common.h"
#include "kernel/ops/ops.h"
#include "kernel/ops/prims.h"

namespace tessera::kernel::ops {
namespace {

constexpr size_t kMinRowSeg = 16384;  // elements per segment of a split row
constexpr size_t kMinColSeg = 64;     // rows per segment of a split column block
constexpr size_t kSmallWork = 32768;  // below this many elements an automatic launch uses one block

double identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd: return 1.0;
    case ReduceOp::kMax: return -std::numeric_limits<double>::infinity();
    case ReduceOp::kMin: return std::numeric_limits<double>::infinity();
    default: return 0.0;
  }
}

struct CombineOp {
  ReduceOp op;
  double operator()(double a, double b) const {
    switch (op) {
      case ReduceOp::kProd: return a * b;
      case ReduceOp::kMax: return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
      case ReduceOp::kMin: return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
      default: return a + b;
    }
  }
};

struct Plan {
  ReduceOp op;
  const Prims* p;
  size_t es;  // element size
  const char* x;
  char* y;
  size_t outer, len, inner;
  size_t S;       // segments of the reduced axis
  size_t cw, nchunk;  // column chunk width and count (inner > 1)
  size_t units;
  Combine mode;
  int blocks;
};

// Final value of an output (mean divides by the axis length).
inline float finalize(const Plan& P, double v) {
  return static_cast<float>(P.op == ReduceOp::kMean ? v / static_cast<double>(P.len) : v);
}

void write_out(const Plan& P, size_t index, const double* v, size_t n, float* tmp) {
  for (size_t j = 0; j < n; ++j) tmp[j] = finalize(P, v[j]);
  P.p->from_f32(tmp, P.y + index * P.es, n);
}

double row_unit(const Plan& P, const char* x, size_t n) {
  switch (P.op) {
    case ReduceOp::kMax: return P.p->max(x, n);
    case ReduceOp::kMin: return P.p->min(x, n);
    case ReduceOp::kProd: return P.p->prod(x, n);
    default: return P.p->sum(x, n);
  }
}

// Reduces rows [r0, r1) of columns [c0, c0 + w) of slice o into acc[0, w).
void col_unit(const Plan& P, size_t o, size_t r0, size_t r1, size_t c0, size_t w, double* acc, float* tmp) {
  const char* base = P.x + ((o * P.len + r0) * P.inner + c0) * P.es;
  const size_t rows = r1 - r0;
  switch (P.op) {
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      float* facc = tmp + P.cw;
      std::fill(facc, facc + w, static_cast<float>(identity(P.op)));
      (P.op == ReduceOp::kMax ? P.p->col_max : P.p->col_min)(base, rows, w, P.inner, facc, tmp);
      for (size_t j = 0; j < w; ++j) acc[j] = facc[j];
      break;
    }
    case ReduceOp::kProd:
      std::fill(acc, acc + w, 1.0);
      P.p->col_prod(base, rows, w, P.inner, acc);
      break;
    default:
      std::fill(acc, acc + w, 0.0);
      P.p->col_sum(base, rows, w, P.inner, acc, tmp);
  }
}

void run_rows(const Plan& P, BlockContext& c) {
  const int b = c.block_idx(), B = c.block_num();
  double* partials = c.workspace_as<double>();
  float* tmp = c.scratch_as<float>();
  auto [u0, u1] = split(P.units, B, b);
  for (size_t u = u0; u < u1; ++u) {
    const size_t o = u / P.S, s = u % P.S;
    auto [a, e] = split(P.len, static_cast<int>(P.S), static_cast<int>(s));
    const double v = row_unit(P, P.x + (o * P.len + a) * P.es, e - a);
    if (P.S == 1) write_out(P, o, &v, 1, tmp);
    else partials[u] = v;
  }
  if (P.S == 1) return;
  // Combine the segments of each row.
  if (P.outer == 1 && P.S == static_cast<size_t>(B)) {
    grid_combine(c, partials, 1, P.mode, CombineOp{P.op});
    if (b == 0) write_out(P, 0, partials, 1, tmp);
    return;
  }
  c.sync();
  auto [r0, r1] = split(P.outer, B, b);
  for (size_t o = r0; o < r1; ++o) {
    double v = partials[o * P.S];
    for (size_t s = 1; s < P.S; ++s) v = CombineOp{P.op}(v, partials[o * P.S + s]);
    write_out(P, o, &v, 1, tmp);
  }
}

void run_cols(const Plan& P, BlockContext& c) {
  const int b = c.block_idx(), B = c.block_num();
  double* partials = c.workspace_as<double>();
  double* acc = c.scratch_as<double>();
  float* tmp = reinterpret_cast<float*>(acc + P.cw);  // 2 * cw floats
  auto [u0, u1] = split(P.units, B, b);
  for (size_t u = u0; u < u1; ++u) {
    const size_t s = u % P.S, oc = u / P.S, o = oc / P.nchunk, ch = oc % P.nchunk;
    const size_t c0 = ch * P.cw, w = std::min(P.cw, P.inner - c0);
    auto [r0, r1] = split(P.len, static_cast<int>(P.S), static_cast<int>(s));
    if (P.S == 1) {
      col_unit(P, o, r0, r1, c0, w, acc, tmp);
      write_out(P, o * P.inner + c0, acc, w, tmp);
    } else {
      col_unit(P, o, r0, r1, c0, w, partials + u * P.cw, tmp);
    }
  }
  if (P.S == 1) return;
  if (P.outer * P.nchunk == 1 && P.S == static_cast<size_t>(B)) {
    grid_combine(c, partials, P.cw, P.mode, CombineOp{P.op});
    auto [j0, j1] = split(P.inner, B, b);
    if (j1 > j0) write_out(P, j0, partials + j0, j1 - j0, tmp);
    return;
  }
  c.sync();
  auto [k0, k1] = split(P.outer * P.inner, B, b);
  for (size_t k = k0; k < k1; ++k) {
    const size_t o = k / P.inner, col = k % P.inner, ch = col / P.cw, j = col % P.cw;
    const double* rec = partials + (o * P.nchunk + ch) * P.S * P.cw + j;
    double v = rec[0];
    for (size_t s = 1; s < P.S; ++s) v = CombineOp{P.op}(v, rec[s * P.cw]);
    write_out(P, k, &v, 1, tmp);
  }
}

Status check_reduce_out(const char* name, const ConstTensor& x, const Tensor& y, int axis) {
  TS_RETURN_IF_ERROR(check_tensor(name, "y", y));
  if (y.dtype != x.dtype)
    return invalid_arg("{}: y.dtype={} differs from x.dtype={}", name, dtype_name(y.dtype), dtype_name(x.dtype));
  if (axis == kAllAxes) {
    if (y.shape.numel() != 1)
      return invalid_arg("{}: y.shape {} must hold one element for a reduction over all axes", name, to_string(y.shape));
    return Status::ok();
  }
  Shape drop, keep = x.shape;
  keep.dims[axis] = 1;
  for (int i = 0; i < x.shape.rank; ++i)
    if (i != axis) drop.dims[drop.rank++] = x.shape.dims[i];
  if (!(y.shape == drop) && !(y.shape == keep))
    return invalid_arg("{}: y.shape {} must be {} (or {} with keepdims) for axis {} of x.shape {}", name,
                       to_string(y.shape), to_string(drop), to_string(keep), axis, to_string(x.shape));
  return Status::ok();
}

// "reduce sum", ...: how messages and launches name the call, from the list's names of the operators.
const char* label(ReduceOp op) {
  static const auto kLabels = [] {
    std::array<std::string, kNumReduceOps> l;
    for (int i = 0; i < kNumReduceOps; ++i) l[i] = std::string("reduce ") + reduce_op_name(static_cast<ReduceOp>(i));
    return l;
  }();
  return kLabels[static_cast<int>(op)].c_str();
}

}  // namespace

Status reduce(ReduceOp op, const ConstTensor& x, const Tensor& y, int axis_in, const OpOptions& opts) {
  if (!valid(op)) return invalid_arg("reduce: op={} is not sum, mean, max, min or prod", static_cast<int>(op));
  const char* name = label(op);
  TS_RETURN_IF_ERROR(check_tensor(name, "x", x));
  int axis = kAllAxes;
  if (axis_in != kAllAxes) {
    TS_ASSIGN_OR_RETURN(axis, normalize_axis(name, axis_in, x.shape.rank));
  }
  TS_RETURN_IF_ERROR(check_reduce_out(name, x, y, axis));
  TS_ASSIGN_OR_RETURN(int blocks, rt::resolve_block_num(opts.block_num, name));

  Plan P{};
  P.op = op;
  P.p = &prims(x.dtype);
  P.es = dtype_size(x.dtype);
  P.x = static_cast<const char*>(x.data);
  P.y = static_cast<char*>(y.data);
  P.outer = 1;
  P.inner = 1;
  P.len = static_cast<size_t>(x.shape.numel());
  if (axis != kAllAxes) {
    for (int i = 0; i < axis; ++i) P.outer *= static_cast<size_t>(x.shape.dims[i]);
    for (int i = axis + 1; i < x.shape.rank; ++i) P.inner *= static_cast<size_t>(x.shape.dims[i]);
    P.len = static_cast<size_t>(x.shape.dims[axis]);
  }
  const size_t outputs = P.outer * P.inner;
  if (outputs == 0) return Status::ok();
  if (P.len == 0) {
    if (op == ReduceOp::kMax || op == ReduceOp::kMin)
      return invalid_arg("{}: the reduced axis of x.shape {} is empty (no {} of an empty set)", name,
                         to_string(x.shape), op == ReduceOp::kMax ? "maximum" : "minimum");
    const double v = identity(op);
    float f = finalize(P, v);
    for (size_t k = 0; k < outputs; ++k) P.p->from_f32(&f, P.y + k * P.es, 1);
    return Status::ok();
  }
  if (opts.block_num == kAutoBlocks)
    blocks = static_cast<int>(std::clamp<size_t>(P.len * outputs / kSmallWork, 1, static_cast<size_t>(blocks)));
  P.blocks = blocks;
  P.mode = rt::resolve_combine(opts.combine, blocks);

  size_t ws = 0;
  if (P.inner == 1) {
    P.S = segments_for(P.outer, P.len, blocks, kMinRowSeg);
    P.units = P.outer * P.S;
    if (P.S > 1) ws = P.units * sizeof(double);
  } else {
    P.cw = std::min<size_t>({P.inner, kColTile, rt::scratch_bytes() / 16 / 16 * 16});
    P.nchunk = (P.inner + P.cw - 1) / P.cw;
    P.S = segments_for(P.outer * P.nchunk, P.len, blocks, kMinColSeg);
    P.units = P.outer * P.nchunk * P.S;
    if (P.S > 1) ws = P.units * P.cw * sizeof(double);
  }
  auto body = [&P](BlockContext& c) {
    if (P.inner == 1) run_rows(P, c);
    else run_cols(P, c);
  };
  return rt::launch_fn(LaunchOptions{blocks, ws, name}, body);
}

}  // namespace tessera::kernel::ops
