import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Where OkHttp refuses a chain before pinning: the platform trust manager fails it inside the
/// handshake (`SSLHandshakeException`); only a chain whose sole fault is the name reaches
/// `OkHostnameVerifier` after it (`SSLPeerUnverifiedException`).
@Suite("OkHttp refusals before pinning")
struct OkHttpFailureStepTests {
    let pki = PKI.shared

    var policy: OkHttpPolicy {
        OkHttpPolicy(pins: [try! OkHttpPolicy.Pin(pattern: "**.example.com", pin: pki.leaf.spkiPin.okhttp)])
    }

    @Test("an expired chain for another host fails in the handshake, not in the hostname verifier")
    func anExpiredChainForAnotherHostFailsInTheHandshake() {
        let verdict = policy.evaluate(pki.trust([pki.expiredLeaf, pki.intermediate], host: pki.otherHost))
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.last?.action == "handshake", "\(verdict.steps)")
        #expect(verdict.steps.last?.outcome == "reject: SSLHandshakeException in the handshake, before pinning")
    }

    @Test("a valid chain for another host fails in the hostname verifier after the handshake")
    func aValidChainForAnotherHostFailsInTheHostnameVerifier() {
        let verdict = policy.evaluate(pki.trust([pki.leaf, pki.intermediate], host: pki.otherHost))
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.last?.action == "hostname verifier", "\(verdict.steps)")
        #expect(verdict.steps.last?.outcome == "reject: SSLPeerUnverifiedException after the handshake, before pinning")
    }
}
