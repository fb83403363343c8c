// A rank other than 0 in the TCP rendezvous (tcp.h): connect, authenticate both ways, wait for the welcome,
// then one thread owns every read from the connection to rank 0.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/cpu.h"
#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/tcp.h"
#include "bootstrap/tcp_socket.h"

namespace tessera::bootstrap::tcp {
namespace {
// Each step of the handshake may take this long; the wait for the welcome (other ranks may start late)
// takes up to the start-up deadline.
constexpr uint64_t kHandshakeNs = 10'000'000'000ull;
constexpr auto kAbortSendWait = std::chrono::seconds(1);

std::string text_of(const std::vector<char>& payload) {
  return std::string(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(std::min(payload.size(), kMaxReason)));
}

class Spoke final : public Served {
 public:
  explicit Spoke(const Config& cfg)
      : cfg_(cfg), who_(fmt::format("rank 0 at {}", cfg.address.where())), reader_(kHandshakeLimit) {}
  ~Spoke() override { shut_down(); }

  Status start() {
    TS_ASSIGN_OR_RETURN(sockaddr_in sa, resolve(cfg_.address, cfg_.start_deadline_ns));
    TS_ASSIGN_OR_RETURN(fd_, connect_until(sa, cfg_.address.where(), cfg_.rank, cfg_.start_deadline_ns));
    tune(fd_, cfg_.timeout_ns);
    TS_RETURN_IF_ERROR(handshake());
    TS_RETURN_IF_ERROR(await_welcome());
    reader_.set_limit(kMaxPayload);
    TS_RETURN_IF_ERROR(wake_.open());
    thread_ = quiet_thread([this] { serve(); });
    return Status::ok();
  }

  Status allgather(const void* mine, void* all, size_t bytes) override {
    const size_t n = static_cast<size_t>(cfg_.size);
    TS_RETURN_IF_ERROR(check_allgather_bytes("bootstrap (tcp)", bytes, n));
    {
      std::lock_guard lk(mu_);
      if (ended_) return ended_error();
      have_reply_ = false;
    }
    {
      std::lock_guard lk(send_mu_);
      TS_RETURN_IF_ERROR(send_frame(fd_, MsgType::kAllgather, mine, bytes));
    }
    std::unique_lock lk(mu_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(cfg_.timeout_ns);
    if (!cv_.wait_until(lk, deadline, [this] { return have_reply_ || ended_; }))
      return make_status(Code::kTimeout,
                         "bootstrap (tcp): rank {} had no exchange reply from {} within {:.0f} s (TESSERA_TIMEOUT): "
                         "some PE did not reach the same step",
                         cfg_.rank, who_, static_cast<double>(cfg_.timeout_ns) / 1e9);
    if (!have_reply_) return ended_error();
    if (reply_.size() != bytes * n)
      return make_status(Code::kInternal, "bootstrap (tcp): exchange reply of {} bytes from {}, expected {}",
                         reply_.size(), who_, bytes * n);
    if (bytes) std::memcpy(all, reply_.data(), reply_.size());  // copy-ok: start-up exchange
    return Status::ok();
  }

  void abort(int code) override {
    if (!end_once(fmt::format("PE {} ended the job", cfg_.rank))) return;  // rank 0 told us: it knows
    std::unique_lock lk(send_mu_, std::defer_lock);
    if (lk.try_lock_for(kAbortSendWait)) (void)send_frame(fd_, MsgType::kAbort, encode_abort({cfg_.rank, code}));
  }

  void finalize() override {
    bool bye;
    {
      std::lock_guard lk(mu_);
      bye = !ended_;
    }
    if (bye) {
      Status st;
      {
        std::lock_guard lk(send_mu_);
        st = send_frame(fd_, MsgType::kGoodbye, nullptr, 0);
      }
      // Rank 0's acknowledgement is the last thing it sends here: once it is read, closing cannot discard
      // unread data (which would reset the connection, and could lose the goodbye on its way).
      std::unique_lock lk(mu_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(cfg_.timeout_ns);
      if (st.is_ok() && !cv_.wait_until(lk, deadline, [this] { return acked_ || ended_; }))
        log::warn("bootstrap (tcp): no goodbye acknowledgement from {} within {:.0f} s (TESSERA_TIMEOUT)", who_,
                  static_cast<double>(cfg_.timeout_ns) / 1e9);
    }
    shut_down();
  }

  void close_in_child() override {
    if (fd_ >= 0) ::close(fd_);
    if (wake_.rd >= 0) ::close(wake_.rd);
    if (wake_.wr >= 0) ::close(wake_.wr);
  }

 private:
  Status handshake() {
    // A second join waits in rank 0's backlog until rank 0 initializes again (tcp.h: take_listen_socket).
    const uint64_t step_deadline =
        cfg_.rejoin ? cfg_.start_deadline_ns : std::min(cfg_.start_deadline_ns, now_ns() + kHandshakeNs);
    Frame f;
    TS_RETURN_IF_ERROR(read_frame(fd_, reader_, &f, step_deadline, who_));
    if (f.type == MsgType::kRefused)
      return make_status(Code::kAborted, "bootstrap (tcp): {} refused rank {}: {}", who_, cfg_.rank, text_of(f.payload));
    if (f.type != MsgType::kChallenge || f.payload.size() != kNonceBytes)
      return make_status(Code::kInternal,
                         "bootstrap (tcp): {} does not speak the Tessera rendezvous (message type {} of {} bytes where "
                         "a challenge was expected)",
                         who_, static_cast<uint32_t>(f.type), f.payload.size());
    Nonce server{};
    std::memcpy(server.data(), f.payload.data(), kNonceBytes);  // copy-ok: nonce
    Auth auth;
    auth.rank = static_cast<uint32_t>(cfg_.rank);
    auth.size = static_cast<uint32_t>(cfg_.size);
    auth.client = fresh_nonce();
    auth.mac = client_mac(cfg_.secret, server, auth.client, auth.rank);
    TS_RETURN_IF_ERROR(send_frame(fd_, MsgType::kAuth, encode_auth(auth)));

    Status st = read_frame(fd_, reader_, &f, std::min(cfg_.start_deadline_ns, now_ns() + kHandshakeNs), who_);
    if (st.code() == Code::kAborted)
      return make_status(Code::kAborted, "bootstrap (tcp): {} closed the connection during the handshake", who_);
    TS_RETURN_IF_ERROR(st);
    if (f.type == MsgType::kRefused)
      return make_status(Code::kAborted, "bootstrap (tcp): {} refused rank {}: {}{}", who_, cfg_.rank, text_of(f.payload),
                         text_of(f.payload) == "wrong job secret"
                             ? " (the secret, TESSERA_JOB_SECRET or the id's, must be the same on every rank)"
                             : "");
    Mac proof{};
    if (f.type == MsgType::kProof && f.payload.size() == kMacBytes)
      std::memcpy(proof.data(), f.payload.data(), kMacBytes);  // copy-ok: MAC
    if (!mac_equal(proof, server_mac(cfg_.secret, server, auth.client, auth.rank)))
      return make_status(Code::kAborted,
                         "bootstrap (tcp): {} did not prove that it knows the job's secret: it is not this job's "
                         "rank 0, or its secret differs",
                         who_);
    return Status::ok();
  }

  Status await_welcome() {
    Frame f;
    Status st = read_frame(fd_, reader_, &f, cfg_.start_deadline_ns, who_);
    if (st.code() == Code::kTimeout)
      return make_status(Code::kTimeout,
                         "bootstrap (tcp): rank {} joined {}, but the job did not start before the deadline "
                         "(TESSERA_TIMEOUT): other ranks did not join",
                         cfg_.rank, who_);
    if (st.code() == Code::kAborted)
      return make_status(Code::kAborted,
                         "bootstrap (tcp): {} closed the connection before the job started (see its output)", who_);
    TS_RETURN_IF_ERROR(st);
    if (f.type == MsgType::kRefused)
      return make_status(Code::kAborted, "bootstrap (tcp): {} ended the start-up: {}", who_, text_of(f.payload));
    std::string id(f.payload.begin(), f.payload.end());
    if (f.type != MsgType::kWelcome || !valid_job_id(id))
      return make_status(Code::kInternal, "bootstrap (tcp): {} sent message type {} of {} bytes where the welcome was "
                         "expected", who_, static_cast<uint32_t>(f.type), f.payload.size());
    job_id_ = id;
    return Status::ok();
  }

  // The thread: every read from the connection after the welcome.
  void serve() {
    for (;;) {
      pollfd fds[2] = {{wake_.rd, POLLIN, 0}, {fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        log::fatal("bootstrap (tcp): poll on the connection to {}: {}", who_, std::strerror(errno));
      }
      if (fds[0].revents) {
        wake_.drain();
        std::lock_guard lk(mu_);
        if (stop_) return;
      }
      if (!fds[1].revents) continue;
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return lost(fmt::format("PE 0 (host {}) lost its bootstrap connection: it died or its host went "
                                          "away; ending the job",
                                          cfg_.address.host));
      reader_.feed(buf, static_cast<size_t>(n));
      if (!dispatch()) return;
    }
  }

  // Acts on every whole message read; false once nothing more is to be read.
  bool dispatch() {
    for (;;) {
      Frame f;
      uint32_t announced = 0;
      switch (reader_.next(&f, &announced)) {
        case FrameReader::Next::kMore: return true;
        case FrameReader::Next::kTooLarge:
          lost(fmt::format("{} sent a message of {} bytes (limit {}); ending the job", who_, announced, reader_.limit()));
          return false;
        case FrameReader::Next::kFrame: break;
      }
      switch (f.type) {
        case MsgType::kGathered: {
          std::lock_guard lk(mu_);
          reply_ = std::move(f.payload);
          have_reply_ = true;
          cv_.notify_all();
          break;
        }
        case MsgType::kGoodbyeAck: {
          std::lock_guard lk(mu_);
          acked_ = true;
          cv_.notify_all();
          return false;
        }
        case MsgType::kAbort: {
          std::optional<AbortNote> a = decode_abort(f.payload);
          if (!a) {
            lost(fmt::format("{} sent an abort message of {} bytes (expected 8); ending the job", who_, f.payload.size()));
            return false;
          }
          if (!end_once(fmt::format("PE {} ended the job", a->pe))) return false;
          // Whoever caused it printed why; this PE only ends its waits.
          if (AbortHook hook = abort_hook()) hook(a->pe, a->code);
          return false;
        }
        default:
          lost(fmt::format("{} sent a message of unknown type {}; ending the job", who_, static_cast<uint32_t>(f.type)));
          return false;
      }
    }
  }

  // The connection to rank 0 is gone (or unusable) without a goodbye acknowledgement: the job cannot go
  // on. Silent when this PE already knows the job ended.
  void lost(const std::string& line) {
    if (!end_once("the connection to rank 0 was lost")) return;
    if (cfg_.resilient) {  // rank 0 failed: the launcher reports it, and the job goes on without the rendezvous
      log::debug("{}", line);
      return;
    }
    log::write_line(log::Level::kError, line);
    if (AbortHook hook = abort_hook()) hook(0, 1);
  }

  void shut_down() {
    stop_serving();
    std::lock_guard lk(send_mu_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    wake_.close();
  }

  Config cfg_;
  std::string who_;
  int fd_ = -1;
  FrameReader reader_;  // the thread's once it runs
  std::timed_mutex send_mu_;
  // Guarded by mu_:
  bool acked_ = false;
  bool have_reply_ = false;
  std::vector<char> reply_;
};
}  // namespace

Result<std::unique_ptr<Endpoint>> start_peer(const Config& cfg) {
  auto spoke = std::make_unique<Spoke>(cfg);
  TS_RETURN_IF_ERROR(spoke->start());
  return std::unique_ptr<Endpoint>(std::move(spoke));
}

}  // namespace tessera::bootstrap::tcp
