// The public spellings of element types, reduction operators, comparisons and signal operations against the
// one list (base/dtype.h) and shmem.h, entry by entry, at run time: coll.h and coll.hpp (the list's
// numbering), the kernel and MoE subsets (their own numbering, mapped through TESSERA_KERNEL_* and
// TESSERA_MOE_DTYPES), and pgas::Cmp / transport::SignalOp. The expectations are written here, not taken from
// the list, so a wrong entry in either fails.
#include <gtest/gtest.h>
#include <shmem.h>
#include <tessera/coll.h>
#include <tessera/coll.hpp>
#include <tessera/kernel.hpp>
#include <tessera/moe.h>
#include <tessera/moe.hpp>

#include <complex>
#include <cstdint>
#include <iterator>
#include <string>

#include "base/dtype.h"
#include "kernel/dtype.h"
#include "pgas/p2p.h"

namespace tessera {
namespace {

namespace tc = tessera::coll;

struct CollType {
  tesseraDataType_t c;
  tc::DataType cpp;
  const char* name;
  size_t bytes;
};
constexpr CollType kCollTypes[] = {
    {tesseraInt8, tc::DataType::kInt8, "int8", 1},
    {tesseraUint8, tc::DataType::kUint8, "uint8", 1},
    {tesseraInt32, tc::DataType::kInt32, "int32", 4},
    {tesseraUint32, tc::DataType::kUint32, "uint32", 4},
    {tesseraInt64, tc::DataType::kInt64, "int64", 8},
    {tesseraUint64, tc::DataType::kUint64, "uint64", 8},
    {tesseraFloat16, tc::DataType::kFloat16, "float16", 2},
    {tesseraBfloat16, tc::DataType::kBFloat16, "bfloat16", 2},
    {tesseraFloat32, tc::DataType::kFloat32, "float32", 4},
    {tesseraFloat64, tc::DataType::kFloat64, "float64", 8},
    {tesseraInt16, tc::DataType::kInt16, "int16", 2},
    {tesseraUint16, tc::DataType::kUint16, "uint16", 2},
    {tesseraLongDouble, tc::DataType::kLongDouble, "longdouble", sizeof(long double)},
    {tesseraComplex64, tc::DataType::kComplex64, "complex64", 8},
    {tesseraComplex128, tc::DataType::kComplex128, "complex128", 16},
};

TEST(PublicTypes, CollDataTypesAreTheListsEntries) {
  ASSERT_EQ(std::size(kCollTypes), static_cast<size_t>(kNumDTypes));
  EXPECT_EQ(static_cast<int>(tesseraNumTypes), kNumDTypes);
  for (const CollType& e : kCollTypes) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<int>(e.c), static_cast<int>(e.cpp));
    const auto t = static_cast<DType>(e.c);
    EXPECT_STREQ(dtype_name(t), e.name);
    EXPECT_EQ(dtype_size(t), e.bytes);
    EXPECT_EQ(parse_dtype(e.name), t);  // and back
  }
}

template <typename T>
void expect_data_type_of(const char* name) {
  SCOPED_TRACE(name);
  const auto t = static_cast<DType>(tc::DataTypeOf<T>::value);
  EXPECT_STREQ(dtype_name(t), name);
  EXPECT_EQ(dtype_size(t), sizeof(T));
}

TEST(PublicTypes, DataTypeOfNamesTheEntryOfTheCxxType) {
  expect_data_type_of<int8_t>("int8");
  expect_data_type_of<uint8_t>("uint8");
  expect_data_type_of<int16_t>("int16");
  expect_data_type_of<uint16_t>("uint16");
  expect_data_type_of<int32_t>("int32");
  expect_data_type_of<uint32_t>("uint32");
  expect_data_type_of<int64_t>("int64");
  expect_data_type_of<uint64_t>("uint64");
  expect_data_type_of<tc::half_t>("float16");
  expect_data_type_of<tc::bfloat16_t>("bfloat16");
  expect_data_type_of<float>("float32");
  expect_data_type_of<double>("float64");
  expect_data_type_of<long double>("longdouble");
  expect_data_type_of<std::complex<float>>("complex64");
  expect_data_type_of<std::complex<double>>("complex128");
}

struct CollOp {
  tesseraRedOp_t c;
  tc::RedOp cpp;
  const char* name;
};
constexpr CollOp kCollOps[] = {
    {tesseraSum, tc::RedOp::kSum, "sum"},    {tesseraProd, tc::RedOp::kProd, "prod"}, {tesseraMin, tc::RedOp::kMin, "min"},
    {tesseraMax, tc::RedOp::kMax, "max"},    {tesseraAvg, tc::RedOp::kAvg, "avg"},    {tesseraBand, tc::RedOp::kBand, "band"},
    {tesseraBor, tc::RedOp::kBor, "bor"},    {tesseraBxor, tc::RedOp::kBxor, "bxor"},
};

TEST(PublicTypes, CollRedOpsAreTheListsEntries) {
  ASSERT_EQ(std::size(kCollOps), static_cast<size_t>(kNumReduceOps));
  EXPECT_EQ(static_cast<int>(tesseraNumOps), kNumReduceOps);
  for (const CollOp& e : kCollOps) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<int>(e.c), static_cast<int>(e.cpp));
    const auto o = static_cast<ReduceOp>(e.c);
    EXPECT_STREQ(op_name(o), e.name);
    EXPECT_EQ(parse_op(e.name), o);
  }
}

struct KernelType {
  kernel::DType t;
  int value;
  const char* name;  // the kernel API's
  const char* entry;  // the list's
  size_t bytes;
};
constexpr KernelType kKernelTypes[] = {
    {kernel::DType::kF32, 0, "f32", "float32", 4},
    {kernel::DType::kF16, 1, "f16", "float16", 2},
    {kernel::DType::kBF16, 2, "bf16", "bfloat16", 2},
};

TEST(PublicTypes, KernelDTypesMapToTheirEntries) {
  ASSERT_EQ(std::size(kKernelTypes), static_cast<size_t>(kernel::kNumDTypes));
  for (const KernelType& e : kKernelTypes) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<int>(e.t), e.value);
    EXPECT_STREQ(kernel::dtype_name(e.t), e.name);
    EXPECT_EQ(kernel::dtype_size(e.t), e.bytes);
    EXPECT_STREQ(dtype_name(kernel::entry_of(e.t)), e.entry);
    EXPECT_EQ(kernel::kernel_dtype(kernel::entry_of(e.t)), e.t);  // and back
  }
  const auto bad = static_cast<kernel::DType>(kernel::kNumDTypes);
  EXPECT_STREQ(kernel::dtype_name(bad), "?");
  EXPECT_EQ(kernel::dtype_size(bad), 0u);
  EXPECT_EQ(kernel::kernel_dtype(DType::kInt32), std::nullopt);
}

struct KernelOp {
  kernel::ReduceOp o;
  int value;
  const char* name;   // the kernel API's
  const char* entry;  // the list's
};
constexpr KernelOp kKernelOps[] = {
    {kernel::ReduceOp::kSum, 0, "sum", "sum"}, {kernel::ReduceOp::kMean, 1, "mean", "avg"},
    {kernel::ReduceOp::kMax, 2, "max", "max"}, {kernel::ReduceOp::kMin, 3, "min", "min"},
    {kernel::ReduceOp::kProd, 4, "prod", "prod"},
};

TEST(PublicTypes, KernelReduceOpsMapToTheirEntries) {
  ASSERT_EQ(std::size(kKernelOps), static_cast<size_t>(kernel::kNumReduceOps));
  for (const KernelOp& e : kKernelOps) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<int>(e.o), e.value);
    EXPECT_STREQ(kernel::reduce_op_name(e.o), e.name);
    EXPECT_STREQ(op_name(kernel::entry_of(e.o)), e.entry);
    EXPECT_EQ(parse_op(e.name), kernel::entry_of(e.o));  // the kernel's name parses to the same entry
  }
  EXPECT_STREQ(kernel::reduce_op_name(static_cast<kernel::ReduceOp>(kernel::kNumReduceOps)), "?");
}

struct MoeType {
  tessera_moe_dtype_t c;
  moe::DType cpp;
  const char* entry;
  size_t bytes;
};
constexpr MoeType kMoeTypes[] = {
    {TESSERA_MOE_F32, moe::DType::kFloat32, "float32", 4},
    {TESSERA_MOE_BF16, moe::DType::kBFloat16, "bfloat16", 2},
};

TEST(PublicTypes, MoeDTypesMapToTheirEntries) {
  // moe::DType's entries, from the macro tessera/moe.hpp generates the enum with (indexed by moe::DType).
#define ENTRY(e, entry) DType::entry,
  constexpr DType kEntries[] = {TESSERA_MOE_DTYPES(ENTRY)};
#undef ENTRY
  ASSERT_EQ(std::size(kMoeTypes), std::size(kEntries));
  for (const MoeType& e : kMoeTypes) {
    SCOPED_TRACE(e.entry);
    EXPECT_EQ(static_cast<int>(e.c), static_cast<int>(e.cpp));
    const DType t = kEntries[static_cast<int>(e.cpp)];
    EXPECT_STREQ(dtype_name(t), e.entry);
    EXPECT_EQ(dtype_size(t), e.bytes);
    EXPECT_TRUE(kernel::kernel_dtype(t).has_value());  // combine sums on the kernels' primitives
  }
}

TEST(PublicTypes, ComparisonsAndSignalOpsAreShmemHs) {
  struct Row {
    int pgas, shmem;
    const char* name;
  };
  const Row cmps[] = {{pgas::kEq, SHMEM_CMP_EQ, "=="}, {pgas::kNe, SHMEM_CMP_NE, "!="}, {pgas::kGt, SHMEM_CMP_GT, ">"},
                      {pgas::kGe, SHMEM_CMP_GE, ">="}, {pgas::kLt, SHMEM_CMP_LT, "<"},  {pgas::kLe, SHMEM_CMP_LE, "<="}};
  for (const Row& r : cmps) {
    EXPECT_EQ(r.pgas, r.shmem) << r.name;
    EXPECT_STREQ(pgas::cmp_name(r.shmem), r.name);
  }
  EXPECT_TRUE(pgas::compare(1, SHMEM_CMP_LT, 2));
  EXPECT_FALSE(pgas::compare(2, SHMEM_CMP_LE, 1));
  EXPECT_EQ(static_cast<int>(transport::kSignalSet), SHMEM_SIGNAL_SET);
  EXPECT_EQ(static_cast<int>(transport::kSignalAdd), SHMEM_SIGNAL_ADD);
}

}  // namespace
}  // namespace tessera
