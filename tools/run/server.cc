#include "server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
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
    // The private directory already keeps other users from connecting; the peer's credentials are checked
    // too, so that a directory opened up by hand (or a socket reached through a passed descriptor) still
    // admits only this user's processes.
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
      refuse(conns_.size() - 1, "its credentials could not be read");
    else if (cred.uid != ::geteuid())
      refuse(conns_.size() - 1,
             fmt::format("pid {} runs as uid {}, not the job's uid {}", cred.pid, cred.uid, ::geteuid()));
  }
}

void BootstrapServer::forget(int rank) {
  for (size_t i = 0; i < conns_.size(); ++i)
    if (conns_[i].fd >= 0 && conns_[i].authed && conns_[i].rank == rank) close_conn(i);
}

void BootstrapServer::close_conn(size_t i) {
  if (conns_[i].fd >= 0) ::close(conns_[i].fd);
  conns_[i].fd = -1;
  conns_[i].pending = false;
}

void BootstrapServer::refuse(size_t i, const std::string& why) {
  std::fprintf(stderr, "tessera-run: refused a bootstrap connection that did not present the job's secret (%s)\n",
               why.c_str());
  close_conn(i);
}

void BootstrapServer::on_readable(int fd) {
  size_t i = 0;
  while (i < conns_.size() && conns_[i].fd != fd) ++i;
  if (i == conns_.size()) return;
  char buf[65536];
  // poll() said readable, so this does not wait; MSG_DONTWAIT keeps it so if another reader got there first.
  const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) {
    // The end of a PE's connection is its exit (the job handles its status); before the hello, a client
    // that leaves is refused like any other.
    if (!conns_[i].authed) refuse(i, "it closed the connection before a whole hello");
    else close_conn(i);
    return;
  }
  conns_[i].reader.feed(buf, static_cast<size_t>(n));
  for (;;) {
    bootstrap::tcp::Frame f;
    uint32_t announced = 0;
    const auto next = conns_[i].reader.next(&f, &announced);
    if (next == bootstrap::tcp::FrameReader::Next::kMore) return;
    if (next == bootstrap::tcp::FrameReader::Next::kTooLarge) {
      if (!conns_[i].authed)
        refuse(i, fmt::format("a message of {} bytes before the hello (limit {})", announced, kHelloBytes));
      else
        close_conn(i);
      return;
    }
    if (!on_message(i, f)) return;
  }
}

bool BootstrapServer::on_message(size_t i, bootstrap::tcp::Frame& f) {
  Conn& c = conns_[i];
  if (!c.authed) {
    uint32_t rank = 0;
    if (f.type == MsgType::kHealth && f.payload.size() == kHelloBytes) {
      // A health request (tessera-info --health): the job's secret as a hello has it, then one answer.
      if (!bootstrap::secret_equal(std::string(f.payload.data(), bootstrap::kSecretChars), secret_)) {
        refuse(i, "wrong secret in a health request");
        return false;
      }
      uint32_t word = 0;
      std::memcpy(&word, f.payload.data() + bootstrap::kSecretChars, sizeof word);
      const std::string report =
          health_ ? health_(uint64_t{word & ~bootstrap::kHealthJson} * 1'000'000, (word & bootstrap::kHealthJson) != 0)
                  : std::string("tessera-run: no health view in this launcher\n");
      (void)bootstrap::send_msg(c.fd, MsgType::kHealthReport, report.data(), report.size());
      close_conn(i);
      return false;
    }
    if (f.type != MsgType::kHello || f.payload.size() != kHelloBytes) {
      refuse(i, fmt::format("a message of type {} and {} bytes instead of a hello", static_cast<uint32_t>(f.type),
                            f.payload.size()));
      return false;
    }
    std::string secret(f.payload.data(), bootstrap::kSecretChars);
    std::memcpy(&rank, f.payload.data() + bootstrap::kSecretChars, sizeof rank);
    if (!bootstrap::secret_equal(secret, secret_)) {
      refuse(i, "wrong secret");
      return false;
    }
    if (rank >= static_cast<uint32_t>(n_)) {
      refuse(i, fmt::format("rank {} in a job of {} PEs", rank, n_));
      return false;
    }
    // One open connection per rank. A rank whose connection has closed may join again: a PE that
    // initializes after its last shmem_finalize (OpenSHMEM 1.6) joins the start-up a second time.
    for (auto& o : conns_)
      if (&o != &c && o.authed && o.fd >= 0 && o.rank == static_cast<int>(rank)) {
        refuse(i, fmt::format("rank {} has joined already", rank));
        return false;
      }
    c.authed = true;
    c.rank = static_cast<int>(rank);
    c.reader.set_limit(bootstrap::kMaxPayload);
    (void)bootstrap::send_msg(c.fd, MsgType::kWelcome, nullptr, 0);
    return true;
  }
  if (f.type != MsgType::kAllgather || c.pending) {
    close_conn(i);
    return false;
  }
  c.pending = true;
  c.contribution = std::move(f.payload);
  maybe_complete_allgather();
  return true;
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
