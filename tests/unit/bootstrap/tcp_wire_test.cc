#include "bootstrap/tcp_wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace tessera::bootstrap::tcp {
namespace {

bool has(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

const std::string kSecret64(64, 'a');

TEST(ParseAddress, Forms) {
  auto a = parse_address("V", "tcp://127.0.0.1:5555");
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a.value().host, "127.0.0.1");
  EXPECT_EQ(a.value().port, 5555);
  EXPECT_TRUE(a.value().secret.empty());
  EXPECT_EQ(a.value().where(), "127.0.0.1:5555");

  auto n = parse_address("V", "tcp://node-17.cluster:65535");
  ASSERT_TRUE(n.is_ok()) << n.status().message();
  EXPECT_EQ(n.value().host, "node-17.cluster");
  EXPECT_EQ(n.value().port, 65535);

  auto u = parse_address("V", "tcp://10.0.0.1:40000/" + kSecret64);
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u.value().secret, kSecret64);
  EXPECT_EQ(u.value().port, 40000);
}

TEST(ParseAddress, ErrorsNameTheValueAndTheForms) {
  for (const char* bad : {"pmix", "tcp:/1.2.3.4:5", "udp://1.2.3.4:5", "tcp://1.2.3.4", "tcp://:5", "tcp://h:",
                          "tcp://h:x1", "tcp://h:123456", "tcp://h:70000", "tcp://[::1]:5", "tcp://::1:5"}) {
    auto r = parse_address("TESSERA_BOOTSTRAP", bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_TRUE(has(r.status(), "TESSERA_BOOTSTRAP")) << r.status().message();
    EXPECT_TRUE(has(r.status(), bad)) << r.status().message();
    EXPECT_TRUE(has(r.status(), "tcp://HOST:PORT")) << r.status().message();
  }
  auto zero = parse_address("TESSERA_BOOTSTRAP", "tcp://127.0.0.1:0");
  ASSERT_FALSE(zero.is_ok());
  EXPECT_TRUE(has(zero.status(), "port 0")) << zero.status().message();
  auto big = parse_address("V", "tcp://h:70000");
  EXPECT_TRUE(has(big.status(), "above 65535")) << big.status().message();
  auto longhost = parse_address("V", "tcp://" + std::string(254, 'h') + ":5");
  EXPECT_TRUE(has(longhost.status(), "254 characters (limit 253)")) << longhost.status().message();
}

TEST(ParseAddress, ABadSecretInTheIdIsRefusedWithoutShowingIt) {
  const std::string short_secret(31, 'b');
  auto r = parse_address("TESSERA_BOOTSTRAP", "tcp://h:5/" + short_secret);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(has(r.status(), "31 characters")) << r.status().message();
  EXPECT_FALSE(has(r.status(), short_secret)) << r.status().message();
  std::string nonhex = kSecret64;
  nonhex[40] = 'g';
  auto h = parse_address("V", "tcp://h:5/" + nonhex);
  ASSERT_FALSE(h.is_ok());
  EXPECT_TRUE(has(h.status(), "position 40")) << h.status().message();
  // Errors about the rest of a uid string mask the secret.
  auto p = parse_address("V", "tcp://h:0/" + kSecret64);
  ASSERT_FALSE(p.is_ok());
  EXPECT_FALSE(has(p.status(), kSecret64)) << p.status().message();
  EXPECT_TRUE(has(p.status(), "tcp://h:0/<secret>")) << p.status().message();
}

TEST(Secret, Limits) {
  EXPECT_FALSE(check_secret("S", std::string(kMinSecretChars - 1, 'a')).is_ok());
  EXPECT_TRUE(check_secret("S", std::string(kMinSecretChars, 'a')).is_ok());
  EXPECT_TRUE(check_secret("S", "0123456789abcdefABCDEF0123456789").is_ok());
  EXPECT_TRUE(check_secret("S", std::string(kMaxSecretChars, 'f')).is_ok());
  Status st = check_secret("TESSERA_JOB_SECRET", std::string(kMaxSecretChars + 1, 'f'));
  ASSERT_FALSE(st.is_ok());
  EXPECT_TRUE(has(st, "TESSERA_JOB_SECRET")) << st.message();
  EXPECT_TRUE(has(st, "257 characters; expected 32 to 256 hex digits")) << st.message();
  EXPECT_FALSE(check_secret("S", std::string(40, 'z')).is_ok());
}

TEST(Masked, HidesOnlyTheSecret) {
  EXPECT_EQ(masked("tcp://h:5/" + kSecret64), "tcp://h:5/<secret>");
  EXPECT_EQ(masked("tcp://h:5"), "tcp://h:5");
  EXPECT_EQ(masked("pmix"), "pmix");
}

Nonce counting(uint8_t from) {
  Nonce n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(from + i);
  return n;
}
std::string hex(const Mac& m) {
  std::string s;
  for (uint8_t b : m) s += fmt::format("{:02x}", b);
  return s;
}

// Expected values from an independent implementation (Python's hmac module):
//   hmac.new(K, b"tessera-bootstrap-v1" + Ns + Nc + struct.pack("<I", 3), hashlib.sha256), and Nc, Ns swapped.
TEST(Handshake, MacsMatchAnIndependentHmacSha256) {
  const std::string key = "00112233445566778899aabbccddeeff";
  const Nonce ns = counting(0), nc = counting(32);
  EXPECT_EQ(hex(client_mac(key, ns, nc, 3)), "ac159a6eab585830f61fe27748a73754b844e5a6e5ce8c5b3306216f5b0cc8d2");
  EXPECT_EQ(hex(server_mac(key, ns, nc, 3)), "e288f42f2de471913e95f4e14cf09cad0ba7c58f58830de2a61cc3e08d58df8b");
}

TEST(Handshake, EveryInputChangesTheMac) {
  const std::string key(64, 'c');
  const Nonce ns = fresh_nonce(), nc = fresh_nonce();
  const Mac base = client_mac(key, ns, nc, 1);
  EXPECT_TRUE(mac_equal(base, client_mac(key, ns, nc, 1)));
  EXPECT_FALSE(mac_equal(base, client_mac(key, ns, nc, 2)));                     // another rank
  EXPECT_FALSE(mac_equal(base, client_mac(key, fresh_nonce(), nc, 1)));          // another connection
  EXPECT_FALSE(mac_equal(base, client_mac(key, ns, fresh_nonce(), 1)));
  EXPECT_FALSE(mac_equal(base, client_mac(std::string(64, 'd'), ns, nc, 1)));    // another secret
  EXPECT_FALSE(mac_equal(base, server_mac(key, ns, nc, 1)));                     // no reflection
  // With equal nonces the two directions coincide, which is why each side draws its own.
  EXPECT_TRUE(mac_equal(client_mac(key, ns, ns, 1), server_mac(key, ns, ns, 1)));
}

TEST(Handshake, NoncesAreFresh) {
  Nonce a = fresh_nonce(), b = fresh_nonce();
  EXPECT_NE(a, b);
  EXPECT_NE(a, Nonce{});
}

TEST(Messages, AuthRoundTrip) {
  Auth a;
  a.rank = 7;
  a.size = 1000;
  a.client = counting(5);
  a.mac = counting(100);
  std::vector<char> bytes = encode_auth(a);
  ASSERT_EQ(bytes.size(), kAuthBytes);
  uint32_t rank;
  std::memcpy(&rank, bytes.data(), 4);
  EXPECT_EQ(rank, 7u);  // little-endian u32 first
  auto d = decode_auth(bytes);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rank, 7u);
  EXPECT_EQ(d->size, 1000u);
  EXPECT_EQ(d->client, a.client);
  EXPECT_EQ(d->mac, a.mac);
  bytes.push_back(0);
  EXPECT_FALSE(decode_auth(bytes).has_value());
  bytes.resize(kAuthBytes - 1);
  EXPECT_FALSE(decode_auth(bytes).has_value());
  EXPECT_FALSE(decode_auth({}).has_value());
}

TEST(JudgeAuth, AcceptsTheRightAnswerAndRefusesEveryWrongOne) {
  const std::string key(64, 'e');
  const Nonce server = fresh_nonce();
  auto answer = [&](uint32_t rank, uint32_t size, const std::string& secret) {
    Auth a;
    a.rank = rank;
    a.size = size;
    a.client = fresh_nonce();
    a.mac = client_mac(secret, server, a.client, rank);
    return Frame{MsgType::kAuth, encode_auth(a)};
  };
  auto none = [](uint32_t) -> const char* { return nullptr; };
  auto two_taken = [](uint32_t r) -> const char* { return r == 2 ? "10.0.0.9:4000" : nullptr; };

  Frame good = answer(2, 4, key);
  Verdict v = judge_auth(good, key, server, 4, none);
  EXPECT_EQ(v.refusal, "");
  EXPECT_EQ(v.rank, 2);
  auto sent = decode_auth(good.payload);
  EXPECT_TRUE(mac_equal(v.proof, server_mac(key, server, sent->client, 2)));

  EXPECT_EQ(judge_auth(answer(2, 4, std::string(64, 'f')), key, server, 4, none).refusal, "wrong job secret");
  // The same answer against another challenge (a replay on a new connection).
  EXPECT_EQ(judge_auth(good, key, fresh_nonce(), 4, none).refusal, "wrong job secret");
  // A wrong secret is reported as such even when the rest is wrong too: nothing else is revealed.
  EXPECT_EQ(judge_auth(answer(9, 5, std::string(64, 'f')), key, server, 4, two_taken).refusal, "wrong job secret");
  EXPECT_EQ(judge_auth(answer(2, 5, key), key, server, 4, none).refusal,
            "rank 2 says the job has 5 PEs; rank 0 has TESSERA_SIZE=4");
  EXPECT_EQ(judge_auth(answer(4, 4, key), key, server, 4, none).refusal, "rank 4 is outside 1..3 (TESSERA_SIZE=4)");
  EXPECT_EQ(judge_auth(answer(0, 4, key), key, server, 4, none).refusal, "rank 0 is outside 1..3 (TESSERA_SIZE=4)");
  EXPECT_EQ(judge_auth(good, key, server, 4, two_taken).refusal, "rank 2 has joined already, from 10.0.0.9:4000");
  Frame other = good;
  other.type = MsgType::kAllgather;
  EXPECT_NE(judge_auth(other, key, server, 4, none).refusal.find("malformed handshake: message type 3 of 72 bytes"),
            std::string::npos);
  Frame cut = good;
  cut.payload.pop_back();
  EXPECT_NE(judge_auth(cut, key, server, 4, none).refusal.find("malformed handshake: message type 6 of 71 bytes"),
            std::string::npos);
  for (const Frame& f : {answer(2, 5, key), answer(4, 4, key), other, cut}) {
    Verdict bad = judge_auth(f, key, server, 4, none);
    EXPECT_EQ(bad.rank, -1);
    EXPECT_EQ(bad.proof, Mac{}) << "no proof for a refused peer";
  }
}

TEST(Messages, AbortRoundTrip) {
  auto d = decode_abort(encode_abort({-1, 42}));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pe, -1);
  EXPECT_EQ(d->code, 42);
  EXPECT_FALSE(decode_abort(std::vector<char>(7)).has_value());
  EXPECT_FALSE(decode_abort(std::vector<char>(9)).has_value());
}

TEST(Messages, JobId) {
  EXPECT_TRUE(valid_job_id("0123456789abcdef"));
  EXPECT_FALSE(valid_job_id("0123456789abcde"));
  EXPECT_FALSE(valid_job_id("0123456789abcdef0"));
  EXPECT_FALSE(valid_job_id("0123456789abcdeF"));
  EXPECT_FALSE(valid_job_id("../../etc/passwd"));
}

std::vector<char> frame(MsgType t, const std::string& payload) {
  MsgHeader h{static_cast<uint32_t>(t), static_cast<uint32_t>(payload.size())};
  std::vector<char> out(sizeof h + payload.size());
  std::memcpy(out.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(out.data() + sizeof h, payload.data(), payload.size());
  return out;
}

TEST(FrameReader, ByteByByteAndSeveralAtOnce) {
  std::vector<char> stream = frame(MsgType::kAllgather, "hello");
  for (char c : frame(MsgType::kGoodbye, "")) stream.push_back(c);
  for (char c : frame(MsgType::kGathered, std::string(100, 'x'))) stream.push_back(c);

  FrameReader one_by_one(1000);
  std::vector<Frame> got;
  for (char c : stream) {
    one_by_one.feed(&c, 1);
    Frame f;
    while (one_by_one.next(&f) == FrameReader::Next::kFrame) got.push_back(f);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].type, MsgType::kAllgather);
  EXPECT_EQ(std::string(got[0].payload.begin(), got[0].payload.end()), "hello");
  EXPECT_EQ(got[1].type, MsgType::kGoodbye);
  EXPECT_TRUE(got[1].payload.empty());
  EXPECT_EQ(got[2].payload.size(), 100u);
  EXPECT_EQ(one_by_one.buffered(), 0u);

  FrameReader all_at_once(1000);
  all_at_once.feed(stream.data(), stream.size());
  Frame f;
  int n = 0;
  while (all_at_once.next(&f) == FrameReader::Next::kFrame) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_EQ(all_at_once.next(&f), FrameReader::Next::kMore);
}

TEST(FrameReader, AnOversizedHeaderBreaksTheStreamWithoutAllocating) {
  FrameReader r(kHandshakeLimit);
  std::vector<char> ok = frame(MsgType::kAuth, std::string(kHandshakeLimit, 'a'));  // exactly the limit
  r.feed(ok.data(), ok.size());
  Frame f;
  EXPECT_EQ(r.next(&f), FrameReader::Next::kFrame);
  MsgHeader h{static_cast<uint32_t>(MsgType::kAuth), 0x7fffffff};
  r.feed(reinterpret_cast<const char*>(&h), sizeof h);
  uint32_t announced = 0;
  EXPECT_EQ(r.next(&f, &announced), FrameReader::Next::kTooLarge);
  EXPECT_EQ(announced, 0x7fffffffu);
  EXPECT_EQ(r.buffered(), 0u);
  // Broken for good: later bytes are not parsed (nor kept).
  std::vector<char> more = frame(MsgType::kAuth, "x");
  r.feed(more.data(), more.size());
  EXPECT_EQ(r.next(&f), FrameReader::Next::kTooLarge);
  EXPECT_EQ(r.buffered(), 0u);
}

}  // namespace
}  // namespace tessera::bootstrap::tcp
