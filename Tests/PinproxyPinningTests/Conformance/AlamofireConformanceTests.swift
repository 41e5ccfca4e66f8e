import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyPinning

/// Alamofire's `ServerTrustEvaluatorTests.swift` (5.10.2), one test per case, named after its
/// test case class and method. `testOnlyValidCertificatesAreDetected` (reading a bundle) and the
/// three `StaticServerTrustAccessorTests` (Swift syntax) have no verdict and no counterpart.
typealias AF = AlamofirePolicy.Evaluator

extension AlamofireWorld {
    func pins(_ certificates: [Certificate]) -> [SPKIPin] { certificates.map(\.spkiPin) }
    static func pinned(_ certificates: [Certificate], acceptSelfSigned: Bool = false, performDefault: Bool = true, validateHost: Bool = true) -> AF {
        .pinnedCertificates(certificates: certificates, acceptSelfSignedCertificates: acceptSelfSigned,
                            performDefaultValidation: performDefault, validateHost: validateHost)
    }
    static func keys(_ certificates: [Certificate], performDefault: Bool = true, validateHost: Bool = true) -> AF {
        .publicKeys(keys: certificates.map(\.spkiPin), performDefaultValidation: performDefault, validateHost: validateHost)
    }
    static func revocation(validateHost: Bool = true) -> AF {
        .revocation(performDefaultValidation: true, validateHost: validateHost, options: .any)
    }
}

/// Checks one case: the evaluator passes (`result.isSuccess`) or not.
func expectAlamofire(_ world: AlamofireWorld, _ evaluator: AF, _ chain: [Certificate], anchored: Bool = true, passes: Bool,
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
    let verdict = try world.passes(evaluator, chain, anchored: anchored)
    #expect((verdict.decision == .accept) == passes, "\(VerdictReport.text(verdict))", sourceLocation: sourceLocation)
}

@Suite("ServerTrustEvaluatorTests.swift conformance")
struct AlamofireConformanceTests {
    let w: AlamofireWorld
    init() throws { w = try AlamofireWorld.shared.get() }
    typealias W = AlamofireWorld

    // MARK: ServerTrustPolicyExplorationBasicX509PolicyValidationTestCase

    @Test func basicX509_testThatExpiredCertificateFailsBasicX509Validation() {
        #expect(!w.secTrust(w.leafExpiredTrust, .basicX509(platform: .apple)).isValid)
    }

    // MARK: ServerTrustPolicyExplorationSSLPolicyValidationTestCase

    @Test func ssl_testThatCertificateMissingDNSNameFailsSSLValidation() throws {
        #expect(!w.secTrust(w.leafMissingDNSNameAndURITrust, .ssl(host: try HostName(validating: W.host), platform: .apple)).isValid)
    }
    @Test func ssl_testThatURICertificateFailsSSLValidation() throws {
        #expect(!w.secTrust(w.leafValidURITrust, .ssl(host: try HostName(validating: W.host), platform: .apple)).isValid)
    }
    @Test func ssl_testThatExpiredCertificateFailsSSLValidation() throws {
        #expect(!w.secTrust(w.leafExpiredTrust, .ssl(host: try HostName(validating: W.host), platform: .apple)).isValid)
    }

    // MARK: ServerTrustPolicyPerformDefaultEvaluationTestCase

    @Test func defaultEvaluation_testThatNonAnchoredRootCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: false), w.nonAnchoredTrust, anchored: false, passes: false)
    }
    @Test func defaultEvaluation_testThatExpiredCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: false), w.leafExpiredTrust, passes: false)
    }
    @Test func defaultEvaluation_testThatMissingIntermediateCertificateInChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: false), w.leafValidDNSNameMissingIntermediateTrust, passes: false)
    }
    @Test func defaultEvaluation_testThatNonAnchoredRootCertificateChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: true), w.nonAnchoredTrust, anchored: false, passes: false)
    }
    @Test func defaultEvaluation_testThatMissingDNSNameLeafCertificateFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: true), w.leafMissingDNSNameAndURITrust, passes: false)
    }
    @Test func defaultEvaluation_testThatExpiredCertificateChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: true), w.leafExpiredTrust, passes: false)
    }
    /// The suite builds this "WithHostValidation" case with `DefaultTrustEvaluator(validateHost: false)`; ported as written.
    @Test func defaultEvaluation_testThatMissingIntermediateCertificateInChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: false), w.leafValidDNSNameMissingIntermediateTrust, passes: false)
    }

    // MARK: ServerTrustPolicyPerformRevokedEvaluationTestCase

    @Test func revoked_testThatNonAnchoredRootCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.revocation(validateHost: false), w.nonAnchoredTrust, anchored: false, passes: false)
    }
    @Test func revoked_testThatExpiredCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.revocation(validateHost: false), w.leafExpiredTrust, passes: false)
    }
    @Test func revoked_testThatMissingIntermediateCertificateInChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.revocation(validateHost: false), w.leafValidDNSNameMissingIntermediateTrust, passes: false)
    }
    @Test func revoked_testThatNonAnchoredRootCertificateChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.revocation(), w.nonAnchoredTrust, anchored: false, passes: false)
    }
    @Test func revoked_testThatMissingDNSNameLeafCertificateFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.revocation(), w.leafMissingDNSNameAndURITrust, passes: false)
    }
    @Test func revoked_testThatExpiredCertificateChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.revocation(), w.leafExpiredTrust, passes: false)
    }
    @Test func revoked_testThatMissingIntermediateCertificateInChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.revocation(), w.leafValidDNSNameMissingIntermediateTrust, passes: false)
    }

    // MARK: ServerTrustPolicyPinCertificatesTestCase

    @Test func pinCertificates_testThatPinnedLeafCertificatePassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.leafValidDNSName], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinnedIntermediateCertificatePassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA2], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinnedRootCertificatePassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.rootCA], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinningLeafCertificateNotInCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.leafSignedByCA2], validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningIntermediateCertificateNotInCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA1], validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningExpiredLeafCertificateFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.leafExpired], validateHost: false), w.leafExpiredTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningIntermediateCertificateWithExpiredLeafCertificateFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA2], validateHost: false), w.leafExpiredTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningLeafCertificateNotInCertificateChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.leafSignedByCA2]), w.leafValidDNSNameTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningIntermediateCertificateNotInCertificateChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA1]), w.leafValidDNSNameTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningExpiredLeafCertificateFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.leafExpired]), w.leafExpiredTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningIntermediateCertificateWithExpiredLeafCertificateFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA2]), w.leafExpiredTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinnedLeafCertificateWithoutCertificateChainValidationPassesEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.leafValidDNSName], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinnedIntermediateCertificateWithoutCertificateChainValidationPassesEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA2], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinnedRootCertificateWithoutCertificateChainValidationPassesEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.rootCA], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinningLeafCertificateNotInCertificateChainWithoutCertificateChainValidationFailsEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.leafSignedByCA2], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningIntermediateCertificateNotInCertificateChainWithoutCertificateChainValidationFailsEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA1], performDefault: false, validateHost: false), w.leafValidDNSNameTrust, anchored: false, passes: false)
    }
    @Test func pinCertificates_testThatPinningExpiredLeafCertificateWithoutCertificateChainValidationPassesEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.leafExpired], performDefault: false, validateHost: false), w.leafExpiredTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinningIntermediateCertificateWithExpiredLeafCertificateWithoutCertificateChainValidationPassesEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA2], performDefault: false, validateHost: false), w.leafExpiredTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinningRootCertificateWithExpiredLeafCertificateWithoutCertificateChainValidationPassesEvaluation() throws {
        try expectAlamofire(w, W.pinned([w.rootCA], performDefault: false, validateHost: false), w.leafExpiredTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinningMultipleCertificatesWithoutCertificateChainValidationPassesEvaluation() throws {
        let certificates = [w.leafMultipleDNSNames, w.leafSignedByCA1, w.leafExpired, w.leafWildcard, w.leafDNSNameAndURI]
        try expectAlamofire(w, W.pinned(certificates, performDefault: false, validateHost: false), w.leafExpiredTrust, anchored: false, passes: true)
    }

    // MARK: ServerTrustPolicyPinPublicKeysTestCase

    @Test func pinPublicKeys_testThatPinningKeyNotInCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.keys([w.leafSignedByCA2], validateHost: false), w.leafValidDNSNameTrust, passes: false)
    }
    @Test func pinPublicKeys_testThatPinningKeyNotInCertificateChainFailsEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.keys([w.leafSignedByCA2]), w.leafValidDNSNameTrust, passes: false)
    }
    @Test func pinPublicKeys_testThatPinningLeafKeyWithoutCertificateChainValidationPassesEvaluationWithMissingIntermediateCertificate() throws {
        try expectAlamofire(w, W.keys([w.leafValidDNSName], performDefault: false, validateHost: false), w.leafValidDNSNameMissingIntermediateTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningRootKeyWithoutCertificateChainValidationFailsEvaluationWithMissingIntermediateCertificate() throws {
        try expectAlamofire(w, W.keys([w.rootCA], performDefault: false, validateHost: false), w.leafValidDNSNameMissingIntermediateTrust, passes: false)
    }
    @Test func pinPublicKeys_testThatPinningLeafKeyWithoutCertificateChainValidationPassesEvaluationWithIncorrectIntermediateCertificate() throws {
        try expectAlamofire(w, W.keys([w.leafValidDNSName], performDefault: false, validateHost: false), w.leafValidDNSNameWithIncorrectIntermediateTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningLeafKeyWithoutCertificateChainValidationPassesEvaluationWithExpiredLeafCertificate() throws {
        try expectAlamofire(w, W.keys([w.leafExpired], performDefault: false, validateHost: false), w.leafExpiredTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningIntermediateKeyWithoutCertificateChainValidationPassesEvaluationWithExpiredLeafCertificate() throws {
        try expectAlamofire(w, W.keys([w.intermediateCA2], performDefault: false, validateHost: false), w.leafExpiredTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningRootKeyWithoutCertificateChainValidationPassesEvaluationWithExpiredLeafCertificate() throws {
        try expectAlamofire(w, W.keys([w.rootCA], performDefault: false, validateHost: false), w.leafExpiredTrust, passes: true)
    }

    // MARK: ServerTrustPolicyDisableEvaluationTestCase

    @Test func disabled_testThatCertificateChainMissingIntermediateCertificatePassesEvaluation() throws {
        try expectAlamofire(w, .disabled, w.leafValidDNSNameMissingIntermediateTrust, anchored: false, passes: true)
    }
    @Test func disabled_testThatExpiredLeafCertificatePassesEvaluation() throws {
        try expectAlamofire(w, .disabled, w.leafExpiredTrust, anchored: false, passes: true)
    }

    // MARK: ServerTrustPolicyCompositeTestCase

    @Test func composite_testThatNonAnchoredRootCertificateChainFailsEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, .composite([.defaultEvaluator(validateHost: false), W.revocation(validateHost: false)]), w.nonAnchoredTrust, anchored: false, passes: false)
    }
    @Test func composite_testThatExpiredLeafCertificateFailsDefaultAndRevocationComposite() throws {
        try expectAlamofire(w, .composite([.defaultEvaluator(validateHost: false), W.revocation(validateHost: false)]), w.leafExpiredTrust, passes: false)
    }
}

/// The cases of the same suite whose chains Apple's SecTrust accepts although they break
/// OpenSSL's strict X.509 rules (RFC 5280 profile checks Apple does not make): no authority or
/// subject key identifier on any certificate, a root whose only EKU is anyExtendedKeyUsage, a
/// leaf with cRLSign in its keyUsage. They wait on per-platform validation (an Apple profile
/// that does not apply those checks); their expectations are the suite's.
@Suite("ServerTrustEvaluatorTests.swift conformance — platform strictness (Apple accepts what strict OpenSSL refuses)")
struct AlamofirePlatformStrictnessConformanceTests {
    let w: AlamofireWorld
    init() throws { w = try AlamofireWorld.shared.get() }
    typealias W = AlamofireWorld

    @Test func basicX509_testThatAnchoredRootCertificatePassesBasicX509ValidationWithRootInTrust() {
        let evaluation = w.secTrust([w.leafDNSNameAndURI, w.intermediateCA1, w.rootCA], .basicX509(platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func basicX509_testThatAnchoredRootCertificatePassesBasicX509ValidationWithoutRootInTrust() {
        let evaluation = w.secTrust(w.leafDNSNameAndURITrust, .basicX509(platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func basicX509_testThatCertificateMissingDNSNamePassesBasicX509Validation() {
        let evaluation = w.secTrust(w.leafMissingDNSNameAndURITrust, .basicX509(platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func ssl_testThatAnchoredRootCertificatePassesSSLValidationWithRootInTrust() throws {
        let evaluation = w.secTrust([w.leafDNSNameAndURI, w.intermediateCA1, w.rootCA], .ssl(host: try HostName(validating: W.host), platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func ssl_testThatAnchoredRootCertificatePassesSSLValidationWithoutRootInTrust() throws {
        let evaluation = w.secTrust(w.leafDNSNameAndURITrust, .ssl(host: try HostName(validating: W.host), platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func ssl_testThatWildcardCertificatePassesSSLValidation() throws {
        let evaluation = w.secTrust(w.leafWildcardTrust, .ssl(host: try HostName(validating: W.host), platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func ssl_testThatDNSNameCertificatePassesSSLValidation() throws {
        let evaluation = w.secTrust(w.leafValidDNSNameTrust, .ssl(host: try HostName(validating: W.host), platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func ssl_testThatMultipleDNSNamesCertificatePassesSSLValidationForAllEntries() throws {
        for name in ["test.alamofire.org", "blog.alamofire.org", "www.alamofire.org"] {
            let evaluation = w.secTrust(w.leafMultipleDNSNamesTrust, .ssl(host: try HostName(validating: name), platform: .apple))
            #expect(evaluation.isValid, "\(name): \(evaluation.reason)")
        }
    }
    @Test func ssl_testThatPassingNilForHostParameterAllowsCertificateMissingDNSNameToPassSSLValidation() {
        let evaluation = w.secTrust(w.leafMissingDNSNameAndURITrust, .ssl(host: nil, platform: .apple))
        #expect(evaluation.isValid, "\(evaluation.reason)")
    }
    @Test func defaultEvaluation_testThatValidCertificateChainPassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: false), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func defaultEvaluation_testThatMissingDNSNameLeafCertificatePassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: false), w.leafMissingDNSNameAndURITrust, passes: true)
    }
    @Test func defaultEvaluation_testThatValidCertificateChainPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: true), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func defaultEvaluation_testThatWildcardedLeafCertificateChainPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, .defaultEvaluator(validateHost: true), w.leafWildcardTrust, passes: true)
    }
    @Test func revoked_testThatValidCertificateChainPassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.revocation(validateHost: false), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func revoked_testThatMissingDNSNameLeafCertificatePassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.revocation(validateHost: false), w.leafMissingDNSNameAndURITrust, passes: true)
    }
    @Test func revoked_testThatValidCertificateChainPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.revocation(), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func revoked_testThatWildcardedLeafCertificateChainPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.revocation(), w.leafWildcardTrust, passes: true)
    }
    @Test func pinCertificates_testThatPinnedLeafCertificatePassesEvaluationWithSelfSignedSupportAndHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.leafValidDNSName], acceptSelfSigned: true), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinnedIntermediateCertificatePassesEvaluationWithSelfSignedSupportAndHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.intermediateCA2], acceptSelfSigned: true), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinCertificates_testThatPinnedRootCertificatePassesEvaluationWithSelfSignedSupportAndHostValidation() throws {
        try expectAlamofire(w, W.pinned([w.rootCA], acceptSelfSigned: true), w.leafValidDNSNameTrust, anchored: false, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningLeafKeyPassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.keys([w.leafValidDNSName], validateHost: false), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningIntermediateKeyPassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.keys([w.intermediateCA2], validateHost: false), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningRootKeyPassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.keys([w.rootCA], validateHost: false), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningBackupKeyPassesEvaluationWithoutHostValidation() throws {
        try expectAlamofire(w, W.keys([w.leafSignedByCA1, w.intermediateCA1, w.leafValidDNSName], validateHost: false), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningLeafKeyPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.keys([w.leafValidDNSName]), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningIntermediateKeyPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.keys([w.intermediateCA2]), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningRootKeyPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.keys([w.rootCA]), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func pinPublicKeys_testThatPinningBackupKeyPassesEvaluationWithHostValidation() throws {
        try expectAlamofire(w, W.keys([w.leafSignedByCA1, w.intermediateCA1, w.leafValidDNSName]), w.leafValidDNSNameTrust, passes: true)
    }
    @Test func composite_testThatValidCertificateChainPassesDefaultAndRevocationCompositeChecks() throws {
        try expectAlamofire(w, .composite([.defaultEvaluator(validateHost: false), W.revocation(validateHost: false)]), w.leafValidDNSNameTrust, passes: true)
    }
}
