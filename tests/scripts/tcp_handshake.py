#!/usr/bin/env python3
"""An outside client of the TCP rendezvous (src/bootstrap/tcp_wire.h), written from the wire format alone,
for tests/scripts/tcp_bootstrap_test.sh. Against a rank 0 that waits for its job (size SIZE):
  1. performs the handshake correctly as rank 1, checks rank 0's proof, records its own answer, and leaves;
  2. replays the recorded answer on a new connection: it must be refused (a new challenge each time);
  3. sends a header announcing 2 GiB, then a message of another type: both must be refused;
  4. connects and closes at once.
Prints one line per check ("ok ..." / "FAIL ...") and exits 0 when all passed.
  tcp_handshake.py PORT SECRET SIZE"""
import hashlib
import hmac
import socket
import struct
import sys
import time

from bootstrap_wire import read_msg, tcp_connect

LABEL = b"tessera-bootstrap-v1"
CHALLENGE, AUTH, PROOF, REFUSED, ALLGATHER = 5, 6, 7, 8, 3
port, secret, size = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
failures = 0


def check(name, cond, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + name + (f" ({detail})" if detail else ""), flush=True)
    failures += 0 if cond else 1


def send_msg(s, t, payload):
    s.sendall(struct.pack("<II", t, len(payload)) + payload)


def mac(first, second, rank):
    return hmac.new(secret, LABEL + first + second + struct.pack("<I", rank), hashlib.sha256).digest()


# 1. A correct handshake, recorded.
s = tcp_connect(port)
t, ns = read_msg(s)
check("rank 0 sends a 32-byte challenge", t == CHALLENGE and len(ns) == 32, f"type {t}, {len(ns)} bytes")
nc = bytes(range(32))
recorded = struct.pack("<II", 1, size) + nc + mac(ns, nc, 1)
send_msg(s, AUTH, recorded)
t, proof = read_msg(s)
check("rank 0 accepts the handshake and proves it knows the secret",
      t == PROOF and hmac.compare_digest(proof, mac(nc, ns, 1)), f"type {t}")
check("the secret is nowhere in what rank 0 sent", secret not in ns + proof)
s.close()  # rank 1's slot opens again (left before the job started)

# 2. The same answer replayed on a new connection.
s = tcp_connect(port)
t, ns2 = read_msg(s)
check("a new connection gets a new challenge", t == CHALLENGE and ns2 != ns)
send_msg(s, AUTH, recorded)
t, reason = read_msg(s)
check("the replayed answer is refused", t in (REFUSED, None) and t != PROOF, f"type {t}: {reason.decode(errors='replace')}")
check("the refusal says why", reason == b"wrong job secret", reason.decode(errors="replace"))
s.close()

# 3. Malformed: a header announcing 2 GiB, then a message of another type.
s = tcp_connect(port)
read_msg(s)
s.sendall(struct.pack("<II", AUTH, 1 << 31))
t, reason = read_msg(s)
check("a 2 GiB header is refused before any allocation", t == REFUSED and b"limit 256" in reason,
      reason.decode(errors="replace"))
s.close()
s = tcp_connect(port)
read_msg(s)
send_msg(s, ALLGATHER, b"x" * 72)
t, reason = read_msg(s)
check("a message of another type is refused", t == REFUSED and b"malformed handshake" in reason,
      reason.decode(errors="replace"))
s.close()

# 4. Connect and leave.
tcp_connect(port).close()
sys.exit(1 if failures else 0)
