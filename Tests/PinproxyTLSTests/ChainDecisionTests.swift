import Foundation
import PinproxyCertificates
import PinproxyTestSupport
@testable import PinproxyTLS
import Testing

/// A client context whose decision judges the presented chain, a server context presenting a
/// fixed chain, and the blocking stream over a socket pair: what the harness and `pin --connect`
/// use of the engine.
@Suite struct ChainDecisionTests {
    static func pair(decision: TLSChainDecision, clientALPN: [String] = ["h2", "http/1.1"]) throws -> MemoryPair {
        let leaf = TLSFixture.shared.leaf
        let server = try TLSConnection(context: TLSContext.server(presenting: leaf.chain, key: leaf.privateKey, alpn: ["h2", "http/1.1"]))
        let client = try TLSConnection(context: TLSContext.client(alpn: clientALPN, decision: decision))
        try client.configureClient(serverName: HostName(validating: TLSFixture.host))
        return MemoryPair(client: client, server: server)
    }

    @Test func theDecisionSeesThePresentedChainAndItsYesCompletesTheHandshake() throws {
        let decision = TLSChainDecision { _ in true }
        let pair = try Self.pair(decision: decision)
        let (client, server) = pair.handshake()
        #expect(client == .complete && server == .complete)
        #expect(decision.presented == TLSFixture.shared.leaf.chain)
        #expect(!decision.refused)
        // The server chose by its own order from what the client offered, without a ClientHello pause.
        #expect(pair.client.sessionInfo.alpn == "h2")
    }

    @Test func theDecisionsNoAbortsTheHandshakeWithBadCertificate() throws {
        let decision = TLSChainDecision { chain in chain.count > 5 }
        let pair = try Self.pair(decision: decision)
        let (client, server) = pair.handshake()
        guard case .failed(let failure) = client else { Issue.record("the client did not fail: \(client)"); return }
        #expect(failure.kind == .verificationFailed, "\(failure)")
        #expect(decision.refused && decision.presented.count == 2)
        guard case .failed(let serverFailure) = server else { Issue.record("the server did not fail: \(server)"); return }
        #expect(serverFailure.receivedAlert?.name == "bad_certificate", "\(serverFailure)")
    }

    @Test func aServerContextRefusesAKeyThatIsNotTheLeafs() throws {
        let other = try PrivateKey.generateFastP256()
        #expect(throws: PinproxyError.self) { try TLSContext.server(presenting: TLSFixture.shared.leaf.chain, key: other) }
    }

    /// One end of a socket pair, blocking with a receive timeout.
    final class SocketEnd: BlockingTransport {
        let fd: Int32
        init(_ fd: Int32, timeout: Int = 5) {
            self.fd = fd
            var tv = timeval(tv_sec: timeout, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        deinit { close(fd) }
        func receive(into buffer: UnsafeMutableRawBufferPointer) -> BlockingRead {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            return errno == EAGAIN ? .timedOut : .failed(String(cString: strerror(errno)))
        }
        func sendAll(_ bytes: UnsafeRawBufferPointer) -> BlockingRead? {
            var offset = 0
            while offset < bytes.count {
                let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                guard n > 0 else { return .failed(String(cString: strerror(errno))) }
                offset += n
            }
            return nil
        }
    }

    @Test func twoBlockingStreamsShakeHandsAndEchoOverASocketPair() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let leaf = TLSFixture.shared.leaf
        let serverEnd = SocketEnd(fds[1])
        let server = TLSBlockingStream(try TLSConnection(context: TLSContext.server(presenting: leaf.chain, key: leaf.privateKey)), over: serverEnd)
        let serverDone = DispatchSemaphore(value: 0)
        let echoed = Locked<[UInt8]>([])
        Thread {
            defer { serverDone.signal() }
            guard (try? server.handshake()) != nil else { return }
            // 100 kB: more than one record, read back in pieces.
            var got: [UInt8] = []
            while got.count < 100_000, let chunk = try? server.read(), !chunk.isEmpty { got += chunk }
            echoed.withLock { $0 = got }
            try? server.write(got)
            server.shutdown()
        }.start()
        let decision = TLSChainDecision { _ in true }
        let clientConnection = try TLSConnection(context: TLSContext.client(alpn: [], decision: decision))
        let client = TLSBlockingStream(clientConnection, over: SocketEnd(fds[0]))
        try client.handshake()
        let message = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try client.write(message)
        let back = try client.readToEnd()
        serverDone.wait()
        #expect(echoed.withLock { $0 } == message)
        #expect(back == message, "the echo ends at the server's close_notify")
        #expect(decision.presented.count == 2)
        _ = serverEnd
    }

    @Test func aBlockingReadTimesOutWhenThePeerSaysNothing() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let silent = SocketEnd(fds[1])
        let client = TLSBlockingStream(try TLSConnection(context: TLSContext.client(alpn: [], decision: TLSChainDecision { _ in true })),
                                       over: SocketEnd(fds[0], timeout: 1))
        #expect { try client.handshake() } throws: { ($0 as? TLSStreamError)?.kind == .timedOut }
        _ = silent
    }
}
