import Foundation
import PinproxyCertificates
import PinproxyProxy
import Testing

/// Attack profiles and rules for clients that offer HTTP/2, through a real
/// proxy with `--http2 on` in front of an origin that speaks HTTP/2 only:
/// the profiles act at the handshake as for HTTP/1, whatever the client
/// speaks after it.
@Suite("Attack profiles over HTTP/2 end to end", .timeLimit(.minutes(10)))
struct HTTP2AttackEndToEndTests {
    /// What `openssl verify` says of the chain when the proxy CA is trusted (as AttackEndToEndTests
    /// checks in detail over HTTP/1); nil for the profiles checked otherwise.
    static func verifyErrors(_ profile: AttackProfile) -> [Int]? {
        switch profile {
        case .forge, .stuff: return []
        case .selfSigned: return [18]
        case .wrongHost: return [62]
        case .expired: return [10]
        case .notYetValid: return [9]
        case .untrustedCA, .misissued: return [19]
        default: return nil
        }
    }

    @Test("each profile: a client offering h2 gets the profile's chain and h2; its leaving is a suspected refusal",
          arguments: AttackCatalog.standard.profiles.map(\.name))
    func profileOverHTTP2(name: String) throws {
        let world = try AttackWorld()
        let origin = try H2Origin(chain: world.genuineChainPath, key: world.genuineKeyPath)
        let proxy = try world.proxy(default: AttackProfile(name)) { $0.http2 = true }
        let (chain, alpn) = try receivedHandshake(proxyPort: proxy.port, originPort: origin.port, alpn: "h2")
        // h2 is agreed: with the proxy for an intercepted connection, with the origin itself for passthrough.
        #expect(alpn == "h2", "\(name): ALPN \(alpn ?? "none")")
        let proxyCA = world.proxyCA.certificate
        let profile = AttackProfile(name)
        switch profile {
        case .passthrough:
            #expect(chain == world.presented)
        case .fakeParent:
            #expect(chain.count == 4 && chain.dropFirst().map(\.spkiPin) == world.genuine.map(\.spkiPin))
            #expect(try opensslErrors(chain, trusting: [proxyCA, world.root.certificate], host: "localhost", in: world).first == 7)
        default:
            let expected = try #require(Self.verifyErrors(profile), "no expectation for \(name)")
            #expect(chain[0] != world.genuineLeaf)
            #expect(try opensslErrors(chain, trusting: [proxyCA], host: "localhost", in: world) == expected, "\(name)")
        }
        if profile == .passthrough {
            #expect(proxy.waitForEvent(.passthrough)?.profile == "passthrough")
        } else {
            let event = try #require(proxy.waitForEvent(.closedAfterHandshakeWithoutRequest))
            #expect(event.profile == name && event.refusal == .suspected)
        }
        #expect(origin.requestPaths.isEmpty)
    }

    @Test("rules over h2: a refusal is recorded as for HTTP/1, a rule changes the profile, a passthrough host speaks h2 with the origin")
    func rulesOverHTTP2() throws {
        let world = try AttackWorld()
        let origin = try H2Origin(chain: world.genuineChainPath, key: world.genuineKeyPath)
        let proxy = try world.proxy(default: .forge, admin: true) { $0.http2 = true }
        let admin = "http://127.0.0.1:\(try #require(proxy.admin?.address?.port))"
        func get(_ host: String, trusting ca: String?, http: String = "--http2") throws -> ProcessResult {
            var args = ["--proxy", proxy.url, http, "-o", "/dev/null", "-w", "%{http_version} %{http_code}"]
            // Without a CA file, curl trusts only the system's roots: neither the proxy CA nor the genuine root.
            args += ca.map { ["--cacert", $0] } ?? ["--capath", world.directory.file("no-such-dir")]
            return try curl(args + ["https://\(host):\(origin.port)/\(UUID().uuidString)"])
        }
        func events(_ profile: String) -> [TLSOutcomeEvent] {
            proxy.server.recorder.recent.events.filter { $0.profile == profile && $0.kind.isClientRejection }
        }
        func waitForRefusals(_ profile: String, _ count: Int) -> [TLSOutcomeEvent] {
            let deadline = Date().addingTimeInterval(10)
            while events(profile).count < count && Date() < deadline { usleep(50_000) }
            return events(profile)
        }
        let proxyCA = world.directory.file("proxy-ca.pem")

        // forge: accepted by a client that trusts the proxy CA, over h2 on both legs.
        let accepted = try get("localhost", trusting: proxyCA)
        #expect(accepted.stdout == "2 200", "\(accepted.stdout) \(accepted.stderr)")
        let flow = try #require(waitForFlows(proxy, count: 1).first)
        #expect(flow.request.httpVersion == "HTTP/2.0" && flow.clientTLS?.alpn == "h2" && flow.upstreamTLS?.alpn == "h2")
        #expect(flow.clientTLS?.profile == "forge")

        // Refused by a client that does not trust it: the same definite refusal over h2 as over HTTP/1.1.
        let refusedH2 = try get("localhost", trusting: nil)
        #expect(refusedH2.status == 60, "\(refusedH2.stderr)")
        let h2Refusal = try #require(waitForRefusals("forge", 1).first)
        let refusedH1 = try get("localhost", trusting: nil, http: "--http1.1")
        #expect(refusedH1.status == 60, "\(refusedH1.stderr)")
        let refusals = waitForRefusals("forge", 2)
        #expect(refusals.count == 2)
        #expect(refusals.allSatisfy { $0.kind == h2Refusal.kind && $0.alert == h2Refusal.alert && $0.refusal == .definite },
                "\(refusals.map(\.message))")
        #expect(proxy.server.counters.profiles["forge"]?.rejected == 2)

        // A rule for localhost: expired there, forge still for 127.0.0.1.
        let put = try curl(["-X", "PUT", "--data", #"{"defaultProfile":"forge","rules":[{"pattern":"localhost","profile":"expired"}]}"#,
                            "-w", "\n%{http_code}", "\(admin)/rules"])
        #expect(put.stdout.hasSuffix("\n200"), "\(put.stdout)")
        let expired = try get("localhost", trusting: proxyCA)
        #expect(expired.status == 60 && expired.stderr.contains("expired"), "\(expired.stderr)")
        let expiredRefusal = try #require(waitForRefusals("expired", 1).first)
        #expect(expiredRefusal.refusal == .definite)
        #expect(try get("127.0.0.1", trusting: proxyCA).stdout == "2 200")

        // passthrough for localhost: the genuine chain and h2 straight from the origin; the proxy records no flow.
        let flowsBefore = proxy.server.recorder.recent.flows.count
        _ = try curl(["-X", "PUT", "--data", #"{"defaultProfile":"forge","rules":[{"pattern":"localhost","profile":"passthrough"}]}"#,
                      "\(admin)/rules"])
        let tunnelled = try get("localhost", trusting: world.rootPath)
        #expect(tunnelled.stdout == "2 200", "\(tunnelled.stdout) \(tunnelled.stderr)")
        #expect(proxy.waitForEvent(.passthrough)?.profile == "passthrough")
        #expect(proxy.server.recorder.recent.flows.count == flowsBefore)
        #expect(origin.requestPaths.count == 3, "forge, 127.0.0.1 and passthrough reached the origin: \(origin.requestPaths)")
    }
}
