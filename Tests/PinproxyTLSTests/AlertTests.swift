internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyTLS

/// Alerts both ways: a client that refuses the server's certificate, a
/// server that refuses the ClientHello, and refused renegotiation.
@Suite struct AlertTests {
    @Test func aClientThatRefusesTheCertificateSendsUnknownCA() throws {
        let pair = try MemoryPair(trust: .stranger)
        let (client, server) = pair.handshake()
        let clientFailure = try #require(client.failure, "\(client)")
        #expect(clientFailure.kind == .verificationFailed)
        #expect(clientFailure.verificationError?.contains("self-signed certificate in certificate chain") == true,
                "\(clientFailure)")
        #expect(pair.client.sentAlert == .unknownCA)
        // The server learns why from the alert, by its RFC name.
        let serverFailure = try #require(server.failure, "\(server)")
        #expect(serverFailure.kind == .alertReceived)
        #expect(serverFailure.receivedAlert == .unknownCA)
        #expect(pair.server.receivedAlert?.name == "unknown_ca")
        #expect(pair.server.receivedAlert?.rejectsCertificate == true)
        #expect(serverFailure.reason == "the peer sent alert unknown_ca")
    }

    @Test func aClientExpectingAnotherNameSendsAnAlertThatRejectsTheCertificate() throws {
        let pair = try MemoryPair(serverName: "other.example.test")
        let (client, server) = pair.handshake()
        #expect(client.failure?.kind == .verificationFailed, "\(client)")
        #expect(client.failure?.verificationError?.contains("hostname mismatch") == true, "\(client)")
        let alert = try #require(server.failure?.receivedAlert, "\(server)")
        #expect(alert.rejectsCertificate, "\(alert)")
        #expect(alert.isFatal)
    }

    @Test func aRefusedClientHelloSendsTheChosenAlert() throws {
        let pair = try MemoryPair()
        let (client, server) = pair.handshake(rejectHello: .unrecognizedName)
        #expect(server.failure?.reason == "refused by the test", "\(server)")
        #expect(pair.server.sentAlert == .unrecognizedName)
        let failure = try #require(client.failure, "\(client)")
        #expect(failure.kind == .alertReceived)
        #expect(failure.receivedAlert == .unrecognizedName)
        #expect(failure.receivedAlert?.name == "unrecognized_name")
    }

    @Test func theAlertsThatRejectACertificateAreThoseAboutCertificates() {
        let rejecting: [UInt8] = [42, 43, 44, 45, 46, 48, 49, 116]
        for code in UInt8(0)...UInt8(120) {
            #expect(TLSAlert(code: code).rejectsCertificate == rejecting.contains(code), "\(TLSAlert(code: code))")
        }
        #expect(TLSAlert(code: 45).name == "certificate_expired")
        #expect(TLSAlert(code: 116).name == "certificate_required")
        #expect(TLSAlert(code: 200).name == "alert_200")
    }

    @Test func noCommonVersionIsNamedSoAndAnsweredWithProtocolVersion() throws {
        let pair = try MemoryPair()
        _ = SSL_ctrl(pair.client.ssl, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        _ = SSL_ctrl(pair.server.ssl, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_3_VERSION), nil)
        let (client, server) = pair.handshake()
        let serverFailure = try #require(server.failure, "\(server)")
        #expect(serverFailure.kind == .noSharedParameters, "\(serverFailure)")
        #expect(pair.server.sentAlert?.name == "protocol_version")
        #expect(client.failure?.kind == .alertReceived, "\(client)")
        #expect(client.failure?.receivedAlert?.name == "protocol_version")
    }

    /// The engine allows TLS 1.2 and 1.3 only, whatever the system's OpenSSL configuration
    /// allows: security level 0 stands in for a configuration that would accept TLS 1.1.
    @Test func aPeerOfferingOnlyTLS11IsRefused() throws {
        let pair = try MemoryPair()
        for side in [pair.client, pair.server] { SSL_set_security_level(side.ssl, 0) }
        _ = SSL_ctrl(pair.client.ssl, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_1_VERSION), nil)
        _ = SSL_ctrl(pair.client.ssl, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(TLS1_1_VERSION), nil)
        let (client, server) = pair.handshake()
        #expect(server.failure?.kind == .noSharedParameters, "\(server)")
        #expect(!client.isDone, "\(client)")
    }

    @Test func renegotiationIsRefused() throws {
        let pair = try MemoryPair(maxVersion: TLS1_2_VERSION)
        let (client, server) = pair.handshake()
        #expect(client.isDone && server.isDone, "\(client) \(server)")
        // The engine's contexts refuse renegotiation on both sides; lift
        // that on the client alone so it can ask.
        _ = SSL_clear_options(pair.client.ssl, pp_SSL_OP_NO_RENEGOTIATION())
        #expect(SSL_renegotiate(pair.client.ssl) == 1)
        _ = SSL_do_handshake(pair.client.ssl)
        #expect(pair.client.pendingOutput > 0)  // the renegotiating ClientHello
        pair.exchange()
        // The server answers with a no_renegotiation warning and stays up.
        let serverRead = pair.readAvailable(on: pair.server)
        #expect(serverRead.last == .wantRead, "\(serverRead.last)")
        #expect(pair.server.sentAlert == TLSAlert(code: 100, isFatal: false))
        #expect(pair.server.sentAlert?.name == "no_renegotiation")
        pair.exchange()
        // The client, which asked, gives up the session with a fatal alert.
        let clientRead = pair.readAvailable(on: pair.client)
        guard case .failed(let failure) = clientRead.last else {
            Issue.record("the client did not fail: \(clientRead.last)")
            return
        }
        #expect(pair.client.receivedAlert == TLSAlert(code: 100, isFatal: false), "\(failure)")
        #expect(pair.client.sentAlert == .handshakeFailure)
        pair.exchange()
        guard case .failed(let serverFailure) = pair.readAvailable(on: pair.server).last else {
            Issue.record("the server did not see the client's alert")
            return
        }
        #expect(serverFailure.receivedAlert == .handshakeFailure)
    }
}
