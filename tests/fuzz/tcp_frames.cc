// Every message the TCP rendezvous reads from a socket (bootstrap/tcp_wire.h): the byte stream cut into
// frames by FrameReader, fed in pieces as recv() would bring them, then each frame read as its type says:
// rank 0's judgement of a handshake answer (kAuth), abort notes (kAbort), the welcome's job id (kWelcome).
// Input: byte 0 picks the reader's limit and the job's size, byte 1 says whether kAuth answers get a correct
// MAC (so that the checks after it are reached); then pieces {length byte, bytes}.
// Properties: frames are exactly the stream's bytes in order, none longer than the limit; an oversized
// header breaks the reader for good and it then holds nothing; decoders round-trip through the encoders; a
// verdict accepts a rank in 1..size-1 not taken, with the proof a client expects, or refuses with a reason.
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/tcp_wire.h"
#include "fuzz.h"

namespace bs = tessera::bootstrap;
namespace tcp = tessera::bootstrap::tcp;

namespace {
const std::string kSecret(64, 'a');
constexpr uint32_t kLimits[] = {0, 8, tcp::kHandshakeLimit, 4096, bs::kMaxPayload};

void check_frame(const tcp::Frame& f, bool fix_mac, int job_size, uint8_t taken_mask) {
  switch (f.type) {
    case bs::MsgType::kAuth: {
      tcp::Frame g = f;
      tcp::Nonce server{};
      server.fill(7);
      if (auto a = tcp::decode_auth(f.payload)) {
        FUZZ_CHECK(tcp::encode_auth(*a) == f.payload);
        if (fix_mac) {
          a->mac = tcp::client_mac(kSecret, server, a->client, a->rank);
          g.payload = tcp::encode_auth(*a);
        }
      } else {
        FUZZ_CHECK(f.payload.size() != tcp::kAuthBytes);
      }
      const tcp::Verdict v = tcp::judge_auth(g, kSecret, server, job_size, [&](uint32_t rank) -> const char* {
        FUZZ_CHECK(rank >= 1 && rank < static_cast<uint32_t>(job_size));  // asked only of ranks in range
        return rank < 8 && (taken_mask >> rank & 1) ? "10.0.0.1:4242" : nullptr;
      });
      FUZZ_CHECK(v.refusal.empty() == (v.rank >= 0));
      if (v.rank >= 0) {
        FUZZ_CHECK(v.rank >= 1 && v.rank < job_size);
        const auto a = tcp::decode_auth(g.payload);
        FUZZ_CHECK(a && static_cast<int>(a->rank) == v.rank && a->size == static_cast<uint32_t>(job_size));
        FUZZ_CHECK(tcp::mac_equal(v.proof, tcp::server_mac(kSecret, server, a->client, a->rank)));
      }
      break;
    }
    case bs::MsgType::kAbort: {
      auto a = tcp::decode_abort(f.payload);
      FUZZ_CHECK(a.has_value() == (f.payload.size() == 8));
      if (a) FUZZ_CHECK(tcp::encode_abort(*a) == f.payload);
      break;
    }
    case bs::MsgType::kWelcome: {
      const std::string_view id(f.payload.data(), f.payload.size());
      if (tcp::valid_job_id(id)) {
        FUZZ_CHECK(id.size() == tcp::kJobIdChars);
        for (char c : id) FUZZ_CHECK((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
      }
      break;
    }
    default: break;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::Input in(data, size);
  const uint8_t setup = in.byte();
  const uint32_t limit = kLimits[setup % 5];
  const int job_size = 1 + (setup / 5) % 9;
  const uint8_t flags = in.byte();
  const bool fix_mac = flags & 1;
  const uint8_t taken_mask = flags >> 1;
  tcp::FrameReader reader(limit);
  std::string fed, framed;  // the stream so far, and the frames read from it re-encoded
  bool broken = false;
  while (!in.empty()) {
    const std::string_view piece = in.bytes(in.byte());
    reader.feed(piece.data(), piece.size());
    fed += piece;
    for (;;) {
      tcp::Frame f;
      uint32_t announced = 0;
      const tcp::FrameReader::Next next = reader.next(&f, &announced);
      if (next == tcp::FrameReader::Next::kMore) {
        FUZZ_CHECK(!broken);
        break;
      }
      if (next == tcp::FrameReader::Next::kTooLarge) {
        FUZZ_CHECK(announced > limit && reader.buffered() == 0);
        broken = true;
        break;
      }
      FUZZ_CHECK(!broken && f.payload.size() <= limit);
      const bs::MsgHeader h{static_cast<uint32_t>(f.type), static_cast<uint32_t>(f.payload.size())};
      framed.append(reinterpret_cast<const char*>(&h), sizeof h);
      framed.append(f.payload.data(), f.payload.size());
      check_frame(f, fix_mac, job_size, taken_mask);
    }
    if (!broken) {
      FUZZ_CHECK(framed.size() + reader.buffered() == fed.size());
      FUZZ_CHECK(fed.compare(0, framed.size(), framed) == 0);
    }
  }
  return 0;
}
