import Foundation
import PinproxyCertificates
import PinproxyPinning

// PEM and DER loading of certificates, keys and chains: the byte and text
// initialisers, and the file readers (`pin`, `verify --chain`, policy
// certificate files, `ca import`) through a scratch file. Every certificate
// that parses is read field by field, encoded again, described as
// `pinproxy pin` describes it, and imitated by a forged leaf, as the proxy
// imitates an upstream's certificate.

extension FuzzTarget {
    public static let certificates = FuzzTarget(
        "certificates",
        "PEM/DER bytes into Certificate, PublicKey, PrivateKey, CertificateChain, KeyFile, ChainFile and CertificateAuthority.parse; each certificate imitated by LeafForger"
    ) { input throws(FuzzFailure) in
        try CertificateFuzz.run(input)
    }
}

enum CertificateFuzz {
    /// Each decoder runs once per input, through the file readers that
    /// reach every initialiser (OpenSSL 3's decoders are slow, slower still
    /// under AddressSanitizer): KeyFile.read tries a PEM certificate, public
    /// or private key, then DER in the same order; ChainFile.load reads
    /// certificates as policies and `verify --chain` do.
    static func run(_ input: [UInt8]) throws(FuzzFailure) {
        let text = input.text
        let path = try FuzzScratch.write(input, to: "input.pem")
        var certificates: [Certificate] = []
        var keys: [PublicKey] = []
        switch try? KeyFile.read(contentsOf: path, allowingPrivateKeys: true) {
        case .certificates(let found)?:
            try require(!found.isEmpty, "a key file read as no certificate at all")
            certificates += found
        case .publicKey(let key)?: keys.append(key)
        case .publicHalfOfPrivateKey(let key)?:
            keys.append(key)
            if case .publicHalfOfPrivateKey? = try? KeyFile.read(contentsOf: path) {
                throw fail("the public half of a private key was read without allowing private keys")
            }
            if let privateKey = try? PrivateKey(pemEncoded: text) { try checkPrivateKey(privateKey) }
        case nil: break
        }
        if let chain = try? ChainFile.load(contentsOf: path) {
            try require(!(text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----")), "a chain file with a private key was accepted")
            if certificates.isEmpty { certificates = chain }
        }
        for key in keys { try checkPublicKey(key) }
        for certificate in certificates.prefix(4) { try checkCertificate(certificate) }
        if text.contains("PRIVATE KEY"), let authority = try? CertificateAuthority.parse(certificatePEM: text) {
            try checkAuthority(authority)
        }
    }

    static func checkCertificate(_ certificate: Certificate) throws(FuzzFailure) {
        let der = certificate.derEncoded
        try require(!der.isEmpty, "a parsed certificate does not encode")
        guard let again = try? Certificate(derEncoded: der) else { throw fail("a certificate's own DER does not parse") }
        try require(again == certificate && again.derEncoded == der, "a certificate changed through DER")
        guard let fromPEM = try? Certificate(pemEncoded: certificate.pemEncoded) else { throw fail("a certificate's own PEM does not parse") }
        try require(fromPEM == certificate, "a certificate changed through PEM")
        _ = (certificate.subject, certificate.issuer, certificate.subjectCommonName, certificate.subjectOrganization)
        _ = (certificate.notBefore, certificate.notAfter, certificate.serialNumberHex, certificate.hasPositiveSerial)
        _ = (certificate.sha256FingerprintText, certificate.spkiPin, certificate.subjectAlternativeNames)
        _ = (certificate.isCA, certificate.isSelfSigned, certificate.subjectKeyIdentifier, certificate.authorityKeyIdentifier)
        _ = (certificate.subjectHashOld, certificate.publicKeyPEM, certificate.isIssued(by: certificate))
        _ = PinReport.describe(certificate, label: "fuzz")
        if let key = try? PublicKey(of: certificate) {
            try require(key.spkiPin == certificate.spkiPin, "a certificate's key pins differently from the certificate")
        }

        // The proxy imitates whatever certificate an upstream presents.
        let fixtures = FuzzFixtures.shared
        do {
            let leaf = try fixtures.forger.forge(LeafRequest(names: [fixtures.host], imitating: certificate))
            try require(leaf.certificate.isIssued(by: fixtures.authority.certificate), "a forged leaf is not issued by the CA")
            try require(leaf.certificate.subjectAlternativeNames.contains(.dns(fixtures.host.description)),
                        "a leaf imitating a certificate lost the requested name")
        } catch let failure as FuzzFailure {
            throw failure
        } catch {
            // Refusing to imitate is allowed (the client then sees a handshake failure), crashing is not.
        }
    }

    static func checkPublicKey(_ key: PublicKey) throws(FuzzFailure) {
        guard let again = try? PublicKey(derEncoded: key.derEncoded) else { throw fail("a public key's own DER does not parse") }
        try require(again == key && again.spkiPin == key.spkiPin, "a public key changed through DER")
        _ = PinReport.describe(key, label: "fuzz")
    }

    static func checkPrivateKey(_ key: PrivateKey) throws(FuzzFailure) {
        guard let pem = try? key.pemEncoded(), let again = try? PrivateKey(pemEncoded: pem) else {
            throw fail("a private key does not go through its own PEM")
        }
        guard let publicKey = try? PublicKey(of: key), let publicAgain = try? PublicKey(of: again) else { return }
        try require(publicKey == publicAgain, "a private key's public half changed through PEM")
        try checkPublicKey(publicKey)
    }

    static func checkAuthority(_ authority: CertificateAuthority) throws(FuzzFailure) {
        _ = authority.validityProblem()
        _ = authority.nameConstraintsText
        guard let forger = try? LeafForger(authority: authority),
              let leaf = try? forger.forge(LeafRequest(FuzzFixtures.shared.host)) else { return }
        try require(leaf.certificate.isIssued(by: authority.certificate), "an imported CA forged a leaf it did not issue")
    }
}
