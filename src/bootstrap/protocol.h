// Wire protocol between tessera-run and its PEs, over a Unix stream socket in a private (0700) directory.
//
// Every message is a header {type, length} followed by `length` payload bytes.
//   PE -> launcher  kHello      {secret (64 hex chars), rank (u32)}; the launcher closes the connection
//                               unless the secret matches the job's (constant-time comparison)
//   launcher -> PE  kWelcome    {}
//   PE -> launcher  kAllgather  {bytes}; once all PEs sent theirs (same length), every PE gets
//   launcher -> PE  kGathered   {rank-ordered concatenation}
//   client -> launcher  kHealth {secret (64 hex chars), u32: overdue limit in ms, bit 31 set for JSON}, as the
//                               first message instead of a hello (tessera-info --health); the launcher checks
//                               the secret as a hello's, answers kHealthReport {text or JSON} and closes
// Environment set by tessera-run for each PE: TESSERA_JOB_SOCKET, TESSERA_JOB_SECRET, TESSERA_JOB_RANK,
// TESSERA_JOB_SIZE, TESSERA_JOB_ID, TESSERA_JOB_CONTROL.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::bootstrap {

// 1-4: tessera-run's protocol above; kWelcome, kAllgather and kGathered serve the TCP rendezvous too, whose
// own messages (5 on) are described in tcp_wire.h.
enum class MsgType : uint32_t {
  kHello = 1,
  kWelcome = 2,
  kAllgather = 3,
  kGathered = 4,
  kChallenge = 5,
  kAuth = 6,
  kProof = 7,
  kRefused = 8,
  kAbort = 9,
  kGoodbye = 10,
  kGoodbyeAck = 11,
  kHealth = 12,
  kHealthReport = 13,
};
// kHealth's u32: the overdue limit in ms (bits 0-30) and the JSON flag.
inline constexpr uint32_t kHealthJson = 1u << 31;

struct MsgHeader {
  uint32_t type;
  uint32_t length;
};

inline constexpr size_t kSecretChars = 64;
inline constexpr uint32_t kMaxPayload = 64u << 20;
// An allgather's reply carries every PE's contribution in one message: an error naming the sizes when
// `bytes` from each of `n` PEs would exceed kMaxPayload.
Status check_allgather_bytes(const char* who, size_t bytes, size_t n);

// Blocking, EINTR-safe, with a deadline in ms (-1: none). Errors name the peer `who`.
Status send_msg(int fd, MsgType type, const void* data, size_t len);
Status recv_msg(int fd, MsgType* type, std::vector<char>* payload, int timeout_ms, const char* who);

// Random lowercase hex from the kernel's CSPRNG.
std::string random_hex(size_t chars);
// Constant-time string comparison.
bool secret_equal(const std::string& a, const std::string& b);

}  // namespace tessera::bootstrap
