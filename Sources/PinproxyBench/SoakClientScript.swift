/// The soak's load generator, run with python3: asyncio clients through
/// the proxy (see ``SoakBenchmark``). Arguments: proxy port, origin port,
/// CA file, clients, seconds, report interval, file for completed ids,
/// hosts as JSON (`{"ok":[...],"refused":[...],"tunnelled":[...]}`).
enum SoakClientScript {
    static let source = #"""
# pinproxy bench soak: the load generator. Many asyncio clients through the
# proxy (CONNECT, then TLS with the forged leaf), each looping over a mix of
# loads until the deadline; one JSON line of counts per interval on stdout,
# and the ids of completed requests in a file for the HAR check.
import asyncio, json, os, random, ssl, sys, time

proxy_port = int(sys.argv[1]); origin_port = int(sys.argv[2]); cafile = sys.argv[3]
clients = int(sys.argv[4]); seconds = float(sys.argv[5]); interval = float(sys.argv[6])
ids_path = sys.argv[7]; hosts = json.loads(sys.argv[8])
# hosts: {"ok": [...], "refused": [...], "tunnelled": [...]}; requests to tunnelled
# hosts are not seen by the proxy, so their ids are not written.

context = ssl.create_default_context(cafile=cafile)
counts = {"requests": 0, "connections": 0, "uploads": 0, "aborted": 0, "refused": 0, "errors": 0}
errors = {}
ids = open(ids_path, "w")
tunnelled = set(hosts.get("tunnelled", []))
next_id = [0]
deadline = time.monotonic() + seconds

def error(kind):
    counts["errors"] += 1
    errors[kind] = errors.get(kind, 0) + 1

async def connect(host):
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy_port)
    writer.write(f"CONNECT {host}:{origin_port} HTTP/1.1\r\nHost: {host}:{origin_port}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        writer.close()
        raise RuntimeError("CONNECT " + head.split(b"\r\n")[0].decode())
    await writer.start_tls(context, server_hostname=host)
    counts["connections"] += 1
    return reader, writer

async def exchange(reader, writer, host, method="GET", path="/small", body=b"", close=False, abort_after=None):
    next_id[0] += 1
    rid = next_id[0]
    sep = "&" if "?" in path else "?"
    head = f"{method} {path}{sep}id={rid} HTTP/1.1\r\nHost: {host}\r\n"
    if body: head += f"Content-Length: {len(body)}\r\n"
    if close: head += "Connection: close\r\n"
    writer.write(head.encode() + b"\r\n" + body)
    response = await reader.readuntil(b"\r\n\r\n")
    status = int(response.split(b" ", 2)[1])
    length = 0
    for line in response.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    if abort_after is not None:
        await reader.readexactly(min(abort_after, length))
        return None
    await reader.readexactly(length)
    if status != 200: raise RuntimeError(f"status {status}")
    if host not in tunnelled: ids.write(f"{rid}\n")
    counts["requests"] += 1
    return rid

async def client(index):
    rnd = random.Random(index)
    ok = hosts["ok"]; refused = hosts["refused"]
    while time.monotonic() < deadline:
        choice = rnd.random()
        host = ok[rnd.randrange(len(ok))]
        writer = None
        try:
            if choice < 0.45:    # keep-alive: several requests on one connection
                reader, writer = await connect(host)
                for _ in range(rnd.randrange(2, 20)):
                    await exchange(reader, writer, host)
            elif choice < 0.65:  # a new connection per request
                reader, writer = await connect(host)
                await exchange(reader, writer, host, close=True)
            elif choice < 0.80:  # an upload
                reader, writer = await connect(host)
                await exchange(reader, writer, host, method="POST", path="/upload", body=os.urandom(rnd.randrange(1, 65536)))
                counts["uploads"] += 1
            elif choice < 0.90:  # a download the client abandons part-way
                reader, writer = await connect(host)
                await exchange(reader, writer, host, path="/bulk", abort_after=rnd.randrange(1, 65536))
                counts["aborted"] += 1
                writer.transport.abort()
                writer = None
            else:                # an attack profile the client refuses
                target = refused[rnd.randrange(len(refused))]
                try:
                    await connect(target)
                    error("accepted " + target)
                except ssl.SSLCertVerificationError:
                    counts["refused"] += 1
        except Exception as e:
            error(type(e).__name__ + ": " + str(e)[:80])
        finally:
            if writer is not None:
                writer.close()
        await asyncio.sleep(rnd.random() * 0.05)

async def report():
    start = time.monotonic()
    while time.monotonic() < deadline + 1:
        await asyncio.sleep(interval)
        print(json.dumps({"t": round(time.monotonic() - start, 1), **counts, "kinds": errors}), flush=True)

async def main():
    reporter = asyncio.create_task(report())
    await asyncio.gather(*(client(i) for i in range(clients)))
    reporter.cancel()
    ids.close()
    print(json.dumps({"final": True, **counts, "kinds": errors}), flush=True)

asyncio.run(main())
"""#
}
