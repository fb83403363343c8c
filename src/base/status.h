// Status and Result<T>: how internal code reports errors.
//
// The place that detects an error writes the message, naming the value and the limit
// ("put to PE 7: team has 4 PEs"). Callers propagate with TS_RETURN_IF_ERROR / TS_ASSIGN_OR_RETURN;
// the C API turns a Status into a return code or a fatal message, the C++ API throws tessera::Error.
#pragma once
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace tessera {

enum class Code : int {
  kOk = 0,
  kInvalidArgument,   // a value outside its limit (PE, address, count, environment value)
  kOutOfMemory,       // symmetric heap or system memory exhausted
  kTimeout,           // a deadline expired
  kAborted,           // the job is ending because another PE failed
  kSystem,            // a system call failed (errno in the message)
  kUnsupported,
  kInternal,
  kPeerFailed,        // resilient mode: a PE the call depends on failed (the message names it)
  kRevoked,           // resilient mode: the communicator was revoked (docs/resilience.md)
};

const char* code_name(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }
  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename... Args>
Status make_status(Code code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status invalid_arg(fmt::format_string<Args...> f, Args&&... args) {
  return Status(Code::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
// A failed system call: appends strerror(errno).
Status sys_error(const std::string& what);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}   // NOLINT
  bool is_ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  Status status() const { return is_ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tessera

#define TS_CONCAT_INNER(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_INNER(a, b)

#define TS_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::tessera::Status _ts_st = (expr);      \
    if (!_ts_st.is_ok()) return _ts_st;     \
  } while (0)

#define TS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.is_ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define TS_ASSIGN_OR_RETURN(lhs, expr) TS_ASSIGN_OR_RETURN_IMPL(TS_CONCAT(_ts_r_, __LINE__), lhs, expr)
