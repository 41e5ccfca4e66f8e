#!/usr/bin/env python3
"""An HTTPS origin that speaks only HTTP/2, written from raw frames.

Usage: h2_frames_origin.py --cert CHAIN.pem --key KEY.pem [--mode MODE]
Prints "READY <port>" once listening. Its ALPN is `h2` only and, as
OpenSSL servers do when nothing overlaps, a client offering anything else
completes the handshake without ALPN. Every client is sent SETTINGS first,
whatever it offered: an HTTP/1.1 request then gets GOAWAY (PROTOCOL_ERROR)
and the connection closes. Over HTTP/2, every request is answered 200 with
the body "hello over h2\n" (its request bodies are not read). Other modes
answer every request in one way:
  reset-before-head  RST_STREAM (INTERNAL_ERROR) instead of a response
  reset-mid-body     a head promising 100000 bytes, 1000 of them, then RST_STREAM
  goaway             GOAWAY (last stream 0, NO_ERROR): the request is not processed
"""
import argparse
import os
import socket
import ssl
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from test_lifetime import end_with_the_test  # noqa: E402


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def literal(name, value):
    # A literal header field without indexing, new name (RFC 7541 §6.2.2); short strings only.
    return bytes([0x00, len(name)]) + name + bytes([len(value)]) + value


def answer(s, stream, mode):
    if mode == "reset-before-head":
        s.sendall(frame(3, 0, stream, (2).to_bytes(4, "big")))
    elif mode == "reset-mid-body":
        s.sendall(frame(1, 4, stream, b"\x88" + literal(b"content-length", b"100000"))
                  + frame(0, 0, stream, b"x" * 1000) + frame(3, 0, stream, (2).to_bytes(4, "big")))
    elif mode == "goaway":
        s.sendall(frame(7, 0, 0, (0).to_bytes(4, "big") + (0).to_bytes(4, "big")))
    else:
        s.sendall(frame(1, 4, stream, b"\x88" + literal(b"content-type", b"text/plain"))
                  + frame(0, 1, stream, b"hello over h2\n"))


def serve(conn, context, mode):
    try:
        s = context.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        return
    try:
        s.sendall(frame(4, 0, 0))
        if s.selected_alpn_protocol() != "h2":
            s.recv(65536)
            s.sendall(frame(7, 0, 0, (0).to_bytes(4, "big") + (1).to_bytes(4, "big")))
            return
        data = b""
        while len(data) < 24:
            chunk = s.recv(65536)
            if not chunk: return
            data += chunk
        data = data[24:]
        while True:
            while len(data) >= 9 and len(data) >= 9 + int.from_bytes(data[:3], "big"):
                length = int.from_bytes(data[:3], "big"); kind = data[3]; flags = data[4]
                stream = int.from_bytes(data[5:9], "big") & 0x7FFFFFFF
                payload = data[9:9 + length]; data = data[9 + length:]
                if kind == 4 and not flags & 1:
                    s.sendall(frame(4, 1, 0))
                if kind in (0, 1) and flags & 1:
                    answer(s, stream, mode)
            chunk = s.recv(65536)
            if not chunk: return
            data += chunk
    except (ssl.SSLError, OSError):
        pass
    finally:
        try: s.close()
        except OSError: pass


def main():
    end_with_the_test()
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--mode", default="answer")
    args = parser.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["h2"])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print("READY", server.getsockname()[1], flush=True)
    # Ends with the test: stdin closes when the test releases the origin. (A thread's
    # sys.exit ends only the thread, and closing the socket does not wake accept.)
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(conn, context, args.mode), daemon=True).start()


if __name__ == "__main__":
    main()
