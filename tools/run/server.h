// The bootstrap server side of the launcher (see src/bootstrap/protocol.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bootstrap/protocol.h"
#include "bootstrap/tcp_wire.h"

namespace tessera::run {

class BootstrapServer {
 public:
  BootstrapServer(int n_pes, std::string secret) : n_(n_pes), secret_(std::move(secret)), conns_() {}
  ~BootstrapServer();
  // Listens on a socket inside a new private directory; returns its path.
  Result<std::string> listen();
  int listen_fd() const { return listen_fd_; }
  // fds to poll besides the listening one.
  std::vector<int> client_fds() const;
  void on_accept();
  // Handles input on fd without blocking: reads what has arrived and acts on every whole message. A
  // connection whose first message is not a hello with the job's secret (kHelloBytes at most), whose
  // peer runs under another uid, or that breaks the protocol later is closed; nothing else is affected.
  void on_readable(int fd);
  // Closes the connection of `rank`'s process, if still open: its process failed and a replacement will
  // say hello under the same rank (tessera-run --restarts).
  void forget(int rank);
  // What answers a health request (protocol.h: kHealth): the report for an overdue limit, as JSON or text.
  void set_health(std::function<std::string(uint64_t overdue_ns, bool json)> f) { health_ = std::move(f); }

  // A hello's payload: the secret and a rank. Before it, a connection may announce no longer message, so
  // an unauthenticated client cannot make the launcher allocate more than this.
  static constexpr uint32_t kHelloBytes = bootstrap::kSecretChars + sizeof(uint32_t);

 private:
  struct Conn {
    int fd = -1;
    int rank = -1;
    bool authed = false;
    bool pending = false;
    std::vector<char> contribution;
    // Bytes received and not yet a whole message: a PE's message may arrive in pieces, and the launcher
    // never waits for the rest (a stalled or hostile client must not hold up the job's other PEs).
    bootstrap::tcp::FrameReader reader{kHelloBytes};
  };
  void close_conn(size_t i);
  // Logs why connection i is refused (it never authenticated) and closes it.
  void refuse(size_t i, const std::string& why);
  // Acts on one whole message of connection i; false when the connection was closed.
  bool on_message(size_t i, bootstrap::tcp::Frame& f);
  void maybe_complete_allgather();

  int n_;
  std::string secret_;
  std::function<std::string(uint64_t, bool)> health_;
  std::vector<Conn> conns_;
  int listen_fd_ = -1;
  std::string dir_, path_;
};

}  // namespace tessera::run
