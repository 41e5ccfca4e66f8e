/// The idle-connections benchmark's clients, run with python3: opens
/// connections to the proxy (TLS with the forged leaf), sends one request on
/// each so that its upstream connection exists too, prints `READY n`, and
/// holds them all until its standard input closes. Arguments: proxy port,
/// connections, how many to open at a time.
enum IdleClientScript {
    static let source = #"""
import asyncio, ssl, sys

port = int(sys.argv[1]); count = int(sys.argv[2]); parallel = int(sys.argv[3])
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
held = []
failures = 0

async def open_one(gate):
    global failures
    async with gate:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
            writer.write(b"GET /small HTTP/1.1\r\nHost: localhost\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
            await reader.readexactly(length)
            held.append(writer)
        except Exception:
            failures += 1

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
