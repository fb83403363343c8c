#include "agent_wire.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/protocol.h"

namespace tessera::run {
namespace {
// Strings and lists in a payload: far above anything a command line or an environment holds, far below
// the frame limit, so that a corrupted length fails instead of allocating.
constexpr uint32_t kMaxItems = 1u << 16;
}  // namespace

Writer& Writer::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}

Writer& Writer::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  buf_.insert(buf_.end(), s.begin(), s.end());
  return *this;
}

Writer& Writer::strs(const std::vector<std::string>& v) {
  u32(static_cast<uint32_t>(v.size()));
  for (const auto& s : v) str(s);
  return *this;
}

uint32_t Reader::u32() {
  if (!ok_ || buf_.size() - pos_ < 4) {
    ok_ = false;
    return 0;
  }
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(buf_[pos_ + i])) << (8 * i);
  pos_ += 4;
  return v;
}

std::string Reader::str() {
  const uint32_t n = u32();
  if (!ok_ || buf_.size() - pos_ < n) {
    ok_ = false;
    return {};
  }
  std::string s(buf_.data() + pos_, n);
  pos_ += n;
  return s;
}

std::vector<std::string> Reader::strs() {
  const uint32_t n = u32();
  std::vector<std::string> v;
  if (n > kMaxItems) ok_ = false;
  for (uint32_t i = 0; ok_ && i < n; ++i) v.push_back(str());
  return v;
}

std::vector<char> encode_job(const JobSpec& j) {
  Writer w;
  w.str(j.job_id).str(j.host).u32(j.host_index).u32(j.first_rank).u32(j.n_ranks).u32(j.size);
  w.str(j.bootstrap_host).str(j.cwd).strs(j.argv).strs(j.env).u32(j.resilient).u32(j.stop_limit_ms).str(j.hb_token);
  return w.bytes();
}

std::optional<JobSpec> decode_job(const std::vector<char>& payload) {
  Reader r(payload);
  JobSpec j;
  j.job_id = r.str();
  j.host = r.str();
  j.host_index = r.u32();
  j.first_rank = r.u32();
  j.n_ranks = r.u32();
  j.size = r.u32();
  j.bootstrap_host = r.str();
  j.cwd = r.str();
  j.argv = r.strs();
  j.env = r.strs();
  j.resilient = r.u32();
  j.stop_limit_ms = r.u32();
  j.hb_token = r.str();
  if (!r.ok_and_done() || j.resilient > 1 || j.argv.empty() || j.n_ranks == 0 || j.size == 0 || j.first_rank >= j.size ||
      j.n_ranks > j.size - j.first_rank)
    return std::nullopt;
  return j;
}

Status write_frame(int fd, AgentMsg type, const std::vector<char>& payload) {
  if (payload.size() > bootstrap::kMaxPayload)
    return invalid_arg("agent channel: a message of {} bytes (limit {})", payload.size(), bootstrap::kMaxPayload);
  bootstrap::MsgHeader h{static_cast<uint32_t>(type), static_cast<uint32_t>(payload.size())};
  std::vector<char> all(sizeof h + payload.size());
  std::memcpy(all.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(all.data() + sizeof h, payload.data(), payload.size());
  size_t off = 0;
  while (off < all.size()) {
    ssize_t w = ::write(fd, all.data() + off, all.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return sys_error("agent channel: write");
    off += static_cast<size_t>(w);
  }
  return Status::ok();
}

}  // namespace tessera::run
