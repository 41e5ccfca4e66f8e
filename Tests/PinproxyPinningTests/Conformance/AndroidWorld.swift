import Foundation
import PinproxyCertificates
@testable import PinproxyPinning

/// What Android's NetworkSecurityConfigTest connects to, minted for this run: android.com
/// (its certificate also names `*.android.com`, so developer.android.com) and google.com, both
/// from one intermediate ("G2", the key the suite pins) under a root of the system store; a
/// second system root; and a CA the device's user installed ("NSConfig Test CA") with its own
/// certificate for android.com. The suite's date: 2016-03-01, while its user CA was valid.
final class AndroidWorld: Sendable {
    static let shared = Result { try AndroidWorld() }

    let date: Date
    let root: Certificate
    let otherRoot: Certificate
    let intermediate: Certificate
    let androidLeaf: Certificate
    let googleLeaf: Certificate
    let userCA: Certificate
    let userLeaf: Certificate
    let store: TrustStore

    init() throws {
        date = try utc("2016-03-01T00:00:00Z")
        let from = try utc("2013-01-01T00:00:00Z"), to = try utc("2022-01-01T00:00:00Z")
        let rootCA = try Minted.issue("/C=US/O=GeoTrust Inc./CN=GeoTrust Global CA", extensions: caExtensions(selfSigned: true), from: from, to: to)
        let g2 = try Minted.issue("/C=US/O=Google Inc/CN=Google Internet Authority G2", extensions: caExtensions(pathLength: 0),
                                  from: from, to: to, issuer: rootCA)
        let leafFrom = try utc("2016-01-01T00:00:00Z"), leafTo = try utc("2016-06-01T00:00:00Z")
        root = rootCA.certificate
        intermediate = g2.certificate
        androidLeaf = try Minted.issue("/CN=*.android.com", extensions: leafExtensions(["android.com", "*.android.com"]),
                                       from: leafFrom, to: leafTo, issuer: g2).certificate
        googleLeaf = try Minted.issue("/CN=*.google.com", extensions: leafExtensions(["google.com", "*.google.com"]),
                                      from: leafFrom, to: leafTo, issuer: g2).certificate
        otherRoot = try Minted.issue("/C=US/O=DigiCert Inc/CN=DigiCert Global Root CA", extensions: caExtensions(selfSigned: true), from: from, to: to).certificate
        let user = try Minted.issue("/C=US/ST=CA/O=Android/CN=NSConfig Test CA", extensions: caExtensions(selfSigned: true),
                                    from: try utc("2016-02-24T00:11:02Z"), to: try utc("2016-03-25T00:11:02Z"))
        userCA = user.certificate
        userLeaf = try Minted.issue("/CN=android.com", extensions: leafExtensions(["android.com"]), from: leafFrom, to: leafTo, issuer: user).certificate
        store = TrustStore(systemAnchors: [root, otherRoot], userAnchors: [userCA])
    }

    /// The pin of the G2 intermediate (the suite's `zCTn…` and `G2_SPKI_SHA256`).
    var g2Pin: String { intermediate.spkiPin.base64 }

    /// The genuine chain a server for `host` presents.
    func chain(for host: String) -> [Certificate] {
        host.hasSuffix("google.com") ? [googleLeaf, intermediate] : [androidLeaf, intermediate]
    }

    /// Writes `xml` as res/xml/config.xml with the raw resources the suite ships (`ca_certs_pem`,
    /// `ca_certs_der`: the system root and a second CA) and loads it.
    func load(_ xml: String, targetSdkVersion: Int = 24) throws -> AndroidPolicy {
        let dir = try TemporaryDirectory()
        try dir.write("res/raw/ca_certs_pem.pem", root.pemEncoded + otherRoot.pemEncoded)
        try dir.write("res/raw/ca_certs_der.der", bytes: root.derEncoded + otherRoot.derEncoded)
        let file = try dir.write("res/xml/config.xml", xml)
        return AndroidPolicy(config: try NetworkSecurityConfig.load(contentsOf: file), targetSdkVersion: targetSdkVersion)
    }

    /// `TestUtils.assertConnectionSucceeds` / `assertConnectionFails`: the genuine chain for `host`.
    func connects(_ policy: AndroidPolicy, _ host: String, chain: [Certificate]? = nil) throws -> Verdict {
        policy.evaluate(try ServerTrust(presentedChain: chain ?? self.chain(for: host), hostAsWritten: host, time: date, store: store))
    }
}

/// A network_security_config document around `body`.
func nsc(_ body: String) -> String {
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<network-security-config>\n\(body)\n</network-security-config>\n"
}
