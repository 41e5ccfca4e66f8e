#!/usr/bin/env python3
"""Upstreams that fail in one specific way, for pinproxy's failure tests.

Usage: misbehaving_upstream.py MODE [--cert CHAIN.pem --key KEY.pem]
Prints "READY <port>" once listening on 127.0.0.1, then serves until stdin closes.
Modes:
  silent                  accepts TCP connections and never sends a byte
  close-after-handshake   completes the TLS handshake, then closes without reading
"""
import argparse
import socket
import ssl
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from test_lifetime import end_with_the_test  # noqa: E402


def main():
    end_with_the_test()
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["silent", "close-after-handshake"])
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    context = None
    if args.mode == "close-after-handshake":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
    held = []

    def serve():
        while True:
            conn, _ = listener.accept()
            if args.mode == "silent":
                held.append(conn)  # kept open, never answered
                continue
            try:
                tls = context.wrap_socket(conn, server_side=True)
                tls.close()
            except (OSError, ssl.SSLError):
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    print(f"READY {listener.getsockname()[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
