"""TLS with ALPN h2 to the proxy, directly (reverse mode) or after CONNECT, for the test clients."""
import socket
import ssl
import sys


def open_tunnel(port, connect, timeout=10):
    """A socket to the proxy at 127.0.0.1:`port` after `CONNECT connect` was answered 200; exits otherwise."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    raw.sendall(f"CONNECT {connect} HTTP/1.1\r\nHost: {connect}\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = raw.recv(4096)
        if not chunk:
            sys.exit("the proxy closed the CONNECT")
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        sys.exit("CONNECT refused: " + answer.decode(errors="replace"))
    return raw


def open_h2_tls(port, connect=None, server_name="localhost", timeout=10):
    """A TLS socket to 127.0.0.1:`port` that agreed on h2; exits with the reason otherwise."""
    raw = open_tunnel(port, connect, timeout) if connect else socket.create_connection(("127.0.0.1", port), timeout=timeout)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(raw, server_hostname=server_name)
    if sock.selected_alpn_protocol() != "h2":
        sys.exit(f"ALPN {sock.selected_alpn_protocol()}, not h2")
    sock.settimeout(timeout)
    return sock
