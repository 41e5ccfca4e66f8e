#!/usr/bin/env python3
"""Upstreams that fail in one specific way, for pinproxy's failure tests.

Usage: misbehaving_upstream.py MODE [--cert CHAIN.pem --key KEY.pem]
Prints "READY <port>" once listening on 127.0.0.1, then serves until stdin closes.
Modes:
  silent                  accepts TCP connections and never sends a byte
  silent-watched          the same, and counts the connections it accepted and those the other side
                          closed: a connection that sends "STATUS" first is answered "<accepted> <closed>"
  close-after-handshake   completes the TLS handshake, then closes without reading
  overlong                answers each connection's first request with "first\n" followed, in
                          the same write, by a second response ("smuggled\n") nobody asked for,
                          then answers any later request on that connection with "later\n";
                          GET /connections answers with how many connections it accepted
  overlong-crlf           the same with a stray CRLF after "first\n" instead of a response
  overlong-junk           the same with a line that is no status line ("garbage") instead
  overlong-partial        the same with the start of a response head instead
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
    parser.add_argument("mode", choices=["silent", "silent-watched", "close-after-handshake", "overlong", "overlong-crlf", "overlong-junk", "overlong-partial"])
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    context = None
    if not args.mode.startswith("silent"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
    held = []
    accepted = [0]

    extra = {"overlong": b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nsmuggled\n",
             "overlong-crlf": b"\r\n", "overlong-junk": b"garbage\r\n",
             "overlong-partial": b"HTTP/1.1 200 OK\r\nContent-Le"}.get(args.mode, b"")

    def overlong(tls):
        buffer = b""
        answered = 0
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = tls.recv(65536)
                if not chunk:
                    return
                buffer += chunk
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            path = head.split(b" ")[1] if b" " in head else b"/"
            if path == b"/connections":
                body = b"%d\n" % accepted[0]
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            elif answered == 0:
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nfirst\n" + extra)
            else:
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nlater\n")
            answered += 1

    def serve_overlong(conn):
        try:
            tls = context.wrap_socket(conn, server_side=True)
            overlong(tls)
            tls.close()
        except (OSError, ssl.SSLError):
            conn.close()

    closed = [0]
    lock = threading.Lock()

    def watch(conn):
        first = conn.recv(6)
        if first == b"STATUS":
            with lock:
                conn.sendall(b"%d %d\n" % (accepted[0], closed[0]))
            conn.close()
            return
        with lock:
            accepted[0] += 1
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        with lock:
            closed[0] += 1
        conn.close()

    def serve():
        while True:
            conn, _ = listener.accept()
            if args.mode == "silent-watched":
                threading.Thread(target=watch, args=(conn,), daemon=True).start()
                continue
            accepted[0] += 1
            if args.mode == "silent":
                held.append(conn)  # kept open, never answered
                continue
            if args.mode.startswith("overlong"):
                threading.Thread(target=serve_overlong, args=(conn,), daemon=True).start()
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
