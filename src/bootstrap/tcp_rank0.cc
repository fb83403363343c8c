// Rank 0's end of the TCP rendezvous (tcp.h): the join (handshakes, refusals), then the star's thread.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
// One handshake may take this long: a peer that connects and says nothing must not keep its slot for the
// whole start-up (other handshakes go on meanwhile; this only frees the connection).
constexpr uint64_t kHandshakeNs = 10'000'000'000ull;
// Connections in handshake at once; more are refused at once, so that a flood cannot exhaust descriptors.
constexpr size_t kMaxPending = 256;
// abort() gives up on a connection whose sender is blocked longer than this: the process is exiting.
constexpr auto kAbortSendWait = std::chrono::seconds(1);

struct Conn {
  int fd = -1;  // closed (and set to -1) under send_mu
  std::string peer;
  FrameReader reader{kHandshakeLimit};
  Nonce server_nonce{};
  uint64_t handshake_deadline = 0;
  int rank = -1;
  bool goodbye = false;  // the PE said goodbye: its connection's end is not a death
  std::timed_mutex send_mu;
  ~Conn() {
    if (fd >= 0) ::close(fd);
  }
};

std::string list_ranks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) s += fmt::format(" and {} more", ranks.size() - 16);
  return s;
}

// Sends unless the connection is closed or its sender is held up past `wait`; errors are the receiver's
// problem (a dead peer is noticed by the thread that reads its connection).
bool send_to(Conn& c, MsgType type, const std::vector<char>& payload,
             std::chrono::milliseconds wait = std::chrono::milliseconds::max()) {
  std::unique_lock lk(c.send_mu, std::defer_lock);
  if (wait == std::chrono::milliseconds::max()) lk.lock();
  else if (!lk.try_lock_for(wait)) return false;
  return c.fd >= 0 && send_frame(c.fd, type, payload).is_ok();
}

void close_conn(Conn& c) {
  std::lock_guard lk(c.send_mu);
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
}

// Refuses a connection that did not (or could not) join: one log line with its address, the reason sent
// to it (so a misconfigured rank can say why it was turned away), then the connection is closed.
void refuse(Conn& c, const std::string& reason) {
  log::warn("refused a connection from {}: {}", c.peer, reason);
  (void)send_to(c, MsgType::kRefused, std::vector<char>(reason.begin(), reason.end()));
  close_conn(c);
}

class Star final : public Served {
 public:
  Star(const Config& cfg, int listen_fd) : cfg_(cfg), listen_fd_(listen_fd), pes_(static_cast<size_t>(cfg.size)) {
    contrib_.resize(pes_.size());
    have_.assign(pes_.size(), 0);
  }
  ~Star() override { shut_down(); }

  Status start() {
    int fl = ::fcntl(listen_fd_, F_GETFL);
    if (fl < 0 || ::fcntl(listen_fd_, F_SETFL, fl | O_NONBLOCK) != 0) return sys_error("bootstrap (tcp): fcntl");
    TS_RETURN_IF_ERROR(wake_.open());
    TS_RETURN_IF_ERROR(join());
    job_id_ = cfg_.job_id.empty() ? random_hex(kJobIdChars) : cfg_.job_id;
    // A PE that died since it joined fails its welcome or is found by the thread: either way the job ends.
    for (size_t r = 1; r < pes_.size(); ++r) {
      Conn& c = *pes_[r];
      (void)send_to(c, MsgType::kWelcome, std::vector<char>(job_id_.begin(), job_id_.end()));
      // From now on a PE's messages are exchanges; one allgather reply holds all of them (kMaxPayload).
      c.reader.set_limit(std::max<uint32_t>(kMaxPayload / static_cast<uint32_t>(cfg_.size), 64));
    }
    open_ = cfg_.size - 1;
    thread_ = quiet_thread([this] { serve(); });
    log::info("bootstrap (tcp): {} PEs joined at {}", cfg_.size, cfg_.address.where());
    return Status::ok();
  }

  Status allgather(const void* mine, void* all, size_t bytes) override {
    const size_t n = static_cast<size_t>(cfg_.size);
    TS_RETURN_IF_ERROR(check_allgather_bytes("bootstrap (tcp)", bytes, n));
    std::unique_lock lk(mu_);
    if (ended_) return ended_error();
    const uint64_t round = rounds_done_;
    contrib_[0].assign(static_cast<const char*>(mine), static_cast<const char*>(mine) + bytes);
    have_[0] = 1;
    wake_.wake();
    const uint64_t start = now_ns();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(cfg_.timeout_ns);
    while (rounds_done_ == round && !ended_) {
      if (cv_.wait_until(lk, deadline) == std::cv_status::timeout && rounds_done_ == round && !ended_) {
        std::vector<int> missing;
        for (size_t r = 0; r < n; ++r)
          if (!have_[r]) missing.push_back(static_cast<int>(r));
        return make_status(Code::kTimeout,
                           "bootstrap (tcp): rank 0 waited {:.1f} s (TESSERA_TIMEOUT) for the exchange from PEs {}",
                           static_cast<double>(now_ns() - start) / 1e9, list_ranks(missing));
      }
    }
    if (rounds_done_ == round) return ended_error();
    if (bytes) std::memcpy(all, result_.data(), result_.size());  // copy-ok: start-up exchange
    return Status::ok();
  }

  void abort(int code) override {
    if (!end_once("PE 0 ended the job")) return;  // the others have been told already
    const std::vector<char> note = encode_abort({0, code});
    for (size_t r = 1; r < pes_.size(); ++r)
      if (pes_[r]) (void)send_to(*pes_[r], MsgType::kAbort, note, kAbortSendWait);
  }

  void close_in_child() override {
    for (auto& c : pes_)
      if (c && c->fd >= 0) ::close(c->fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (wake_.rd >= 0) ::close(wake_.rd);
    if (wake_.wr >= 0) ::close(wake_.wr);
  }

  void finalize() override {
    std::unique_lock lk(mu_);
    // Every PE's goodbye first: a connection closed before then would look like a death to nobody (rank 0
    // is the one watching), but closing early would make the PEs still saying goodbye see rank 0 vanish.
    // Resilient mode: a failed PE never says goodbye, and one cut off by its link never even closes; the
    // survivors have met in shmem_finalize's barrier, and a PE that sees rank 0 go goes on (tcp_peer.cc).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(cfg_.timeout_ns);
    if (!cfg_.resilient && !cv_.wait_until(lk, deadline, [this] { return open_ == 0 || ended_; }))
      log::warn("bootstrap (tcp): {} PEs did not say goodbye within {:.0f} s (TESSERA_TIMEOUT); closing anyway", open_,
                static_cast<double>(cfg_.timeout_ns) / 1e9);
    keep_listen_ = true;  // for take_listen_socket
    lk.unlock();
    shut_down();
  }

  int take_listen_socket() override {
    const int fd = listen_fd_;
    listen_fd_ = -1;
    return fd;
  }

 private:
  // ---- The join: every rank connects and proves it knows the secret. ----
  Status join() {
    std::vector<std::unique_ptr<Conn>> pending;
    int joined = 1;
    const uint64_t start = now_ns();
    while (joined < cfg_.size) {
      const uint64_t now = now_ns();
      if (now >= cfg_.start_deadline_ns) return give_up(start, now);
      uint64_t wake_at = cfg_.start_deadline_ns;
      for (auto& c : pending) wake_at = std::min(wake_at, c->handshake_deadline);
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& c : pending) fds.push_back({c->fd, POLLIN, 0});
      std::vector<int> watched;  // joined ranks, as they were when polled
      for (size_t r = 1; r < pes_.size(); ++r)
        if (pes_[r]) {
          fds.push_back({pes_[r]->fd, POLLIN, 0});
          watched.push_back(static_cast<int>(r));
        }
      const int ms = static_cast<int>(std::min<uint64_t>((wake_at - std::min(wake_at, now) + 999999) / 1000000, 1000));
      int n = ::poll(fds.data(), fds.size(), ms);
      if (n < 0 && errno != EINTR) return sys_error("bootstrap (tcp): poll");
      if (n <= 0) {
        expire(pending);
        continue;
      }
      size_t i = 1;
      for (auto& c : pending)
        if (fds[i++].revents) joined += handshake(c);
      for (int r : watched)
        if (fds[i++].revents) joined -= left_early(r);
      std::erase_if(pending, [](const std::unique_ptr<Conn>& c) { return !c || c->fd < 0; });
      if (fds[0].revents) accept_one(&pending);
      expire(pending);
    }
    return Status::ok();
  }

  void accept_one(std::vector<std::unique_ptr<Conn>>* pending) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a connection reset before we took it
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->peer = peer_of(fd);
    tune(fd, cfg_.timeout_ns);
    if (pending->size() >= kMaxPending) return refuse(*c, fmt::format("{} connections in handshake already", kMaxPending));
    c->server_nonce = fresh_nonce();
    c->handshake_deadline = now_ns() + kHandshakeNs;
    if (!send_frame(fd, MsgType::kChallenge, c->server_nonce.data(), kNonceBytes).is_ok()) return close_conn(*c);
    pending->push_back(std::move(c));
  }

  // Reads what a connection in handshake sent; 1 when it joined (then `slot` has moved into pes_).
  int handshake(std::unique_ptr<Conn>& slot) {
    Conn& c = *slot;
    char buf[512];
    ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) {
      log::info("bootstrap (tcp): a connection from {} closed before its handshake", c.peer);
      close_conn(c);
      return 0;
    }
    c.reader.feed(buf, static_cast<size_t>(n));
    Frame f;
    uint32_t announced = 0;
    switch (c.reader.next(&f, &announced)) {
      case FrameReader::Next::kMore: return 0;
      case FrameReader::Next::kTooLarge:
        refuse(c, fmt::format("a message of {} bytes before authenticating (limit {})", announced, kHandshakeLimit));
        return 0;
      case FrameReader::Next::kFrame: break;
    }
    const Verdict v = judge_auth(f, cfg_.secret, c.server_nonce, cfg_.size, [this](uint32_t rank) -> const char* {
      return pes_[rank] ? pes_[rank]->peer.c_str() : nullptr;
    });
    if (!v.refusal.empty()) {
      refuse(c, v.refusal);
      return 0;
    }
    if (!send_frame(c.fd, MsgType::kProof, v.proof.data(), v.proof.size()).is_ok()) {
      close_conn(c);
      return 0;
    }
    c.rank = v.rank;
    log::info("bootstrap (tcp): rank {} joined from {}", c.rank, c.peer);
    pes_[static_cast<size_t>(v.rank)] = std::move(slot);
    return 1;
  }

  // A joined rank's connection stirred before the welcome: it closed (the process ended or restarts) or it
  // talked out of turn. Either way its slot opens again; 1 when it did.
  int left_early(int rank) {
    Conn& c = *pes_[static_cast<size_t>(rank)];
    char buf[64];
    ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n > 0) refuse(c, fmt::format("rank {} sent a message before the job started", rank));
    else log::warn("bootstrap (tcp): rank {} (from {}) left before the job started; waiting for rank {} again", rank,
                   c.peer, rank);
    close_conn(c);
    pes_[static_cast<size_t>(rank)].reset();
    return 1;
  }

  void expire(std::vector<std::unique_ptr<Conn>>& pending) {
    const uint64_t now = now_ns();
    for (auto& c : pending)
      if (c->fd >= 0 && now >= c->handshake_deadline)
        refuse(*c, fmt::format("no handshake within {} s", kHandshakeNs / 1'000'000'000));
    std::erase_if(pending, [](const std::unique_ptr<Conn>& c) { return c->fd < 0; });
  }

  Status give_up(uint64_t start, uint64_t now) {
    std::vector<int> missing;
    for (size_t r = 1; r < pes_.size(); ++r)
      if (!pes_[r]) missing.push_back(static_cast<int>(r));
    Status st = make_status(Code::kTimeout,
                            "bootstrap (tcp): rank 0 waited {:.1f} s (TESSERA_TIMEOUT) on {} for ranks {} to join "
                            "with the job's secret",
                            static_cast<double>(now - start) / 1e9, cfg_.address.where(), list_ranks(missing));
    const std::string why = fmt::format("rank 0 gave up waiting for ranks {}", list_ranks(missing));
    for (size_t r = 1; r < pes_.size(); ++r)
      if (pes_[r]) (void)send_to(*pes_[r], MsgType::kRefused, std::vector<char>(why.begin(), why.end()));
    return st;
  }

  // ---- The star's thread. ----
  void serve() {
    std::vector<pollfd> fds;
    std::vector<Conn*> conns;
    for (;;) {
      // Late connections are refused while the job runs; once a PE has said goodbye (or died) they are left
      // in the backlog, where a PE that initializes again after finalize waits for rank 0's next init.
      bool refusing;
      {
        std::lock_guard lk(mu_);
        refusing = open_ == cfg_.size - 1;
      }
      fds.assign({{wake_.rd, POLLIN, 0}, {refusing ? listen_fd_ : -1, POLLIN, 0}});
      conns.clear();
      for (size_t r = 1; r < pes_.size(); ++r)
        if (pes_[r]->fd >= 0) {
          fds.push_back({pes_[r]->fd, POLLIN, 0});
          conns.push_back(pes_[r].get());
        }
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        log::fatal("bootstrap (tcp): poll on the star's connections: {}", std::strerror(errno));
      }
      if (fds[0].revents) {
        wake_.drain();
        std::unique_lock lk(mu_);
        if (stop_) return;
        complete_round(lk);
      }
      if (fds[1].revents) refuse_late();
      for (size_t i = 0; i < conns.size(); ++i)
        if (fds[i + 2].revents) pump(*conns[i]);
    }
  }

  void refuse_late() {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    Conn c;
    c.fd = fd;
    c.peer = peer_of(fd);
    tune(fd, cfg_.timeout_ns);
    refuse(c, fmt::format("the job has all its {} PEs already", cfg_.size));
  }

  // Reads what an established connection sent and acts on every whole message.
  void pump(Conn& c) {
    char buf[65536];
    ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) return lost(c);
    c.reader.feed(buf, static_cast<size_t>(n));
    for (;;) {
      Frame f;
      uint32_t announced = 0;
      switch (c.reader.next(&f, &announced)) {
        case FrameReader::Next::kMore: return;
        case FrameReader::Next::kTooLarge:
          return violation(c, fmt::format("sent a message of {} bytes (limit {})", announced, c.reader.limit()));
        case FrameReader::Next::kFrame: break;
      }
      switch (f.type) {
        case MsgType::kAllgather: {
          std::unique_lock lk(mu_);
          if (have_[static_cast<size_t>(c.rank)]) {
            lk.unlock();
            return violation(c, "sent a second exchange before the first one completed");
          }
          contrib_[static_cast<size_t>(c.rank)] = std::move(f.payload);
          have_[static_cast<size_t>(c.rank)] = 1;
          complete_round(lk);
          break;
        }
        case MsgType::kAbort: {
          std::optional<AbortNote> a = decode_abort(f.payload);
          if (!a) return violation(c, fmt::format("sent an abort message of {} bytes (expected 8)", f.payload.size()));
          const int pe = a->pe >= -1 && a->pe < cfg_.size ? a->pe : c.rank;
          end_job(pe, a->code, "", c.rank);
          break;
        }
        case MsgType::kGoodbye: {
          (void)send_to(c, MsgType::kGoodbyeAck, {});
          std::lock_guard lk(mu_);
          c.goodbye = true;
          --open_;
          cv_.notify_all();
          break;
        }
        default:
          return violation(c, fmt::format("sent a message of unknown type {}", static_cast<uint32_t>(f.type)));
      }
    }
  }

  // When every PE's contribution is in: the concatenation to each PE and to rank 0's caller. Called with
  // mu_ held (by `lk`), which it releases.
  void complete_round(std::unique_lock<std::mutex>& lk) {
    for (char h : have_)
      if (!h) return;
    const size_t bytes = contrib_[0].size();
    for (size_t r = 1; r < contrib_.size(); ++r) {
      if (contrib_[r].size() != bytes) {
        const std::string what = fmt::format("exchange of {} bytes where PE 0 gave {}", contrib_[r].size(), bytes);
        lk.unlock();
        return violation(*pes_[r], what);
      }
    }
    result_.clear();
    for (auto& c : contrib_) result_.insert(result_.end(), c.begin(), c.end());
    have_.assign(have_.size(), 0);
    ++rounds_done_;
    std::vector<char> all = result_;
    lk.unlock();
    cv_.notify_all();
    for (size_t r = 1; r < pes_.size(); ++r) (void)send_to(*pes_[r], MsgType::kGathered, all);
  }

  void lost(Conn& c) {
    close_conn(c);
    bool death;
    {
      std::lock_guard lk(mu_);
      death = !c.goodbye;
      if (death) --open_;
    }
    cv_.notify_all();
    if (death && cfg_.resilient) return;  // the launcher marks it failed; the job goes on
    if (death)
      end_job(c.rank, 1,
              fmt::format("PE {} (host {}) lost its bootstrap connection: it died or its host went away; ending the "
                          "job",
                          c.rank, host_part(c.peer)),
              c.rank);
  }

  // An authenticated PE broke the protocol: a bug, treated as that PE's failure.
  void violation(Conn& c, const std::string& what) {
    close_conn(c);
    {
      std::lock_guard lk(mu_);
      if (!c.goodbye) --open_;
      c.goodbye = true;  // counted once
    }
    end_job(c.rank, 1, fmt::format("PE {} (host {}) {} on its bootstrap connection; ending the job", c.rank,
                                   host_part(c.peer), what),
            c.rank);
  }

  // The job ends because of `pe`: one line (if any, and only for the first cause), kAbort to every PE but
  // `skip`, then this PE's abort hook. The relays go first: the hook makes this process's waits exit.
  void end_job(int pe, int code, const std::string& line, int skip) {
    if (!end_once(fmt::format("PE {} ended the job", pe))) return;
    if (!line.empty()) log::write_line(log::Level::kError, line);
    const std::vector<char> note = encode_abort({pe, code});
    for (size_t r = 1; r < pes_.size(); ++r)
      if (static_cast<int>(r) != skip) (void)send_to(*pes_[r], MsgType::kAbort, note, kAbortSendWait);
    if (AbortHook hook = abort_hook()) hook(pe, code);
  }

  void shut_down() {
    stop_serving();
    for (auto& c : pes_)
      if (c) close_conn(*c);
    if (listen_fd_ >= 0 && !keep_listen_) {
      ::close(listen_fd_);
      listen_fd_ = -1;
    }
    wake_.close();
  }

  Config cfg_;
  int listen_fd_;
  bool keep_listen_ = false;  // a clean finalize: shut_down leaves the listening socket for the next init
  std::vector<std::unique_ptr<Conn>> pes_;  // [rank]; [0] stays empty
  // Guarded by mu_:
  int open_ = 0;  // PEs whose connection is open and who have not said goodbye
  std::vector<std::vector<char>> contrib_;  // this round's contributions, [rank]
  std::vector<char> have_;                  // [rank]: contributed this round
  uint64_t rounds_done_ = 0;
  std::vector<char> result_;                // the last round's concatenation
};
}  // namespace

Result<std::unique_ptr<Endpoint>> start_rank0(const Config& cfg, int listen_fd) {
  auto star = std::make_unique<Star>(cfg, listen_fd);
  TS_RETURN_IF_ERROR(star->start());
  return std::unique_ptr<Endpoint>(std::move(star));
}

}  // namespace tessera::bootstrap::tcp
