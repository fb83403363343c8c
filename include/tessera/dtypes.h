/* Tessera's element types and reduction operators: the one list every API and layer derives from.
 *
 * Each list is an X-macro: an entry per enumerator, in enumerator order, so an enum generated from it is
 * numbered as listed. The collective APIs use this numbering as is (tesseraDataType_t and tesseraRedOp_t
 * in coll.h, DataType and RedOp in coll.hpp); the kernel and MoE APIs name subsets of it with enums of
 * their own spelling and numbering (tessera/kernel.hpp, tessera/moe.hpp, tessera/moe.h), each pinned to
 * its entries where the library maps them. Appending an entry keeps every value; reordering breaks ABI.
 * Macros only (C and C++), so any header may include it.
 */
#ifndef TESSERA_DTYPES_H
#define TESSERA_DTYPES_H

/* Element types: X(enumerator, name, abbreviation, bytes, class); class 'i' integer, 'f' real floating point,
 * 'c' complex. The name is what tools print and parse ("float32"); the abbreviation is the short spelling
 * the kernel API prints ("f32") and parsers also accept. The first ten are NCCL's; int16/uint16, long double
 * and the complex types come from the OpenSHMEM reduction tables (long double is the platform's, 16 bytes
 * of storage; complex64 is two float32). */
#define TESSERA_DTYPES(X)                                                                          \
  X(kInt8, "int8", "i8", 1, 'i')                                                                   \
  X(kUint8, "uint8", "u8", 1, 'i')                                                                 \
  X(kInt32, "int32", "i32", 4, 'i')                                                                \
  X(kUint32, "uint32", "u32", 4, 'i')                                                              \
  X(kInt64, "int64", "i64", 8, 'i')                                                                \
  X(kUint64, "uint64", "u64", 8, 'i')                                                              \
  X(kFloat16, "float16", "f16", 2, 'f')                                                            \
  X(kBFloat16, "bfloat16", "bf16", 2, 'f')                                                         \
  X(kFloat32, "float32", "f32", 4, 'f')                                                            \
  X(kFloat64, "float64", "f64", 8, 'f')                                                            \
  X(kInt16, "int16", "i16", 2, 'i')                                                                \
  X(kUint16, "uint16", "u16", 2, 'i')                                                              \
  X(kLongDouble, "longdouble", "ld", 16, 'f')                                                      \
  X(kComplex64, "complex64", "c64", 8, 'c')                                                        \
  X(kComplex128, "complex128", "c128", 16, 'c')

/* Reduction operators: X(enumerator, name, tensor name). The tensor name is how tensor libraries (torch,
 * the kernel API) call the operator, "" where it is the name; parsers accept both. The bitwise operators
 * (band, bor, bxor) apply to integer types only; min and max not to complex ones. */
#define TESSERA_REDOPS(X)                                                                          \
  X(kSum, "sum", "")                                                                               \
  X(kProd, "prod", "")                                                                             \
  X(kMin, "min", "")                                                                               \
  X(kMax, "max", "")                                                                               \
  X(kAvg, "avg", "mean")                                                                           \
  X(kBand, "band", "")                                                                             \
  X(kBor, "bor", "")                                                                               \
  X(kBxor, "bxor", "")

/* Helpers to expand an entry of either list: its enumerator followed by a comma, or one more in a count
 * (`0 TESSERA_DTYPES(TESSERA_LIST_ONE)` is the number of element types). */
#define TESSERA_LIST_ENUMERATOR(e, ...) e,
#define TESSERA_LIST_ONE(...) +1

#endif /* TESSERA_DTYPES_H */
