import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// OkHttp on the JVM checks its pins against the chain its own `BasicCertificateChainCleaner`
/// (okhttp3.internal.tls, 3.13.1) rebuilds after the handshake: at most nine signers
/// (`MAX_SIGNERS`), and a chain in which no trusted certificate signed anything fails
/// ("Failed to find a trusted cert that signed ...") even when the trust manager accepted it.
@Suite("OkHttp's BasicCertificateChainCleaner on the JVM")
struct OkHttpChainCleanerTests {
    let pki = PKI.shared

    /// Leaf first, then `depth` intermediates under the PKI root, as a server sends them.
    func chain(intermediates depth: Int) throws -> [Certificate] {
        let start = pki.now.addingTimeInterval(-3600), end = pki.now.addingTimeInterval(86_400)
        var issuer = pki.root, issuerKey = pki.rootKey
        var cas: [Certificate] = []
        for level in 1...depth {
            let key = try PrivateKey.generate(.ecP256)
            let ca = try Certificate.issue(
                .certificateAuthority(subject: DistinguishedName(commonName: "Deep CA \(level)"), notBefore: start, notAfter: end),
                subjectKey: key, signer: .authority(issuer, issuerKey))
            cas.insert(ca, at: 0)
            (issuer, issuerKey) = (ca, key)
        }
        let leaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: start, notAfter: end),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(issuer, issuerKey))
        return [leaf] + cas
    }

    func pinningTheRoot() throws -> OkHttpPolicy {
        OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "api.example.com", pin: pki.root.spkiPin.okhttp)], platform: .jvm)
    }

    @Test("eight intermediates below a trusted root are cleaned and pinned")
    func eightIntermediatesAreCleaned() throws {
        let verdict = try pinningTheRoot().evaluate(pki.trust(try chain(intermediates: 8)))
        #expect(verdict.decision == .accept, "\(verdict.steps)")
        #expect(verdict.matchedPins == [pki.root.spkiPin.okhttp])
    }

    @Test("a ninth intermediate makes the cleaned chain too long for the pinner")
    func nineIntermediatesAreTooMany() throws {
        let verdict = try pinningTheRoot().evaluate(pki.trust(try chain(intermediates: 9)))
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.first?.outcome.hasPrefix("passed") == true, "the trust manager accepts the chain: \(verdict.steps)")
        #expect(verdict.steps.last?.outcome.contains("Certificate chain too long") == true, "\(verdict.steps)")
    }

    @Test("a trusted leaf passes the trust manager but leaves the cleaner without a trusted signer")
    func aTrustedLeafWithoutATrustedSignerFailsTheCleaner() throws {
        // The device trusts the server's own (CA-issued) certificate and nothing above it.
        let store = TrustStore(systemAnchors: [pki.leaf], userAnchors: [])
        let trust = ServerTrust(presentedChain: [pki.leaf, pki.intermediate], host: pki.host, time: pki.now, store: store)
        let policy = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "api.example.com", pin: pki.leaf.spkiPin.okhttp)], platform: .jvm)
        let verdict = policy.evaluate(trust)
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.last?.outcome.contains("Failed to find a trusted cert that signed CN=Example Issuing CA 1") == true, "\(verdict.steps)")
        // On Android the pins are checked against the path the platform validated: the leaf alone.
        #expect(OkHttpPolicy(pins: policy.pins, platform: .android).evaluate(trust).decision == .accept)
    }
}
