// Resilient mode under tessera-run --hosts: the agents' heartbeats over the hosts' own network, which find a
// host whose link went down while its agent's channel to the launcher (the remote shell) still works. Each
// agent sends a small UDP datagram to every other host's agent every kBeatNs, carrying the job's heartbeat
// token (drawn by the launcher, sent in kJob) and its host's index; one that hears nothing from a host for
// the silence limit reports it once (kLinkLost), and the launcher decides which host to fence
// (hosts_failure.h). A datagram without the token is ignored: nobody outside the job can keep a host alive
// by accident, though one who reads the token off the wire could.
//
// Thread safety: the agent's thread only.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::run {

class Heartbeat {
 public:
  static constexpr uint64_t kBeatNs = 100'000'000;
  ~Heartbeat();
  // Opens the socket (any address, a port of the kernel's choosing: port()).
  Status open(const std::string& token, uint32_t my_index, uint64_t silence_ns);
  int fd() const { return fd_; }
  uint16_t port() const { return port_; }
  // The other hosts, from the launcher's kPeers: {n u32, then per host: index u32, name str, port u32}.
  // Their silence is counted from `now`. Fails on a malformed payload or a name that does not resolve.
  Status set_peers(const std::vector<char>& payload, uint64_t now);
  void on_readable(uint64_t now);
  // Sends the beats that are due; returns the hosts silent past the limit, each once.
  std::vector<uint32_t> tick(uint64_t now);

 private:
  struct Peer {
    uint32_t index;
    sockaddr_in addr;
    uint64_t last_heard;
    bool reported;
  };
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string token_;
  uint32_t my_index_ = 0;
  uint64_t silence_ns_ = 0, next_beat_ = 0;
  std::vector<Peer> peers_;
};

}  // namespace tessera::run
