// Tensors as Tessera's calls take them (tensors.h).
#include "tensors.h"

#include <c10/util/Exception.h>

namespace tessera_torch {

void check_cpu(const at::Tensor& t, const char* call) {
  TORCH_CHECK(t.device().is_cpu(), "tessera: ", call, ": tensor is on ", t.device(), "; this backend takes CPU tensors");
  TORCH_CHECK(t.layout() == at::kStrided, "tessera: ", call, ": sparse tensors are not supported");
}

const at::Tensor& single(const std::vector<at::Tensor>& v, const char* call) {
  TORCH_CHECK(v.size() == 1, "tessera: ", call, ": takes one tensor per rank, got ", v.size());
  check_cpu(v[0], call);
  return v[0];
}

// Bool tensors travel as bytes; SUM and PRODUCT become OR and AND so that every byte stays 0 or 1.
tc::RedOp red_op_of(const c10d::ReduceOp& op, const at::Tensor& t, const char* call) {
  const bool is_bool = t.scalar_type() == at::kBool;
  const bool is_int = at::isIntegralType(t.scalar_type(), /*includeBool=*/true);
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return is_bool ? tc::RedOp::kBor : tc::RedOp::kSum;
    case c10d::ReduceOp::PRODUCT: return is_bool ? tc::RedOp::kBand : tc::RedOp::kProd;
    case c10d::ReduceOp::MIN: return is_bool ? tc::RedOp::kBand : tc::RedOp::kMin;
    case c10d::ReduceOp::MAX: return is_bool ? tc::RedOp::kBor : tc::RedOp::kMax;
    case c10d::ReduceOp::PREMUL_SUM:  // the inputs are scaled first (scaled()), then summed
      TORCH_CHECK(!is_int, "tessera: ", call, ": PREMUL_SUM needs a floating-point tensor, got ", t.scalar_type());
      return tc::RedOp::kSum;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!is_int, "tessera: ", call, ": AVG needs a floating-point tensor, got ", t.scalar_type());
      return tc::RedOp::kAvg;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(is_int, "tessera: ", call, ": bitwise operators need an integer tensor, got ", t.scalar_type());
      return op.op_ == c10d::ReduceOp::BAND ? tc::RedOp::kBand
             : op.op_ == c10d::ReduceOp::BOR ? tc::RedOp::kBor
                                              : tc::RedOp::kBxor;
    default: break;
  }
  TORCH_CHECK(false, "tessera: ", call, ": reduce operator ", static_cast<int>(op.op_),
              " is not supported (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM are)");
}

// PREMUL_SUM's factor (a number or a one-element tensor), or none for every other operator.
std::optional<at::Tensor> premul_factor(const c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return std::nullopt;
  const auto* s = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s, "tessera: PREMUL_SUM without its factor (make it with torch.distributed._make_nccl_premul_sum)");
  if (s->tensor_factor.defined()) return s->tensor_factor.to(at::kCPU);
  return at::scalar_tensor(s->double_factor, at::kDouble);
}

// The input a reduction reads: the tensor itself, or for PREMUL_SUM a scaled copy (the caller's tensor is not
// an output of the call, so it must not change).
at::Tensor scaled(const at::Tensor& in, const std::optional<at::Tensor>& factor) {
  return factor ? (in * *factor).to(in.scalar_type()) : in;
}

// A contiguous tensor to work on: the tensor itself, or a copy whose result is copied back afterwards.
at::Tensor dense(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }
void copy_back(const at::Tensor& user, const at::Tensor& work) {
  if (!user.is_same(work)) user.copy_(work);
}

size_t bytes_of(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// The start of the tensors' elements when they lie end to end in memory in list order (views of one buffer,
// as `list(flat.chunk(n))` makes them): the call can use them in place. Null otherwise.
void* adjacent(const std::vector<at::Tensor>& v) {
  char* first = nullptr;
  char* next = nullptr;
  for (const auto& t : v) {
    if (!t.is_contiguous() || t.scalar_type() != v[0].scalar_type()) return nullptr;
    char* p = static_cast<char*>(t.data_ptr());
    if (!first) first = p;
    else if (p != next) return nullptr;
    next = p + bytes_of(t);
  }
  return first;
}

int64_t total_numel(const std::vector<at::Tensor>& v) {
  int64_t n = 0;
  for (const auto& t : v) n += t.numel();
  return n;
}

void check_same(const std::vector<at::Tensor>& list, const at::Tensor& like, const char* call, const char* what) {
  for (size_t i = 0; i < list.size(); ++i) {
    check_cpu(list[i], call);
    TORCH_CHECK(list[i].numel() == like.numel() && list[i].scalar_type() == like.scalar_type(), "tessera: ", call,
                ": ", what, " tensor ", i, " has ", list[i].numel(), " ", list[i].scalar_type(), " elements, the input ",
                like.numel(), " ", like.scalar_type());
  }
}

void check_coalesced(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs, int n,
                     bool outputs_are_whole, const char* call) {
  TORCH_CHECK(!inputs.empty() && inputs.size() == outputs.size(), "tessera: ", call, ": ", inputs.size(),
              " inputs and ", outputs.size(), " outputs; needs one output per input, at least one");
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_cpu(inputs[i], call);
    check_cpu(outputs[i], call);
    TORCH_CHECK(inputs[i].scalar_type() == inputs[0].scalar_type() && outputs[i].scalar_type() == inputs[0].scalar_type(),
                "tessera: ", call, ": tensors of types ", inputs[0].scalar_type(), " and ", inputs[i].scalar_type(), " or ",
                outputs[i].scalar_type(), "; one type per call");
    const at::Tensor& whole = outputs_are_whole ? outputs[i] : inputs[i];
    const at::Tensor& part = outputs_are_whole ? inputs[i] : outputs[i];
    const char* whole_name = outputs_are_whole ? "output" : "input";
    const char* part_name = outputs_are_whole ? "input" : "output";
    TORCH_CHECK(whole.numel() == part.numel() * n, "tessera: ", call, ": ", whole_name, " ", i, " has ", whole.numel(),
                " elements; it needs ", part.numel() * n, " (", n, " x ", part_name, " ", i, ")");
  }
}

void unpack(const at::Tensor& flat, const std::vector<at::Tensor>& v) {
  if (!v.empty() && flat.data_ptr() == v[0].data_ptr()) return;  // the call wrote them in place
  int64_t off = 0;
  for (const auto& t : v) {
    t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
}

// torch's element types Tessera reduces and moves, X(torch ScalarType, entry of the one list in
// tessera/dtypes.h). Bool travels as uint8 (red_op_of keeps its bytes 0 or 1).
#define TESSERA_TORCH_DTYPES(X)                                                                      \
  X(Float, kFloat32) X(Double, kFloat64) X(Half, kFloat16) X(BFloat16, kBFloat16) X(Char, kInt8)    \
  X(Byte, kUint8) X(Bool, kUint8) X(Short, kInt16) X(Int, kInt32) X(Long, kInt64)                   \
  X(ComplexFloat, kComplex64) X(ComplexDouble, kComplex128)

namespace {
// Sizes from the list, indexed by tc::DataType, to pin each row: torch's element and the entry have one size.
#define TESSERA_TORCH_BYTES(e, name, abbr, bytes, cls) bytes,
constexpr size_t kBytes[] = {TESSERA_DTYPES(TESSERA_TORCH_BYTES)};
#undef TESSERA_TORCH_BYTES
#define TESSERA_TORCH_SAME_SIZE(st, entry)                                                               \
  static_assert(sizeof(c10::impl::ScalarTypeToCPPTypeT<at::ScalarType::st>) ==                           \
                    kBytes[static_cast<int>(tc::DataType::entry)],                                       \
                "torch's " #st " and Tessera's " #entry " differ in size");
TESSERA_TORCH_DTYPES(TESSERA_TORCH_SAME_SIZE)
#undef TESSERA_TORCH_SAME_SIZE
}  // namespace

tc::DataType data_type_of(const at::Tensor& t, const char* call) {
#define TESSERA_TORCH_CASE(st, entry) \
  case at::ScalarType::st: return tc::DataType::entry;
  switch (t.scalar_type()) {
    TESSERA_TORCH_DTYPES(TESSERA_TORCH_CASE)
    default: break;
  }
#undef TESSERA_TORCH_CASE
  TORCH_CHECK(false, "tessera: ", call, ": tensors of type ", t.scalar_type(), " are not supported");
}

}  // namespace tessera_torch
