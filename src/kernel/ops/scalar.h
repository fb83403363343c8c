// Scalar conversions between f32 and the 16-bit storage types (internal; the public ones in kernel.hpp
// call these): the shared ones of base/half.h.
#pragma once
#include "base/half.h"

namespace tessera::kernel::ops {

using tessera::bf16_bits_to_f32;
using tessera::f16_bits_to_f32;
using tessera::f32_to_bf16_bits;
using tessera::f32_to_f16_bits;

}  // namespace tessera::kernel::ops
