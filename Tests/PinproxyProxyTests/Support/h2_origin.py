#!/usr/bin/python3
"""An HTTPS origin that speaks HTTP/2 only (ALPN h2), built on python3-h2, for
the proxy's HTTP/2 end-to-end tests. It writes what it saw to a log so that a
test can tell what reached the upstream and how far each response got.

Usage: h2_origin.py --cert CHAIN.pem --key KEY.pem --log FILE [--goaway-after N [--goaway-code C]]
Prints "READY <port>" once listening. Paths:
  /bytes/N    N bytes of 'a', sent as the stream's and the connection's
              windows allow (so a stalled reader stalls the sending here)
  /headers    the request's x- fields, sent back as response fields and,
              one "name: value" line each, as the body
  /abort      a head promising 1,000 bytes and 10 of them, then this side
              of the connection is shut (no more frames, no close_notify)
  anything    "ok\n"
With --goaway-after N, each connection answers its first N requests, sends
GOAWAY (NO_ERROR, last stream = the Nth) when the Nth arrives, before answering
it, ignores later
streams as GOAWAY says, and closes once the N are answered (as nginx's
keepalive_requests does). --goaway-code C puts error code C in that GOAWAY
(default 0, NO_ERROR).

Log lines (flushed at once):
  REQUEST <conn> <stream> <path>
  SENT <conn> <stream> <bytes so far>     after each DATA frame
  DONE <conn> <stream> <bytes>            the whole body went
  RESET <conn> <stream> <code>            the peer reset the stream
  GOAWAY <conn> <last stream>             this origin sent GOAWAY
  ERROR <conn> <reason>                   the proxy broke HTTP/2 (GOAWAY sent)
  PEERGOAWAY <conn> <code>                the proxy sent GOAWAY
  CLOSED <conn>                           this origin closed the connection
"""
import argparse
import itertools
import os
import select
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.events
import h2.exceptions

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from test_lifetime import end_with_the_test  # noqa: E402

log_lock = threading.Lock()
conn_ids = itertools.count(1)


def log(out, line):
    with log_lock:
        out.write(line + "\n")
        out.flush()


class Connection:
    def __init__(self, sock, out, goaway_after, goaway_code=0):
        self.sock = sock
        self.out = out
        self.id = next(conn_ids)
        self.goaway_after = goaway_after
        self.goaway_code = goaway_code
        self.requests = 0
        self.last_stream = None
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, validate_inbound_headers=False))
        self.pending = {}  # stream -> [remaining bytes, sent so far]

    def run(self):
        self.h2.initiate_connection()
        # A large connection window: uploads are not what this origin tests.
        self.h2.increment_flow_control_window(1 << 24)
        self.flush()
        while True:
            if self.goaway_after and self.last_stream is not None and not self.pending:
                self.flush()
                self.linger()
                return
            readable, _, _ = select.select([self.sock], [], [], 30)
            if not readable:
                return
            try:
                data = self.sock.recv(65536)
                # Records OpenSSL already decrypted are not seen by select.
                while data and self.sock.pending():
                    data += self.sock.recv(self.sock.pending())
            except (ssl.SSLError, OSError):
                return
            if not data:
                return
            try:
                events = self.h2.receive_data(data)
            except h2.exceptions.ProtocolError as error:
                log(self.out, f"ERROR {self.id} {error}")
                self.flush()
                return
            try:
                for event in events:
                    self.handle(event)
            except ConnectionAbortedError:
                return
            self.send_bodies()
            self.flush()

    def linger(self):
        """Reads and drops what the proxy still sends until it closes (at most
        5 s), as nginx does: closing under unread input would reset the
        connection, and the proxy's TCP could drop the responses and the
        GOAWAY it has not read yet."""
        self.sock.settimeout(5)
        try:
            while self.sock.recv(65536):
                pass
        except (ssl.SSLError, OSError):
            pass

    def handle(self, event):
        if isinstance(event, h2.events.ConnectionTerminated):
            log(self.out, f"PEERGOAWAY {self.id} {int(event.error_code)}")
            return
        if isinstance(event, h2.events.RequestReceived):
            headers = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
                       for k, v in event.headers}
            path = headers.get(":path", "/")
            sid = event.stream_id
            if self.last_stream is not None and sid > self.last_stream:
                return  # GOAWAY said it would not be processed
            self.requests += 1
            log(self.out, f"REQUEST {self.id} {sid} {path}")
            if self.goaway_after and self.requests == self.goaway_after:
                # GOAWAY leaves before the last response it promises, as a server that
                # shuts down gracefully sends it (nginx): the proxy still has that stream
                # open when it reads the GOAWAY. Written by hand: python-h2 sends nothing
                # more once it has sent GOAWAY itself.
                self.last_stream = sid
                self.flush()
                goaway = (8).to_bytes(3, "big") + bytes([7, 0]) + (0).to_bytes(4, "big") + sid.to_bytes(4, "big") + self.goaway_code.to_bytes(4, "big")
                try:
                    self.sock.sendall(goaway)
                except (ssl.SSLError, OSError):
                    pass
                log(self.out, f"GOAWAY {self.id} {sid}")
            if path == "/headers":
                fields = [(k, v) for k, v in headers.items() if k.startswith("x-")]
                echo = "".join(f"{k}: {v}\n" for k, v in fields).encode()
                self.h2.send_headers(sid, [(":status", "200"), ("content-length", str(len(echo)))] + fields)
                self.h2.send_data(sid, echo, end_stream=True)
                log(self.out, f"DONE {self.id} {sid} {len(echo)}")
                return
            if path == "/abort":
                self.h2.send_headers(sid, [(":status", "200"), ("content-length", "1000")])
                self.h2.send_data(sid, b"a" * 10)
                self.flush()
                log(self.out, f"ABORT {self.id} {sid}")
                # The proxy reads all of it, then the end of the stream; what
                # it sends still is read and dropped until it closes.
                try:
                    self.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.linger()
                raise ConnectionAbortedError("/abort")
            body = int(path.split("/")[2]) if path.startswith("/bytes/") else 3
            self.h2.send_headers(sid, [(":status", "200"), ("content-length", str(body))])
            self.pending[sid] = [body, 0]
            if body == 3:
                self.h2.send_data(sid, b"ok\n", end_stream=True)
                del self.pending[sid]
                log(self.out, f"DONE {self.id} {sid} 3")
        elif isinstance(event, h2.events.StreamReset):
            if event.stream_id in self.pending:
                del self.pending[event.stream_id]
            log(self.out, f"RESET {self.id} {event.stream_id} {int(event.error_code)}")
        elif isinstance(event, h2.events.DataReceived):
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)

    def send_bodies(self):
        for sid in list(self.pending):
            remaining, sent = self.pending[sid]
            while remaining > 0:
                try:
                    window = self.h2.local_flow_control_window(sid)
                except h2.exceptions.StreamClosedError:
                    remaining = 0
                    break
                size = min(window, self.h2.max_outbound_frame_size, remaining)
                if size <= 0:
                    break
                remaining -= size
                sent += size
                self.h2.send_data(sid, b"a" * size, end_stream=remaining == 0)
                log(self.out, f"SENT {self.id} {sid} {sent}")
                self.flush()
            if remaining == 0:
                del self.pending[sid]
                log(self.out, f"DONE {self.id} {sid} {sent}")
            else:
                self.pending[sid] = [remaining, sent]

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except (ssl.SSLError, OSError):
                pass


def serve(sock, out, goaway_after, goaway_code):
    connection = None
    try:
        connection = Connection(sock, out, goaway_after, goaway_code)
        connection.run()
    finally:
        try:
            sock.close()
        except OSError:
            pass
        if connection is not None:
            log(out, f"CLOSED {connection.id}")


def main():
    end_with_the_test()
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--goaway-after", type=int, default=0)
    parser.add_argument("--goaway-code", type=int, default=0)
    args = parser.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["h2"])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    out = open(args.log, "a")
    print("READY", listener.getsockname()[1], flush=True)
    # Ends with the test: stdin closes when the test releases the origin.
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    while True:
        try:
            raw, _ = listener.accept()
        except OSError:
            return
        try:
            sock = ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            continue
        threading.Thread(target=serve, args=(sock, out, args.goaway_after, args.goaway_code), daemon=True).start()


if __name__ == "__main__":
    main()
