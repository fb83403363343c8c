// The checks on headers from peers on other hosts (transport/ucx/wire.h), against arithmetic that cannot
// wrap (128 bits). Properties: a put, get or atomic passes exactly when every byte it touches (data and signal
// word) lies inside one of this PE's two segments, its length matches, its operator is known and its words are
// aligned; whatever the fields, the checks never overflow (UBSan) and name what failed.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "fuzz.h"
#include "transport/ucx/wire.h"

namespace ucx = tessera::transport::ucx;
using u128 = unsigned __int128;

namespace {
uint64_t u64(tessera::fuzz::Input& in) {
  uint64_t v = 0;
  const std::string_view b = in.bytes(8);
  std::memcpy(&v, b.data(), b.size());
  return v;
}
// Small sizes most of the time, so that the edges of small segments are reached, and any 64-bit value too.
uint64_t size_like(tessera::fuzz::Input& in) {
  const uint8_t how = in.byte();
  return how < 200 ? how : u64(in);
}
bool inside(uint64_t off, uint64_t bytes, uint64_t heap, uint64_t data) {
  const u128 end = static_cast<u128>(off) + bytes;
  return (off < heap && end <= heap) || (off >= heap && end <= static_cast<u128>(heap) + data);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::Input in(data, size);
  const ucx::Segments s{size_like(in), size_like(in)};
  const uint64_t off = size_like(in), bytes = size_like(in);
  const uint64_t length = in.byte() < 128 ? bytes : size_like(in);
  const auto sig_op = static_cast<int32_t>(static_cast<int8_t>(in.byte()) % 4);
  const uint64_t sig_off = size_like(in);
  const std::string put = ucx::put_error(off, bytes, length, sig_op, sig_off, s);
  const bool put_ok = length == bytes && inside(off, bytes, s.heap_bytes, s.data_bytes) && sig_op >= -1 &&
                      sig_op <= 1 && (sig_op < 0 || (sig_off % 8 == 0 && inside(sig_off, 8, s.heap_bytes, s.data_bytes)));
  FUZZ_CHECK(put.empty() == put_ok);
  FUZZ_CHECK(put_ok || put.find("put") != std::string::npos);

  FUZZ_CHECK(ucx::get_error(off, bytes, s).empty() == inside(off, bytes, s.heap_bytes, s.data_bytes));

  const auto word = static_cast<int32_t>(in.byte() % 10);
  const auto op = static_cast<int32_t>(static_cast<int8_t>(in.byte()) % 10);
  const std::string at = ucx::atomic_error(off, word, op, 7, s);
  const bool at_ok = (word == 4 || word == 8) && op >= 0 && op <= 7 && off % static_cast<uint64_t>(word) == 0 &&
                     inside(off, static_cast<uint64_t>(word), s.heap_bytes, s.data_bytes);
  FUZZ_CHECK(at.empty() == at_ok);

  // A batch of puts built from the rest of the input: entries as the fuzzer gives them (any lengths, so that
  // entries that overrun, end short or leave bytes over are reached), checked against a walk in 128 bits.
  const auto puts = static_cast<uint64_t>(in.byte() % 6);
  alignas(8) uint8_t batch[512] = {};
  const size_t length_b = std::min<size_t>(in.byte() * 2u, sizeof batch);
  for (size_t i = 0; i + 8 <= length_b; i += 8) {
    const uint64_t v = in.byte() < 128 ? size_like(in) : u64(in);
    std::memcpy(batch + i, &v, 8);
  }
  bool batch_ok = true;
  u128 pos = 0;
  for (uint64_t i = 0; i < puts && batch_ok; ++i) {
    if (pos + 16 > length_b) {
      batch_ok = false;
      break;
    }
    uint64_t e_off, e_bytes;
    std::memcpy(&e_off, batch + static_cast<size_t>(pos), 8);
    std::memcpy(&e_bytes, batch + static_cast<size_t>(pos) + 8, 8);
    pos += 16;
    const u128 padded = (static_cast<u128>(e_bytes) + 7) / 8 * 8;
    if (pos + padded > length_b || !inside(e_off, e_bytes, s.heap_bytes, s.data_bytes)) batch_ok = false;
    pos += padded;
  }
  batch_ok = batch_ok && pos == length_b;
  const std::string be = ucx::batch_error(reinterpret_cast<const char*>(batch), length_b, puts, s);
  FUZZ_CHECK(be.empty() == batch_ok);
  FUZZ_CHECK(batch_ok || be.find("batch") != std::string::npos);
  return 0;
}
