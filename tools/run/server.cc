#include "server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "bootstrap/protocol.h"

namespace tessera::run {

using bootstrap::MsgType;

BootstrapServer::~BootstrapServer() {
  for (auto& c : conns_)
    if (c.fd >= 0) ::close(c.fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

Result<std::string> BootstrapServer::listen() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tessera-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return sys_error("mkdtemp(" + templ + ")");
  dir_ = buf.data();  // mode 0700: only this user can reach the socket
  path_ = dir_ + "/bootstrap.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(addr.sun_path))
    return invalid_arg("socket path {:?} is longer than {} bytes (set TMPDIR to a shorter directory)", path_,
                       sizeof(addr.sun_path) - 1);
  std::strcpy(addr.sun_path, path_.c_str());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return sys_error("socket");
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return sys_error("bind " + path_);
  ::chmod(path_.c_str(), 0600);
  if (::listen(listen_fd_, 1024) != 0) return sys_error("listen");
  return path_;
}

std::vector<int> BootstrapServer::client_fds() const {
  std::vector<int> fds;
  for (auto& c : conns_)
    if (c.fd >= 0) fds.push_back(c.fd);
  return fds;
}

void BootstrapServer::on_accept() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    Conn c;
    c.fd = fd;
    conns_.push_back(std::move(c));
  }
}

void BootstrapServer::close_conn(size_t i) {
  if (conns_[i].fd >= 0) ::close(conns_[i].fd);
  conns_[i].fd = -1;
  conns_[i].pending = false;
}

void BootstrapServer::on_readable(int fd) {
  size_t i = 0;
  while (i < conns_.size() && conns_[i].fd != fd) ++i;
  if (i == conns_.size()) return;
  Conn& c = conns_[i];
  MsgType type;
  std::vector<char> payload;
  // A message is small and the PE sends it whole; a short wait guards against a stalled peer.
  Status st = bootstrap::recv_msg(fd, &type, &payload, 5000, "a PE");
  if (!st.is_ok()) {
    close_conn(i);  // EOF: the PE exited (its exit status is handled by the job)
    return;
  }
  if (!c.authed) {
    uint32_t rank = 0;
    bool ok = type == MsgType::kHello && payload.size() == bootstrap::kSecretChars + sizeof rank;
    if (ok) {
      std::string secret(payload.data(), bootstrap::kSecretChars);
      std::memcpy(&rank, payload.data() + bootstrap::kSecretChars, sizeof rank);
      ok = bootstrap::secret_equal(secret, secret_) && rank < static_cast<uint32_t>(n_);
      for (auto& o : conns_)
        if (o.authed && o.rank == static_cast<int>(rank)) ok = false;  // one connection per rank
    }
    if (!ok) {
      std::fprintf(stderr, "tessera-run: refused a bootstrap connection that did not present the job's secret\n");
      close_conn(i);
      return;
    }
    c.authed = true;
    c.rank = static_cast<int>(rank);
    (void)bootstrap::send_msg(fd, MsgType::kWelcome, nullptr, 0);
    return;
  }
  if (type != MsgType::kAllgather || c.pending) {
    close_conn(i);
    return;
  }
  c.pending = true;
  c.contribution = std::move(payload);
  maybe_complete_allgather();
}

void BootstrapServer::maybe_complete_allgather() {
  std::vector<Conn*> by_rank(static_cast<size_t>(n_), nullptr);
  for (auto& c : conns_)
    if (c.fd >= 0 && c.authed && c.pending) by_rank[static_cast<size_t>(c.rank)] = &c;
  for (Conn* c : by_rank)
    if (!c) return;
  std::vector<char> all;
  for (Conn* c : by_rank) all.insert(all.end(), c->contribution.begin(), c->contribution.end());
  for (Conn* c : by_rank) {
    (void)bootstrap::send_msg(c->fd, MsgType::kGathered, all.data(), all.size());
    c->pending = false;
    c->contribution.clear();
  }
}

}  // namespace tessera::run
