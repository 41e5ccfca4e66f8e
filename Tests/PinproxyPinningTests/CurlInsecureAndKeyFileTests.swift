import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// curl's `--insecure` and `--pinnedpubkey FILE`, as curl applies them.
@Suite("curl --insecure and public-key files")
struct CurlInsecureAndKeyFileTests {
    let pki = PKI.shared

    @Test("--insecure names the invalid chain it lets through, and only an invalid one")
    func insecureNamesTheInvalidChainItAccepts() {
        let policy = CurlPolicy(pinnedPublicKeys: [pki.selfSigned.spkiPin, pki.leaf.spkiPin], insecure: true)
        let selfSigned = policy.evaluate(pki.trust([pki.selfSigned]))
        #expect(selfSigned.decision == .accept)
        #expect(selfSigned.weaknesses == [.invalidChainAccepted], "\(selfSigned.steps)")
        let genuine = policy.evaluate(Scenario.genuine.trust(pki))
        #expect(genuine.decision == .accept)
        #expect(genuine.weaknesses.isEmpty, "\(genuine.steps)")
    }

    /// curl compares a DER key file byte for byte with the server's SubjectPublicKeyInfo
    /// (`Curl_pin_peer_pubkey`, lib/vtls/vtls.c): anything after the key means no server ever matches.
    @Test("a DER public-key file with bytes after the key is refused")
    func aDERKeyFileWithTrailingBytesIsRefused() throws {
        let dir = try TemporaryDirectory()
        let der = try PublicKey(of: pki.serverKey).derEncoded
        try dir.write("policies/key.der", bytes: der)
        try dir.write("policies/padded.der", bytes: der + [0x0a])
        let exact = try dir.write("policies/exact.json", #"{"family":"curl","pinnedpubkey":"key.der"}"#)
        #expect((try PolicyFile.load(contentsOf: exact) as? CurlPolicy)?.pinnedPublicKeys == [pki.leaf.spkiPin])
        let padded = try dir.write("policies/padded.json", #"{"family":"curl","pinnedpubkey":"padded.der"}"#)
        #expect {
            _ = try PolicyFile.load(contentsOf: padded)
        } throws: { error in
            "\(error)".contains("neither a PEM PUBLIC KEY nor a DER SubjectPublicKeyInfo")
        }
    }
}
