import Foundation
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

@Suite struct SPKIPinTests {
    @Test(arguments: [PrivateKey.Algorithm.ecP256, .rsa2048])
    func pinMatchesOpenSSLPipeline(algorithm: PrivateKey.Algorithm) throws {
        let key = try PrivateKey.generate(algorithm)
        let dir = try TemporaryDirectory()
        let keyPath = try dir.write(try key.pemEncoded(), to: "key.pem")
        let expected = try run(["sh", "-c", "openssl pkey -in '\(keyPath)' -pubout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64"])
        #expect(expected.status == 0)
        let pin = try key.spkiPin()
        #expect(pin.base64 == expected.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let certificate = try Certificate.issue(
            .serverLeaf(names: [.dns("pin.test")], notBefore: Date(), notAfter: Date().addingTimeInterval(3600)),
            subjectKey: key, signer: .selfSigned(key))
        #expect(certificate.spkiPin == pin)
        #expect(try PublicKey(of: certificate).spkiPin == pin)
    }

    /// A certificate whose RSA key carries algorithm parameters other than
    /// NULL (a relative OID of length 0 here) parses; its key's pin is the
    /// hash of the SPKI as the certificate carries it, as curl's and the
    /// certificate's own are, not of OpenSSL's re-encoding (which writes NULL).
    @Test func aKeyReadFromACertificatePinsTheSPKIAsWritten() throws {
        let key = try PrivateKey.generate(.rsa2048)
        let certificate = try Certificate.issue(
            .serverLeaf(names: [.dns("pin.test")], notBefore: Date(), notAfter: Date().addingTimeInterval(3600)),
            subjectKey: key, signer: .selfSigned(key))
        // rsaEncryption's OID and its NULL parameters, inside the SPKI.
        let rsaNull: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00]
        var der = certificate.derEncoded
        let at = try #require((0...(der.count - rsaNull.count)).first { Array(der[$0..<($0 + rsaNull.count)]) == rsaNull })
        der[at + rsaNull.count - 2] = 0x0D
        let odd = try Certificate(derEncoded: der)
        let spki = odd.publicKeyDER
        #expect(spki.contains(0x0D) && spki != certificate.publicKeyDER)
        let fromCertificate = try PublicKey(of: odd)
        #expect(fromCertificate.derEncoded == spki)
        #expect(fromCertificate.spkiPin == odd.spkiPin)
        #expect(fromCertificate.spkiPin == SPKIPin(subjectPublicKeyInfo: spki))
        #expect(fromCertificate.spkiPin != certificate.spkiPin)
        // Read again from its own DER, it is the same key with the same pin.
        let again = try PublicKey(derEncoded: fromCertificate.derEncoded)
        #expect(again == fromCertificate && again.spkiPin == odd.spkiPin)
        // Bytes after the SPKI are not part of the key.
        #expect(try PublicKey(derEncoded: spki + [0x00, 0x01]).derEncoded == spki)
    }

    @Test func notations() throws {
        let pin = try SPKIPin(sha256: Array(0..<32))
        #expect(pin.okhttp == "sha256/" + pin.base64)
        #expect(pin.curl == "sha256//" + pin.base64)
        #expect(pin.hpkp == "pin-sha256=\"\(pin.base64)\"")
        #expect(pin.androidXML == "<pin digest=\"SHA-256\">\(pin.base64)</pin>")
        for text in [pin.okhttp, pin.curl, pin.hpkp, pin.base64, " \(pin.okhttp) "] {
            #expect(try SPKIPin(parsing: text) == pin, "\(text)")
        }
    }

    @Test func okhttpPinsWhoseBase64StartsWithASlash() throws {
        // 0xfc... encodes to base64 starting with '/': OkHttp writes "sha256//...".
        let pin = try SPKIPin(sha256: [0xfd] + [UInt8](repeating: 7, count: 31))
        #expect(pin.base64.hasPrefix("/"))
        #expect(pin.okhttp.hasPrefix("sha256//"))
        #expect(try SPKIPin(parsing: pin.okhttp) == pin)
        #expect(try SPKIPin(parsing: pin.curl) == pin)
        #expect(pin.curl.hasPrefix("sha256///"))
    }

    @Test(arguments: ["sha256/AAAA", "sha256/not base64!", "pin-sha256=\"\"", "sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "",
                      // A SHA-384 digest, and a SHA-256 one with a byte too many: no SHA-256 pin.
                      "sha256/" + Data(count: 48).base64EncodedString(), "sha256/" + Data(count: 33).base64EncodedString(),
                      "sha256//" + Data(count: 33).base64EncodedString(), Data(count: 33).base64EncodedString()])
    func refusesMalformedPins(text: String) {
        #expect(throws: PinproxyError(.decoding, "")) { try SPKIPin(parsing: text) }
    }

    @Test(arguments: [0, 31, 33, 48])
    func aDigestOfAnotherLengthIsNoPin(length: Int) {
        #expect(throws: PinproxyError(.decoding, "")) { try SPKIPin(sha256: [UInt8](repeating: 1, count: length)) }
    }

    @Test func aSHA1PinIsNamedAsSuch() {
        do {
            _ = try SPKIPin(parsing: "sha1/" + Data(repeating: 7, count: 20).base64EncodedString())
            Issue.record("accepted a SHA-1 pin")
        } catch let error as PinproxyError {
            #expect(error.code == .decoding)
            #expect(error.reason.contains("SHA-1"), "\(error.reason)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func refusesWrongDigestLength() {
        #expect(throws: PinproxyError(.decoding, "")) { try SPKIPin(sha256: [1, 2, 3]) }
    }
}
