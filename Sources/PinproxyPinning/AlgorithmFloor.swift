internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// The weakest signature digests and keys a platform's library accepts in a chain, judged on
/// the chain OpenSSL built, as the library judges it.
///
/// - Apple, SSL policy (`SecPolicyCreateSSLWithKeyUsage` in SecPolicy.c adds
///   `SecPolicyRemoveWeakHashOptions` and `SecPolicyAddStrongKeySizeOptions` for servers):
///   MD2, MD4, MD5 and SHA-1 signatures are refused on every certificate but self-signed ones
///   (`SecPolicyCheckCertSignatureHashAlgorithms` skips those) and a user-trusted anchor
///   (`SecPolicyCheckSignatureHashAlgorithms`); RSA keys under 2048 bits and EC keys under
///   256 bits on every certificate, anchor included, unless the leaf itself is a user anchor
///   (`SecPolicyCheckKeySize`, SecPolicyServer.c).
/// - Apple, basic X.509 (`SecPolicyAddBasicX509Options`): only what
///   `SecPolicyCheckWeakSignature` and `SecPolicyCheckWeakKeySize` refuse — MD2, MD4 and MD5
///   signatures on certificates that are not self-signed, RSA keys under 1024 bits and EC
///   keys under 160 bits (`SecCertificateIsWeakKey`). SHA-1 and RSA-1024 pass.
/// - Android (Conscrypt `ChainStrengthAnalyzer.check`, called by `TrustManagerImpl.verifyChain`
///   on the untrusted part of the chain, so never on the anchor): MD2, MD4, MD5 and SHA-1
///   signatures, RSA keys under 1024 bits, EC keys under 160 bits.
/// - curl has no floor here: OpenSSL applies libssl's default security level itself during the verification
///   (see ``TrustEvaluator``).
struct AlgorithmFloor {
    /// Whose rule this is, for messages: "Apple's SSL policy".
    let owner: String
    let refusedDigests: [Int32: String]
    let minimumRSABits: Int
    let minimumECBits: Int
    /// The chain positions whose own signature is judged.
    let judgedSignatures: (_ chain: [Certificate], _ anchor: AnchorKind?) -> [Int]
    /// The chain positions whose key is judged.
    let judgedKeys: (_ chain: [Certificate], _ anchor: AnchorKind?) -> [Int]

    static let md5AndOlder: [Int32: String] = [NID_md2: "MD2", NID_md4: "MD4", NID_md5: "MD5"]
    static let sha1AndOlder: [Int32: String] = md5AndOlder.merging([NID_sha1: "SHA-1"]) { a, _ in a }

    /// The floor `policy` applies to a chain ending at `anchor`, nil where OpenSSL applies it
    /// during verification (curl).
    static func of(_ policy: TrustPolicy, anchor: AnchorKind?) -> AlgorithmFloor? {
        func notSelfSigned(_ chain: [Certificate], _ indices: Range<Int>) -> [Int] {
            indices.filter { !chain[$0].isSelfSigned }
        }
        switch (policy.platform, policy.kind) {
        case (.apple, .ssl):
            return AlgorithmFloor(
                owner: "Apple's SSL policy", refusedDigests: sha1AndOlder, minimumRSABits: 2048, minimumECBits: 256,
                judgedSignatures: { chain, anchor in notSelfSigned(chain, 0..<(anchor == .user ? chain.count - 1 : chain.count)) },
                judgedKeys: { chain, anchor in anchor == .user && chain.count == 1 ? [] : Array(chain.indices) })
        case (.apple, .basicX509):
            return AlgorithmFloor(
                owner: "Apple's basic X.509 policy", refusedDigests: md5AndOlder, minimumRSABits: 1024, minimumECBits: 160,
                judgedSignatures: { chain, _ in notSelfSigned(chain, chain.indices) },
                judgedKeys: { chain, _ in Array(chain.indices) })
        case (.android, _):
            let untrusted = { (chain: [Certificate], anchor: AnchorKind?) in Array(0..<(anchor == nil ? chain.count : chain.count - 1)) }
            return AlgorithmFloor(
                owner: "Android's Conscrypt (ChainStrengthAnalyzer)", refusedDigests: sha1AndOlder, minimumRSABits: 1024, minimumECBits: 160,
                judgedSignatures: untrusted, judgedKeys: untrusted)
        case (.jvm, _):
            let belowAnchor = { (chain: [Certificate], anchor: AnchorKind?) in Array(0..<(anchor == nil ? chain.count : chain.count - 1)) }
            let jdkCA = anchor == .system
            return AlgorithmFloor(
                owner: jdkCA ? "the JDK (jdk.certpath.disabledAlgorithms, SHA1 jdkCA: the chain ends at a bundled root)"
                             : "the JDK (jdk.certpath.disabledAlgorithms)",
                refusedDigests: jdkCA ? sha1AndOlder : md5AndOlder, minimumRSABits: 1024, minimumECBits: 224,
                judgedSignatures: belowAnchor, judgedKeys: { chain, _ in Array(chain.indices) })
        case (.curl, _):
            return nil
        }
    }

    /// Every certificate of `chain` that falls below the floor, in plain words.
    func failures(chain: [Certificate], anchor: AnchorKind?) -> [TrustFailure] {
        var failures: [TrustFailure] = []
        for index in judgedSignatures(chain, anchor) {
            if let digest = chain[index].signatureDigestNID, let name = refusedDigests[digest] {
                failures.append(TrustFailure(
                    kind: .weakAlgorithm, code: Int(X509_V_ERR_CA_MD_TOO_WEAK), depth: index,
                    detail: "weak algorithm: \(Self.which(chain, index)) is signed with \(name), which \(owner) refuses"))
            }
        }
        for index in judgedKeys(chain, anchor) {
            guard let key = chain[index].publicKeySize else { continue }
            let minimum = key.isRSA ? minimumRSABits : key.isEC ? minimumECBits : 0
            if key.bits < minimum {
                failures.append(TrustFailure(
                    kind: .weakAlgorithm, code: Int(index == 0 ? X509_V_ERR_EE_KEY_TOO_SMALL : X509_V_ERR_CA_KEY_TOO_SMALL), depth: index,
                    detail: "weak algorithm: \(Self.which(chain, index)) has an \(key.isRSA ? "RSA" : "EC") \(key.bits)-bit key; \(owner) wants at least \(minimum) bits"))
            }
        }
        return failures
    }

    static func which(_ chain: [Certificate], _ index: Int) -> String {
        "certificate #\(index) (\(ChainSummary.name(of: chain[index])))"
    }
}

extension Certificate {
    /// The digest NID of this certificate's own signature; nil when it has none (EdDSA) or
    /// OpenSSL cannot tell.
    var signatureDigestNID: Int32? {
        var digest: Int32 = 0
        guard X509_get_signature_info(pointer, &digest, nil, nil, nil) == 1, digest != NID_undef else { return nil }
        return digest
    }

    /// The name of the signature digest, as OpenSSL spells it ("SHA1", "SHA256").
    var signatureDigestName: String? {
        guard let nid = signatureDigestNID, let name = OBJ_nid2sn(nid) else { return nil }
        return String(cString: name)
    }

    /// The subject key's type and size in bits (the field size for EC keys).
    var publicKeySize: (isRSA: Bool, isEC: Bool, bits: Int)? {
        guard let key = X509_get0_pubkey(pointer) else { return nil }
        let base = EVP_PKEY_get_base_id(key)
        return (base == EVP_PKEY_RSA || base == EVP_PKEY_RSA_PSS, base == EVP_PKEY_EC, Int(EVP_PKEY_get_bits(key)))
    }

    /// The named curve of an EC subject key ("prime256v1", "secp256k1"), nil for other keys.
    var ecCurveName: String? {
        guard let key = X509_get0_pubkey(pointer), EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return nil }
        return String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension Certificate {
    /// Whether `issuer`'s key verifies this certificate's signature (names not compared). With
    /// `nullParametersEquivalent`, an outer signatureAlgorithm that differs from the inner one
    /// only in an absent versus NULL parameter is read as the inner one.
    func signatureVerifies(under issuer: Certificate, nullParametersEquivalent: Bool) -> Bool {
        defer { ERR_clear_error() }
        return pp_x509_signature_verifies(pointer, X509_get0_pubkey(issuer.pointer), nullParametersEquivalent ? 1 : 0) == 1
    }

    /// OkHttp's `verifySignature(toVerify, signingCert)`: the issuer name equals `signer`'s
    /// subject and `signer`'s key verifies the signature (as the JDK reads it).
    func isSigned(by signer: Certificate) -> Bool {
        X509_NAME_cmp(X509_get_issuer_name(pointer), X509_get_subject_name(signer.pointer)) == 0
            && signatureVerifies(under: signer, nullParametersEquivalent: true)
    }
}
