// The one list of element types and reduction operators (tessera/dtypes.h, base/dtype.h): every entry's name,
// abbreviation, size and class against an expectation written here independently of the list, and every name
// parsed back to its entry. A wrong or reordered entry fails.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <iterator>
#include <string>

#include "base/dtype.h"

namespace tessera {
namespace {

struct Expected {
  DType t;
  int value;  // the numbering coll.h publishes
  const char* name;
  const char* abbr;
  size_t bytes;
  char cls;
};
constexpr Expected kTypes[] = {
    {DType::kInt8, 0, "int8", "i8", sizeof(int8_t), 'i'},
    {DType::kUint8, 1, "uint8", "u8", sizeof(uint8_t), 'i'},
    {DType::kInt32, 2, "int32", "i32", sizeof(int32_t), 'i'},
    {DType::kUint32, 3, "uint32", "u32", sizeof(uint32_t), 'i'},
    {DType::kInt64, 4, "int64", "i64", sizeof(int64_t), 'i'},
    {DType::kUint64, 5, "uint64", "u64", sizeof(uint64_t), 'i'},
    {DType::kFloat16, 6, "float16", "f16", 2, 'f'},
    {DType::kBFloat16, 7, "bfloat16", "bf16", 2, 'f'},
    {DType::kFloat32, 8, "float32", "f32", sizeof(float), 'f'},
    {DType::kFloat64, 9, "float64", "f64", sizeof(double), 'f'},
    {DType::kInt16, 10, "int16", "i16", sizeof(int16_t), 'i'},
    {DType::kUint16, 11, "uint16", "u16", sizeof(uint16_t), 'i'},
    {DType::kLongDouble, 12, "longdouble", "ld", sizeof(long double), 'f'},
    {DType::kComplex64, 13, "complex64", "c64", sizeof(std::complex<float>), 'c'},
    {DType::kComplex128, 14, "complex128", "c128", sizeof(std::complex<double>), 'c'},
};

TEST(DTypeList, EveryEntryHasItsValueNameSizeAndClass) {
  ASSERT_EQ(std::size(kTypes), static_cast<size_t>(kNumDTypes));
  for (const Expected& e : kTypes) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<int>(e.t), e.value);
    EXPECT_TRUE(valid(e.t));
    EXPECT_STREQ(dtype_name(e.t), e.name);
    EXPECT_STREQ(dtype_abbr(e.t), e.abbr);
    EXPECT_EQ(dtype_size(e.t), e.bytes);
    EXPECT_EQ(is_integer(e.t), e.cls == 'i');
    EXPECT_EQ(is_complex(e.t), e.cls == 'c');
    EXPECT_EQ(is_float(e.t), e.cls != 'i');
  }
}

TEST(DTypeList, NamesParseBackToTheirEntry) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    SCOPED_TRACE(dtype_name(t));
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    EXPECT_EQ(parse_dtype(dtype_abbr(t)), t);
    std::string upper = dtype_name(t);
    for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    EXPECT_EQ(parse_dtype(upper), t);
  }
  // C's and nccl-tests' spellings.
  EXPECT_EQ(parse_dtype("float"), DType::kFloat32);
  EXPECT_EQ(parse_dtype("half"), DType::kFloat16);
  EXPECT_EQ(parse_dtype("double"), DType::kFloat64);
  EXPECT_EQ(parse_dtype("long"), DType::kInt64);
  EXPECT_EQ(parse_dtype("long_double"), DType::kLongDouble);
  EXPECT_EQ(parse_dtype("complexd"), DType::kComplex128);
  EXPECT_EQ(parse_dtype("float8"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
}

TEST(DTypeList, ValuesOutsideTheListAreNamedAsSuch) {
  const auto bad = static_cast<DType>(kNumDTypes);
  EXPECT_FALSE(valid(bad));
  EXPECT_STREQ(dtype_name(bad), "?");
  EXPECT_STREQ(dtype_abbr(bad), "?");
  EXPECT_EQ(dtype_size(bad), 0u);
  EXPECT_FALSE(valid(static_cast<ReduceOp>(kNumReduceOps)));
  EXPECT_STREQ(op_name(static_cast<ReduceOp>(kNumReduceOps)), "?");
}

struct ExpectedOp {
  ReduceOp o;
  int value;  // the numbering coll.h publishes
  const char* name;
  const char* tensor_name;
  bool integers_only;
  bool ordered;  // min/max: not on complex types
};
constexpr ExpectedOp kOps[] = {
    {ReduceOp::kSum, 0, "sum", "sum", false, false},   {ReduceOp::kProd, 1, "prod", "prod", false, false},
    {ReduceOp::kMin, 2, "min", "min", false, true},    {ReduceOp::kMax, 3, "max", "max", false, true},
    {ReduceOp::kAvg, 4, "avg", "mean", false, false},  {ReduceOp::kBand, 5, "band", "band", true, false},
    {ReduceOp::kBor, 6, "bor", "bor", true, false},    {ReduceOp::kBxor, 7, "bxor", "bxor", true, false},
};

TEST(ReduceOpList, EveryEntryHasItsValueNamesAndDomain) {
  ASSERT_EQ(std::size(kOps), static_cast<size_t>(kNumReduceOps));
  for (const ExpectedOp& e : kOps) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<int>(e.o), e.value);
    EXPECT_STREQ(op_name(e.o), e.name);
    EXPECT_STREQ(op_tensor_name(e.o), e.tensor_name);
    EXPECT_EQ(parse_op(e.name), e.o);
    EXPECT_EQ(parse_op(e.tensor_name), e.o);
    for (int i = 0; i < kNumDTypes; ++i) {
      const auto t = static_cast<DType>(i);
      const bool want = e.integers_only ? is_integer(t) : e.ordered ? !is_complex(t) : true;
      EXPECT_EQ(op_applies(t, e.o), want) << dtype_name(t);
    }
  }
  EXPECT_EQ(parse_op("MEAN"), ReduceOp::kAvg);
  EXPECT_EQ(parse_op(""), std::nullopt);
  EXPECT_EQ(parse_op("and"), std::nullopt);
}

}  // namespace
}  // namespace tessera
