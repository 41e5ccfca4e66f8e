import Foundation
import PinproxyCertificates
import PinproxyPinning

/// Keys and certificates the targets need, generated once per process:
/// no key material is stored with the fuzz corpus.
final class FuzzFixtures: Sendable {
    static let shared: FuzzFixtures = {
        do { return try FuzzFixtures() } catch { fatalError("cannot make the fuzz fixtures: \(error)") }
    }()

    let authority: CertificateAuthority
    let forger: LeafForger
    let host: HostName
    /// A leaf for ``host`` forged by ``authority``, then the CA certificate.
    let chain: [Certificate]
    /// A device that trusts ``authority``.
    let store: TrustStore

    private init() throws {
        authority = try CertificateAuthority.create()
        forger = try LeafForger(authority: authority)
        host = try HostName(validating: "api.example.com")
        chain = try forger.forge(LeafRequest(host)).chain
        store = TrustStore(systemAnchors: [authority.certificate])
        try writeFiles()
    }

    /// The files policy seeds name, in the scratch folder beside the policy
    /// under test: certificates (PEM and DER), a public key, an Android
    /// config with its raw resource, and a TrustKit Info.plist.
    private func writeFiles() throws {
        let leaf = chain[0], ca = authority.certificate
        let files: [(String, [UInt8])] = [
            ("ca.pem", Array(ca.pemEncoded.utf8)),
            ("ca.der", ca.derEncoded),
            ("leaf.pem", Array(leaf.pemEncoded.utf8)),
            ("chain.pem", Array((leaf.pemEncoded + ca.pemEncoded).utf8)),
            ("key.pub.pem", Array(leaf.publicKeyPEM.utf8)),
            ("raw/proxy_ca.pem", Array(ca.pemEncoded.utf8)),
            ("network_security_config.xml", Array("""
                <?xml version="1.0" encoding="utf-8"?>
                <network-security-config>
                  <domain-config>
                    <domain includeSubdomains="true">example.com</domain>
                    <pin-set><pin digest="SHA-256">\(leaf.spkiPin.base64)</pin></pin-set>
                    <trust-anchors><certificates src="@raw/proxy_ca"/></trust-anchors>
                  </domain-config>
                </network-security-config>
                """.utf8)),
            ("Info.plist", Array("""
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>TSKConfiguration</key><dict>
                <key>TSKPinnedDomains</key><dict><key>example.com</key><dict>
                <key>TSKIncludeSubdomains</key><true/>
                <key>TSKPublicKeyHashes</key><array><string>\(leaf.spkiPin.base64)</string><string>\(ca.spkiPin.base64)</string></array>
                </dict></dict></dict></dict></plist>
                """.utf8)),
        ]
        try FileManager.default.createDirectory(atPath: FuzzScratch.path("raw"), withIntermediateDirectories: true)
        for (name, bytes) in files {
            guard FileManager.default.createFile(atPath: FuzzScratch.path(name), contents: Data(bytes)) else {
                throw PinproxyError(.io, "cannot write \(FuzzScratch.path(name))")
            }
        }
    }
}
