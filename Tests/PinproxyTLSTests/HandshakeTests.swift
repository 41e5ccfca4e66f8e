internal import COpenSSL
import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyTLS

/// Full handshakes between two engines in memory: versions, ALPN, SNI and
/// the server's pause at the ClientHello.
@Suite struct HandshakeTests {
    @Test func tls13HandshakeCompletesAndNegotiatesALPNAndSNI() throws {
        let pair = try MemoryPair(clientALPN: ["h2", "http/1.1"], serverALPN: ["http/1.1"])
        let (client, server) = pair.handshake()
        #expect(client.isDone, "\(client)")
        #expect(server.isDone, "\(server)")
        #expect(pair.client.isHandshakeComplete && pair.server.isHandshakeComplete)
        #expect(pair.client.sessionInfo.version == "TLSv1.3")
        #expect(pair.server.sessionInfo.version == "TLSv1.3")
        #expect(pair.client.sessionInfo.alpn == "http/1.1")
        #expect(pair.server.sessionInfo.alpn == "http/1.1")
        #expect(pair.server.sessionInfo.serverName == TLSFixture.host)
        let hello = try #require(pair.server.clientHello)
        #expect(hello.serverNameRaw == TLSFixture.host)
        #expect(hello.serverName == (try HostName(validating: TLSFixture.host)))
        #expect(hello.alpn == ["h2", "http/1.1"])
        // The client verified the chain it was shown: leaf, then the CA.
        #expect(pair.client.peerCertificates.first == TLSFixture.shared.leaf.certificate)
        // The server sent the CA after the leaf, as the forged leaf's chain says.
        #expect(pair.client.peerCertificates == TLSFixture.shared.leaf.chain)
        #expect(pair.client.verifiedChain.last == TLSFixture.shared.authority.certificate)
    }

    @Test func aConnectionsOwnProtocolsReplaceItsContexts() throws {
        let pair = try MemoryPair(clientALPN: ["h2", "http/1.1"], serverALPN: ["http/1.1"])
        pair.server.applicationProtocols = ["h2", "http/1.1"]
        let (client, server) = pair.handshake()
        #expect(client.isDone && server.isDone, "\(client) \(server)")
        #expect(pair.client.sessionInfo.alpn == "h2")
        #expect(pair.server.sessionInfo.alpn == "h2")
    }

    /// An upstream named by IP address: no SNI (RFC 6066 allows DNS names only),
    /// and its certificate must carry that address.
    @Test func anUpstreamNamedByAddressGetsNoSNIAndMustCarryTheAddress() throws {
        let refused = try MemoryPair(serverName: "127.0.0.1")
        let (client, _) = refused.handshake()
        #expect(refused.server.clientHello?.serverNameRaw == nil)
        #expect(client.failure?.kind == .verificationFailed, "\(client)")
        #expect(client.failure?.verificationError?.contains("IP address mismatch") == true, "\(client)")

        let ipLeaf = try LeafForger(authority: TLSFixture.shared.authority).forge(hostNames: ["127.0.0.1"])
        let connection = try TLSConnection(context: TLSContext.client(trust: .file(TLSFixture.shared.caFile)))
        try connection.configureClient(serverName: HostName(validating: "127.0.0.1"))
        let server = try TLSConnection(context: TLSContext.server(presenting: ipLeaf.chain, key: ipLeaf.privateKey))
        let accepted = MemoryPair(client: connection, server: server)
        let (result, _) = accepted.handshake()
        #expect(result.isDone, "\(result)")
        #expect(accepted.server.sessionInfo.serverName == nil)
    }

    /// `verificationTime` verifies the chain as at that instant (the shared leaf is
    /// valid from a day ago for 47 days), not as at now.
    @Test(arguments: [(0.0, nil), (60 * 86_400.0, "certificate has expired"), (-3 * 86_400.0, "certificate is not yet valid")])
    func theClientVerifiesAsAtItsVerificationTime(offset: TimeInterval, error: String?) throws {
        let context = try TLSContext.client(trust: .file(TLSFixture.shared.caFile), verificationTime: Date().addingTimeInterval(offset))
        let connection = try TLSConnection(context: context)
        try connection.configureClient(serverName: HostName(validating: TLSFixture.host))
        let (client, _) = MemoryPair(client: connection, server: try TLSConnection(context: TLSContext.server())).handshake()
        if let error {
            #expect(client.failure?.kind == .verificationFailed, "\(client)")
            #expect(client.failure?.verificationError == error, "\(client)")
        } else {
            #expect(client.isDone, "\(client)")
        }
    }

    @Test func tls12HandshakeCompletes() throws {
        let pair = try MemoryPair(maxVersion: TLS1_2_VERSION)
        let (client, server) = pair.handshake()
        #expect(client.isDone && server.isDone, "\(client) \(server)")
        #expect(pair.client.sessionInfo.version == "TLSv1.2")
        #expect(pair.server.sessionInfo.version == "TLSv1.2")
        #expect(pair.client.sessionInfo.alpn == "http/1.1")
        #expect(!pair.client.sessionInfo.cipher.isEmpty)
    }

    @Test func noCommonALPNProtocolLeavesNoneSelected() throws {
        let pair = try MemoryPair(clientALPN: ["h2"], serverALPN: ["http/1.1"])
        let (client, server) = pair.handshake()
        #expect(client.isDone && server.isDone, "\(client) \(server)")
        #expect(pair.client.sessionInfo.alpn == nil)
        #expect(pair.server.clientHello?.alpn == ["h2"])
    }

    @Test func aClientHelloWithoutSNIHasNoServerName() throws {
        let pair = try MemoryPair(serverName: nil)
        _ = pair.client.handshake()
        pair.exchange()
        guard case .clientHello(let hello) = pair.server.handshake() else {
            Issue.record("the server did not pause at the ClientHello")
            return
        }
        #expect(hello.serverNameRaw == nil)
        #expect(hello.serverName == nil)
    }

    @Test func theServerPausesAtTheClientHelloUntilACertificateIsInstalled() throws {
        let pair = try MemoryPair()
        #expect(pair.client.handshake() == .wantRead)
        #expect(pair.client.pendingOutput > 0)  // the ClientHello
        pair.exchange()
        guard case .clientHello = pair.server.handshake() else {
            Issue.record("the server did not pause at the ClientHello")
            return
        }
        // Asked again without a decision, it stays paused and sends nothing,
        // and the same ClientHello is not handed out a second time.
        for _ in 0..<2 {
            #expect(pair.server.handshake() == .wantRead)
            #expect(pair.server.pendingOutput == 0)
        }
        try pair.server.installCertificate(TLSFixture.shared.leaf)
        #expect(pair.server.handshake() == .wantRead)
        #expect(pair.server.pendingOutput > 0)  // ServerHello through Finished
    }

    /// A client that leaves while the server is still deciding (the proxy
    /// waiting on the upstream) ends the handshake as closed, once.
    @Test func aClientLeavingWhileTheServerDecidesClosesTheHandshake() throws {
        let pair = try MemoryPair()
        _ = pair.client.handshake()
        pair.exchange()
        guard case .clientHello = pair.server.handshake() else {
            Issue.record("the server did not pause at the ClientHello")
            return
        }
        pair.server.feedEndOfInput()
        #expect(pair.server.handshake() == .closed)
        #expect(pair.server.pendingOutput == 0)
    }

    @Test func aWildcardServerNameIsRefusedAsAName() throws {
        let pair = try MemoryPair(serverName: nil)
        try pair.client.configureClient(serverName: HostName(validating: "*.example.test"))
        _ = pair.client.handshake()
        pair.exchange()
        guard case .clientHello(let hello) = pair.server.handshake() else {
            Issue.record("the server did not pause at the ClientHello")
            return
        }
        #expect(hello.serverNameRaw == "*.example.test")
        #expect(hello.serverName == nil)
        #expect(hello.serverNameProblem?.contains("cannot be a wildcard") == true)
    }
}
