"""The bootstrap's framing as the outside clients of tests/scripts see it: an 8-byte header (type, length,
little-endian 32-bit each), then the payload (src/bootstrap/tcp_wire.h, src/bootstrap/protocol.h)."""
import socket
import struct
import time


def read_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data


def read_msg(s):
    """(type, payload); (None, b"") when the peer closed the connection; ("timeout", b"") when it said
    nothing within the socket's timeout."""
    try:
        t, n = struct.unpack("<II", read_exact(s, 8))
        return t, read_exact(s, n)
    except (EOFError, ConnectionResetError):
        return None, b""
    except socket.timeout:
        return "timeout", b""


def tcp_connect(port, host="127.0.0.1"):
    """A connection to the TCP rendezvous, retried for 20 s while rank 0 starts listening."""
    deadline = time.monotonic() + 20
    while True:
        try:
            s = socket.create_connection((host, port), timeout=10)
            s.settimeout(10)
            return s
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
