#!/usr/bin/env python3
"""An HTTP/1.1 origin that closes its reused keep-alive connections without
answering, for pinproxy's tests of requests sent again on a new connection.

Usage: closing_origin.py MODE [--cert CHAIN.pem --key KEY.pem] [--no-alpn]
Prints "READY <port>" once listening on 127.0.0.1, then serves until stdin closes.
A TLS origin chooses `http/1.1` by ALPN unless --no-alpn.

Every connection answers its first request. On a reused connection (its second
request and later) the origin closes without answering:
  after-head   once it has read the request head and, unless the request asks
               for `100-continue`, its Content-Length body (recorded)
  on-arrival   as the next request's first bytes arrive, reading none of them
               (a TCP reset, as the unread bytes are dropped)
  one-byte     once it has read the request head, after sending the first byte
               of a response
Any connection closes without answering `/close-fresh` once it read its head;
`/slow` is answered after half a second.

Answers: "ok N\\n" (N: the requests answered so far), "got N bytes\\n" for a
request with a body; `Expect: 100-continue` gets `100 Continue` first.
GET /stats (on a new connection) answers JSON:
  closes       reused connections closed without answering
  freshCloses  connections closed at /close-fresh
  heads        request heads read, by path (the closed ones included)
  bodies       the request bodies read, in order (the closed ones included)
"""
import argparse
import json
import socket
import ssl
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from test_lifetime import end_with_the_test  # noqa: E402

LOCK = threading.Lock()
STATS = {"closes": 0, "freshCloses": 0, "heads": {}, "bodies": []}
ANSWERED = [0]


def read_head(conn, buffer):
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            return None, buffer
        buffer += data
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def read_exactly(conn, buffer, length):
    while len(buffer) < length:
        data = conn.recv(65536)
        if not data:
            break
        buffer += data
    return buffer[:length], buffer[length:]


def next_request_arrives(conn, tls):
    """Waits for the next bytes without reading them: True for a request's
    first bytes, False for the end or the client's close_notify alert."""
    try:
        # socket.socket's own recv: a peek at the raw bytes, under TLS too.
        first = socket.socket.recv(conn, 5 if tls else 1, socket.MSG_PEEK | socket.MSG_WAITALL)
    except OSError:
        return False
    if not tls or not first:
        return bool(first)
    # A TLS record's header: its type and length. TLS 1.3 sends alerts as
    # application data too; a close_notify's record holds 19 bytes (the alert,
    # its inner type and the AEAD tag), a request's many more.
    return len(first) == 5 and first[0] == 0x17 and int.from_bytes(first[3:5], "big") > 24


def answer(conn, status, body, extra=""):
    conn.sendall((f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n").encode() + body)


def serve(raw, context, mode):
    conn = raw
    try:
        if context:
            conn = context.wrap_socket(raw, server_side=True)
        buffer = b""
        served = 0
        while True:
            if served and mode == "on-arrival" and not buffer:
                if next_request_arrives(conn, context is not None):
                    with LOCK:
                        STATS["closes"] += 1
                return
            head, buffer = read_head(conn, buffer)
            if head is None:
                return
            lines = head.split("\r\n")
            method, path = lines[0].split(" ")[:2]
            fields = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
            with LOCK:
                STATS["heads"][path] = STATS["heads"].get(path, 0) + 1
            if path == "/close-fresh":
                with LOCK:
                    STATS["freshCloses"] += 1
                return
            expects = fields.get("expect", "").lower() == "100-continue"
            length = int(fields.get("content-length", "0"))
            if served and mode == "one-byte":
                conn.sendall(b"H")
                with LOCK:
                    STATS["closes"] += 1
                return
            if served and mode == "after-head":
                if length and not expects:
                    body, buffer = read_exactly(conn, buffer, length)
                    with LOCK:
                        STATS["bodies"].append(body.decode("latin-1"))
                with LOCK:
                    STATS["closes"] += 1
                return
            if path == "/stats":
                with LOCK:
                    text = json.dumps(STATS).encode()
                answer(conn, "200 OK", text, "Content-Type: application/json\r\n")
                served += 1
                continue
            if path.startswith("/slow"):
                time.sleep(0.5)
            if expects and length:
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            body, buffer = read_exactly(conn, buffer, length)
            with LOCK:
                if length:
                    STATS["bodies"].append(body.decode("latin-1"))
                ANSWERED[0] += 1
                count = ANSWERED[0]
            text = f"got {len(body)} bytes\n" if length else f"ok {count}\n"
            answer(conn, "200 OK", b"" if method == "HEAD" else text.encode())
            served += 1
    except (OSError, ssl.SSLError, ValueError):
        pass
    finally:
        conn.close()


def main():
    end_with_the_test()
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["after-head", "on-arrival", "one-byte"])
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--no-alpn", action="store_true")
    args = parser.parse_args()
    context = None
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        if not args.no_alpn:
            context.set_alpn_protocols(["http/1.1"])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)

    def accept():
        while True:
            raw, _ = listener.accept()
            threading.Thread(target=serve, args=(raw, context, args.mode), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(f"READY {listener.getsockname()[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
