// Sockets for the TCP rendezvous (IPv4): resolving rank 0's address, listening, connecting with retries
// until a deadline, and reading whole frames under a deadline. Deadlines are absolute now_ns() values
// (base/cpu.h). Every error names the address and what was awaited.
#pragma once
#include <netinet/in.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "bootstrap/tcp.h"
#include "bootstrap/tcp_wire.h"

namespace tessera::bootstrap::tcp {

// The first IPv4 address of a.host. A name whose lookup fails for now (EAI_AGAIN) is asked again until
// the deadline; one that does not exist is an error at once.
Result<sockaddr_in> resolve(const Address& a, uint64_t deadline_ns);

// A listening socket on a (SO_REUSEADDR, so a port left in TIME_WAIT by an earlier job can be taken at
// once); a.port may be 0 here, for tessera_bootstrap_uid. The socket is close-on-exec.
Result<int> listen_on(const Address& a);
// The port a listening socket is bound to.
Result<uint16_t> local_port(int fd);

// Connects to rank 0, retrying with backoff (10 ms doubling to 500 ms) while nothing listens yet, until
// the deadline; on expiry the error names the address, this rank and the last error seen. `prepare`, if
// given, runs on each new socket before its connect() (options the handshake must already have), and its
// error ends the attempt.
Result<int> connect_until(const sockaddr_in& to, const std::string& where, int rank, uint64_t deadline_ns,
                          const std::function<Status(int fd)>& prepare = nullptr);

// Who reads the connection at its other end: a thread that always does (the bootstrap's connections), or a
// PE only while it is in a call (the transport's data connections between hosts: its PE may compute for
// minutes while a peer's large message waits in the socket).
enum class Reader { kAlways, kInCalls };
// Options every such connection gets: no Nagle delay (barriers are small messages); keepalive probes, so
// that a host that vanishes without closing its connections (power, network) is noticed while the
// connection is idle; and a send timeout, so that a peer that stops reading cannot block its sender past
// the job's deadline. With Reader::kAlways also TCP_USER_TIMEOUT, which gives a peer up once data stays
// unacknowledged for a few seconds; Linux applies it to a window kept shut as well, so a reader that is only
// busy would break a kInCalls connection (the job ended with "Connection timed out" when a PE on another
// host did not read for 3 s): there a vanished host is noticed by the bootstrap's connections instead.
void tune(int fd, uint64_t send_timeout_ns, Reader reader = Reader::kAlways);

// "IP:PORT" of the connection's other end ("?" when the kernel no longer knows it).
std::string peer_of(int fd);
// The IP part of peer_of's text.
std::string host_part(const std::string& peer);

// Reads into `reader` until it yields a frame, the peer closes, the reader reports a frame over its limit,
// or the deadline passes. `who` names the peer in errors.
Status read_frame(int fd, FrameReader& reader, Frame* out, uint64_t deadline_ns, const std::string& who);

// Sends one frame; a send that cannot finish within the socket's send timeout is an error.
Status send_frame(int fd, MsgType type, const void* data, size_t len);
inline Status send_frame(int fd, MsgType type, const std::vector<char>& data) {
  return send_frame(fd, type, data.data(), data.size());
}

// A pipe that wakes a thread blocked in poll(): both ends non-blocking and close-on-exec.
struct WakePipe {
  int rd = -1, wr = -1;
  Status open();
  void wake() const;   // async-signal-safe; never blocks
  void drain() const;
  void close();
};

// A thread for the rendezvous's own work, started with every signal blocked: signals meant for the
// program (SIGINT, SIGTERM, SIGCHLD, ...) are delivered to its own threads, never to ours.
std::thread quiet_thread(std::function<void()> body);

// What both ends of the star keep alike: the thread that serves the connections, the pipe that wakes it,
// and the end of the job, under the mutex that also guards the rest of each end's state. The first cause
// of the end wins; later ones are not told again.
class Served : public Endpoint {
 protected:
  // Records that the job ended for `why` and wakes every waiter; false when it had ended already.
  bool end_once(std::string why);
  // The error of a call made after the end (mu_ held).
  Status ended_error() const;
  // Tells the serving thread to stop, wakes it and joins it (when it runs).
  void stop_serving();

  WakePipe wake_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  bool stop_ = false;
  bool ended_ = false;
  std::string end_reason_;
};

}  // namespace tessera::bootstrap::tcp
