// The TCP rendezvous's wire format and its pure parts: the address string, the job secret, the HMAC
// handshake and an incremental frame reader. No sockets here (tcp_socket.h), so all of it is unit-tested.
//
// Messages are framed as protocol.h frames them: {type u32, length u32} then `length` bytes. Integers are
// little-endian (the header is in host order, as protocol.h writes it: every host of a job is little-endian,
// which tcp_wire.cc asserts). Star topology: every rank talks to rank 0 only.
//
// Handshake, per connection (rank 0 is S, the connecting rank r is C, K the job secret as its hex text):
//   S -> C  kChallenge  {Ns: 32 random bytes}                               fresh for every connection
//   C -> S  kAuth       {rank u32, size u32, Nc: 32 random bytes, Mc: 32}   Mc = HMAC-SHA256(K, L|Ns|Nc|rank)
//   S -> C  kProof      {Ms: 32}                                            Ms = HMAC-SHA256(K, L|Nc|Ns|rank)
//        or kRefused    {reason: text}, then S closes the connection
//   ... once every rank has joined:
//   S -> C  kWelcome    {job id: 16 lowercase hex characters}
// L is the 20 bytes "tessera-bootstrap-v1" and rank is a u32. S checks Mc in constant time before it looks
// at anything else the message says (size, rank range, duplicates); C checks Ms the same way, so each side
// proves it knows K without sending it. Ns is new on every connection, so a recorded kAuth replayed on
// another connection fails; the reversed nonces keep S's proof from being a reflection of C's own answer.
// The handshake authenticates; it does not encrypt, and a man in the middle can relay a whole handshake
// (there is no channel binding): keep the rendezvous on a network the job trusts.
//
// After the welcome (either direction unless marked):
//   C -> S  kAllgather  {bytes}        the same length from every rank in a round; S adds its own
//   S -> C  kGathered   {rank-ordered concatenation}
//           kAbort      {pe i32, code i32}   the job ends: `pe` caused it (-1: unknown), exit with `code`
//   C -> S  kGoodbye    {}                   sent by finalize: the connection's end is not a death
//   S -> C  kGoodbyeAck {}                   the last message S sends on that connection
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bootstrap/protocol.h"

namespace tessera::bootstrap::tcp {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;  // SHA-256
inline constexpr std::string_view kAuthLabel = "tessera-bootstrap-v1";
inline constexpr size_t kAuthBytes = 8 + kNonceBytes + kMacBytes;
inline constexpr size_t kJobIdChars = 16;
inline constexpr size_t kMaxHostChars = 253;  // a DNS name's limit
// A secret is the hex text of at least 128 random bits; the upper bound only keeps the key small.
inline constexpr size_t kMinSecretChars = 32;
inline constexpr size_t kMaxSecretChars = 256;
// Before a peer has proven it knows the secret, it may send this much in one message: enough for kAuth,
// so that an unauthenticated peer cannot make rank 0 allocate more.
inline constexpr uint32_t kHandshakeLimit = 256;
// The longest kRefused reason kept (longer ones are cut).
inline constexpr size_t kMaxReason = 256;

using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

// One message as read off a connection.
struct Frame {
  MsgType type{};
  std::vector<char> payload;
};

// TESSERA_BOOTSTRAP=tcp://HOST:PORT or tcp://HOST:PORT/SECRET (the unique-id form). HOST is an IPv4
// address or a host name; PORT is 1..65535.
struct Address {
  std::string host;
  uint16_t port = 0;
  std::string secret;  // empty unless the string carried one
  std::string where() const;  // "HOST:PORT", for messages
};
// `var` names the variable in errors, which give the value and the accepted forms.
Result<Address> parse_address(std::string_view var, std::string_view text);
// A usable secret: kMinSecretChars..kMaxSecretChars hex digits. `origin` says where it came from.
Status check_secret(std::string_view origin, std::string_view secret);
// What the job's listings show for TESSERA_BOOTSTRAP: the secret part replaced by "<secret>".
std::string masked(std::string_view text);

// 32 bytes from the kernel's CSPRNG.
Nonce fresh_nonce();
// Mc and Ms of the handshake above.
Mac client_mac(std::string_view secret, const Nonce& server, const Nonce& client, uint32_t rank);
Mac server_mac(std::string_view secret, const Nonce& server, const Nonce& client, uint32_t rank);
// Constant time (CRYPTO_memcmp).
bool mac_equal(const Mac& a, const Mac& b);

struct Auth {
  uint32_t rank = 0;
  uint32_t size = 0;
  Nonce client{};
  Mac mac{};
};
std::vector<char> encode_auth(const Auth& a);
// Empty when the payload is not exactly kAuthBytes long.
std::optional<Auth> decode_auth(const std::vector<char>& payload);

// Rank 0's judgement of the answer `f` to challenge `server`, for a job of `size` PEs: the joining rank and
// the proof to send it, or the reason it is refused (sent to the peer and logged). The MAC is checked
// first, so a peer without the secret learns nothing about the job. `taken_by(rank)` gives the address of
// the connection that holds that rank already, or null.
struct Verdict {
  int rank = -1;
  Mac proof{};
  std::string refusal;  // empty when accepted
};
Verdict judge_auth(const Frame& f, std::string_view secret, const Nonce& server, int size,
                   const std::function<const char*(uint32_t rank)>& taken_by);

struct AbortNote {
  int32_t pe = -1;
  int32_t code = 1;
};
std::vector<char> encode_abort(const AbortNote& a);
std::optional<AbortNote> decode_abort(const std::vector<char>& payload);

// A job id rank 0 may send: kJobIdChars lowercase hex digits (it names shared-memory objects).
bool valid_job_id(std::string_view id);

// Cuts a byte stream into frames. Holds at most one partial frame plus what the last feed() brought; a
// header announcing more than the limit makes the stream unusable (kTooLarge, and it stays so), so a peer
// cannot make the reader allocate more than limit + header bytes for a frame.
// Not thread-safe: one reader per connection, used by one thread at a time.
class FrameReader {
 public:
  explicit FrameReader(uint32_t limit) : limit_(limit) {}
  void set_limit(uint32_t limit) { limit_ = limit; }
  uint32_t limit() const { return limit_; }
  void feed(const char* data, size_t n);
  enum class Next { kFrame, kMore, kTooLarge };
  // kTooLarge leaves the announced length in *announced.
  Next next(Frame* out, uint32_t* announced = nullptr);
  size_t buffered() const { return buf_.size() - start_; }

 private:
  uint32_t limit_;
  std::vector<char> buf_;
  size_t start_ = 0;
  bool broken_ = false;
  uint32_t broken_length_ = 0;
};

}  // namespace tessera::bootstrap::tcp
