#include "bootstrap/protocol.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace tessera::bootstrap {
namespace {
Status write_all(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t w = ::send(fd, p, len, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return sys_error("bootstrap: send");
    }
    p += w;
    len -= static_cast<size_t>(w);
  }
  return Status::ok();
}
Status read_all(int fd, void* data, size_t len, int timeout_ms, const char* who) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, timeout_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      return sys_error("bootstrap: poll");
    }
    if (r == 0)
      return make_status(Code::kTimeout, "bootstrap: no answer from {} within {} s", who, timeout_ms / 1000);
    ssize_t n = ::read(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error(std::string("bootstrap: read from ") + who);
    }
    if (n == 0) return make_status(Code::kAborted, "bootstrap: {} closed the connection", who);
    p += n;
    len -= static_cast<size_t>(n);
  }
  return Status::ok();
}
}  // namespace

Status send_msg(int fd, MsgType type, const void* data, size_t len) {
  if (len > kMaxPayload) return invalid_arg("bootstrap: message of {} bytes (limit {})", len, kMaxPayload);
  MsgHeader h{static_cast<uint32_t>(type), static_cast<uint32_t>(len)};
  TS_RETURN_IF_ERROR(write_all(fd, &h, sizeof h));
  return len ? write_all(fd, data, len) : Status::ok();
}

Status recv_msg(int fd, MsgType* type, std::vector<char>* payload, int timeout_ms, const char* who) {
  MsgHeader h;
  TS_RETURN_IF_ERROR(read_all(fd, &h, sizeof h, timeout_ms, who));
  if (h.length > kMaxPayload)
    return invalid_arg("bootstrap: {} sent a message of {} bytes (limit {})", who, h.length, kMaxPayload);
  *type = static_cast<MsgType>(h.type);
  payload->resize(h.length);
  return h.length ? read_all(fd, payload->data(), h.length, timeout_ms, who) : Status::ok();
}

std::string random_hex(size_t chars) {
  std::string out;
  unsigned char buf[64];
  static const char* hex = "0123456789abcdef";
  while (out.size() < chars) {
    ssize_t n = getrandom(buf, sizeof buf, 0);
    if (n <= 0) continue;
    for (ssize_t i = 0; i < n && out.size() < chars; ++i) out.push_back(hex[buf[i] & 15]);
  }
  return out;
}

Status check_allgather_bytes(const char* who, size_t bytes, size_t n) {
  if (bytes > kMaxPayload / n)
    return invalid_arg("{}: allgather of {} bytes from each of {} PEs exceeds the message limit of {}", who, bytes,
                       n, kMaxPayload);
  return Status::ok();
}

bool secret_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace tessera::bootstrap
