#!/usr/bin/env python3
"""Upstreams that fail in one specific way, for pinproxy's failure tests.

Usage: misbehaving_upstream.py MODE [--cert CHAIN.pem --key KEY.pem]
Prints "READY <port>" once listening on 127.0.0.1, then serves until stdin closes.
Modes:
  silent                  accepts TCP connections and never sends a byte
  close-after-handshake   completes the TLS handshake, then closes without reading
"""
import argparse
import os
import socket
import ssl
import sys
import threading
import time


def end_with_the_test():
    """Exits when the test process that started this one is gone (its pipe to our
    stdin may stay open in another child, and SIGTERM may arrive blocked)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()


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
