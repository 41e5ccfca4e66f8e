#!/usr/bin/env python3
"""A small HTTPS (or plain HTTP) origin for pinproxy's end-to-end tests.

Usage: origin.py [--cert CHAIN.pem --key KEY.pem] [--port 0] [--host 127.0.0.1]
Prints "READY <port>" once listening. Endpoints:
  GET  /hello            "hello from origin\n"
  GET  /bytes/N          N bytes with Content-Length
  GET  /chunked/N        N bytes, chunked, with a trailer
  GET  /close/N          N bytes delimited by closing the connection
  POST /echo             echoes the request body (Content-Length or chunked)
  POST /early/N          answers status N at once, before reading the body (as an
                         early 401 or 413 does), then reads and discards the body
                         until the connection closes (PUT too)
  POST /early-keep/N     answers status N at once and keeps the connection, the body
                         unread: what follows on it is read as the next request
  GET  /status/N         an empty response with status N (204, 304, ...)
  GET  /reset            promises 1 MB, sends 64 KiB, then resets the connection
  GET  /ws               WebSocket-style upgrade (101), then echoes raw bytes
  GET  /headers          the request headers as text
  POST /trailers         reads a chunked body; answers its size and trailer fields as text
  GET  /hang             reads until the client closes, never answers
  GET  /counted/N        N bytes with Content-Length, counting what the socket took
  GET  /counted          how many bytes /counted/N handed to sockets so far, and how
                         many of those responses were cut short by the peer closing
  GET  /peer             the TCP port the request came from (one per connection)
  GET  /address          the address the origin listens on (--host)
  GET  /stall            promises 1000 bytes, sends 10, then waits for the connection to close
  GET  /connections      the most connections that were open at once when a POST began
"""
import argparse
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from test_lifetime import end_with_the_test  # noqa: E402


COUNTED = [0, 0]
COUNTED_LOCK = threading.Lock()
# Connections open now, and the most open at once when a POST began.
CONNECTIONS = [0, 0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "origin"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        with COUNTED_LOCK:
            CONNECTIONS[0] += 1

    def finish(self):
        try:
            super().finish()
        finally:
            with COUNTED_LOCK:
                CONNECTIONS[0] -= 1

    def send_body(self, status, body, content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    self.request_trailers = []
                    while True:
                        trailer = self.rfile.readline()
                        if trailer in (b"\r\n", b"\n", b""):
                            break
                        self.request_trailers.append(trailer.decode("latin-1").strip())
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(length) if length else b""

    def handle_expect_100(self):
        if self.path.startswith("/early/"):
            return True  # the final answer comes instead of 100 Continue
        return super().handle_expect_100()

    def answer_early(self, status):
        # No "Connection: close": the proxy must see that the body is still
        # coming and close the client connection itself, gracefully.
        self.send_body(status, b"refused before the body arrived\n")
        self.wfile.flush()
        try:
            while self.rfile.read1(65536):
                pass
        except (OSError, ValueError):
            pass
        self.close_connection = True

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        with COUNTED_LOCK:
            CONNECTIONS[1] = max(CONNECTIONS[1], CONNECTIONS[0])
        if self.headers.get("Expect", "").lower() == "100-continue":
            pass  # BaseHTTPRequestHandler already answered 100 Continue
        if self.path.startswith("/early/"):
            return self.answer_early(int(self.path.split("/")[2]))
        if self.path.startswith("/early-keep/"):
            # Answers at once and keeps the connection, the body unread: what
            # comes next on it is read as the next request.
            return self.send_body(int(self.path.split("/")[2]), b"refused, connection kept\n")
        body = self.read_body()
        if self.path.startswith("/echo"):
            self.send_body(200, body, "application/octet-stream")
        elif self.path == "/trailers":
            fields = getattr(self, "request_trailers", [])
            self.send_body(200, ("%d %s\n" % (len(body), ";".join(fields))).encode())
        else:
            self.send_body(404, b"not found\n")

    do_PUT = do_POST

    def do_GET(self):
        path = self.path
        if path == "/hello":
            return self.send_body(200, b"hello from origin\n")
        if path == "/peer":
            return self.send_body(200, b"%d" % self.client_address[1])
        if path == "/address":
            return self.send_body(200, self.server.server_address[0].encode())
        if path == "/stall":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
        if path in ("/hang", "/stall"):
            try:
                while self.rfile.read1(65536):
                    pass
            except (OSError, ValueError):
                pass
            self.close_connection = True
            return
        if path == "/connections":
            with COUNTED_LOCK:
                return self.send_body(200, b"%d" % CONNECTIONS[1])
        if path == "/counted":
            with COUNTED_LOCK:
                return self.send_body(200, b"%d %d" % (COUNTED[0], COUNTED[1]))
        if path.startswith("/counted/"):
            n = int(path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            self.wfile.flush()
            block = b"c" * 16384
            left = n
            try:
                while left > 0:
                    k = min(left, len(block))
                    self.connection.sendall(block[:k])
                    left -= k
                    with COUNTED_LOCK:
                        COUNTED[0] += k
            except OSError:
                with COUNTED_LOCK:
                    COUNTED[1] += 1
                self.close_connection = True
            return
        if path == "/headers":
            return self.send_body(200, str(self.headers).encode())
        if path.startswith("/bytes/"):
            n = int(path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            if self.command == "HEAD":
                return
            block = b"x" * 65536
            left = n
            while left > 0:
                k = min(left, len(block))
                self.wfile.write(block[:k])
                left -= k
            return
        if path.startswith("/drip/"):
            # /drip/N/MS: N one-line chunks, MS milliseconds apart, then the end.
            count, pause = int(path.split("/")[2]), int(path.split("/")[3])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for i in range(count):
                time.sleep(pause / 1000)
                line = b"drip %d\n" % i
                self.wfile.write(b"%x\r\n" % len(line) + line + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        if path.startswith("/chunked/"):
            n = int(path.split("/")[2])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "X-Checksum")
            self.end_headers()
            left = n
            while left > 0:
                k = min(left, 10000)
                self.wfile.write(b"%x\r\n" % k + b"y" * k + b"\r\n")
                left -= k
            self.wfile.write(b"0\r\nX-Checksum: done\r\n\r\n")
            return
        if path.startswith("/close/"):
            n = int(path.split("/")[2])
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"z" * n)
            self.close_connection = True
            return
        if path.startswith("/status/"):
            code = int(path.split("/")[2])
            self.send_response(code)
            if code not in (204, 304):
                self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "/reset":
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            self.wfile.write(b"r" * 65536)
            self.wfile.flush()
            sock = self.connection
            raw = sock
            try:
                raw = socket.socket(fileno=sock.fileno())
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                raw.detach()
            except OSError:
                pass
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.close_connection = True
            return
        if path == "/ws":
            if self.headers.get("Upgrade", "").lower() != "websocket":
                return self.send_body(400, b"expected Upgrade: websocket\n")
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", "fake")
            self.end_headers()
            self.wfile.flush()
            while True:
                data = self.connection.recv(65536)
                if not data:
                    break
                self.connection.sendall(data)
            self.close_connection = True
            return
        self.send_body(404, b"not found\n")


def main():
    end_with_the_test()
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print("READY %d" % server.server_address[1], flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
