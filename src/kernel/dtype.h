// The kernels' element types and reduction operators as entries of the one list (base/dtype.h, from
// tessera/dtypes.h). The public enums (tessera/kernel.hpp) keep their own spelling and numbering and are
// generated, with the entry of each enumerator, from TESSERA_KERNEL_DTYPES and TESSERA_KERNEL_REDUCE_OPS; the
// tables below come from the same lists, so an enumerator cannot lack its entry. Names and sizes are the list's.
#pragma once
#include <tessera/kernel.hpp>

#include <iterator>
#include <optional>

#include "base/dtype.h"

namespace tessera::kernel {

// Indexed by the kernel enumerator.
#define TESSERA_KERNEL_DTYPE_ENTRY(e, entry) ::tessera::DType::entry,
#define TESSERA_KERNEL_OP_ENTRY(e, entry) ::tessera::ReduceOp::entry,
inline constexpr ::tessera::DType kDTypeEntries[] = {TESSERA_KERNEL_DTYPES(TESSERA_KERNEL_DTYPE_ENTRY)};
inline constexpr ::tessera::ReduceOp kReduceOpEntries[] = {TESSERA_KERNEL_REDUCE_OPS(TESSERA_KERNEL_OP_ENTRY)};
#undef TESSERA_KERNEL_DTYPE_ENTRY
#undef TESSERA_KERNEL_OP_ENTRY
inline constexpr int kNumDTypes = static_cast<int>(std::size(kDTypeEntries));
inline constexpr int kNumReduceOps = static_cast<int>(std::size(kReduceOpEntries));

constexpr bool valid(DType t) { return static_cast<unsigned>(t) < static_cast<unsigned>(kNumDTypes); }
constexpr bool valid(ReduceOp o) { return static_cast<unsigned>(o) < static_cast<unsigned>(kNumReduceOps); }
// The list's entry of a valid kernel enumerator.
constexpr ::tessera::DType entry_of(DType t) { return kDTypeEntries[static_cast<int>(t)]; }
constexpr ::tessera::ReduceOp entry_of(ReduceOp o) { return kReduceOpEntries[static_cast<int>(o)]; }
// The kernel enumerator of a list entry, if the kernels take that type.
constexpr std::optional<DType> kernel_dtype(::tessera::DType t) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kDTypeEntries[i] == t) return static_cast<DType>(i);
  return std::nullopt;
}
// The kernel enumerator of a list operator, if the kernels take it.
constexpr std::optional<ReduceOp> kernel_op(::tessera::ReduceOp o) {
  for (int i = 0; i < kNumReduceOps; ++i)
    if (kReduceOpEntries[i] == o) return static_cast<ReduceOp>(i);
  return std::nullopt;
}

}  // namespace tessera::kernel
