#!/usr/bin/python3
"""An HTTP/2 client on python3-h2 for the proxy's end-to-end tests: several
streams on one connection through the proxy (reverse mode, or after CONNECT),
each driven as a scenario asks, with its own flow control.

Usage: h2_client.py SCENARIO --port P [--connect HOST:PORT] [--origin-log FILE] [--path PATH]
  reset-mid-body  /bytes/8388608 and five /bytes/1048576; the large one is
                  reset (CANCEL) once 256 KiB of it arrived.
  slow-reader     /bytes/16777216 whose window is never opened beyond the
                  initial 65,535 bytes, beside four /bytes/4194304; once these
                  are done, prints how much of the slow body the origin had
                  sent (from its log), then opens the window and reads the rest.
  many            twenty /bytes/65536 at once (an origin that sends GOAWAY).
  peer-twice      /peer, then /peer again on the same connection --sleep
                  seconds later.
  get             one GET of --path.
  get-reused      a GET of /warm, then one of --path (on the upstream connection /warm used).
  bodies          for Support/closing_origin.py, each after a GET that leaves an
                  upstream connection to reuse: a POST whose body goes with its
                  head, then one that asks for 100-continue and sends its body
                  only after the 100.
Prints, one line each:
  COMPLETE <stream> <bytes>      a response that ended normally
  RESET <stream> <code>          a stream the proxy reset
  ANSWER <stream> <status> <body, on one line>   (get, get-reused, bodies)
  RESET-SENT <stream> <bytes>    this client reset the stream after <bytes>
  GOAWAY <code> <last stream>
  ORIGIN-SLOW-SENT <bytes> / SLOW-RECEIVED <bytes>
  BODY <n> <body>                the nth /peer's body (peer-twice)
  EOF
"""
import argparse
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from h2_tls import open_h2_tls  # noqa: E402


def open_tls(args):
    return open_h2_tls(args.port, args.connect, "localhost", timeout=20)


def origin_sent(log, size):
    """The most the origin's log says it sent of the (only) /bytes/<size> response."""
    stream, sent = None, 0
    for line in open(log):
        parts = line.split()
        if parts[0] == "REQUEST" and parts[3] == f"/bytes/{size}":
            stream = (parts[1], parts[2])
        elif parts[0] == "SENT" and stream == (parts[1], parts[2]):
            sent = max(sent, int(parts[3]))
    return sent


class Client:
    def __init__(self, args):
        self.sock = open_tls(args)
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        self.received = {}
        self.bodies = {}
        self.ended = set()
        self.stalled = set()  # streams whose window is not opened
        self.closed = False
        self.authority = args.connect or "localhost"
        self.status = {}
        self.text = {}
        self.continued = set()  # streams that got a 100 Continue

    def get(self, path):
        sid = self.h2.get_next_available_stream_id()
        self.h2.send_headers(sid, [(":method", "GET"), (":scheme", "https"), (":authority", self.authority),
                                   (":path", path)], end_stream=True)
        self.received[sid] = 0
        return sid

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def step(self):
        """Reads once and handles what came; False once the connection ended."""
        self.flush()
        try:
            data = self.sock.recv(65536)
        except (ssl.SSLError, OSError):
            data = b""
        if not data:
            print("EOF", flush=True)
            self.closed = True
            return False
        for event in self.h2.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                self.status[event.stream_id] = dict(event.headers).get(b":status", b"").decode()
            elif isinstance(event, h2.events.InformationalResponseReceived):
                self.continued.add(event.stream_id)
            if isinstance(event, h2.events.DataReceived):
                self.received[event.stream_id] = self.received.get(event.stream_id, 0) + len(event.data)
                if len(self.bodies.get(event.stream_id, b"")) < 4096:
                    self.bodies[event.stream_id] = self.bodies.get(event.stream_id, b"") + event.data
                self.text[event.stream_id] = self.text.get(event.stream_id, b"") + event.data
                if event.stream_id in self.stalled:
                    # The connection window stays open; the stream's does not.
                    self.h2.increment_flow_control_window(event.flow_controlled_length)
                else:
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.ended.add(event.stream_id)
                print(f"COMPLETE {event.stream_id} {self.received[event.stream_id]}", flush=True)
            elif isinstance(event, h2.events.StreamReset):
                self.ended.add(event.stream_id)
                print(f"RESET {event.stream_id} {int(event.error_code)}", flush=True)
            elif isinstance(event, h2.events.ConnectionTerminated):
                print(f"GOAWAY {int(event.error_code)} {event.last_stream_id}", flush=True)
        self.flush()
        return True

    def wait(self, streams):
        while not set(streams) <= self.ended and self.step():
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connect")
    parser.add_argument("--origin-log")
    parser.add_argument("--sleep", type=float, default=0)
    parser.add_argument("--path")
    args = parser.parse_args()
    c = Client(args)
    if args.scenario == "reset-mid-body":
        large = c.get("/bytes/8388608")
        others = [c.get("/bytes/1048576") for _ in range(5)]
        while c.received[large] < 256 * 1024 and large not in c.ended and c.step():
            pass
        c.h2.reset_stream(large, error_code=8)
        c.ended.add(large)
        print(f"RESET-SENT {large} {c.received[large]}", flush=True)
        c.wait(others)
    elif args.scenario == "slow-reader":
        c.h2.increment_flow_control_window(1 << 26)
        slow = c.get("/bytes/16777216")
        c.stalled.add(slow)
        fast = [c.get("/bytes/4194304") for _ in range(4)]
        c.wait(fast)
        print(f"SLOW-RECEIVED {c.received[slow]}", flush=True)
        # The origin is stalled once what it wrote stops growing (the log is
        # written as it sends; give it up to 10 s to get there).
        sent, still, deadline = origin_sent(args.origin_log, 16777216), 0, time.monotonic() + 10
        while still < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
            now = origin_sent(args.origin_log, 16777216)
            still = still + 1 if now == sent else 0
            sent = now
        print(f"ORIGIN-SLOW-SENT {sent}", flush=True)
        c.stalled.discard(slow)
        c.h2.acknowledge_received_data(c.received[slow], slow)
        c.wait([slow])
    elif args.scenario in ("get", "get-reused", "bodies"):
        def answered(sid):
            text = " ".join(c.text.get(sid, b"").decode(errors="replace").split())
            print(f"ANSWER {sid} {c.status.get(sid)} {text}", flush=True)

        def post(path, body, expect):
            sid = c.h2.get_next_available_stream_id()
            headers = [(":method", "POST"), (":scheme", "https"), (":authority", c.authority), (":path", path),
                       ("content-length", str(len(body)))]
            c.h2.send_headers(sid, headers + ([("expect", "100-continue")] if expect else []), end_stream=False)
            c.received[sid] = 0
            if expect:
                while sid not in c.continued and sid not in c.ended and c.step():
                    pass
            if sid not in c.ended:
                c.h2.send_data(sid, body.encode(), end_stream=True)
            c.wait([sid])
            answered(sid)
        if args.scenario.startswith("get"):
            if args.scenario == "get-reused":
                c.wait([c.get("/warm")])
            sid = c.get(args.path)
            c.wait([sid])
            answered(sid)
        else:
            c.wait([c.get("/warm")])
            post("/h2-post", "body-h2-post-1", expect=False)
            c.wait([c.get("/warm")])
            post("/h2-held", "body-h2-held-1", expect=True)
    elif args.scenario == "many":
        streams = [c.get("/bytes/65536") for _ in range(20)]
        c.wait(streams)
    elif args.scenario == "peer-twice":
        for n in (1, 2):
            if n == 2:
                time.sleep(args.sleep)
            sid = c.get("/peer")
            c.wait([sid])
            print(f"BODY {n} {c.bodies.get(sid, b'').decode()}", flush=True)
    else:
        sys.exit("unknown scenario " + args.scenario)
    c.h2.close_connection()
    c.flush()
    c.sock.close()


if __name__ == "__main__":
    main()
