import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `world:` references resolve wherever a policy takes a certificate file or a pin.
@Suite struct PolicyWorldTests {
    let world: HarnessWorld
    let directory: TemporaryDirectory

    init() throws {
        world = try HarnessWorld.generate(host: try HostName(validating: "api.example.com"))
        directory = try TemporaryDirectory()
    }

    func load(_ text: String, as name: String = "policy.json") throws -> any PinningPolicy {
        try PolicyFile.load(contentsOf: try directory.write(text, to: name), world: world.policyWorld)
    }

    @Test func certificatePathsAndPinsResolve() throws {
        defer { world.removeFiles() }
        let afn = try #require(try load(#"{"family": "afnetworking", "SSLPinningMode": "certificate", "pinnedCertificates": ["world:root", "world:leaf"]}"#) as? AFNetworkingPolicy)
        #expect(afn.pinnedCertificates == [world.root, world.leaf])
        let curl = try #require(try load(#"{"family": "curl", "pinnedpubkey": "world:leaf;sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "cacert": "world:misissuer"}"#) as? CurlPolicy)
        #expect(curl.pinnedPublicKeys.first == world.leaf.spkiPin && curl.pinnedPublicKeys.count == 2)
        #expect(curl.caBundle == [world.misissuer])
        let okhttp = try #require(try load(#"{"family": "okhttp", "certificatePinner": {"*.example.com": ["world:intermediate"]}}"#) as? OkHttpPolicy)
        #expect(okhttp.pins.map(\.pinText) == [try #require(world.intermediate).spkiPin.okhttp])
        let trustkit = try #require(try load(#"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": ["world:leaf", "world:root"]}}}"#) as? TrustKitPolicy)
        #expect(trustkit.domains.first?.publicKeyHashes == [world.leaf.spkiPin, world.root.spkiPin])
        let alamofire = try #require(try load(#"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "PinnedCertificatesTrustEvaluator", "certificates": ["world:intermediate"]}}}"#) as? AlamofirePolicy)
        #expect(alamofire.evaluators.count == 1)
    }

    @Test func androidAndTrustKitPlistResolve() throws {
        defer { world.removeFiles() }
        let android = try #require(try load("""
            <network-security-config><base-config><trust-anchors><certificates src="world:root"/></trust-anchors></base-config>
            <domain-config><domain>api.example.com</domain><pin-set><pin digest="SHA-256">world:leaf</pin><pin digest="SHA-256">world:misissuer</pin></pin-set></domain-config>
            </network-security-config>
            """, as: "nsc.xml") as? AndroidPolicy)
        #expect(android.config.baseTrustAnchors?.first?.certificates == [world.root])
        #expect(android.config.domainConfigs.first?.pinSet?.pins == [world.leaf.spkiPin, world.misissuer.spkiPin])
        let plist = try #require(try load("""
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>TSKConfiguration</key><dict><key>TSKPinnedDomains</key><dict>
            <key>api.example.com</key><dict><key>TSKPublicKeyHashes</key><array><string>world:leaf</string><string>world:intermediate</string></array></dict>
            </dict></dict></dict></plist>
            """, as: "Info.plist") as? TrustKitPolicy)
        #expect(plist.domains.first?.publicKeyHashes.first == world.leaf.spkiPin)
    }

    @Test func unknownNamesAndMissingWorldsAreErrors() throws {
        defer { world.removeFiles() }
        do {
            _ = try load(#"{"family": "afnetworking", "SSLPinningMode": "publicKey", "pinnedCertificates": ["world:leef"]}"#)
            Issue.record("world:leef was accepted")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("key 'pinnedCertificates[0]': 'world:leef' is not one of world:leaf, world:intermediate, world:root, world:misissuer, world:next-intermediate, world:new-root, world:second-ca"), "\(error.reason)")
        }
        let path = try directory.write(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf"]}}"#, to: "nowhere.json")
        do {
            _ = try PolicyFile.load(contentsOf: path)
            Issue.record("a world reference without a world was accepted")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("only understood by 'pinproxy check'"), "\(error.reason)")
            #expect(error.reason.contains("the pin 'pinproxy pin FILE' prints"), "\(error.reason)")
        }
    }
}
