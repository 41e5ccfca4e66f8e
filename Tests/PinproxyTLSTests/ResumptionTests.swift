internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyTLS

/// Client-side resumption in memory, against an origin that hands out session
/// tickets: which sessions are kept and offered again, the chains a resumed
/// connection reports, and the proxy's own server side, which issues none.
@Suite struct ResumptionTests {
    static let host = try! HostName(validating: TLSFixture.host)

    /// An origin presenting `fixture`'s leaf that, unlike the proxy's server side, issues tickets.
    static func ticketIssuingOrigin(_ fixture: TLSFixture = .shared) throws -> TLSContext {
        let context = try TLSContext.server(presenting: fixture.leaf.chain, key: fixture.leaf.privateKey)
        _ = SSL_CTX_set_num_tickets(context.pointer, 2)
        _ = SSL_CTX_clear_options(context.pointer, pp_SSL_OP_NO_TICKET())
        return context
    }

    /// One connection from `client` to `server` at 127.0.0.1:443, offering a cached session:
    /// the handshake, then whatever the server sends after it (TLS 1.3 tickets) read. A
    /// caller that lets the connection go ends it with ``TLSConnection/shutdown()`` as the
    /// proxy does: OpenSSL spoils the session of a connection freed without close_notify.
    static func connect(_ client: TLSContext, to server: TLSContext, version: Int32) throws -> (MemoryPair, TLSHandshakeResult) {
        let connection = try TLSConnection(context: client)
        try connection.configureClient(serverName: host)
        connection.offerSession(address: "127.0.0.1", port: 443, serverName: host)
        let pair = MemoryPair(client: connection, server: try TLSConnection(context: server))
        for side in [pair.client, pair.server] { _ = SSL_ctrl(side.ssl, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(version), nil) }
        let (result, _) = pair.handshake()
        pair.exchange()
        _ = pair.readAvailable(on: pair.client)
        return (pair, result)
    }

    @Test(arguments: [TLS1_2_VERSION, TLS1_3_VERSION])
    func resumedConnectionsReportTheChainsOfTheHandshakeThatVerifiedThem(version: Int32) throws {
        let client = try TLSContext.client(trust: .file(TLSFixture.shared.caFile))
        let origin = try Self.ticketIssuingOrigin()
        let (first, firstResult) = try Self.connect(client, to: origin, version: version)
        #expect(firstResult.isDone, "\(firstResult)")
        #expect(!first.client.isResumed)
        let verified = first.client.verifiedChain
        #expect(verified == [TLSFixture.shared.leaf.certificate, TLSFixture.shared.authority.certificate])
        #expect((client.sessionCache?.count ?? 0) > 0)
        first.client.shutdown()
        // More connections than the first handshake left sessions for: each resumed
        // connection's own sessions are kept too, with the chains they stand for.
        for attempt in 1...4 {
            let (pair, result) = try Self.connect(client, to: origin, version: version)
            #expect(result.isDone, "\(attempt): \(result)")
            #expect(pair.client.isResumed, "connection \(attempt) was not resumed")
            #expect(pair.client.peerCertificates == TLSFixture.shared.leaf.chain)
            #expect(pair.client.peerCertificate == TLSFixture.shared.leaf.certificate)
            #expect(pair.client.verifiedChain == verified)
            pair.client.shutdown()
        }
    }

    @Test(arguments: [TLS1_2_VERSION, TLS1_3_VERSION])
    func aFailedHandshakeForgetsTheUpstreamsSessions(version: Int32) throws {
        let client = try TLSContext.client(trust: .file(TLSFixture.shared.caFile))
        let origin = try Self.ticketIssuingOrigin()
        let (first, _) = try Self.connect(client, to: origin, version: version)
        first.client.shutdown()
        #expect((client.sessionCache?.count ?? 0) > 0)
        // The same upstream now shows a certificate from a CA the client does not trust.
        let (_, refused) = try Self.connect(client, to: try Self.ticketIssuingOrigin(.stranger), version: version)
        #expect(refused.failure?.kind == .verificationFailed, "\(refused)")
        #expect(client.sessionCache?.count == 0)
        // The next connection starts afresh and verifies again.
        let (next, result) = try Self.connect(client, to: origin, version: version)
        #expect(result.isDone, "\(result)")
        #expect(!next.client.isResumed)
    }

    @Test func aClientContextWithoutResumptionNeverResumes() throws {
        let client = try TLSContext.client(trust: .file(TLSFixture.shared.caFile), resumption: false)
        #expect(client.sessionCache == nil)
        let origin = try Self.ticketIssuingOrigin()
        for _ in 0..<2 {
            let (pair, result) = try Self.connect(client, to: origin, version: TLS1_3_VERSION)
            #expect(result.isDone, "\(result)")
            #expect(!pair.client.isResumed)
            pair.client.shutdown()
        }
    }

    /// The proxy's server side issues no TLS 1.3 tickets and no TLS 1.2 tickets or session
    /// IDs: a resumed client would skip the certificate the proxy is there to show.
    @Test(arguments: [TLS1_2_VERSION, TLS1_3_VERSION])
    func theProxysServerSideLeavesClientsNothingToResume(version: Int32) throws {
        let client = try TLSContext.client(trust: .file(TLSFixture.shared.caFile))
        for _ in 0..<2 {
            let connection = try TLSConnection(context: client)
            try connection.configureClient(serverName: Self.host)
            connection.offerSession(address: "127.0.0.1", port: 443, serverName: Self.host)
            let pair = MemoryPair(client: connection, server: try TLSConnection(context: TLSContext.server()))
            for side in [pair.client, pair.server] { _ = SSL_ctrl(side.ssl, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(version), nil) }
            let (result, _) = pair.handshake()
            pair.exchange()
            _ = pair.readAvailable(on: pair.client)
            #expect(result.isDone, "\(result)")
            #expect(!pair.client.isResumed)
            #expect(pair.server.clientHello != nil)
            #expect(client.sessionCache?.count == 0)
            pair.client.shutdown()
        }
    }
}
