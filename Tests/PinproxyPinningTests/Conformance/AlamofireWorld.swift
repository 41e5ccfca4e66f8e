import Foundation
import PinproxyCertificates
@testable import PinproxyPinning

/// The certificates of Alamofire's `ServerTrustEvaluatorTests.swift` (5.10.2, the last release
/// whose test certificates were all still valid), minted for this run with the facts of its
/// resources: a root with keyUsage digitalSignature and keyCertSign and anyExtendedKeyUsage as
/// its only (critical) EKU, two signing CAs with every keyUsage bit and a critical EKU list,
/// leaves from them with a critical EKU list, a keyUsage that includes cRLSign and no basic
/// constraints — and not one authority or subject key identifier anywhere. The leaves' names:
/// `*.alamofire.org` (URI and DNS), three DNS names, `test.alamofire.org` as URI and DNS, as DNS
/// only, as URI only, and none. The suite's date: 2024-11-20, while all but "expired" were valid.
final class AlamofireWorld: Sendable {
    static let shared = Result { try AlamofireWorld() }

    let date: Date
    let rootCA: Certificate
    let intermediateCA1: Certificate
    let intermediateCA2: Certificate
    let leafWildcard: Certificate
    let leafMultipleDNSNames: Certificate
    let leafSignedByCA1: Certificate
    let leafDNSNameAndURI: Certificate
    let leafExpired: Certificate
    let leafMissingDNSNameAndURI: Certificate
    let leafSignedByCA2: Certificate
    let leafValidDNSName: Certificate
    let leafValidURI: Certificate
    /// `setRootCertificateAsLoneAnchorCertificateForTrust`: the root, and nothing else, is trusted.
    let anchored: TrustStore
    /// A trust left with the device's anchors, none of which is the Alamofire root.
    let unanchored: TrustStore

    static let host = "test.alamofire.org"

    init() throws {
        date = try utc("2024-11-20T00:00:00Z")
        let dn = "/O=Alamofire/OU=Test/ST=Oregon/C=US/L=Portland/emailAddress=test@alamofire.org"
        let root = try Minted.issue("/CN=Alamofire Root CA" + dn,
                                    extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,digitalSignature,keyCertSign",
                                                 "extendedKeyUsage=critical,anyExtendedKeyUsage"],
                                    from: try utc("2015-07-12T01:52:57Z"), to: try utc("2035-07-07T01:52:57Z"))
        let eku = "extendedKeyUsage=critical,clientAuth,serverAuth,1.3.6.1.5.2.3.4,1.3.6.1.5.2.3.5"
        let caUsage = "keyUsage=critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment,keyAgreement,keyCertSign,cRLSign,encipherOnly,decipherOnly"
        let leafUsage = "keyUsage=critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment,keyAgreement,cRLSign,encipherOnly,decipherOnly"
        let caFrom = try utc("2015-07-12T01:57:23Z"), caTo = try utc("2030-07-08T01:57:23Z")
        let ca1 = try Minted.issue("/CN=Alamofire Signing CA1" + dn, extensions: ["basicConstraints=critical,CA:TRUE", caUsage, eku],
                                   from: caFrom, to: caTo, issuer: root)
        let ca2 = try Minted.issue("/CN=Alamofire Signing CA2" + dn, extensions: ["basicConstraints=critical,CA:TRUE", caUsage, eku],
                                   from: caFrom, to: caTo, issuer: root)
        let leafFrom = try utc("2015-07-12T02:09:57Z"), leafTo = try utc("2025-07-09T02:09:57Z")
        func leaf(_ name: String, _ san: String?, _ issuer: Minted, to: Date? = nil) throws -> Certificate {
            try Minted.issue("/CN=\(name)" + dn, extensions: [leafUsage, eku] + (san.map { ["subjectAltName=" + $0] } ?? []),
                             from: leafFrom, to: to ?? leafTo, issuer: issuer).certificate
        }
        let both = "critical,URI:test.alamofire.org,DNS:test.alamofire.org"
        rootCA = root.certificate
        intermediateCA1 = ca1.certificate
        intermediateCA2 = ca2.certificate
        leafWildcard = try leaf("*.alamofire.org", "critical,URI:*.alamofire.org,DNS:*.alamofire.org", ca1)
        leafMultipleDNSNames = try leaf("Multiple DNS Names", "DNS:test.alamofire.org,DNS:blog.alamofire.org,DNS:www.alamofire.org", ca1)
        leafSignedByCA1 = try leaf("Signed by CA1", both, ca1)
        leafDNSNameAndURI = try leaf("test.alamofire.org", both, ca1)
        leafExpired = try leaf("Expired", both, ca2, to: try utc("2015-07-13T02:41:03Z"))
        leafMissingDNSNameAndURI = try leaf("Missing DNS Name and URI", nil, ca2)
        leafSignedByCA2 = try leaf("Signed by CA2", both, ca2)
        leafValidDNSName = try leaf("Valid DNS Name", "critical,DNS:test.alamofire.org", ca2)
        leafValidURI = try leaf("Valid URI", "critical,URI:test.alamofire.org", ca2)
        anchored = TrustStore(systemAnchors: [root.certificate])
        let stranger = try Minted.issue("/CN=Some Public Root", extensions: caExtensions(selfSigned: true),
                                        from: try utc("2010-01-01T00:00:00Z"), to: try utc("2040-01-01T00:00:00Z"))
        unanchored = TrustStore(systemAnchors: [stranger.certificate])
    }

    // The suite's TestTrusts: leaf, signing CA, root.
    var leafWildcardTrust: [Certificate] { [leafWildcard, intermediateCA1, rootCA] }
    var leafMultipleDNSNamesTrust: [Certificate] { [leafMultipleDNSNames, intermediateCA1, rootCA] }
    var leafDNSNameAndURITrust: [Certificate] { [leafDNSNameAndURI, intermediateCA1, rootCA] }
    var leafExpiredTrust: [Certificate] { [leafExpired, intermediateCA2, rootCA] }
    var leafMissingDNSNameAndURITrust: [Certificate] { [leafMissingDNSNameAndURI, intermediateCA2, rootCA] }
    var leafValidDNSNameTrust: [Certificate] { [leafValidDNSName, intermediateCA2, rootCA] }
    var leafValidURITrust: [Certificate] { [leafValidURI, intermediateCA2, rootCA] }
    var leafValidDNSNameMissingIntermediateTrust: [Certificate] { [leafValidDNSName, rootCA] }
    var leafValidDNSNameWithIncorrectIntermediateTrust: [Certificate] { [leafValidDNSName, intermediateCA1, rootCA] }
    var nonAnchoredTrust: [Certificate] { [leafValidDNSName, intermediateCA2] }

    /// `evaluator.evaluate(trust, forHost: "test.alamofire.org")` succeeds.
    func passes(_ evaluator: AlamofirePolicy.Evaluator, _ chain: [Certificate], anchored isAnchored: Bool = true) throws -> Verdict {
        let policy = AlamofirePolicy(evaluators: [Self.host: evaluator])
        return policy.evaluate(try ServerTrust(presentedChain: chain, hostAsWritten: Self.host, time: date,
                                               store: isAnchored ? anchored : unanchored))
    }

    /// `SecTrustSetPolicies` then `SecTrustEvaluateWithError` with the root as the lone anchor.
    func secTrust(_ chain: [Certificate], _ policy: TrustPolicy) -> TrustEvaluation {
        TrustEvaluator.evaluate(chain, policy: policy, at: date, anchors: .only([rootCA]))
    }
}
