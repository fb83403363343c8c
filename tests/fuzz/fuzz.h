// What the harnesses of tests/fuzz share: the property check and a way to take the input apart.
// A violated property traps (__builtin_trap), which libFuzzer reports as a crash with the input that did it;
// the line printed first names the property.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                                    \
    }                                                                                      \
  } while (0)

namespace tessera::fuzz {

// Reads an input front to back; past its end every read gives 0 or the empty string, so a harness can
// consume without checking sizes.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(reinterpret_cast<const char*>(data)), n_(size) {}
  bool empty() const { return pos_ >= n_; }
  uint8_t byte() { return pos_ < n_ ? static_cast<uint8_t>(p_[pos_++]) : 0; }
  // Up to n bytes.
  std::string_view bytes(size_t n) {
    if (n > n_ - pos_) n = n_ - pos_;
    std::string_view s(p_ + pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view rest() { return bytes(n_ - pos_); }

 private:
  const char* p_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace tessera::fuzz
