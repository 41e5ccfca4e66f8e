import Foundation
import Testing
@testable import PinproxyProxy

/// The capture writers find a connection's outcome and TLS details by their
/// storage before comparing with `==` (``ReplayIdentity``): a value that
/// differs in any stored property must never pass for another, and flows of
/// many interleaved connections must still be written exactly as a fresh
/// writer writes them.
@Suite("Capture: replayed values found by their storage")
struct CaptureReplayIdentityTests {
    /// A string with its own buffer (longer than a small string held inline).
    private func fresh(_ text: String) -> String { String(decoding: Array(text.utf8), as: UTF8.self) }

    private func event(_ connection: Int) -> TLSOutcomeEvent {
        TLSOutcomeEvent(kind: .intercepted, host: fresh("origin.example.test"), port: 443,
                        clientAddress: fresh("127.0.0.1:\(40_000 + connection)"),
                        time: Date(timeIntervalSince1970: 1_700_000_000 + Double(connection) / 1000),
                        alert: fresh("no alert, only a longer text"), reason: fresh("a reason longer than sixteen bytes"),
                        profile: fresh("forge-with-a-long-name"))
    }

    private func clientTLS(profile: String = "forge") -> ClientTLSDetails {
        ClientTLSDetails(sni: fresh("origin.example.test"), version: fresh("TLSv1.3"), cipher: fresh("TLS_AES_256_GCM_SHA384"),
                         alpn: fresh("http/1.1"), forgedLeafPin: fresh("sha256/EwtBiZh82gpSoYOzHv8SBEUrlau0O8euIFX/kYFaIUY="),
                         forgedLeafSerial: fresh("30c8a29cd9fe284139325b03a15e3215"), profile: fresh(profile))
    }

    private func upstreamTLS(resumed: Bool? = false) -> UpstreamTLSDetails {
        UpstreamTLSDetails(version: fresh("TLSv1.3"), cipher: fresh("TLS_AES_256_GCM_SHA384"), alpn: fresh("http/1.1"), verified: true,
                           verifierReason: fresh("no reason, but a long text all the same"),
                           chain: [CertificateSummary(subject: fresh("CN=origin.example.test"), issuer: fresh("CN=Origin Test CA"),
                                                      serial: fresh("45c3dfbe89cc0a83aa14e9d6ae4ed83dc1a5827b"),
                                                      subjectAlternativeNames: [fresh("DNS:origin.example.test")])],
                           resumed: resumed)
    }

    /// Every stored property, by name: a property added to one of these types
    /// must be added to its `sharesStorage(with:)` too, and to this list.
    @Test("the storage comparison covers every stored property of each replayed type")
    func everyStoredPropertyIsCompared() {
        func labels(_ value: Any) -> [String] { Mirror(reflecting: value).children.compactMap(\.label) }
        #expect(labels(event(1).shared.fields) == ["kind", "host", "port", "clientAddress", "time", "alert", "reason", "profile"])
        #expect(labels(clientTLS().shared.fields) == ["sni", "version", "cipher", "alpn", "forgedLeafPin", "forgedLeafSerial", "profile"])
        #expect(labels(upstreamTLS().shared.fields) == ["version", "cipher", "alpn", "verified", "verifierReason", "chain", "resumed"])
    }

    @Test("a copy shares storage; an equal value in other buffers and a value that differs in one property do not")
    func sharesStorageOnlyForCopies() {
        func check<Value: ReplayIdentity>(_ base: Value, rebuilt: Value, changes: [(inout Value) -> Void]) {
            let copy = base
            #expect(copy.sharesStorage(with: base))
            #expect(rebuilt == base && !rebuilt.sharesStorage(with: base))
            for (index, change) in changes.enumerated() {
                var changed = base
                change(&changed)
                #expect(changed != base, "change \(index)")
                #expect(!changed.sharesStorage(with: base) && !base.sharesStorage(with: changed), "change \(index)")
            }
        }
        check(event(1), rebuilt: event(1), changes: [
            { $0.kind = .clientAlert }, { $0.host = "other.example.test" }, { $0.port = 8443 }, { $0.port = nil },
            { $0.clientAddress = "127.0.0.1:40002" }, { $0.time += 0.001 }, { $0.alert = nil }, { $0.alert = "unknown_ca" },
            { $0.reason = "another reason" }, { $0.profile = nil }, { $0.profile = "expired" },
        ])
        check(clientTLS(), rebuilt: clientTLS(), changes: [
            { $0.sni = nil }, { $0.sni = "other.example.test" }, { $0.version = "TLSv1.2" }, { $0.cipher = "TLS_AES_128_GCM_SHA256" },
            { $0.alpn = "h2" }, { $0.forgedLeafPin = "sha256/AAAA" }, { $0.forgedLeafSerial = "01" }, { $0.profile = "expired" },
        ])
        check(upstreamTLS(), rebuilt: upstreamTLS(), changes: [
            { $0.version = nil }, { $0.cipher = "TLS_CHACHA20_POLY1305_SHA256" }, { $0.alpn = nil }, { $0.verified = false },
            { $0.verifierReason = nil }, { $0.chain = [] }, { $0.chain[0].serial = "02" }, { $0.resumed = true }, { $0.resumed = nil },
        ])
    }

    /// Flows of more connections than a writer keeps values for, in turns:
    /// every connection's TLS details equal the others' in their own buffers
    /// (as the proxy builds them), a few differ in one property, and every
    /// outcome is the connection's own.
    @Test("flows of many interleaved connections are written as a fresh writer writes them")
    func interleavedConnections() throws {
        let connections = 70
        let base = sampleFlow(1)
        let perConnection: [(ClientTLSDetails, UpstreamTLSDetails, TLSOutcomeEvent)] = (0..<connections).map { connection in
            (clientTLS(profile: connection % 7 == 3 ? "expired" : "forge"),
             upstreamTLS(resumed: connection % 5 == 2 ? true : connection % 11 == 4 ? nil : false),
             event(connection))
        }
        var lines = JSONOutput(), entries = JSONOutput()
        for round in 0..<3 {
            for connection in (0..<connections).reversed() where round == 1 || connection % 3 != 0 {
                var flow = base
                let (client, upstream, outcome) = perConnection[connection]
                flow.clientTLS = client
                flow.upstreamTLS = upstream
                flow.outcome = outcome
                flow.clientAddress = outcome.clientAddress
                expectReplayedEqualsFresh(flow, lines: &lines, entries: &entries, "round \(round), connection \(connection)")
            }
        }
    }
}
