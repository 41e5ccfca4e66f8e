#!/usr/bin/env python3
"""A bare HTTP/2 client over TLS (ALPN h2 only) for pinproxy's end-to-end tests.

It writes frames by hand (HPACK literals without Huffman coding, which any
decoder accepts) and reads only frame types, flags and DATA, so it can do what
curl and nghttp cannot: hold one stream's window closed while others run, and
send request trailers.

Usage:
  h2_bare_client.py slow PROXY_PORT ORIGIN_PORT SLOW_PATH FAST_PATH FAST_COUNT
      One stream GETs SLOW_PATH and never opens its window beyond the first
      65,535 bytes; FAST_COUNT streams GET FAST_PATH and are read at once.
      Once every fast stream has ended, it waits a moment, asks the origin
      (plain HTTP, GET /counted) how much it wrote, and prints one JSON line.
  h2_bare_client.py trailers PROXY_PORT
      POST /trailers with a 3-byte body and the trailer field x-sum: 7;
      prints the response body.
  h2_bare_client.py cancel PROXY_PORT ORIGIN_PORT
      GETs /counted/67108864, resets the stream after its first DATA, then GETs
      /hello on the same connection; waits (10 s at most) for the origin to see
      its response cut short, and prints "hello-status-ok ABORTED".
  h2_bare_client.py connect PROXY_PORT
      CONNECT example.com:443 (RFC 9113 §8.5); prints the response body.
  h2_bare_client.py early PROXY_PORT
      POSTs 16 KiB of a longer body to /early/413, which the origin answers
      before reading it; once the 413 has ended, resets the stream (as a client
      that stops its upload does) and GETs /hello on the same connection;
      prints the first word of each body ("refused hello" when all is well).
  h2_bare_client.py waiting-cancel PROXY_PORT ORIGIN_PORT
      Six streams GET /hang (every upstream connection of the pool); a seventh
      GETs /counted/1000, waits for a connection and is reset; once the six
      have their answers (504 after the response timeout), GETs /hello; prints
      the first word of the six bodies and of /hello's, and the bytes the origin
      wrote for /counted/N ("the hello 0" when all is well).
  h2_bare_client.py late-reader PROXY_PORT PATH ORIGIN_LOG
      GETs PATH without opening the stream's window past its first 65,535
      bytes until h2_origin.py's log ORIGIN_LOG says it closed a connection
      (CLOSED); then reads the rest and prints "<bytes received> ended" or
      "<bytes received> reset <code>".
"""
import json
import socket
import ssl
import sys
import time

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def hpack_length(n):
    if n < 127:
        return bytes([n])
    out = [127]
    n -= 127
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def literal(name, value):
    name, value = name.encode(), value.encode()
    return b"\x00" + hpack_length(len(name)) + name + hpack_length(len(value)) + value


def request_block(method, path, extra=()):
    block = literal(":method", method) + literal(":scheme", "https") + literal(":authority", "localhost")
    block += literal(":path", path)
    for name, value in extra:
        block += literal(name, value)
    return block


def window_update(stream, n):
    return frame(WINDOW_UPDATE, 0, stream, n.to_bytes(4, "big"))


class Connection:
    def __init__(self, port):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
        assert self.sock.selected_alpn_protocol() == "h2", self.sock.selected_alpn_protocol()
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(SETTINGS, 0, 0))
        self.buffer = b""
        self.data = {}
        self.bodies = {}
        self.ended = set()
        self.reset = {}

    def send(self, payload):
        self.sock.sendall(payload)

    def next_frame(self):
        while True:
            if len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) >= 9 + length:
                    kind, flags = self.buffer[3], self.buffer[4]
                    stream = int.from_bytes(self.buffer[5:9], "big") & 0x7FFFFFFF
                    payload = self.buffer[9:9 + length]
                    self.buffer = self.buffer[9 + length:]
                    return kind, flags, stream, payload
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the proxy closed the connection")
            self.buffer += chunk

    def step(self, opens_window):
        """Reads one frame, answers what the protocol requires, and returns it."""
        kind, flags, stream, payload = self.next_frame()
        if kind == SETTINGS and not flags & ACK:
            self.send(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            self.send(frame(PING, ACK, 0, payload))
        elif kind == DATA:
            self.data[stream] = self.data.get(stream, 0) + len(payload)
            self.bodies[stream] = self.bodies.get(stream, b"") + payload[:4096]
            if payload:
                # The connection's window always reopens: only a stream's own window holds it.
                update = window_update(0, len(payload))
                if opens_window(stream) and not flags & END_STREAM:
                    update += window_update(stream, len(payload))
                self.send(update)
        elif kind == RST_STREAM:
            self.reset[stream] = int.from_bytes(payload[:4], "big")
        elif kind == GOAWAY:
            raise EOFError("GOAWAY %d" % int.from_bytes(payload[4:8], "big"))
        if kind in (DATA, HEADERS) and flags & END_STREAM:
            self.ended.add(stream)
        return kind, flags, stream


def origin_counts(origin_port):
    counted = socket.create_connection(("127.0.0.1", origin_port))
    counted.sendall(b"GET /counted HTTP/1.1\r\nHost: origin\r\nConnection: close\r\n\r\n")
    answer = b""
    while True:
        chunk = counted.recv(65536)
        if not chunk:
            break
        answer += chunk
    written, aborted = answer.split(b"\r\n\r\n", 1)[1].split()
    return int(written), int(aborted)


def slow(proxy_port, origin_port, slow_path, fast_path, fast_count):
    c = Connection(proxy_port)
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, request_block("GET", slow_path)))
    fast = [3 + 2 * i for i in range(fast_count)]
    for stream in fast:
        c.send(frame(HEADERS, END_STREAM | END_HEADERS, stream, request_block("GET", fast_path)))
    while not all(s in c.ended or s in c.reset for s in fast):
        c.step(lambda s: s != 1)
    # Let the proxy fill what it would buffer of the slow body, then ask the origin.
    c.sock.settimeout(0.2)
    until = time.time() + 1.5
    while time.time() < until:
        try:
            c.step(lambda s: s != 1)
        except socket.timeout:
            pass
    written, _ = origin_counts(origin_port)
    print(json.dumps({
        "slow_received": c.data.get(1, 0), "slow_ended": 1 in c.ended,
        "fast_ended": sum(1 for s in fast if s in c.ended), "fast_reset": sum(1 for s in fast if s in c.reset),
        "fast_bytes": sorted(set(c.data.get(s, 0) for s in fast)), "origin_wrote": written,
    }))


def trailers(proxy_port):
    c = Connection(proxy_port)
    c.send(frame(HEADERS, END_HEADERS, 1, request_block("POST", "/trailers")))
    c.send(frame(DATA, 0, 1, b"abc"))
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, literal("x-sum", "7")))
    while 1 not in c.ended and 1 not in c.reset:
        c.step(lambda s: True)
    print(c.bodies.get(1, b"").decode(errors="replace").strip())


def cancel(proxy_port, origin_port):
    c = Connection(proxy_port)
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, request_block("GET", "/counted/67108864")))
    while 1 not in c.data:
        c.step(lambda s: True)
    c.send(frame(RST_STREAM, 0, 1, (8).to_bytes(4, "big")))
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 3, request_block("GET", "/hello")))
    while 3 not in c.ended and 3 not in c.reset:
        c.step(lambda s: s != 1)
    hello = c.bodies.get(3, b"") == b"hello from origin\n"
    aborted = 0
    until = time.time() + 10
    while aborted == 0 and time.time() < until:
        _, aborted = origin_counts(origin_port)
        time.sleep(0.05)
    print("%s %d" % ("hello-status-ok" if hello else "hello-failed", aborted))


def connect(proxy_port):
    c = Connection(proxy_port)
    c.send(frame(HEADERS, END_HEADERS, 1, literal(":method", "CONNECT") + literal(":authority", "example.com:443")))
    while 1 not in c.ended and 1 not in c.reset:
        c.step(lambda s: True)
    print(c.bodies.get(1, b"").decode(errors="replace").strip() or "reset %s" % c.reset.get(1))


def answer_of(c, stream):
    """What `stream` got, in one word: its body's first word, or "reset"."""
    if stream in c.reset:
        return "reset"
    words = c.bodies.get(stream, b"").split()
    return words[0].decode(errors="replace") if words else "empty"


def early(proxy_port):
    c = Connection(proxy_port)
    c.send(frame(HEADERS, END_HEADERS, 1, request_block("POST", "/early/413", [("content-length", "1048576")])))
    c.send(frame(DATA, 0, 1, b"u" * 16384))
    while 1 not in c.ended and 1 not in c.reset:
        c.step(lambda s: True)
    c.send(frame(RST_STREAM, 0, 1, (8).to_bytes(4, "big")))
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 3, request_block("GET", "/hello")))
    while 3 not in c.ended and 3 not in c.reset:
        c.step(lambda s: True)
    print("%s %s" % (answer_of(c, 1), answer_of(c, 3)))


def waiting_cancel(proxy_port, origin_port):
    c = Connection(proxy_port)
    hanging = [1, 3, 5, 7, 9, 11]
    for stream in hanging:
        c.send(frame(HEADERS, END_STREAM | END_HEADERS, stream, request_block("GET", "/hang")))
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 13, request_block("GET", "/counted/1000")))
    c.send(frame(RST_STREAM, 0, 13, (8).to_bytes(4, "big")))
    while not all(s in c.ended or s in c.reset for s in hanging):
        c.step(lambda s: True)
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 15, request_block("GET", "/hello")))
    while 15 not in c.ended and 15 not in c.reset:
        c.step(lambda s: True)
    written, _ = origin_counts(origin_port)
    print("%s %s %d" % (",".join(sorted(set(str(answer_of(c, s)) for s in hanging))), answer_of(c, 15), written))


def origin_closed(origin_log):
    with open(origin_log) as lines:
        return any(line.startswith("CLOSED ") for line in lines)


def late_reader(proxy_port, path, origin_log):
    c = Connection(proxy_port)
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, request_block("GET", path)))
    # Frames are read as they come (a partial one waits in the buffer) while
    # the origin's log is looked at between them.
    c.sock.settimeout(0.1)
    while not origin_closed(origin_log) and 1 not in c.ended and 1 not in c.reset:
        try:
            c.step(lambda s: False)
        except socket.timeout:
            pass
        except EOFError as error:
            if not str(error).startswith("GOAWAY"):
                raise
    c.sock.settimeout(None)
    c.send(window_update(1, 1 << 24))
    while 1 not in c.ended and 1 not in c.reset:
        try:
            c.step(lambda s: True)
        except EOFError as error:
            if not str(error).startswith("GOAWAY"):
                raise
    print("%d %s" % (c.data.get(1, 0), "ended" if 1 in c.ended else "reset %d" % c.reset[1]))


if __name__ == "__main__":
    if sys.argv[1] == "late-reader":
        late_reader(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "early":
        early(int(sys.argv[2]))
    elif sys.argv[1] == "waiting-cancel":
        waiting_cancel(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "connect":
        connect(int(sys.argv[2]))
    elif sys.argv[1] == "cancel":
        cancel(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "slow":
        slow(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        trailers(int(sys.argv[2]))
