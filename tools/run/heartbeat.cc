#include "heartbeat.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "agent_wire.h"

namespace tessera::run {

Heartbeat::~Heartbeat() {
  if (fd_ >= 0) ::close(fd_);
}

Status Heartbeat::open(const std::string& token, uint32_t my_index, uint64_t silence_ns) {
  token_ = token;
  my_index_ = my_index;
  silence_ns_ = silence_ns;
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return sys_error("heartbeat socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return sys_error("heartbeat socket: bind");
  socklen_t len = sizeof a;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return sys_error("heartbeat socket: getsockname");
  port_ = ntohs(a.sin_port);
  return Status::ok();
}

Status Heartbeat::set_peers(const std::vector<char>& payload, uint64_t now) {
  Reader r(payload);
  const uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && i < 4096; ++i) {
    const uint32_t index = r.u32();
    const std::string name = r.str();
    const uint32_t port = r.u32();
    if (index == my_index_) continue;
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    if (const int e = ::getaddrinfo(name.c_str(), nullptr, &hints, &res); e != 0 || !res)
      return invalid_arg("heartbeats: host {} does not resolve: {}", name, gai_strerror(e));
    Peer p{.index = index, .addr = *reinterpret_cast<sockaddr_in*>(res->ai_addr), .last_heard = now, .reported = false};
    ::freeaddrinfo(res);
    p.addr.sin_port = htons(static_cast<uint16_t>(port));
    peers_.push_back(p);
  }
  if (!r.ok_and_done()) return invalid_arg("heartbeats: a malformed list of hosts");
  return Status::ok();
}

void Heartbeat::on_readable(uint64_t now) {
  char buf[256];
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return;
    if (static_cast<size_t>(n) != token_.size() + 4 || std::memcmp(buf, token_.data(), token_.size()) != 0) continue;
    uint32_t index;
    std::memcpy(&index, buf + token_.size(), 4);
    for (Peer& p : peers_)
      if (p.index == index) p.last_heard = now;
  }
}

std::vector<uint32_t> Heartbeat::tick(uint64_t now) {
  std::vector<uint32_t> silent;
  if (peers_.empty()) return silent;
  if (now >= next_beat_) {
    next_beat_ = now + kBeatNs;
    std::string beat = token_;
    beat.append(reinterpret_cast<const char*>(&my_index_), 4);
    for (const Peer& p : peers_)
      (void)::sendto(fd_, beat.data(), beat.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&p.addr),
                     sizeof p.addr);
  }
  for (Peer& p : peers_)
    if (!p.reported && now - p.last_heard >= silence_ns_) {
      p.reported = true;
      silent.push_back(p.index);
    }
  return silent;
}

}  // namespace tessera::run
