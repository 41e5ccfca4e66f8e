/// The idle-connections benchmark's clients, run with python3 (standard
/// library only): opens connections to the proxy (TLS with the forged leaf),
/// sends one request on each so that its upstream connection exists too,
/// prints `READY opened failed`, and holds them all until its standard
/// input closes. Arguments: proxy port, connections, how many to open at a
/// time, and `http1` or `h2`.
///
/// With `h2`, each connection offers only `h2` by ALPN (one that ends up
/// with anything else counts as failed), sends the connection preface and
/// an empty SETTINGS, acknowledges the proxy's SETTINGS, and sends one GET
/// on stream 1 (HPACK without Huffman coding or indexing, so no encoder is
/// needed) whose response it reads to the end of the stream.
enum IdleClientScript {
    static let source = #"""
import asyncio, ssl, struct, sys

port = int(sys.argv[1]); count = int(sys.argv[2]); parallel = int(sys.argv[3])
http2 = len(sys.argv) > 4 and sys.argv[4] == "h2"
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
if http2: context.set_alpn_protocols(["h2"])
held = []
failures = 0

def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

def literal(index, value):
    # Literal field without indexing, name from the static table, raw value (RFC 7541 §6.2.2).
    return bytes([index, len(value)]) + value

# :method GET (static 2), :scheme https (static 7), :path /small, :authority localhost.
REQUEST = bytes([0x82, 0x87]) + literal(4, b"/small") + literal(1, b"localhost")
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(0x4, 0, 0)

async def exchange_h2(reader, writer):
    if writer.get_extra_info("ssl_object").selected_alpn_protocol() != "h2":
        raise ValueError("no h2")
    writer.write(PREFACE + frame(0x1, 0x5, 1, REQUEST))  # HEADERS, END_STREAM | END_HEADERS
    while True:
        head = await reader.readexactly(9)
        length = int.from_bytes(head[:3], "big"); kind = head[3]; flags = head[4]
        stream = int.from_bytes(head[5:9], "big") & 0x7fffffff
        await reader.readexactly(length)
        if kind == 0x4 and not flags & 0x1:
            writer.write(frame(0x4, 0x1, 0))  # SETTINGS ACK
        elif kind in (0x3, 0x7):
            raise ValueError("reset or GOAWAY")
        elif kind in (0x0, 0x1) and stream == 1 and flags & 0x1:
            return

async def exchange_http1(reader, writer):
    writer.write(b"GET /small HTTP/1.1\r\nHost: localhost\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    await reader.readexactly(length)

async def open_one(gate):
    global failures
    async with gate:
        writer = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
            await (exchange_h2 if http2 else exchange_http1)(reader, writer)
            held.append(writer)
        except Exception:
            failures += 1
            if writer is not None: writer.close()

async def main():
    gate = asyncio.Semaphore(parallel)
    await asyncio.gather(*(open_one(gate) for _ in range(count)))
    print(f"READY {len(held)} {failures}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    for writer in held: writer.close()

asyncio.run(main())
"""#
}
