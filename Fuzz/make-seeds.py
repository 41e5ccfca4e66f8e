#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets.

    Fuzz/make-seeds.py                 rewrites Fuzz/corpus/ (committed)
    Fuzz/make-seeds.py --keys DIR      writes key and CA seeds into DIR (never committed)

The committed seeds are hand-written messages, names and policies, plus
certificates and ClientHellos made with openssl: certificates of throwaway
keys (the keys are deleted at once), and the first flight of `openssl
s_client` captured on a loopback socket. No private key is committed: seeds
holding one are made by `--keys` at run time, into the scratch corpus.
"""
import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.abspath(__file__))
PIN = base64.b64encode(bytes(32)).decode()
PIN2 = base64.b64encode(bytes([1] * 32)).decode()


def crlf(text):
    return text.replace("\n", "\r\n").encode()


# Control byte first (see Fuzz/Targets/HTTP1Fuzz.swift): bit 0 accepts upgrades.
HTTP1_REQUESTS = {
    "get": b"\0" + crlf("GET /index.html?q=1 HTTP/1.1\nHost: api.example.com\nAccept: */*\n\n"),
    "absolute-form": b"\0" + crlf("GET http://api.example.com:8080/a/b?c HTTP/1.1\nHost: ignored.example\n"
                                  "Proxy-Connection: keep-alive\nProxy-Authorization: Basic dXNlcjpwYXNz\n\n"),
    "post-length": b"\0" + crlf("POST /upload HTTP/1.1\nHost: a.example\nContent-Length: 11\n"
                                "Content-Type: text/plain\n\n") + b"hello world",
    "post-chunked-trailers": b"\0" + crlf("POST /c HTTP/1.1\nHost: a.example\nTransfer-Encoding: chunked\nTE: trailers\n"
                                          "Trailer: Checksum\n\n5;ext=1\nhello\n6\n world\n0\nChecksum: abc\n\n"),
    "pipeline": b"\0" + crlf("GET /1 HTTP/1.1\nHost: a.example\n\nGET /2 HTTP/1.1\nHost: a.example\nConnection: close\n\n"),
    "connect": b"\0" + crlf("CONNECT api.example.com:443 HTTP/1.1\nHost: api.example.com:443\n\n") + b"\x16\x03\x01\x00\x05hello",
    "websocket-accepted": b"\x01" + crlf("GET /chat HTTP/1.1\nHost: ws.example\nUpgrade: websocket\nConnection: Upgrade\n"
                                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\nSec-WebSocket-Version: 13\n\n")
                                   + b"\x81\x05hello",
    "h2c-declined": b"\0" + crlf("GET / HTTP/1.1\nHost: a.example\nConnection: Upgrade, HTTP2-Settings\nUpgrade: h2c\n"
                                 "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\n\nGET /next HTTP/1.1\nHost: a.example\n\n"),
    "http10-keep-alive": b"\0" + crlf("GET / HTTP/1.0\nConnection: keep-alive\nKeep-Alive: timeout=5\n\n"),
    "http10-no-host": b"\0" + crlf("GET /old HTTP/1.0\n\n"),
    "expect-continue": b"\0" + crlf("PUT /x HTTP/1.1\nHost: a.example\nExpect: 100-continue\nContent-Length: 3\n\n") + b"abc",
    "options-asterisk": b"\0" + crlf("OPTIONS * HTTP/1.1\nHost: a.example\n\n"),
    "ipv6-absolute": b"\0" + crlf("GET http://[::1]:8080/x HTTP/1.1\nHost: [::1]:8080\n\n"),
    "connection-names": b"\0" + crlf("GET / HTTP/1.1\nHost: a.example\nConnection: close, X-Foo\nX-Foo: bar\nX-Keep: 1\n"
                                     "Upgrade: \nVia: 1.0 other\n\n"),
    "bare-lf-and-empty-lines": b"\0\r\n\n" + b"GET / HTTP/1.1\nHost: a.example\nX: y\n\n",
}

# Control byte: two bits per response pick the request method (0 GET, 1 HEAD, 2 CONNECT, 3 POST).
HTTP1_RESPONSES = {
    "ok-length": b"\0" + crlf("HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 5\n\n") + b"hello",
    "chunked-trailers": b"\0" + crlf("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nTrailer: Expires\n\n"
                                     "4\nWiki\n5\npedia\n0\nExpires: never\nContent-Length: 9\n\n"),
    "until-close": b"\0" + crlf("HTTP/1.0 200 OK\nContent-Type: text/html\n\n") + b"<html>body until close</html>",
    "no-content": b"\0" + crlf("HTTP/1.1 204 No Content\nContent-Length: 5\n\nHTTP/1.1 304 Not Modified\nETag: \"x\"\n\n"),
    "head": b"\x01" + crlf("HTTP/1.1 200 OK\nContent-Length: 1000\nTransfer-Encoding: chunked\n\n"),
    "continue": b"\0" + crlf("HTTP/1.1 100 Continue\n\nHTTP/1.1 103 Early Hints\nLink: </s.css>; rel=preload\n\n"
                             "HTTP/1.1 201 Created\nLocation: /x\nContent-Length: 0\n\n"),
    "switching": b"\0" + crlf("HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\nConnection: Upgrade\n"
                              "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\n\n") + b"\x81\x02hi",
    "connect-established": b"\x02" + crlf("HTTP/1.1 200 Connection established\n\n") + b"\x16\x03\x03\x00\x02ab",
    "pipeline": b"\x34" + crlf("HTTP/1.1 200 OK\nContent-Length: 2\nConnection: keep-alive\n\nok"
                               "HTTP/1.1 404 Not Found\nContent-Length: 0\n\n"
                               "HTTP/1.1 500 Oops\nConnection: close, X-Hop\nX-Hop: 1\nKeep-Alive: timeout=1\n"
                               "Content-Length: 3\n\nbad"),
    "duplicate-length": b"\0" + crlf("HTTP/1.1 200 OK\nContent-Length: 3\nContent-Length: 3\nSet-Cookie: a=1\n"
                                     "Set-Cookie: b=2\n\nabc"),
}

HOST_NAMES = {
    "dns": "api.example.com", "wildcard": "*.example.com", "ipv4": "127.0.0.1", "ipv6-brackets": "[2001:db8::1]",
    "ipv4-mapped": "::ffff:192.0.2.1", "a-label": "xn--bcher-kva.example", "punycode": "bcher-kva",
    "trailing-dot": "EXAMPLE.COM.", "hyphens": "a-b.c-d.example", "single-label": "localhost",
    "zone": "fe80::1%eth0", "short-ipv4": "1.2.3", "unicode": "b\u00fccher.de", "long-label": "a" * 63 + ".example",
}

POLICIES_JSON = {
    "afnetworking": {"family": "afnetworking", "profile": "4.x", "SSLPinningMode": "publicKey",
                     "allowInvalidCertificates": False, "validatesDomainName": True, "pinnedCertificates": ["leaf.pem"]},
    "afnetworking-2.5.2": {"family": "afnetworking", "profile": "2.5.2", "SSLPinningMode": "none"},
    "custom-anchors": {"family": "custom-anchors", "anchorCertificates": ["ca.pem", "ca.der"],
                       "anchorCertificatesOnly": False, "validatesDomainName": True},
    "alamofire": {"family": "alamofire", "allHostsMustBeEvaluated": True, "evaluators": {"api.example.com": {
        "type": "CompositeTrustEvaluator", "evaluators": [
            {"type": "DefaultTrustEvaluator", "validateHost": True},
            {"type": "PublicKeysTrustEvaluator", "keys": ["key.pub.pem", "chain.pem"], "performDefaultValidation": False},
            {"type": "PinnedCertificatesTrustEvaluator", "certificates": ["ca.pem"], "acceptSelfSignedCertificates": True},
        ]}, "other.example.com": {"type": "DisabledTrustEvaluator"}}},
    "okhttp": {"family": "okhttp", "profile": "presented-chain", "certificatePinner": {
        "api.example.com": ["sha256/" + PIN], "**.example.com": ["sha256/" + PIN2, "sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA="],
        "*.example.com": ["sha256/" + PIN]}},
    "trustkit": {"family": "trustkit", "TSKSwizzleNetworkDelegates": False, "TSKPinnedDomains": {"example.com": {
        "TSKPublicKeyHashes": [PIN, PIN2], "TSKIncludeSubdomains": True, "TSKEnforcePinning": False,
        "TSKExpirationDate": "2030-12-31", "TSKReportURIs": ["https://report.example.com/pins"],
        "TSKDisableDefaultReportUri": True}}},
    "trustkit-plist": {"family": "trustkit", "infoPlist": "Info.plist"},
    "android": {"family": "android-nsc", "networkSecurityConfig": "network_security_config.xml", "targetSdkVersion": 23},
    "curl": {"family": "curl", "pinnedpubkey": "sha256//" + PIN + ";sha256//" + PIN2, "insecure": False, "cacert": "ca.pem"},
    "curl-key-file": {"family": "curl", "pinnedpubkey": "key.pub.pem"},
}

POLICIES_XML = {
    "pins-and-raw": f"""<?xml version="1.0" encoding="utf-8"?>
<network-security-config>
  <base-config cleartextTrafficPermitted="false">
    <trust-anchors><certificates src="system"/><certificates src="user"/></trust-anchors>
  </base-config>
  <domain-config>
    <domain includeSubdomains="true">example.com</domain>
    <pin-set expiration="2030-01-01"><pin digest="SHA-256">{PIN}</pin><pin digest="SHA-256">{PIN2}</pin></pin-set>
    <trust-anchors><certificates src="@raw/proxy_ca" overridePins="true"/></trust-anchors>
    <domain-config><domain>api.example.com</domain><trust-anchors><certificates src="user"/></trust-anchors></domain-config>
  </domain-config>
  <debug-overrides><trust-anchors><certificates src="user"/></trust-anchors></debug-overrides>
</network-security-config>
""",
    "minimal": """<network-security-config><domain-config><domain>api.example.com</domain></domain-config></network-security-config>""",
}

PLIST_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" ' \
             '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n'
POLICIES_PLIST = {
    "info-plist": PLIST_HEAD + f"""<dict>
  <key>CFBundleIdentifier</key><string>com.example.app</string>
  <key>TSKConfiguration</key>
  <dict>
    <key>TSKSwizzleNetworkDelegates</key><false/>
    <key>TSKPinnedDomains</key>
    <dict>
      <key>example.com</key>
      <dict>
        <key>TSKIncludeSubdomains</key><true/>
        <key>TSKEnforcePinning</key><true/>
        <key>TSKPublicKeyHashes</key><array><string>{PIN}</string><string>{PIN2}</string></array>
        <key>TSKExpirationDate</key><string>2031-01-01</string>
      </dict>
    </dict>
  </dict>
</dict>
</plist>
""",
    "bare-configuration": PLIST_HEAD + f"""<dict><key>TSKPinnedDomains</key><dict><key>api.example.com</key><dict>
<key>TSKPublicKeyHashes</key><array><string>{PIN}</string><string>{PIN2}</string></array>
<key>TSKReportURIs</key><array><string>https://r.example/</string></array><key>TSKDisableDefaultReportUri</key><true/>
</dict></dict></dict></plist>
""",
}

RULES = {
    "full": b'{"defaultProfile":"forge","passthrough":["**.bank.example","pinned.example.com"],'
            b'"rules":[{"pattern":"*.example.com","profile":"passthrough"},{"pattern":"api.example.com","profile":"forge"}]}',
    "empty": b"{}",
    "unknown-profile": b'{"defaultProfile":"self-signed","rules":[{"pattern":"127.0.0.1","profile":"expired"}]}',
    "ipv6-pattern": b'{"passthrough":["[::1]","xn--bcher-kva.example"]}',
}


def write(target, name, data):
    folder = os.path.join(ROOT, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def openssl(*args, cwd=None):
    subprocess.run(["openssl", *args], check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def certificate_seeds():
    """Certificates of throwaway keys: a CA, a leaf with many SANs, a chain, DER and public keys."""
    with tempfile.TemporaryDirectory() as tmp:
        run = lambda *a: openssl(*a, cwd=tmp)
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "30", "-subj", "/O=Fuzz Trust/CN=Fuzz Root",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-addext", "nameConstraints=critical,permitted;DNS:example.com,permitted;IP:10.0.0.0/255.0.0.0")
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr",
            "-subj", "/CN=api.example.com/O=Example Inc")
        with open(os.path.join(tmp, "ext.cnf"), "w") as f:
            f.write("subjectAltName=DNS:api.example.com,DNS:*.api.example.com,IP:10.1.2.3,IP:::1,email:a@example.com\n"
                    "extendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
        run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-days", "10",
            "-extfile", "ext.cnf", "-out", "leaf.pem")
        run("x509", "-in", "leaf.pem", "-outform", "DER", "-out", "leaf.der")
        run("x509", "-in", "ca.pem", "-pubkey", "-noout", "-out", "ca.pub.pem")
        run("pkey", "-pubin", "-in", "ca.pub.pem", "-outform", "DER", "-out", "ca.pub.der")
        read = lambda name: open(os.path.join(tmp, name), "rb").read()
        write("certificates", "ca.pem", read("ca.pem"))
        write("certificates", "leaf.pem", read("leaf.pem"))
        write("certificates", "chain.pem", read("leaf.pem") + read("ca.pem"))
        write("certificates", "leaf.der", read("leaf.der"))
        write("certificates", "public-key.pem", read("ca.pub.pem"))
        write("certificates", "public-key.der", read("ca.pub.der"))
        write("certificates", "text-around-pem.pem", b"subject=CN=Fuzz Root\nissuer=CN=Fuzz Root\n" + read("ca.pem"))


def key_seeds(folder):
    """Private keys in every layout the loaders accept, and a CA with its key: run-time seeds only."""
    os.makedirs(folder, exist_ok=True)
    run = lambda *a: openssl(*a, cwd=folder)
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec-pkcs8.pem")
    run("pkey", "-in", "ec-pkcs8.pem", "-outform", "DER", "-out", "ec-pkcs8.der")
    run("ec", "-in", "ec-pkcs8.pem", "-out", "ec-traditional.pem")
    run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "rsa-pkcs8.pem")
    run("rsa", "-in", "rsa-pkcs8.pem", "-traditional", "-out", "rsa-traditional.pem")
    run("pkey", "-in", "ec-pkcs8.pem", "-aes128", "-passout", "pass:fuzz", "-out", "ec-encrypted.pem")
    run("req", "-x509", "-key", "ec-pkcs8.pem", "-out", "ca-cert.pem", "-days", "30", "-subj", "/CN=Fuzz CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    with open(os.path.join(folder, "ca-with-key.pem"), "wb") as f:
        f.write(open(os.path.join(folder, "ca-cert.pem"), "rb").read() + open(os.path.join(folder, "ec-pkcs8.pem"), "rb").read())
    # Regression: the same CA with its key's private scalar altered while the public key embedded
    # in the PKCS#8 still matches the certificate (once imported, and every leaf it forged failed
    # to verify). KeySeedRegressionTests makes the same input for `make test`.
    with open(os.path.join(folder, "ca-with-altered-key.pem"), "wb") as f:
        f.write(open(os.path.join(folder, "ca-cert.pem"), "rb").read()
                + altered_scalar(open(os.path.join(folder, "ec-pkcs8.pem"), "rb").read()))
    os.remove(os.path.join(folder, "ca-cert.pem"))


def altered_scalar(pem):
    """An EC P-256 PKCS#8 PEM with the lowest bit of its private scalar flipped, its embedded public key kept."""
    der = bytearray(base64.b64decode(b"".join(line for line in pem.splitlines() if not line.startswith(b"-----"))))
    start = der.index(bytes([0x02, 0x01, 0x01, 0x04, 0x20])) + 5
    assert der[start + 32:start + 38] == bytes([0xa1, 0x44, 0x03, 0x42, 0x00, 0x04]), "no embedded public key"
    der[start + 31] ^= 1
    body = base64.b64encode(bytes(der))
    lines = b"\n".join(body[i:i + 64] for i in range(0, len(body), 64))
    return b"-----BEGIN PRIVATE KEY-----\n" + lines + b"\n-----END PRIVATE KEY-----\n"


def capture_client_hellos():
    """The first flight of openssl s_client with different options, read on a loopback socket."""
    variants = {
        "sni-alpn": ["-servername", "api.example.com", "-alpn", "h2,http/1.1"],
        "tls12": ["-tls1_2", "-servername", "api.example.com", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"],
        "no-sni": ["-noservername"],
        "ip-sni": ["-servername", "127.0.0.1"],
        "idn-sni": ["-servername", "xn--bcher-kva.example"],
        "wildcard-sni": ["-servername", "*.example.com"],
        "long-sni": ["-servername", ("a" * 63 + ".") * 3 + "example"],
    }
    for name, options in variants.items():
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        client = subprocess.Popen(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *options],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        connection, _ = server.accept()
        connection.settimeout(5)
        data = b""
        # A record header, then read until the whole first record arrived.
        while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
        connection.close()
        server.close()
        client.kill()
        client.wait()
        write("clienthello", name, data)
    write("clienthello", "http-on-tls-port", b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")


def h2_frame(kind, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def h2_string(text):
    data = text.encode()
    assert len(data) < 127
    return bytes([len(data)]) + data


def h2_literal(name, value, indexing=False):
    """An HPACK literal field with a literal name, without Huffman coding."""
    return bytes([0x40 if indexing else 0x00]) + h2_string(name) + h2_string(value)


def h2_request(path="/", method="GET", extra=()):
    block = h2_literal(":method", method) + h2_literal(":scheme", "https")
    block += h2_literal(":authority", "example.com") + h2_literal(":path", path)
    for name, value in extra:
        block += h2_literal(name, value)
    return block


def http2_seeds():
    """Frames a client sends after the preface; the control byte's bit 0 is clear, so the
    target adds the preface, except for the raw seeds (bit 0 set), which carry their own."""
    headers, data, rst, settings, ping, goaway, window, continuation, priority = 1, 0, 3, 4, 6, 7, 8, 9, 2
    end_stream, end_headers, padded = 0x1, 0x4, 0x8
    seeds = {
        "get": h2_frame(headers, end_stream | end_headers, 1, h2_request()),
        "post-trailers": h2_frame(headers, end_headers, 1, h2_request("/up", "POST", [("te", "trailers")]))
        + h2_frame(data, 0, 1, b"hello") + h2_frame(headers, end_stream | end_headers, 1, h2_literal("x-sum", "5")),
        "streams-and-control": h2_frame(settings, 0, 0, bytes([0, 4, 0, 1, 0, 0, 0, 5, 0, 0, 64, 0]))
        + h2_frame(settings, 1, 0, b"") + h2_frame(ping, 0, 0, bytes(8)) + h2_frame(window, 0, 0, (1 << 20).to_bytes(4, "big"))
        + h2_frame(headers, end_headers, 1, h2_request("/a", "POST")) + h2_frame(headers, end_stream | end_headers, 3, h2_request("/b"))
        + h2_frame(priority, 0, 5, bytes([0, 0, 0, 1, 16])) + h2_frame(data, 0, 1, b"x" * 300)
        + h2_frame(rst, 0, 1, (8).to_bytes(4, "big")) + h2_frame(goaway, 0, 0, bytes(8)),
        "continuation": h2_frame(headers, end_stream, 1, h2_request()[:20])
        + h2_frame(continuation, end_headers, 1, h2_request()[20:]),
        "dynamic-table": h2_frame(headers, end_stream | end_headers, 1, h2_request(extra=[]) + h2_literal("x-big", "v" * 100, True))
        + h2_frame(headers, end_stream | end_headers, 3, h2_request("/2") + bytes([0x80 | 62])),
        "padded-data": h2_frame(headers, end_headers, 1, h2_request("/p", "POST"))
        + h2_frame(data, padded | end_stream, 1, bytes([4]) + b"body" + bytes(4)),
        "invalid-fields": h2_frame(headers, end_stream | end_headers, 1, h2_request(extra=[("Connection", "close")]))
        + h2_frame(headers, end_stream | end_headers, 3, h2_request(extra=[("X-Upper", "1")])),
    }
    for name, frames in seeds.items():
        write("http2-frames", name, b"\x0a" + frames)
    write("http2-frames", "bad-preface", b"\x03" + crlf("GET / HTTP/1.1\nHost: a\n\n"))
    capture_nghttp()
    # What an origin sends to a client that opened streams 1, 3, 5 (GETs), 7 (a POST with
    # a body and trailers) and 9 (a POST whose body stays open).
    push_promise = 5
    status = lambda code: h2_literal(":status", code)
    responses = {
        "bodies-and-trailers": h2_frame(settings, 1, 0, b"")
        + h2_frame(headers, end_headers, 1, status("200") + h2_literal("content-type", "text/plain"))
        + h2_frame(data, 0, 1, b"hello") + h2_frame(headers, end_stream | end_headers, 1, h2_literal("x-sum", "5"))
        + h2_frame(headers, end_stream | end_headers, 3, status("204"))
        + h2_frame(headers, end_headers, 7, status("200")) + h2_frame(data, end_stream, 7, b"x" * 200),
        "interim-then-final": h2_frame(headers, end_headers, 1, status("100"))
        + h2_frame(headers, end_headers, 1, status("103") + h2_literal("link", "</a.css>; rel=preload"))
        + h2_frame(headers, end_stream | end_headers, 1, status("200")),
        "push-promise": h2_frame(push_promise, end_headers, 1, (2).to_bytes(4, "big") + h2_request("/pushed"))
        + h2_frame(headers, end_stream | end_headers, 2, status("200")),
        "reset-and-goaway": h2_frame(headers, end_headers, 9, status("200")) + h2_frame(rst, 0, 9, (8).to_bytes(4, "big"))
        + h2_frame(window, 0, 0, (1 << 16).to_bytes(4, "big")) + h2_frame(ping, 0, 0, bytes(8))
        + h2_frame(goaway, 0, 0, (3).to_bytes(4, "big") + (0).to_bytes(4, "big") + b"bye"),
        "settings-and-windows": h2_frame(settings, 0, 0, bytes([0, 4, 0, 0, 0, 10, 0, 3, 0, 0, 0, 2]))
        + h2_frame(settings, 1, 0, b"") + h2_frame(window, 0, 7, (100).to_bytes(4, "big"))
        + h2_frame(headers, end_stream | end_headers, 5, status("200") + h2_literal("x-big", "v" * 100, True))
        + h2_frame(headers, end_stream | end_headers, 3, status("200") + bytes([0x80 | 62])),
        "invalid-responses": h2_frame(headers, end_stream | end_headers, 1, status("200") + h2_literal("Connection", "close"))
        + h2_frame(headers, end_stream | end_headers, 3, h2_literal("x-no-status", "1"))
        + h2_frame(headers, end_stream | end_headers, 5, status("2000")),
    }
    for name, frames in responses.items():
        write("http2-responses", name, b"\x00" + frames)


def capture_nghttp():
    """The first flight of nghttp (Huffman-coded, dynamic table) with a body and trailers, on a loopback socket."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    with tempfile.NamedTemporaryFile() as body:
        body.write(b"0123456789" * 20)
        body.flush()
        client = subprocess.Popen(["nghttp", "-n", "-d", body.name, "--trailer", "x-check: 42", "-H", "cookie: a=1",
                                   f"http://127.0.0.1:{port}/upload", f"http://127.0.0.1:{port}/second"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        connection, _ = server.accept()
        connection.settimeout(1)
        data = b""
        try:
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        connection.close()
        server.close()
        client.kill()
        client.wait()
    write("http2-frames", "nghttp-first-flight", b"\x03" + data)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--keys":
        key_seeds(sys.argv[2])
        return
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    shutil.rmtree(os.path.join(ROOT, "corpus"), ignore_errors=True)
    for name, data in HTTP1_REQUESTS.items():
        write("http1-request", name, data)
    for name, data in HTTP1_RESPONSES.items():
        write("http1-response", name, data)
    for name, text in HOST_NAMES.items():
        write("hostname", name, text)
    import json
    for name, policy in POLICIES_JSON.items():
        write("policy-json", name + ".json", json.dumps(policy, indent=1))
    for name, text in POLICIES_XML.items():
        write("policy-xml", name + ".xml", text)
    for name, text in POLICIES_PLIST.items():
        write("policy-plist", name + ".plist", text)
    for name, data in RULES.items():
        write("rules", name + ".json", data)
    certificate_seeds()
    capture_client_hellos()
    http2_seeds()


if __name__ == "__main__":
    main()
