import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// A row passes only when the origin's own record (did the request arrive?)
/// agrees with the client: a client that got its answer from something other
/// than the origin, or an origin holding a request the client never sent, is a
/// harness ERROR, never a PASS or a FAIL. Each test runs the same row once with
/// the record in agreement (it passes) and once with it contradicted.
@Suite("Origin record cross-check", .timeLimit(.minutes(10)))
struct OriginRecordCrossCheckTests {
    /// The in-process proxy, except that it sends the world's host to
    /// `address` instead of the origin's: a proxy that reached another server.
    final class ReroutingProxy: ForwardingProxy, @unchecked Sendable {
        let rerouteTo: String

        init(_ inner: InProcessProxy, rerouteTo: String) {
            self.rerouteTo = rerouteTo
            super.init(inner)
        }

        override func resolve(_ host: HostName, to address: String) throws { try inner.resolve(host, to: rerouteTo) }
    }

    /// Another server with the world's genuine chain, on `address` at the
    /// origin's port, answering HTTP/1.1 requests with the origin's greeting and
    /// recording nothing the harness reads.
    final class Decoy: @unchecked Sendable {
        // Sendable: `listener` is set once; the accepting thread only reads it.
        let listener: Int32

        init(world: HarnessWorld, greeting: String, address: String, port: Int) throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw SetupError("socket: \(String(cString: strerror(errno)))") }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_addr.s_addr = inet_addr(address)
            sin.sin_port = in_port_t(UInt16(port).bigEndian)
            let bound = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(fd, 16) == 0 else {
                let why = String(cString: strerror(errno))
                close(fd)
                throw SetupError("the decoy cannot listen on \(address):\(port): \(why)")
            }
            listener = fd
            let context = try HarnessTLS.origin(chain: world.originChain, key: world.originKey)
            let body = Array(greeting.utf8)
            Thread {
                while true {
                    let client = accept(fd, nil, nil)
                    if client < 0 { if errno == EINTR { continue } else { break } }
                    let socket = LoopbackSocket.accepted(client, timeout: 10)
                    DispatchQueue.global().async {
                        defer { socket.close() }
                        guard let stream = try? HarnessTLS.server(over: socket, context: context), (try? stream.handshake()) != nil else { return }
                        var reader = HTTP1MessageReader(.request) { try stream.readChunk() }
                        guard (try? reader.nextRequest()) != nil else { return }
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
                        try? stream.send(Array(head.utf8) + body)
                        stream.shutdown()
                    }
                }
                close(fd)
            }.start()
        }

        /// Wakes the blocked accept; the thread closes the listener.
        func stop() { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    /// The policy of both tests: the world's leaf pinned, so the genuine chain is
    /// accepted and a forged one refused in the handshake.
    static func policy(_ world: HarnessWorld) -> AFNetworkingPolicy {
        AFNetworkingPolicy(mode: .publicKey, pinnedCertificates: [world.leaf])
    }

    /// A harness whose proxy takes every connection to a decoy on `decoyAddress` at the
    /// origin's port, answering `greeting` (nil: the origin's own). HTTP/1.1 only: the decoy
    /// does not speak HTTP/2. Stop the decoy, then the harness.
    static func reroutedHarness(to decoyAddress: String, greeting: String? = nil) throws -> (Harness, Decoy) {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let harness = try Harness(world: world, proxy: ReroutingProxy(try InProcessProxy(world: world, http2: false), rerouteTo: decoyAddress),
                                  http2: false)
        do {
            let decoy = try Decoy(world: harness.world, greeting: greeting ?? harness.origin.greeting, address: decoyAddress,
                                  port: harness.origin.port)
            return (harness, decoy)
        } catch {
            harness.stop()
            throw error
        }
    }

    /// A fresh marker, as the harness makes one per row.
    static func marker() -> String { "cross-check-\(UUID().uuidString.prefix(8).lowercased())" }

    @Test("the client accepts an answer from a server that is not the origin: a harness ERROR, the origin having no record")
    func acceptedWithoutTheOriginsRecord() throws {
        let (harness, decoy) = try Self.reroutedHarness(to: "127.0.0.2")
        defer { harness.stop() }
        defer { decoy.stop() }
        let runner = ScenarioRunner(harness: harness)
        let policy = Self.policy(harness.world)

        // The direct row reaches the origin itself: its record agrees, a PASS.
        let direct = runner.run(Scenario(profile: nil, deviceTrustsProxyCA: false), policy: policy, marker: Self.marker())
        #expect(direct.status == .pass && direct.actual == "ACCEPT" && direct.originReceivedRequest, "\(direct.status) \(direct.reason)")

        // Through the proxy the client reaches the decoy: the genuine chain, the
        // origin's greeting, so the client accepts; the origin never saw it.
        let rerouted = runner.run(Scenario(profile: .passthrough, deviceTrustsProxyCA: false), policy: policy, marker: Self.marker())
        #expect(rerouted.status == .error, "\(rerouted.status) \(rerouted.actual) \(rerouted.reason)")
        #expect(rerouted.actual == "ERROR")
        #expect(!rerouted.originReceivedRequest)
        #expect(rerouted.reason.hasPrefix("harness error: the client sent its request, but the origin did not receive its request"),
                "\(rerouted.reason)")
    }

    @Test("the client accepts a 200 whose body is not the origin's greeting: a harness ERROR naming the answer")
    func acceptedAnAnswerThatIsNotTheOrigins() throws {
        let (harness, decoy) = try Self.reroutedHarness(to: "127.0.0.3", greeting: "a captive portal, not the origin\n")
        defer { harness.stop() }
        defer { decoy.stop() }
        let rerouted = ScenarioRunner(harness: harness).run(Scenario(profile: .passthrough, deviceTrustsProxyCA: false),
                                                            policy: Self.policy(harness.world), marker: Self.marker())
        #expect(rerouted.status == .error && rerouted.actual == "ERROR", "\(rerouted.status) \(rerouted.actual) \(rerouted.reason)")
        #expect(rerouted.reason.hasPrefix("the client accepted, but the answer was HTTP 200, not the origin's (a captive portal, not the origin)"),
                "\(rerouted.reason)")
    }

    @Test("the client refuses while the origin holds a request with its row's marker: a harness ERROR")
    func refusedWithTheOriginsRecord() throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let runner = ScenarioRunner(harness: harness)
        let policy = Self.policy(harness.world)
        let forge = Scenario(profile: .forge, deviceTrustsProxyCA: false)

        // The forged leaf is refused in the handshake and the origin has nothing: a PASS.
        let refused = runner.run(forge, policy: policy, marker: Self.marker())
        #expect(refused.status == .pass && refused.actual == "REJECT" && !refused.originReceivedRequest, "\(refused.status) \(refused.reason)")

        // The same row, with a request carrying its marker sent to the origin straight, beforehand.
        let marker = Self.marker()
        let host = harness.world.host.uriHost, port = harness.origin.port
        let sent = try PinproxyTestSupport.run(["curl", "-sS", "--max-time", "10", "-k", "-o", "/dev/null", "-w", "%{http_code}",
                                                "--resolve", "\(host):\(port):\(OriginServer.address)",
                                                "-H", "\(ScenarioMarker.header): \(marker)", "https://\(host):\(port)/account"])
        try #require(sent.stdout == "200" && harness.origin.received(scenario: marker), "\(sent.output)")
        let contradicted = runner.run(forge, policy: policy, marker: marker)
        #expect(contradicted.status == .error, "\(contradicted.status) \(contradicted.actual) \(contradicted.reason)")
        #expect(contradicted.actual == "ERROR")
        #expect(contradicted.originReceivedRequest)
        #expect(contradicted.reason.hasPrefix("harness error: the client refused during the handshake, but the origin received its request"),
                "\(contradicted.reason)")
    }
}

/// A test's own setup that did not work.
private struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
