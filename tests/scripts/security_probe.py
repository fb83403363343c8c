#!/usr/bin/env python3
"""Hostile clients of Tessera's listeners, for tests/scripts/security_test.sh (docs/security.md). Written from
the wire formats alone (src/bootstrap/protocol.h, src/bootstrap/tcp_wire.h), never from the library's code.

  security_probe.py unix SOCKET [SECRET]   against tessera-run's socket while its job starts:
      a hello with a wrong secret, without a secret, a truncated hello then close, garbage, a header
      announcing 64 MiB, a message of another type: each closed without a welcome. A half message left open
      must not hold up the launcher: the next client is refused at once. With SECRET (the job's, read the
      way the job's own user can read it, from /proc/PID/environ): a replay of rank 0's hello is refused,
      rank 0 having joined already.
  security_probe.py tcp PORT SIZE          against TCP rank 0 while it waits for its job: garbage, a truncated
      answer to the challenge then close, an answer of the wrong length, an answer whose MAC is made without
      the secret: each refused; a silent connection must not hold up another's handshake.
  security_probe.py connect SOCKET          (run as another user) connecting must fail with a permission error.
  security_probe.py hello SOCKET SECRET RANK  (run as another user who can reach the socket) a hello with the
      job's secret must still be closed without a welcome: the launcher admits only its own uid.

Prints one line per check ("ok ..." / "FAIL ...") and exits 0 when all passed."""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

from bootstrap_wire import read_msg, tcp_connect

HELLO, WELCOME, ALLGATHER = 1, 2, 3
CHALLENGE, AUTH, PROOF, REFUSED = 5, 6, 7, 8
SECRET_CHARS = 64
LABEL = b"tessera-bootstrap-v1"
failures = 0


def check(name, cond, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + name + (f" ({detail})" if detail else ""), flush=True)
    failures += 0 if cond else 1


def frame(t, payload):
    return struct.pack("<II", t, len(payload)) + payload


def hello(secret, rank):
    return frame(HELLO, secret.ljust(SECRET_CHARS, b"\0")[:SECRET_CHARS] + struct.pack("<I", rank))


def unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def unix_refused(path, name, data, close_first=False):
    """Sends `data` on a new connection: the launcher must close it without a welcome."""
    s = unix_connect(path)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        s.close()  # closed by the launcher before the client had said everything: refused all the same
        check(name + ": closed without a welcome", not close_first, "closed while sending")
        return
    if close_first:
        s.close()
        check(name + ": sent, then closed by the client", True)
        return
    start = time.monotonic()
    t, _ = read_msg(s)
    ms = (time.monotonic() - start) * 1000
    s.close()
    check(name + ": closed without a welcome", t is None, f"reply {t} after {ms:.0f} ms")


def unix_probes(path, secret):
    rnd = os.urandom(SECRET_CHARS).hex()[:SECRET_CHARS].encode()
    unix_refused(path, "unix: a wrong secret", hello(rnd, 1))
    unix_refused(path, "unix: no secret (an empty one)", hello(b"", 1))
    unix_refused(path, "unix: a hello without its payload", frame(HELLO, b""))
    unix_refused(path, "unix: a hello one byte short", frame(HELLO, hello(rnd, 1)[8:-1]))
    unix_refused(path, "unix: garbage", os.urandom(8) + os.urandom(200))
    unix_refused(path, "unix: a header announcing 64 MiB", struct.pack("<II", HELLO, 64 << 20))
    unix_refused(path, "unix: a message of another type", frame(ALLGATHER, b"x" * 68))
    unix_refused(path, "unix: a truncated hello, then close", hello(rnd, 1)[:20], close_first=True)
    # A client that sends half a hello and then waits: the launcher must not wait with it.
    held = unix_connect(path)
    held.sendall(hello(rnd, 1)[:30])
    time.sleep(0.2)
    s = unix_connect(path)
    s.sendall(hello(rnd, 1))
    start = time.monotonic()
    t, _ = read_msg(s)
    ms = (time.monotonic() - start) * 1000
    s.close()
    check("unix: with a half hello held open elsewhere, the next client is refused within 2 s",
          t is None and ms < 2000, f"reply {t} after {ms:.0f} ms")
    held.close()
    if secret:
        unix_refused(path, "unix: rank 0's hello replayed with the job's own secret", hello(secret, 0))


def tcp_refused(port, name, answer, want):
    """Answers the challenge with `answer`: rank 0 must refuse, saying `want`."""
    s = tcp_connect(port)
    t, ns = read_msg(s)
    s.sendall(answer(ns))
    t, reason = read_msg(s)
    s.close()
    text = reason.decode(errors="replace")
    check(name + ": refused", t == REFUSED and want in text, f"type {t}: {text}")


def tcp_probes(port, size):
    mac_without_secret = lambda ns, nc: hmac.new(b"", LABEL + ns + nc + struct.pack("<I", 1), hashlib.sha256).digest()
    nc = os.urandom(32)
    tcp_refused(port, "tcp: an answer whose MAC is made without the secret",
                lambda ns: frame(AUTH, struct.pack("<II", 1, size) + nc + mac_without_secret(ns, nc)),
                "wrong job secret")
    tcp_refused(port, "tcp: an answer of the wrong length",
                lambda ns: frame(AUTH, struct.pack("<II", 1, size) + nc), "malformed handshake")
    # Garbage whose first 8 bytes read as a header of type 0x41414141 and 16 bytes.
    tcp_refused(port, "tcp: garbage", lambda ns: b"A" * 4 + struct.pack("<I", 16) + os.urandom(16),
                "malformed handshake")
    s = tcp_connect(port)
    read_msg(s)
    s.sendall(frame(AUTH, struct.pack("<II", 1, size) + nc)[:20])
    s.close()
    check("tcp: a truncated answer, then close: sent", True)
    silent = tcp_connect(port)
    read_msg(silent)
    start = time.monotonic()
    tcp_refused(port, "tcp: with a silent connection open elsewhere, another wrong answer",
                lambda ns: frame(AUTH, struct.pack("<II", 1, size) + nc + bytes(32)), "wrong job secret")
    ms = (time.monotonic() - start) * 1000
    check("tcp: ... within 2 s", ms < 2000, f"{ms:.0f} ms")
    silent.close()


def connect_denied(path):
    try:
        unix_connect(path).close()
        check(f"uid {os.getuid()} cannot connect to {path}", False, "connected")
    except PermissionError as e:
        check(f"uid {os.getuid()} cannot connect to the launcher's socket", True, e.strerror)
    except OSError as e:
        check(f"uid {os.getuid()} cannot connect to the launcher's socket, for lack of permission", False, str(e))


mode = sys.argv[1]
if mode == "unix":
    unix_probes(sys.argv[2], sys.argv[3].encode() if len(sys.argv) > 3 else b"")
elif mode == "tcp":
    tcp_probes(int(sys.argv[2]), int(sys.argv[3]))
elif mode == "connect":
    connect_denied(sys.argv[2])
elif mode == "hello":
    unix_refused(sys.argv[2], f"unix: uid {os.getuid()} presenting the job's secret", hello(sys.argv[3].encode(), int(sys.argv[4])))
else:
    sys.exit(f"unknown mode {mode}")
sys.exit(1 if failures else 0)
