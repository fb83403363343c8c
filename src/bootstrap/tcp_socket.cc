#include "bootstrap/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/cpu.h"

namespace tessera::bootstrap::tcp {
namespace {
int ms_until(uint64_t deadline_ns) {
  uint64_t now = now_ns();
  if (now >= deadline_ns) return 0;
  return static_cast<int>(std::min<uint64_t>((deadline_ns - now + 999999) / 1000000, 0x7fffffff));
}
double seconds_from(uint64_t start_ns, uint64_t end_ns) {
  return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) / 1e9 : 0.0;
}
void set_blocking(int fd, bool blocking) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) (void)::fcntl(fd, F_SETFL, blocking ? fl & ~O_NONBLOCK : fl | O_NONBLOCK);
}
}  // namespace

Result<sockaddr_in> resolve(const Address& a, uint64_t deadline_ns) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  for (uint64_t backoff_ms = 10;; backoff_ms = std::min<uint64_t>(backoff_ms * 2, 500)) {
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(a.host.c_str(), nullptr, &hints, &res);
    if (rc == 0) {
      sockaddr_in sa;
      std::memcpy(&sa, res->ai_addr, sizeof sa);
      ::freeaddrinfo(res);
      sa.sin_port = htons(a.port);
      return sa;
    }
    if (rc != EAI_AGAIN || now_ns() >= deadline_ns)
      return invalid_arg("bootstrap (tcp): cannot resolve host {:?} of {} to an IPv4 address: {}", a.host, a.where(),
                         ::gai_strerror(rc));
    ::usleep(static_cast<useconds_t>(backoff_ms * 1000));
  }
}

Result<int> listen_on(const Address& a) {
  TS_ASSIGN_OR_RETURN(sockaddr_in sa, resolve(a, now_ns()));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("bootstrap (tcp): socket");
  int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // A peer of this host that connected to the port before we listened may hold it for a moment (a
  // connection to itself, which connect_until drops): the bind is tried again for up to a second.
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  for (int tries = 0; rc != 0 && errno == EADDRINUSE && tries < 20; ++tries) {
    ::usleep(50000);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  if (rc != 0) {
    const int e = errno;
    ::close(fd);
    const char* hint = e == EADDRINUSE      ? " (another process, or another job, listens on that port)"
                       : e == EADDRNOTAVAIL ? " (rank 0 must run on the host that address belongs to)"
                                            : "";
    return make_status(Code::kSystem, "bootstrap (tcp): rank 0 cannot listen on {}: {}{}", a.where(),
                       std::strerror(e), hint);
  }
  if (::listen(fd, SOMAXCONN) != 0) {
    Status st = sys_error(fmt::format("bootstrap (tcp): listen on {}", a.where()));
    ::close(fd);
    return st;
  }
  return fd;
}

Result<uint16_t> local_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return sys_error("bootstrap (tcp): getsockname");
  return static_cast<uint16_t>(ntohs(sa.sin_port));
}

namespace {
bool connected_to_itself(int fd) {
  sockaddr_in self{}, peer{};
  socklen_t a = sizeof self, b = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &a) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &b) != 0)
    return false;
  return self.sin_port == peer.sin_port && self.sin_addr.s_addr == peer.sin_addr.s_addr;
}
}  // namespace

Result<int> connect_until(const sockaddr_in& to, const std::string& where, int rank, uint64_t deadline_ns,
                          const std::function<Status(int fd)>& prepare) {
  const uint64_t start = now_ns();
  int last_errno = 0;
  for (uint64_t backoff_ms = 10;; backoff_ms = std::min<uint64_t>(backoff_ms * 2, 500)) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return sys_error("bootstrap (tcp): socket");
    if (prepare) {
      if (Status st = prepare(fd); !st.is_ok()) {
        ::close(fd);
        return st;
      }
    }
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    if (rc != 0 && errno == EINPROGRESS) {
      // A SYN to a host that drops it would wait for the kernel's own timeout (minutes): ours is shorter.
      pollfd p{fd, POLLOUT, 0};
      int r;
      do r = ::poll(&p, 1, ms_until(deadline_ns));
      while (r < 0 && errno == EINTR);
      int err = r > 0 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof err;
      if (r > 0) (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    // A connection to a port of this host that nobody listens on yet can connect to itself: the kernel may
    // pick the destination port as the source port (TCP simultaneous open). It would then hold the port
    // rank 0 is about to listen on. Such a socket is dropped and the attempt counts as refused.
    if (rc == 0 && connected_to_itself(fd)) {
      rc = -1;
      errno = ECONNREFUSED;
    }
    if (rc == 0) {
      set_blocking(fd, true);
      return fd;
    }
    last_errno = errno;
    ::close(fd);
    const uint64_t now = now_ns();
    if (now >= deadline_ns)
      return make_status(Code::kTimeout,
                         "bootstrap (tcp): rank {} waited {:.1f} s (TESSERA_TIMEOUT) for rank 0 to listen on {}: {}",
                         rank, seconds_from(start, now), where, std::strerror(last_errno));
    ::usleep(static_cast<useconds_t>(std::min<uint64_t>(backoff_ms, (deadline_ns - now) / 1000000 + 1) * 1000));
  }
}

void tune(int fd, uint64_t send_timeout_ns, Reader reader) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  // A host that vanishes (power, cable: no FIN, no RST) must end the job within a few seconds: the first
  // probe after 1 s of silence, then one a second, and the peer is given up after 2 unanswered ones (about
  // 3 s); data left unacknowledged for 3 s gives up the same way (TCP_USER_TIMEOUT). A probe is one small
  // segment a second per PE on an idle connection.
  int idle = 1, interval = 1, count = 2;
  unsigned user_timeout_ms = 3000;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  if (reader == Reader::kAlways)
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  timeval tv{static_cast<time_t>(send_timeout_ns / 1000000000ull),
             static_cast<suseconds_t>((send_timeout_ns % 1000000000ull) / 1000)};
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

std::string peer_of(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 || sa.sin_family != AF_INET) return "?";
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
  return fmt::format("{}:{}", ip, ntohs(sa.sin_port));
}

std::string host_part(const std::string& peer) {
  size_t colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

Status read_frame(int fd, FrameReader& reader, Frame* out, uint64_t deadline_ns, const std::string& who) {
  const uint64_t start = now_ns();
  for (;;) {
    uint32_t announced = 0;
    switch (reader.next(out, &announced)) {
      case FrameReader::Next::kFrame: return Status::ok();
      case FrameReader::Next::kTooLarge:
        return invalid_arg("bootstrap (tcp): {} sent a message of {} bytes (limit {})", who, announced, reader.limit());
      case FrameReader::Next::kMore: break;
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, ms_until(deadline_ns));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return sys_error("bootstrap (tcp): poll");
    if (r == 0)
      return make_status(Code::kTimeout, "bootstrap (tcp): no answer from {} within {:.1f} s", who,
                         seconds_from(start, now_ns()));
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return sys_error(fmt::format("bootstrap (tcp): read from {}", who));
    if (n == 0) return make_status(Code::kAborted, "bootstrap (tcp): {} closed the connection", who);
    reader.feed(buf, static_cast<size_t>(n));
  }
}

Status send_frame(int fd, MsgType type, const void* data, size_t len) { return send_msg(fd, type, data, len); }

Status WakePipe::open() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return sys_error("bootstrap (tcp): pipe");
  rd = fds[0];
  wr = fds[1];
  return Status::ok();
}
void WakePipe::wake() const {
  char c = 1;
  ssize_t ignored = ::write(wr, &c, 1);  // a full pipe already holds a wake-up
  (void)ignored;
}
void WakePipe::drain() const {
  char buf[64];
  while (::read(rd, buf, sizeof buf) > 0) {
  }
}
void WakePipe::close() {
  if (rd >= 0) ::close(rd);
  if (wr >= 0) ::close(wr);
  rd = wr = -1;
}

std::thread quiet_thread(std::function<void()> body) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the mask
  std::thread t(std::move(body));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

bool Served::end_once(std::string why) {
  {
    std::lock_guard lk(mu_);
    if (ended_) return false;
    ended_ = true;
    end_reason_ = std::move(why);
  }
  cv_.notify_all();
  return true;
}

Status Served::ended_error() const { return make_status(Code::kAborted, "bootstrap (tcp): {}", end_reason_); }

void Served::stop_serving() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  wake_.wake();
  thread_.join();
}

}  // namespace tessera::bootstrap::tcp
