// The TCP rendezvous with threads as ranks, on 127.0.0.1: joins, exchanges, refusals (wrong secret, replay,
// duplicate, out of range, malformed, oversized), deaths and aborts reaching every PE through the abort
// hook, and the start-up deadline. Every wait is bounded (short deadlines), so a bug fails, never hangs.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "base/cpu.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/tcp.h"
#include "bootstrap/tcp_socket.h"

namespace tessera::bootstrap::tcp {
namespace {

constexpr uint64_t kSecond = 1'000'000'000ull;

// What the abort hook saw, in order.
struct HookLog {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<int, int>> calls;
  // True once `n` calls arrived, within 5 s.
  bool wait_for(size_t n) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, std::chrono::seconds(5), [&] { return calls.size() >= n; });
  }
  size_t count() {
    std::lock_guard lk(mu);
    return calls.size();
  }
};
HookLog* g_hooks = nullptr;
void record_hook(int pe, int code) {
  std::lock_guard lk(g_hooks->mu);
  g_hooks->calls.push_back({pe, code});
  g_hooks->cv.notify_all();
}

class TcpStar : public ::testing::Test {
 protected:
  void SetUp() override {
    g_hooks = &hooks_;
    set_abort_hook(record_hook);
  }
  void TearDown() override {
    set_abort_hook(nullptr);
    g_hooks = nullptr;
  }

  // A listener on a kernel-chosen port of 127.0.0.1 and the configuration every rank shares.
  Config make_job(int size, uint64_t start_s = 10) {
    Address a;
    a.host = "127.0.0.1";
    auto fd = listen_on(a);
    EXPECT_TRUE(fd.is_ok()) << fd.status().message();
    listen_fd_ = fd.value();
    a.port = local_port(listen_fd_).value();
    Config c;
    c.size = size;
    c.secret = std::string(64, '5');
    c.address = a;
    c.timeout_ns = 5 * kSecond;
    c.start_deadline_ns = now_ns() + start_s * kSecond;
    return c;
  }
  std::future<Result<std::unique_ptr<Endpoint>>> start0(const Config& c) {
    return std::async(std::launch::async, [c, fd = listen_fd_] { return start_rank0(c, fd); });
  }
  static std::future<Result<std::unique_ptr<Endpoint>>> start(Config c, int rank) {
    c.rank = rank;
    return std::async(std::launch::async, [c] { return start_peer(c); });
  }
  // Starts every rank of the job and returns the endpoints in rank order (all must succeed).
  std::vector<std::unique_ptr<Endpoint>> start_all(const Config& c) {
    auto f0 = start0(c);
    std::vector<std::future<Result<std::unique_ptr<Endpoint>>>> fs;
    for (int r = 1; r < c.size; ++r) fs.push_back(start(c, r));
    std::vector<std::unique_ptr<Endpoint>> eps;
    auto r0 = f0.get();
    EXPECT_TRUE(r0.is_ok()) << r0.status().message();
    eps.push_back(r0.is_ok() ? std::move(r0).value() : nullptr);
    for (auto& f : fs) {
      auto r = f.get();
      EXPECT_TRUE(r.is_ok()) << r.status().message();
      eps.push_back(r.is_ok() ? std::move(r).value() : nullptr);
    }
    return eps;
  }
  // Every PE's allgather of (rank * 1000 + round), run concurrently.
  static std::vector<Status> exchange(std::vector<std::unique_ptr<Endpoint>>& eps, int round,
                                      std::vector<std::vector<uint64_t>>* out) {
    const size_t n = eps.size();
    out->assign(n, std::vector<uint64_t>(n, ~0ull));
    std::vector<std::future<Status>> fs;
    for (size_t r = 0; r < n; ++r)
      fs.push_back(std::async(std::launch::async, [&, r] {
        uint64_t mine = r * 1000 + static_cast<uint64_t>(round);
        return eps[r]->allgather(&mine, (*out)[r].data(), sizeof mine);
      }));
    std::vector<Status> st;
    for (auto& f : fs) st.push_back(f.get());
    return st;
  }

  HookLog hooks_;
  int listen_fd_ = -1;
};

// A hand-made client: the handshake step by step, so a test can get it wrong on purpose.
struct RawClient {
  int fd = -1;
  FrameReader reader{kMaxPayload};
  Nonce server{};
  explicit RawClient(const Config& c) {
    auto sa = resolve(c.address, now_ns() + kSecond);
    auto r = connect_until(sa.value(), c.address.where(), 99, now_ns() + 5 * kSecond);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    fd = r.value();
  }
  ~RawClient() {
    if (fd >= 0) ::close(fd);
  }
  Frame read() {
    Frame f;
    Status st = read_frame(fd, reader, &f, now_ns() + 5 * kSecond, "rank 0");
    if (!st.is_ok()) f.type = MsgType{0};  // closed, or nothing within 5 s
    return f;
  }
  bool challenge() {
    Frame f = read();
    if (f.type != MsgType::kChallenge || f.payload.size() != kNonceBytes) return false;
    std::memcpy(server.data(), f.payload.data(), kNonceBytes);
    return true;
  }
  std::vector<char> auth(const std::string& secret, uint32_t rank, uint32_t size) {
    Auth a;
    a.rank = rank;
    a.size = size;
    a.client = fresh_nonce();
    a.mac = client_mac(secret, server, a.client, rank);
    return encode_auth(a);
  }
  std::string refusal() {
    Frame f = read();
    return f.type == MsgType::kRefused ? std::string(f.payload.begin(), f.payload.end()) : "(no refusal)";
  }
};

TEST_F(TcpStar, EveryRankJoinsAndExchanges) {
  for (int size : {1, 2, 3, 4, 7}) {
    SCOPED_TRACE(size);
    Config c = make_job(size);
    auto eps = start_all(c);
    ASSERT_EQ(eps.size(), static_cast<size_t>(size));
    for (auto& e : eps) ASSERT_TRUE(e);
    for (auto& e : eps) EXPECT_EQ(e->job_id(), eps[0]->job_id());
    EXPECT_TRUE(valid_job_id(eps[0]->job_id()));
    for (int round = 0; round < 5; ++round) {
      std::vector<std::vector<uint64_t>> got;
      for (const Status& st : exchange(eps, round, &got)) EXPECT_TRUE(st.is_ok()) << st.message();
      for (int r = 0; r < size; ++r)
        for (int q = 0; q < size; ++q) EXPECT_EQ(got[r][q], static_cast<uint64_t>(q * 1000 + round));
    }
    // A barrier is an exchange of nothing.
    std::vector<std::future<Status>> bs;
    for (auto& e : eps) bs.push_back(std::async(std::launch::async, [&e] { return e->allgather(nullptr, nullptr, 0); }));
    for (auto& b : bs) EXPECT_TRUE(b.get().is_ok());
    std::vector<std::thread> ts;
    for (auto& e : eps) ts.emplace_back([&e] { e->finalize(); });
    for (auto& t : ts) t.join();
    EXPECT_EQ(hooks_.count(), 0u) << "a clean end called the abort hook";
  }
}

TEST_F(TcpStar, TwoJobsGetDifferentIds) {
  Config a = make_job(2);
  auto ja = start_all(a);
  Config b = make_job(2);
  auto jb = start_all(b);
  EXPECT_NE(ja[0]->job_id(), jb[0]->job_id());
  for (auto* j : {&ja, &jb}) {
    std::thread t([&] { (*j)[1]->finalize(); });
    (*j)[0]->finalize();
    t.join();
  }
}

// A launcher that chose the job id (tessera-run --hosts, through TESSERA_JOB_ID) gets it on every rank.
TEST_F(TcpStar, RankZeroHandsOutAGivenJobId) {
  Config c = make_job(3);
  c.job_id = "0123456789abcdef";
  auto eps = start_all(c);
  for (auto& e : eps) {
    ASSERT_TRUE(e);
    EXPECT_EQ(e->job_id(), c.job_id);
  }
  std::vector<std::thread> ts;
  for (auto& e : eps) ts.emplace_back([&e] { e->finalize(); });
  for (auto& t : ts) t.join();
}

TEST_F(TcpStar, WrongSecretIsRefusedAndTheJobStillStarts) {
  Config c = make_job(3);
  auto f0 = start0(c);
  Config wrong = c;
  wrong.secret = std::string(64, '6');
  auto bad = start(wrong, 1).get();
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("refused rank 1: wrong job secret"), std::string::npos)
      << bad.status().message();
  auto f1 = start(c, 1), f2 = start(c, 2);
  auto r0 = f0.get(), r1 = f1.get(), r2 = f2.get();
  ASSERT_TRUE(r0.is_ok() && r1.is_ok() && r2.is_ok());
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::move(r0).value());
  eps.push_back(std::move(r1).value());
  eps.push_back(std::move(r2).value());
  std::vector<std::vector<uint64_t>> got;
  for (const Status& st : exchange(eps, 1, &got)) EXPECT_TRUE(st.is_ok());
  EXPECT_EQ(got[2][1], 1001u);
  std::vector<std::thread> ts;
  for (auto& e : eps) ts.emplace_back([&e] { e->finalize(); });
  for (auto& t : ts) t.join();
}

TEST_F(TcpStar, ReplayedMalformedAndImpossibleHandshakesAreRefused) {
  Config c = make_job(3);  // rank 2 stays away until the end, so the job cannot start meanwhile
  auto f0 = start0(c);
  {
    // A correct handshake for rank 1, recorded; rank 0 proves itself back.
    RawClient first(c);
    ASSERT_TRUE(first.challenge());
    const Nonce first_nonce = first.server;
    Auth a;
    a.rank = 1;
    a.size = 3;
    a.client = fresh_nonce();
    a.mac = client_mac(c.secret, first.server, a.client, 1);
    const std::vector<char> recorded = encode_auth(a);
    ASSERT_TRUE(send_frame(first.fd, MsgType::kAuth, recorded).is_ok());
    Frame proof = first.read();
    ASSERT_EQ(proof.type, MsgType::kProof);
    Mac m{};
    std::memcpy(m.data(), proof.payload.data(), kMacBytes);
    EXPECT_TRUE(mac_equal(m, server_mac(c.secret, first.server, a.client, 1)));

    // The same bytes on a new connection: a new challenge, so they no longer prove anything.
    RawClient replay(c);
    ASSERT_TRUE(replay.challenge());
    EXPECT_NE(replay.server, first_nonce);
    ASSERT_TRUE(send_frame(replay.fd, MsgType::kAuth, recorded).is_ok());
    EXPECT_EQ(replay.refusal(), "wrong job secret");

    // Rank 1 is taken (by `first`), rank 3 does not exist, nor does rank 0 connect, the size is wrong.
    RawClient dup(c);
    ASSERT_TRUE(dup.challenge());
    ASSERT_TRUE(send_frame(dup.fd, MsgType::kAuth, dup.auth(c.secret, 1, 3)).is_ok());
    EXPECT_NE(dup.refusal().find("rank 1 has joined already"), std::string::npos);
    RawClient out(c);
    ASSERT_TRUE(out.challenge());
    ASSERT_TRUE(send_frame(out.fd, MsgType::kAuth, out.auth(c.secret, 3, 3)).is_ok());
    EXPECT_NE(out.refusal().find("rank 3 is outside 1..2"), std::string::npos);
    RawClient zero(c);
    ASSERT_TRUE(zero.challenge());
    ASSERT_TRUE(send_frame(zero.fd, MsgType::kAuth, zero.auth(c.secret, 0, 3)).is_ok());
    EXPECT_NE(zero.refusal().find("rank 0 is outside"), std::string::npos);
    RawClient size(c);
    ASSERT_TRUE(size.challenge());
    ASSERT_TRUE(send_frame(size.fd, MsgType::kAuth, size.auth(c.secret, 2, 4)).is_ok());
    EXPECT_NE(size.refusal().find("says the job has 4 PEs"), std::string::npos);

    // Malformed: a short answer, another message type, a header announcing 2 GiB.
    RawClient shortmsg(c);
    ASSERT_TRUE(shortmsg.challenge());
    ASSERT_TRUE(send_frame(shortmsg.fd, MsgType::kAuth, std::vector<char>(10)).is_ok());
    EXPECT_NE(shortmsg.refusal().find("malformed handshake"), std::string::npos);
    RawClient other(c);
    ASSERT_TRUE(other.challenge());
    ASSERT_TRUE(send_frame(other.fd, MsgType::kAllgather, std::vector<char>(kAuthBytes)).is_ok());
    EXPECT_NE(other.refusal().find("malformed handshake"), std::string::npos);
    RawClient huge(c);
    ASSERT_TRUE(huge.challenge());
    MsgHeader h{static_cast<uint32_t>(MsgType::kAuth), 0x80000000u};
    ASSERT_EQ(::send(huge.fd, &h, sizeof h, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof h));
    EXPECT_NE(huge.refusal().find("2147483648 bytes before authenticating (limit 256)"), std::string::npos);
    // `first` leaves before the job started: its slot opens again.
  }
  auto f1 = start(c, 1), f2 = start(c, 2);
  auto r1 = f1.get(), r2 = f2.get();
  ASSERT_TRUE(r1.is_ok()) << r1.status().message();
  ASSERT_TRUE(r2.is_ok()) << r2.status().message();
  auto r0 = f0.get();
  ASSERT_TRUE(r0.is_ok()) << r0.status().message();
  std::thread t1([&] { r1.value()->finalize(); }), t2([&] { r2.value()->finalize(); });
  r0.value()->finalize();
  t1.join();
  t2.join();
  EXPECT_EQ(hooks_.count(), 0u);
}

TEST_F(TcpStar, LateConnectionsAreRefused) {
  Config c = make_job(2);
  auto eps = start_all(c);
  RawClient late(c);
  EXPECT_NE(late.refusal().find("the job has all its 2 PEs already"), std::string::npos);
  auto r = start(c, 1).get();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("refused rank 1: the job has all its 2 PEs"), std::string::npos)
      << r.status().message();
  std::thread t([&] { eps[1]->finalize(); });
  eps[0]->finalize();
  t.join();
  EXPECT_EQ(hooks_.count(), 0u);
}

TEST_F(TcpStar, APeerThatDiesEndsTheJobEverywhere) {
  Config c = make_job(4);
  auto eps = start_all(c);
  eps[2].reset();  // closes its connection without a goodbye, as a killed process's kernel does
  ASSERT_TRUE(hooks_.wait_for(3));  // rank 0 itself, then PEs 1 and 3 through its relay
  {
    std::lock_guard lk(hooks_.mu);
    for (auto& [pe, code] : hooks_.calls) {
      EXPECT_EQ(pe, 2);
      EXPECT_EQ(code, 1);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(hooks_.count(), 3u) << "each PE calls the hook once";
  // Exchanges fail at once from then on, naming the PE.
  for (int r : {0, 1, 3}) {
    uint64_t v = 0, all[4];
    Status st = eps[r]->allgather(&v, all, sizeof v);
    EXPECT_EQ(st.code(), Code::kAborted) << r;
    EXPECT_NE(st.message().find("PE 2 ended the job"), std::string::npos) << st.message();
  }
  for (int r : {0, 1, 3}) eps[r]->finalize();  // bounded: nobody waits for PE 2's goodbye
}

TEST_F(TcpStar, RankZeroDyingEndsTheJobEverywhere) {
  Config c = make_job(3);
  auto eps = start_all(c);
  eps[0].reset();
  ASSERT_TRUE(hooks_.wait_for(2));
  std::lock_guard lk(hooks_.mu);
  for (auto& [pe, code] : hooks_.calls) EXPECT_EQ(pe, 0);
}

TEST_F(TcpStar, AnAbortReachesEveryOtherPe) {
  Config c = make_job(3);
  auto eps = start_all(c);
  eps[1]->abort(7);
  ASSERT_TRUE(hooks_.wait_for(2));  // rank 0 and PE 2
  {
    std::lock_guard lk(hooks_.mu);
    for (auto& [pe, code] : hooks_.calls) {
      EXPECT_EQ(pe, 1);
      EXPECT_EQ(code, 7);
    }
  }
  eps[1].reset();  // the aborting process exits: no second message (no "lost connection")
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(hooks_.count(), 2u);
  // And from rank 0.
  {
    std::lock_guard lk(hooks_.mu);
    hooks_.calls.clear();
  }
  Config d = make_job(3);
  auto fs = start_all(d);
  fs[0]->abort(3);
  ASSERT_TRUE(hooks_.wait_for(2));
  std::lock_guard lk(hooks_.mu);
  for (auto& [pe, code] : hooks_.calls) EXPECT_EQ(code, 3);
}

TEST_F(TcpStar, StartUpDeadlineNamesTheMissingRanks) {
  Config c = make_job(3, /*start_s=*/1);
  auto f0 = start0(c);
  Config patient = c;  // rank 1 would wait longer: what it reports is rank 0 giving up
  patient.start_deadline_ns += 3 * kSecond;
  auto r1 = start(patient, 1).get();
  ASSERT_FALSE(r1.is_ok());
  EXPECT_NE(r1.status().message().find("ended the start-up: rank 0 gave up waiting for ranks 2"), std::string::npos)
      << r1.status().message();
  auto r0 = f0.get();
  ASSERT_FALSE(r0.is_ok());
  EXPECT_EQ(r0.status().code(), Code::kTimeout);
  EXPECT_NE(r0.status().message().find("for ranks 2 to join"), std::string::npos) << r0.status().message();
}

TEST_F(TcpStar, NobodyListeningTimesOutNamingTheAddress) {
  Config c = make_job(2);
  ::close(listen_fd_);  // the port is free again: nothing answers there
  c.rank = 1;
  c.start_deadline_ns = now_ns() + kSecond / 2;
  const uint64_t t0 = now_ns();
  auto r = start_peer(c);
  ASSERT_FALSE(r.is_ok());
  EXPECT_LT(now_ns() - t0, 3 * kSecond);
  EXPECT_NE(r.status().message().find("rank 1 waited"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("for rank 0 to listen on " + c.address.where()), std::string::npos)
      << r.status().message();
}

TEST_F(TcpStar, UniqueIdSocketIsHandedOverOnce) {
  auto id = make_unique_id("127.0.0.1");
  ASSERT_TRUE(id.is_ok()) << id.status().message();
  auto a = parse_address("id", id.value());
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a.value().host, "127.0.0.1");
  EXPECT_EQ(a.value().secret.size(), 64u);
  Address other = a.value();
  other.secret = std::string(64, '0');
  bool made = true;
  EXPECT_EQ(take_unique_id_socket(other, &made), -1);
  EXPECT_FALSE(made);
  int fd = take_unique_id_socket(a.value(), &made);
  EXPECT_TRUE(made);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(local_port(fd).value(), a.value().port);
  EXPECT_EQ(take_unique_id_socket(a.value(), &made), -1);  // once
  ::close(fd);
  auto bad = make_unique_id("bad:host");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("expected an IPv4 address or a host name"), std::string::npos);
}

// A connection to a port of this host that nobody listens on can connect to itself (the source port the
// kernel picks equals the destination's). Forced here by binding the source port to the destination's:
// connect_until must drop such a socket, not hand it out as rank 0's, and so gives up at its deadline. On
// the launch of a job, such a socket held the port rank 0 was about to listen on.
TEST(TcpSocket, AConnectionToItselfIsNotRankZero) {
  const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // a free port of this host
  ASSERT_GE(probe, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::getsockname(probe, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  ::close(probe);
  int attempts = 0;
  const auto bind_source = [&](int fd) {
    ++attempts;
    int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) return sys_error("bind");
    return Status::ok();
  };
  auto r = connect_until(sa, "127.0.0.1", 1, now_ns() + kSecond / 4, bind_source);
  ASSERT_FALSE(r.is_ok()) << "a socket connected to itself was returned as the connection to rank 0";
  EXPECT_NE(r.status().message().find("for rank 0 to listen"), std::string::npos) << r.status().message();
  EXPECT_GE(attempts, 1);
}

}  // namespace
}  // namespace tessera::bootstrap::tcp
