#!/usr/bin/python3
"""A stalled upload through the proxy, on python3-h2: a client POSTs a large
body over HTTP/2 (CONNECT, then h2) to an origin that does not take it, and
sends whatever the proxy's flow-control windows allow.

The origin, in this process, is one of:
  h2      speaks HTTP/2 and reads request bodies but never acknowledges them:
          its receive windows stay at the protocol's initial 65,535 bytes
  http1   speaks HTTP/1.1 (the proxy translates) and never reads its socket,
          whose receive buffer is set to --origin-buffer bytes

Usage: h2_upload_stall.py ORIGIN --port PROXY_PORT --cert CHAIN.pem --key KEY.pem [--size N]
Once no window has opened for two seconds (or the whole body went, or 60 s
passed), prints:
  TAKEN <bytes>       what the proxy took from the client
  RECEIVED <bytes>    what reached the origin (h2; 0 for http1, which reads nothing)
  ENDED <event>       when the proxy reset the stream or ended the connection
"""
import argparse
import select
import socket
import ssl
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from h2_tls import open_h2_tls  # noqa: E402
from test_lifetime import end_with_the_test  # noqa: E402

received = 0
received_lock = threading.Lock()
# The origin's connections, kept open (never read, for http1) until the process ends.
held = []


def serve_h2(sock):
    """One HTTP/2 origin connection: reads everything, acknowledges nothing, answers nothing."""
    global received
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    try:
        sock.sendall(conn.data_to_send())
        while True:
            data = sock.recv(65536)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    with received_lock:
                        received += len(event.data)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
    except (ssl.SSLError, OSError, h2.exceptions.ProtocolError):
        return


def origin(kind, listener, ctx):
    while True:
        raw, _ = listener.accept()
        raw.settimeout(20)
        try:
            sock = ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            continue
        held.append(sock)
        if kind == "h2":
            threading.Thread(target=serve_h2, args=(sock,), daemon=True).start()


def main():
    end_with_the_test()
    parser = argparse.ArgumentParser()
    parser.add_argument("origin", choices=["h2", "http1"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--size", type=int, default=16 << 20)
    parser.add_argument("--origin-buffer", type=int, default=16384)
    args = parser.parse_args()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["h2"] if args.origin == "h2" else ["http/1.1"])
    listener = socket.socket()
    if args.origin == "http1":
        # Accepted sockets inherit it: the kernel holds little of what is never read.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.origin_buffer)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    threading.Thread(target=origin, args=(args.origin, listener, ctx), daemon=True).start()
    authority = f"localhost:{listener.getsockname()[1]}"

    sock = open_h2_tls(args.port, authority, "localhost", timeout=20)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "POST"), (":scheme", "https"), (":authority", authority),
                            (":path", "/upload"), ("content-length", str(args.size))])
    sock.sendall(conn.data_to_send())
    taken = 0
    ended = False
    started = quiet_since = time.monotonic()
    try:
        while not ended and taken < args.size and time.monotonic() - quiet_since < 2 and time.monotonic() - started < 60:
            window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, args.size - taken)
            if window > 0:
                conn.send_data(sid, b"u" * window, end_stream=taken + window == args.size)
                taken += window
                sock.sendall(conn.data_to_send())
                quiet_since = time.monotonic()
                continue
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable or sock.pending():
                data = sock.recv(65536)
                if not data:
                    print("ENDED EOF", flush=True)
                    break
                for event in conn.receive_data(data):
                    if isinstance(event, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                        print("ENDED", type(event).__name__, flush=True)
                        ended = True
                out = conn.data_to_send()
                if out:
                    sock.sendall(out)
    except (ssl.SSLError, OSError) as error:
        print("ENDED", type(error).__name__, error, flush=True)
    time.sleep(0.5)  # what is in flight reaches the origin
    with received_lock:
        print("TAKEN", taken)
        print("RECEIVED", received, flush=True)


if __name__ == "__main__":
    main()
