import Foundation
@testable import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// curl's comparison of the subject CN when the leaf has no DNS or IP subjectAltName
/// (`Curl_ossl_verifyhost` in lib/vtls/openssl.c, `hostmatch` in lib/vtls/hostcheck.c):
/// the last CN counts, trailing dots are ignored on both sides, a `*.` pattern needs two
/// dots and never matches an IP address.
@Suite("curl's subject CN fallback")
struct CurlCommonNameTests {
    let pki = PKI.shared

    /// A leaf from the PKI intermediate without any subjectAltName, with this subject.
    func leaf(subject: DistinguishedName) throws -> Certificate {
        var spec = CertificateSpec.serverLeaf(names: [], notBefore: pki.now.addingTimeInterval(-3600), notAfter: pki.now.addingTimeInterval(86_400))
        spec.subject = subject
        return try Certificate.issue(spec, subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(pki.intermediate, pki.intermediateKey))
    }

    func curl(_ leaf: Certificate, host: String) throws -> Verdict {
        CurlPolicy(pinnedPublicKeys: [leaf.spkiPin]).evaluate(pki.trust([leaf, pki.intermediate], host: try HostName(validating: host)))
    }

    @Test("the last CN of the subject is the one curl compares")
    func theLastCommonNameCounts() throws {
        let twoNames = try leaf(subject: DistinguishedName([.init("CN", "other.example.com"), .init("CN", "api.example.com")]))
        #expect(try curl(twoNames, host: "api.example.com").decision == .accept)
        let first = try curl(twoNames, host: "other.example.com")
        #expect(first.decision == .reject)
        #expect(first.steps.first?.outcome.contains("compared the subject CN 'api.example.com'") == true, "\(first.steps)")
    }

    @Test("a trailing dot on the CN is ignored, as on the host")
    func aTrailingDotOnTheCommonNameIsIgnored() throws {
        let dotted = try leaf(subject: DistinguishedName(commonName: "api.example.com."))
        #expect(try curl(dotted, host: "api.example.com").decision == .accept)
        let dottedHost = try ServerTrust(presentedChain: [dotted, pki.intermediate], hostAsWritten: "api.example.com.", time: pki.now, store: pki.store())
        #expect(CurlPolicy(pinnedPublicKeys: [dotted.spkiPin]).evaluate(dottedHost).decision == .accept)
    }

    @Test("a wildcard CN with a single dot is compared literally and matches no host")
    func aWildcardWithOneDotIsLiteral() throws {
        let tooWide = try leaf(subject: DistinguishedName(commonName: "*.com"))
        let verdict = try curl(tooWide, host: "example.com")
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.first?.outcome.contains("host mismatch") == true, "\(verdict.steps)")
    }

    @Test("a wildcard CN never matches an IP address")
    func aWildcardNeverMatchesAnIPAddress() throws {
        let wildcard = try leaf(subject: DistinguishedName(commonName: "*.0.0.1"))
        #expect(try curl(wildcard, host: "127.0.0.1").decision == .reject)
        // The same CN written out matches the address literally.
        let literal = try leaf(subject: DistinguishedName(commonName: "127.0.0.1"))
        #expect(try curl(literal, host: "127.0.0.1").decision == .accept)
    }
}
