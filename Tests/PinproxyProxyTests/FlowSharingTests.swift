import Foundation
import Testing
@testable import PinproxyProxy

/// A connection's TLS details and outcome are kept in one shared box that
/// every flow of the connection carries (``SharedFields``): copies share it,
/// a change in one copy leaves the others as they were, and equality,
/// hashing and coding are those of the fields.
@Suite("Flows: TLS parts shared between the flows of a connection")
struct FlowSharingTests {
    private let client = ClientTLSDetails(sni: "api.example.test", version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256",
                                          alpn: "h2", forgedLeafPin: "sha256/EwtBiZh82gpSoYOzHv8SBEUrlau0O8euIFX/kYFaIUY=",
                                          forgedLeafSerial: "30c8a29cd9fe284139325b03a15e3215", profile: "forge")
    private let upstream = UpstreamTLSDetails(
        version: "TLSv1.3", cipher: "TLS_AES_256_GCM_SHA384", alpn: "h2", verified: true,
        chain: [CertificateSummary(subject: "CN=api.example.test", issuer: "CN=Origin CA", serial: "02",
                                   subjectAlternativeNames: ["DNS:api.example.test"], spkiPin: "sha256/BBBB")],
        resumed: false)
    private let outcome = TLSOutcomeEvent(kind: .intercepted, host: "api.example.test", port: 443, clientAddress: "127.0.0.1:50000",
                                          time: Date(timeIntervalSince1970: 1_700_000_000), profile: "forge")

    private func flow(_ index: Int) -> Flow {
        Flow(id: "flow-\(index)", startedAt: Date(timeIntervalSince1970: 1_700_000_000), clientAddress: "127.0.0.1:50000",
             scheme: "https", host: "api.example.test", port: 443,
             request: FlowRequest(method: "GET", url: "https://api.example.test/\(index)", httpVersion: "HTTP/2.0"),
             response: FlowResponse(status: 200, reason: "OK", httpVersion: "HTTP/2.0"),
             clientTLS: client, upstreamTLS: upstream, outcome: outcome)
    }

    @Test("flows of one connection share its TLS parts; a change in one flow changes no other")
    func flowsShareUntilChanged() throws {
        var first = flow(1)
        let second = flow(2)
        #expect(try #require(first.clientTLS).shared.isShared(with: second.clientTLS!.shared))
        #expect(try #require(first.upstreamTLS).shared.isShared(with: second.upstreamTLS!.shared))
        #expect(try #require(first.outcome).shared.isShared(with: second.outcome!.shared))
        #expect(first.clientTLS!.shared.isShared(with: client.shared))

        first.clientTLS?.profile = "expired"
        first.upstreamTLS?.chain[0].serial = "03"
        first.outcome?.kind = .clientAlert
        #expect(first.clientTLS?.profile == "expired" && first.upstreamTLS?.chain[0].serial == "03")
        #expect(first.outcome?.kind == .clientAlert)
        // The other flow and the connection's own values are as they were.
        #expect(second.clientTLS == client && second.clientTLS?.profile == "forge")
        #expect(second.upstreamTLS == upstream && second.upstreamTLS?.chain[0].serial == "02")
        #expect(second.outcome == outcome && second.outcome?.kind == .intercepted)
        #expect(client.profile == "forge" && upstream.chain[0].serial == "02" && outcome.kind == .intercepted)
        #expect(!first.clientTLS!.shared.isShared(with: client.shared))
        #expect(first != second.with(id: "flow-1", url: "https://api.example.test/1"))

        // Changed back, the fields are equal again (in another box), and hash alike.
        first.clientTLS?.profile = "forge"
        first.upstreamTLS?.chain[0].serial = "02"
        first.outcome?.kind = .intercepted
        let twin = second.with(id: "flow-1", url: "https://api.example.test/1")
        #expect(first == twin)
        #expect(first.hashValue == twin.hashValue)
        #expect(first.clientTLS?.hashValue == client.hashValue)
        // Setting a whole value shares the one set.
        var third = flow(3)
        let other = ClientTLSDetails(sni: "other.example.test", profile: "expired")
        third.clientTLS = other
        #expect(third.clientTLS!.shared.isShared(with: other.shared) && third.clientTLS == other)
        third.clientTLS = nil
        #expect(third.clientTLS == nil && flow(4).clientTLS == client)
    }

    @Test("values equal field by field are equal whatever their boxes; one differing field makes them differ")
    func equalityIsByFields() {
        let rebuilt = ClientTLSDetails(sni: "api.example.test", version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256",
                                       alpn: "h2", forgedLeafPin: "sha256/EwtBiZh82gpSoYOzHv8SBEUrlau0O8euIFX/kYFaIUY=",
                                       forgedLeafSerial: "30c8a29cd9fe284139325b03a15e3215", profile: "forge")
        #expect(rebuilt == client && !rebuilt.shared.isShared(with: client.shared))
        #expect(Set([rebuilt, client]).count == 1)
        var changed = rebuilt
        changed.alpn = nil
        #expect(changed != client && Set([changed, client]).count == 2)
        var moved = outcome
        moved.time += 1
        #expect(moved != outcome && Set([moved, outcome]).count == 2)
    }

    /// The coded form is the one of the fields stored inline: the same keys,
    /// absent optionals left out, and the same errors for missing fields.
    @Test("coding is unchanged: the same JSON, and a round trip gives equal values")
    func codingIsUnchanged() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .secondsSince1970
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let partial = ClientTLSDetails(sni: "api.example.test", alpn: "h2")
        #expect(String(decoding: try encoder.encode(partial), as: UTF8.self) == #"{"alpn":"h2","sni":"api.example.test"}"#)
        #expect(String(decoding: try encoder.encode(UpstreamTLSDetails(verified: false)), as: UTF8.self)
            == #"{"chain":[],"verified":false}"#)
        #expect(String(decoding: try encoder.encode(upstream), as: UTF8.self) == """
            {"alpn":"h2","chain":[{"issuer":"CN=Origin CA","serial":"02","spkiPin":"sha256/BBBB",\
            "subject":"CN=api.example.test","subjectAlternativeNames":["DNS:api.example.test"]}],"cipher":"TLS_AES_256_GCM_SHA384",\
            "resumed":false,"verified":true,"version":"TLSv1.3"}
            """)
        #expect(String(decoding: try encoder.encode(outcome), as: UTF8.self) == """
            {"clientAddress":"127.0.0.1:50000","host":"api.example.test","kind":"intercepted",\
            "message":"client accepted the forged certificate for api.example.test and sent a request (profile forge)",\
            "port":443,"profile":"forge","time":1700000000}
            """)
        #expect(try decoder.decode(ClientTLSDetails.self, from: encoder.encode(client)) == client)
        #expect(try decoder.decode(UpstreamTLSDetails.self, from: encoder.encode(upstream)) == upstream)
        #expect(try decoder.decode(TLSOutcomeEvent.self, from: encoder.encode(outcome)) == outcome)
        let original = flow(1)
        #expect(try decoder.decode(Flow.self, from: encoder.encode(original)) == original)
        // A required field missing fails as before.
        #expect(throws: DecodingError.self) { try decoder.decode(UpstreamTLSDetails.self, from: Data(#"{"verified":true}"#.utf8)) }
        #expect(throws: DecodingError.self) { try decoder.decode(ClientTLSDetails.self, from: Data(#"{"sni":1}"#.utf8)) }
    }

    @Test("flow identifiers share the per-process half and differ in the other")
    func flowIDHalves() {
        let ids = (0..<300).map { _ in FlowID.next() }
        #expect(Set(ids.map { $0.prefix(19) }).count == 1)
        #expect(Set(ids.map { $0.dropFirst(19) }).count == ids.count)
        #expect(ids.allSatisfy { $0.utf8.count == 36 && $0.dropFirst(18).first == "-" && $0.dropFirst(23).first == "-" })
    }
}

private extension Flow {
    func with(id: String, url: String) -> Flow {
        var copy = self
        copy.id = id
        copy.request.url = url
        return copy
    }
}
