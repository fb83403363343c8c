/* Type tables of the OpenSHMEM 1.5 specification, as X-macros: X(TYPE, TYPENAME).
 * shmem.h declares every typed routine from these lists and the library defines them from the same lists,
 * so a declaration and its definition cannot drift apart. */
#ifndef TESSERA_SHMEM_TYPES_H
#define TESSERA_SHMEM_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Table 5: standard RMA types (also the broadcast/collect/alltoall types). */
#define TESSERA_RMA_TYPES(X)                                                                           \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char) X(signed char, schar)     \
  X(short, short) X(int, int) X(long, long) X(long long, longlong) X(unsigned char, uchar)            \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)                             \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)                \
  X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)     \
  X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Sized RMA: X(BITS, BYTES). */
#define TESSERA_SIZED_RMA(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

/* Table 6: standard AMO types (compare_swap, fetch_inc, inc, fetch_add, add). */
#define TESSERA_AMO_STD_TYPES(X)                                                                       \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong)      \
  X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)            \
  X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Extended AMO types (fetch, set, swap): the standard ones plus float and double. */
#define TESSERA_AMO_EXT_TYPES(X) TESSERA_AMO_STD_TYPES(X) X(float, float) X(double, double)

/* Table 7: bitwise AMO types (and, or, xor). */
#define TESSERA_AMO_BIT_TYPES(X)                                                                       \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)    \
  X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

/* Table 10: point-to-point synchronisation types. */
#define TESSERA_P2P_TYPES(X)                                                                           \
  X(short, short) X(int, int) X(long, long) X(long long, longlong) X(unsigned short, ushort)          \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)    \
  X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Reduction types: and/or/xor (bitwise), max/min (ordered), sum/prod (arithmetic). */
#define TESSERA_REDUCE_BIT_TYPES(X)                                                                    \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)     \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)                \
  X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)     \
  X(size_t, size)
#define TESSERA_REDUCE_MINMAX_TYPES(X)                                                                 \
  X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)                       \
  X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar) X(unsigned short, ushort)      \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)      \
  X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)         \
  X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float) X(double, double)           \
  X(long double, longdouble)
#define TESSERA_REDUCE_ARITH_TYPES(X) TESSERA_REDUCE_MINMAX_TYPES(X)

#endif
