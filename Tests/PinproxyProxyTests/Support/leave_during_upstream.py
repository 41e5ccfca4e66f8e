#!/usr/bin/env python3
"""A client that leaves a forward proxy right after its ClientHello, once the upstream has the
proxy's connection: CONNECT, a real ClientHello (Python's ssl), then a wait until the
`silent-watched` upstream counts a connection, then a reset (SO_LINGER 0) or a plain close.

Usage: leave_during_upstream.py PROXY_PORT UPSTREAM_PORT reset|close
Prints "left" once it has left.
"""
import socket
import ssl
import struct
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from h2_tls import open_tunnel  # noqa: E402


def upstream_accepted(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"STATUS")
    line = s.makefile().readline()
    s.close()
    return int(line.split()[0])


def main():
    proxy_port, upstream_port, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    s = open_tunnel(proxy_port, f"localhost:{upstream_port}", timeout=60)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    s.sendall(outgoing.read())
    deadline = time.time() + 30
    while upstream_accepted(upstream_port) < 1:
        if time.time() > deadline:
            sys.exit("the upstream never saw the proxy's connection")
        time.sleep(0.05)
    if how == "reset":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    print("left", flush=True)


if __name__ == "__main__":
    main()
