#!/usr/bin/python3
"""A client that breaks HTTP/2 in one way, written with raw frames, for the
proxy's end-to-end tests. It speaks TLS with ALPN h2 to the proxy, directly
(reverse mode) or after a CONNECT, sends its misbehaviour, and prints what
came back, one line each:
  GOAWAY code=<code> last=<stream>
  RST stream=<stream> code=<code>
  RESPONSE stream=<stream> status=<status>      a response that ended
  EOF                                           the proxy closed the connection
  TIMEOUT                                       nothing more came for 10 s

Usage: h2_hostile_client.py KIND --port P [--connect HOST:PORT] [--name SNI]
KIND: bad-preface, big-frame, upper-case, connection-header, hpack-bomb,
continuation-flood, too-many-streams (after the SETTINGS ACK),
too-many-streams-early (before it), rapid-reset; or many: twenty valid
GET /small requests at once, read until each has ended (DONE) or the proxy
closes; many-posts: the same as POSTs with a 5-byte body each; abandon: ten
GET /bytes/4000000 at once, then the connection is closed at the first DATA
frame, with the ten streams open; abort-then-more: GET /small and GET
/abort at once, read until both ended, then GET /small on the same
connection, read until it ended (DONE). For upper-case and
connection-header (stream errors) a valid request follows on stream 3, to
show that the connection goes on. Bad requests use paths /hostile-KIND.
"""
import argparse
import socket
import ssl
import sys

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from h2_tls import open_h2_tls  # noqa: E402

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
# HPACK static table indexes of the :status values nghttp2 encodes as one byte.
STATUSES = {8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404, 14: 500}


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def integer(value, prefix_bits, first=0):
    """An HPACK integer with an N-bit prefix (RFC 7541 §5.1)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def literal(name, value, indexing=False):
    """A literal field with a new name, not Huffman-coded (any bytes, upper case too)."""
    name, value = name.encode(), value.encode()
    return bytes([0x40 if indexing else 0x00]) + integer(len(name), 7) + name + integer(len(value), 7) + value


def request_block(path, authority):
    # :method GET (2), :scheme https (7), :path and :authority with indexed names.
    return (b"\x82\x87" + integer(4, 4) + integer(len(path), 7) + path.encode()
            + integer(1, 4) + integer(len(authority), 7) + authority.encode())


def post_block(path, authority):
    return b"\x83\x87" + request_block(path, authority)[2:]


def open_tls(args):
    return open_h2_tls(args.port, args.connect, args.name)


class Reader:
    """Reads frames and prints the ones a test looks at."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.closed = False

    def next(self):
        while True:
            if len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) >= 9 + length:
                    head, payload = self.buffer[:9], self.buffer[9:9 + length]
                    self.buffer = self.buffer[9 + length:]
                    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, payload
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                print("TIMEOUT", flush=True)
                return None
            except (ssl.SSLError, OSError):
                chunk = b""
            if not chunk:
                print("EOF", flush=True)
                self.closed = True
                return None
            self.buffer += chunk

    def until(self, stop):
        """Prints frames until `stop(kind, flags, stream)` holds or the connection ends."""
        status = {}
        while True:
            f = self.next()
            if f is None:
                return False
            kind, flags, stream, payload = f
            if kind == SETTINGS and not flags & ACK:
                send(self.sock, frame(SETTINGS, ACK, 0))
            elif kind == GOAWAY:
                print(f"GOAWAY code={int.from_bytes(payload[4:8], 'big')} last={int.from_bytes(payload[:4], 'big') & 0x7FFFFFFF}", flush=True)
            elif kind == RST_STREAM:
                print(f"RST stream={stream} code={int.from_bytes(payload[:4], 'big')}", flush=True)
            elif kind == HEADERS and payload and payload[0] & 0x80:
                status.setdefault(stream, STATUSES.get(payload[0] & 0x7F, "?"))
            if kind in (HEADERS, DATA) and flags & END_STREAM:
                print(f"RESPONSE stream={stream} status={status.get(stream, '?')}", flush=True)
            if kind == DATA and payload:
                # Keep the windows open for the valid request's body.
                update = len(payload).to_bytes(4, "big")
                send(self.sock, frame(8, 0, 0, update) + frame(8, 0, stream, update))
            if stop(kind, flags, stream):
                return True


def send(sock, data):
    try:
        sock.sendall(data)
    except (ssl.SSLError, OSError):
        pass  # the proxy may close before everything went: what it answered is read next


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connect")
    parser.add_argument("--name", default="localhost")
    args = parser.parse_args()
    authority = args.connect or args.name
    path = "/hostile-" + args.kind
    sock = open_tls(args)
    reader = Reader(sock)
    start = PREFACE + frame(SETTINGS, 0, 0)
    kind = args.kind
    if kind == "bad-preface":
        send(sock, b"GET " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    elif kind == "big-frame":
        send(sock, start + frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block(path, authority).ljust(16385, b"\x82")))
    elif kind in ("upper-case", "connection-header"):
        bad = literal("X-Upper", "1") if kind == "upper-case" else literal("connection", "close")
        send(sock, start + frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block(path, authority) + bad))
        reader.until(lambda k, f, s: k == RST_STREAM and s == 1)
        send(sock, frame(HEADERS, END_HEADERS | END_STREAM, 3, request_block("/after-" + kind, authority)))
        reader.until(lambda k, f, s: s == 3 and k in (HEADERS, DATA, RST_STREAM) and (f & END_STREAM or k == RST_STREAM))
        sock.close()
        return
    elif kind == "hpack-bomb":
        # One 4 KiB field enters the dynamic table; 40 one-byte references to it
        # make a header list of about 160 KiB from a frame of about 4 KiB.
        block = request_block(path, authority) + literal("x-bomb", "b" * 4000, indexing=True) + b"\xbe" * 40
        send(sock, start + frame(HEADERS, END_HEADERS | END_STREAM, 1, block))
    elif kind == "continuation-flood":
        frames = frame(HEADERS, END_STREAM, 1, request_block(path, authority))
        frames += b"".join(frame(CONTINUATION, 0, 1, literal("x-c", "1")) for _ in range(30))
        send(sock, start + frames)
    elif kind == "too-many-streams":
        send(sock, start)
        # The limit binds once this side has acknowledged the proxy's SETTINGS.
        reader.until(lambda k, f, s: k == SETTINGS and not f & ACK)
        send(sock, b"".join(frame(HEADERS, END_HEADERS, 2 * i + 1, post_block(f"{path}/{i}", authority)) for i in range(101)))
    elif kind in ("many", "many-posts"):
        if kind == "many":
            requests = (frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, request_block(f"/small?n={i}", authority))
                        for i in range(20))
        else:
            requests = (frame(HEADERS, END_HEADERS, 2 * i + 1, post_block(f"/small?n={i}", authority))
                        + frame(DATA, END_STREAM, 2 * i + 1, b"body\n") for i in range(20))
        send(sock, start + b"".join(requests))
        ended = set()

        def all_ended(kind, flags, stream):
            if kind in (HEADERS, DATA) and flags & END_STREAM or kind == RST_STREAM:
                ended.add(stream)
            return len(ended) == 20
        if reader.until(all_ended):
            print("DONE", flush=True)
        sock.close()
        return
    elif kind == "abort-then-more":
        send(sock, start + frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block("/small", authority))
             + frame(HEADERS, END_HEADERS | END_STREAM, 3, request_block("/abort", authority)))
        ended = set()

        def ended_all(wanted):
            def done(kind, flags, stream):
                if kind in (HEADERS, DATA) and flags & END_STREAM or kind == RST_STREAM:
                    ended.add(stream)
                return wanted <= ended
            return done
        if reader.until(ended_all({1, 3})):
            send(sock, frame(HEADERS, END_HEADERS | END_STREAM, 5, request_block("/small", authority)))
            if reader.until(ended_all({1, 3, 5})):
                print("DONE", flush=True)
        sock.close()
        return
    elif kind == "abandon":
        send(sock, start + b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, request_block("/bytes/4000000", authority))
                                    for i in range(10)))
        if reader.until(lambda k, f, s: k == DATA):
            print("ABANDONED", flush=True)
        sock.close()
        return
    elif kind == "too-many-streams-early":
        # Before this side acknowledged the proxy's SETTINGS: the 101st stream alone is refused.
        send(sock, start + b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, request_block(f"{path}/{i}", authority))
                                    for i in range(101)))
        ended = set()

        def done(kind, flags, stream):
            if kind in (HEADERS, DATA) and flags & END_STREAM or kind == RST_STREAM:
                ended.add(stream)
            return len(ended) == 101
        reader.until(done)
        sock.close()
        return
    elif kind == "rapid-reset":
        send(sock, start)
        reader.until(lambda k, f, s: k == SETTINGS and not f & ACK)
        cancel = (8).to_bytes(4, "big")
        send(sock, b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, request_block(f"{path}/{i}", authority))
                            + frame(RST_STREAM, 0, 2 * i + 1, cancel) for i in range(1500)))
    else:
        sys.exit("unknown kind " + kind)
    reader.until(lambda k, f, s: False)


if __name__ == "__main__":
    main()
