// The bootstrap server side of the launcher (see src/bootstrap/protocol.h).
#pragma once
#include <string>
#include <vector>

#include "base/status.h"

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
  // Handles input on fd; a broken or unauthenticated connection is closed.
  void on_readable(int fd);

 private:
  struct Conn {
    int fd = -1;
    int rank = -1;
    bool authed = false;
    bool pending = false;
    std::vector<char> contribution;
  };
  void close_conn(size_t i);
  void maybe_complete_allgather();

  int n_;
  std::string secret_;
  std::vector<Conn> conns_;
  int listen_fd_ = -1;
  std::string dir_, path_;
};

}  // namespace tessera::run
