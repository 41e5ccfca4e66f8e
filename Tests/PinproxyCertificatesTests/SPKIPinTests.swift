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

    @Test(arguments: ["sha256/AAAA", "sha256/not base64!", "pin-sha256=\"\"", "sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA=", ""])
    func refusesMalformedPins(text: String) {
        #expect(throws: PinproxyError(.decoding, "")) { try SPKIPin(parsing: text) }
    }

    @Test func refusesWrongDigestLength() {
        #expect(throws: PinproxyError(.decoding, "")) { try SPKIPin(sha256: [1, 2, 3]) }
    }
}
