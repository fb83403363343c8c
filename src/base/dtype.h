// Element types and reduction operators as the layers use them: the enums of the one list
// (tessera/dtypes.h) with each entry's name, size and class. Pure data: no runtime state.
//
// These enums carry the list's numbering, which the collective APIs share (coll.h, coll.hpp: a conversion is
// a cast checked by range). The kernel and MoE APIs keep enums of their own spelling; kernel/dtype.h and
// moe/moe.cc map them to these entries, and capi pins the C enums (static_asserts where it converts).
#pragma once
#include <tessera/dtypes.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class DType : uint8_t { TESSERA_DTYPES(TESSERA_LIST_ENUMERATOR) };
inline constexpr int kNumDTypes = 0 TESSERA_DTYPES(TESSERA_LIST_ONE);
enum class ReduceOp : uint8_t { TESSERA_REDOPS(TESSERA_LIST_ENUMERATOR) };
inline constexpr int kNumReduceOps = 0 TESSERA_REDOPS(TESSERA_LIST_ONE);

constexpr bool valid(DType t) { return static_cast<unsigned>(t) < kNumDTypes; }
constexpr bool valid(ReduceOp o) { return static_cast<unsigned>(o) < kNumReduceOps; }

// Bytes per element; 0 for an invalid type. Inline: every collective call asks it several times. The tables
// are at namespace scope: as a local array of a constexpr function, GCC built it on the stack on every call.
#define TESSERA_DTYPE_SIZE(e, name, abbr, bytes, cls) bytes,
#define TESSERA_DTYPE_CLASS(e, name, abbr, bytes, cls) cls,
inline constexpr uint8_t kDTypeSizes[] = {TESSERA_DTYPES(TESSERA_DTYPE_SIZE)};
inline constexpr char kDTypeClasses[] = {TESSERA_DTYPES(TESSERA_DTYPE_CLASS)};
#undef TESSERA_DTYPE_SIZE
#undef TESSERA_DTYPE_CLASS
constexpr size_t dtype_size(DType t) { return valid(t) ? kDTypeSizes[static_cast<int>(t)] : 0; }
constexpr bool is_integer(DType t) { return valid(t) && kDTypeClasses[static_cast<int>(t)] == 'i'; }
constexpr bool is_complex(DType t) { return valid(t) && kDTypeClasses[static_cast<int>(t)] == 'c'; }
constexpr bool is_float(DType t) { return valid(t) && kDTypeClasses[static_cast<int>(t)] != 'i'; }  // real or complex
// Whether `o` is defined on `t`: bitwise operators on integers, min/max on every type but complex.
constexpr bool op_applies(DType t, ReduceOp o) {
  if (o == ReduceOp::kBand || o == ReduceOp::kBor || o == ReduceOp::kBxor) return is_integer(t);
  if (o == ReduceOp::kMin || o == ReduceOp::kMax) return !is_complex(t);
  return true;
}

// Names from the list; "?" for a value outside it.
const char* dtype_name(DType t);     // "float32", ...
const char* dtype_abbr(DType t);     // "f32", ...
const char* op_name(ReduceOp o);     // "sum", ...
const char* op_tensor_name(ReduceOp o);  // "mean" for avg; otherwise the name
// Case-insensitive. parse_dtype takes the name, the abbreviation and the C and nccl-tests spellings (float,
// half, double, long ...); parse_op takes the name and the tensor name.
std::optional<DType> parse_dtype(std::string_view s);
std::optional<ReduceOp> parse_op(std::string_view s);

}  // namespace tessera
