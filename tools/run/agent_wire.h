// The control channel between `tessera-run --hosts` (the launcher) and `tessera-run --agent` on each host,
// carried by the remote shell's stdin (launcher -> agent) and stdout (agent -> launcher). Frames as
// src/bootstrap/protocol.h frames them, {type u32, length u32} in host order then `length` bytes (every host
// is little-endian, as the TCP rendezvous asserts), read with the rendezvous's FrameReader; the payloads
// below are little-endian u32/i32 and strings as {length u32, bytes}.
// Both ends are the same binary (the launcher starts the agent by its own path), and the hello says which
// protocol the agent speaks, so a mismatch is one clear error.
//
//   agent -> launcher  kHello   {protocol u32, version string}              at start
//   launcher -> agent  kJob     JobSpec                                     right after starting the agent
//   agent -> launcher  kPort    {port u32, store port u32}                  first host's agent only
//   launcher -> agent  kStart   {bootstrap string: tcp://FIRSTHOST:PORT, store port u32}
//                                                                           once kPort came: start the PEs
// The store port is the MASTER_PORT the PEs get (torch's env:// rendezvous, which rank 0 serves on the first
// host): a second port the first host's agent found free there.
//   agent -> launcher  kOutput  {rank u32, stream u32 (1 out, 2 err), bytes: whole lines}
//   agent -> launcher  kExit    {rank u32, wait status i32, by_agent u32}   by_agent: the agent had signalled it
//                                                                           (2: killed, stopped too long)
//   agent -> launcher  kError   {text}                                      the agent cannot go on; it ends its PEs
//   agent -> launcher  kDone    {}                                          PEs ended, /dev/shm cleaned; last frame
//   launcher -> agent  kSignal  {signo u32}                                 relay to every PE's process group
//   launcher -> agent  kEnd     {}                                          end the PEs: TERM soon, KILL after a grace
// Resilient mode (JobSpec::resilient; host_control.h):
//   launcher -> agent  kPeFailed {rank u32, index u32}                      mark a PE failed, index-th
//   agent -> launcher  kPublish  {rank u32, records}                        a local PE's records changed;
//   launcher -> agent  kPublish  (the same)                                 relayed to every other agent
//   agent -> launcher  kHbPort   {port u32}                                 its heartbeat socket (heartbeat.h)
//   launcher -> agent  kPeers    {n u32, n x {index u32, name, port u32}}   every host's, once all reported
//   agent -> launcher  kLinkLost {host index u32}                           no heartbeat from it for the limit
//   launcher -> agent  kKill     {}                                         fenced: SIGKILL to every PE now
//                                                                           (their kExit: by_agent 3)
// The end of the agent's stdin means the launcher is gone: the agent ends its PEs at once and exits. The end
// of its stdout before kDone means the host (or its agent) is gone.
//
// The secret travels in kJob, never on a command line (ps shows those to every user of a host).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::run {

inline constexpr uint32_t kAgentProtocol = 3;

enum class AgentMsg : uint32_t {
  kHello = 101,
  kJob = 102,
  kPort = 103,
  kStart = 104,
  kOutput = 105,
  kExit = 106,
  kError = 107,
  kDone = 108,
  kSignal = 109,
  kEnd = 110,
  kPeFailed = 111,
  kPublish = 112,
  kHbPort = 113,
  kPeers = 114,
  kLinkLost = 115,
  kKill = 116,
};

struct JobSpec {
  std::string job_id;     // 16 lowercase hex digits: names the job's objects in /dev/shm
  std::string host;       // this host's name as the launcher was given it
  uint32_t host_index = 0;
  uint32_t first_rank = 0, n_ranks = 0;  // this host's PEs
  uint32_t size = 0;                     // PEs in the job
  std::string bootstrap_host;            // the first host's name: rank 0 listens there
  std::string cwd;                       // the launcher's working directory, which the PEs start in
  std::vector<std::string> argv;
  std::vector<std::string> env;          // K=V for every PE of the job (TESSERA_RANK is the agent's)
  uint32_t resilient = 0;                // --on-failure continue: the agent owns the host's control segment
  uint32_t stop_limit_ms = 0;            // resilient mode: a PE stopped this long is killed (kExit by_agent 2)
  std::string hb_token;                  // resilient mode: the heartbeats' token (heartbeat.h)
};

// Builds and reads payloads. A Reader that meets a short or malformed payload fails every later read.
class Writer {
 public:
  Writer& u32(uint32_t v);
  Writer& i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
  Writer& str(const std::string& s);
  Writer& strs(const std::vector<std::string>& v);
  const std::vector<char>& bytes() const { return buf_; }

 private:
  std::vector<char> buf_;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& buf) : buf_(buf) {}
  uint32_t u32();
  int32_t i32() { return static_cast<int32_t>(u32()); }
  std::string str();
  std::vector<std::string> strs();
  // Everything read, and nothing left over.
  bool ok_and_done() const { return ok_ && pos_ == buf_.size(); }

 private:
  const std::vector<char>& buf_;
  size_t pos_ = 0;
  bool ok_ = true;
};

std::vector<char> encode_job(const JobSpec& j);
std::optional<JobSpec> decode_job(const std::vector<char>& payload);

// Writes one frame to a pipe or socket; a peer that closed is an error, never SIGPIPE (ignored by both ends).
Status write_frame(int fd, AgentMsg type, const std::vector<char>& payload = {});

}  // namespace tessera::run
