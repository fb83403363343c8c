#include "bootstrap/tcp_wire.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace tessera::bootstrap::tcp {

// Integers go on the wire as the host stores them, as protocol.h's header does (see tcp_wire.h).
static_assert(std::endian::native == std::endian::little, "the bootstrap wire format is little-endian");

namespace {
constexpr std::string_view kScheme = "tcp://";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

void put_u32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint32_t get_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

Mac hmac(std::string_view secret, const Nonce& first, const Nonce& second, uint32_t rank) {
  uint8_t msg[kAuthLabel.size() + 2 * kNonceBytes + 4];
  uint8_t* p = msg;
  std::memcpy(p, kAuthLabel.data(), kAuthLabel.size());  // copy-ok: handshake label
  p += kAuthLabel.size();
  std::memcpy(p, first.data(), kNonceBytes);  // copy-ok: nonce
  p += kNonceBytes;
  std::memcpy(p, second.data(), kNonceBytes);  // copy-ok: nonce
  p += kNonceBytes;
  std::memcpy(p, &rank, 4);
  Mac out{};
  unsigned int len = 0;
  // HMAC() fails only when the digest is unavailable, which libcrypto always has for SHA-256; an all-zero
  // MAC would then simply never match.
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), msg, sizeof msg, out.data(), &len))
    out.fill(0);
  return out;
}

Status bad_form(std::string_view var, std::string_view text, std::string_view why) {
  return invalid_arg("{}={:?}: {}; expected tcp://HOST:PORT (rank 0 listens there, the other ranks connect) or "
                     "the tcp://HOST:PORT/SECRET string that tessera_bootstrap_uid makes",
                     var, masked(text), why);
}
}  // namespace

std::string Address::where() const { return host + ":" + std::to_string(port); }

std::string masked(std::string_view text) {
  if (text.substr(0, kScheme.size()) != kScheme) return std::string(text);
  size_t slash = text.find('/', kScheme.size());
  if (slash == std::string_view::npos) return std::string(text);
  return std::string(text.substr(0, slash + 1)) + "<secret>";
}

Result<Address> parse_address(std::string_view var, std::string_view text) {
  if (text.substr(0, kScheme.size()) != kScheme) return bad_form(var, text, "unknown form");
  std::string_view rest = text.substr(kScheme.size());
  Address a;
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    a.secret = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
    TS_RETURN_IF_ERROR(check_secret(fmt::format("{} (the part after the port)", var), a.secret));
  }
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return bad_form(var, text, "no :PORT");
  std::string_view host = rest.substr(0, colon), port = rest.substr(colon + 1);
  if (host.empty()) return bad_form(var, text, "no HOST");
  if (host.find_first_of(":[]") != std::string_view::npos)
    return bad_form(var, text, "HOST must be an IPv4 address or a host name (IPv6 addresses are not supported)");
  if (host.size() > kMaxHostChars)
    return bad_form(var, text, fmt::format("HOST has {} characters (limit {})", host.size(), kMaxHostChars));
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos)
    return bad_form(var, text, "PORT must be a number 1..65535");
  unsigned long p = std::stoul(std::string(port));
  if (p == 0)
    return bad_form(var, text, "port 0: every rank must know the port in advance (tessera_bootstrap_uid lets the "
                               "kernel choose one and puts it in the string)");
  if (p > 65535) return bad_form(var, text, fmt::format("port {} is above 65535", p));
  a.host = std::string(host);
  a.port = static_cast<uint16_t>(p);
  return a;
}

Status check_secret(std::string_view origin, std::string_view secret) {
  // Never print the secret itself: error messages end up in job logs.
  if (secret.size() < kMinSecretChars || secret.size() > kMaxSecretChars)
    return invalid_arg("{}: the job secret has {} characters; expected {} to {} hex digits (e.g. the output of "
                       "`openssl rand -hex 32`), the same on every rank",
                       origin, secret.size(), kMinSecretChars, kMaxSecretChars);
  for (size_t i = 0; i < secret.size(); ++i)
    if (!is_hex(secret[i]))
      return invalid_arg("{}: the job secret has a character that is not a hex digit at position {}", origin, i);
  return Status::ok();
}

Nonce fresh_nonce() {
  Nonce n{};
  size_t got = 0;
  while (got < n.size()) {
    ssize_t r = getrandom(n.data() + got, n.size() - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
    else if (errno != EINTR) log::fatal("getrandom: {} (the bootstrap needs the kernel's CSPRNG)", std::strerror(errno));
  }
  return n;
}

Mac client_mac(std::string_view secret, const Nonce& server, const Nonce& client, uint32_t rank) {
  return hmac(secret, server, client, rank);
}
Mac server_mac(std::string_view secret, const Nonce& server, const Nonce& client, uint32_t rank) {
  return hmac(secret, client, server, rank);
}
bool mac_equal(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

std::vector<char> encode_auth(const Auth& a) {
  std::vector<char> out(kAuthBytes);
  put_u32(out.data(), a.rank);
  put_u32(out.data() + 4, a.size);
  std::memcpy(out.data() + 8, a.client.data(), kNonceBytes);  // copy-ok: nonce
  std::memcpy(out.data() + 8 + kNonceBytes, a.mac.data(), kMacBytes);  // copy-ok: MAC
  return out;
}

std::optional<Auth> decode_auth(const std::vector<char>& payload) {
  if (payload.size() != kAuthBytes) return std::nullopt;
  Auth a;
  a.rank = get_u32(payload.data());
  a.size = get_u32(payload.data() + 4);
  std::memcpy(a.client.data(), payload.data() + 8, kNonceBytes);  // copy-ok: nonce
  std::memcpy(a.mac.data(), payload.data() + 8 + kNonceBytes, kMacBytes);  // copy-ok: MAC
  return a;
}

Verdict judge_auth(const Frame& f, std::string_view secret, const Nonce& server, int size,
                   const std::function<const char*(uint32_t rank)>& taken_by) {
  Verdict v;
  std::optional<Auth> auth = f.type == MsgType::kAuth ? decode_auth(f.payload) : std::nullopt;
  if (!auth) {
    v.refusal = fmt::format("malformed handshake: message type {} of {} bytes where the answer to the challenge "
                            "(type {}, {} bytes) was expected",
                            static_cast<uint32_t>(f.type), f.payload.size(), static_cast<uint32_t>(MsgType::kAuth),
                            kAuthBytes);
  } else if (!mac_equal(auth->mac, client_mac(secret, server, auth->client, auth->rank))) {
    v.refusal = "wrong job secret";
  } else if (auth->size != static_cast<uint32_t>(size)) {
    v.refusal = fmt::format("rank {} says the job has {} PEs; rank 0 has TESSERA_SIZE={}", auth->rank, auth->size, size);
  } else if (auth->rank == 0 || auth->rank >= static_cast<uint32_t>(size)) {
    v.refusal = fmt::format("rank {} is outside 1..{} (TESSERA_SIZE={})", auth->rank, size - 1, size);
  } else if (const char* other = taken_by(auth->rank)) {
    v.refusal = fmt::format("rank {} has joined already, from {}", auth->rank, other);
  } else {
    v.rank = static_cast<int>(auth->rank);
    v.proof = server_mac(secret, server, auth->client, auth->rank);
  }
  return v;
}

std::vector<char> encode_abort(const AbortNote& a) {
  std::vector<char> out(8);
  put_u32(out.data(), static_cast<uint32_t>(a.pe));
  put_u32(out.data() + 4, static_cast<uint32_t>(a.code));
  return out;
}

std::optional<AbortNote> decode_abort(const std::vector<char>& payload) {
  if (payload.size() != 8) return std::nullopt;
  return AbortNote{static_cast<int32_t>(get_u32(payload.data())), static_cast<int32_t>(get_u32(payload.data() + 4))};
}

bool valid_job_id(std::string_view id) {
  if (id.size() != kJobIdChars) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void FrameReader::feed(const char* data, size_t n) {
  if (broken_) return;
  // Drop what next() consumed before growing: the buffer holds one partial frame, not the stream's history.
  if (start_ > 0) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
  buf_.insert(buf_.end(), data, data + n);
}

FrameReader::Next FrameReader::next(Frame* out, uint32_t* announced) {
  if (broken_) {
    if (announced) *announced = broken_length_;
    return Next::kTooLarge;
  }
  if (buffered() < sizeof(MsgHeader)) return Next::kMore;
  MsgHeader h;
  std::memcpy(&h, buf_.data() + start_, sizeof h);
  if (h.length > limit_) {
    broken_ = true;
    broken_length_ = h.length;
    buf_.clear();
    start_ = 0;
    if (announced) *announced = h.length;
    return Next::kTooLarge;
  }
  if (buffered() < sizeof h + h.length) return Next::kMore;
  out->type = static_cast<MsgType>(h.type);
  const char* p = buf_.data() + start_ + sizeof h;
  out->payload.assign(p, p + h.length);
  start_ += sizeof h + h.length;
  if (start_ == buf_.size()) {
    buf_.clear();
    start_ = 0;
  }
  return Next::kFrame;
}

}  // namespace tessera::bootstrap::tcp
