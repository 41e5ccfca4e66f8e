import CPinproxyShims
import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// A certificate's policy OIDs are read whole, however many: the JDK's policy processing
/// (``JDKCertificatePolicies``) must see the policy a chain continues even when it is the
/// last of a list longer than the first buffer.
@Suite struct CertificatePolicyListTests {
    static let oids = (1...300).map { "1.3.6.1.4.1.55555.1.\($0)" }

    static func leafAndCA(leafPolicies: [String] = oids) throws -> (leaf: Certificate, ca: Certificate, root: Certificate) {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Policy List Root", digest: "sha256")
        let (ca, caKey) = try OpenSSLIssued.leafWithKey(
            subject: "/CN=Policy List CA",
            extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
                         "policyConstraints=critical,requireExplicitPolicy:0", "certificatePolicies=\(oids.last!)"],
            issuer: root, issuerKey: rootKey)
        let leaf = try OpenSSLIssued.leaf(
            subject: "/CN=\(RealLibraryFindingTests.hostText)",
            extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(RealLibraryFindingTests.hostText)"])
                + ["certificatePolicies=\(leafPolicies.joined(separator: ","))"],
            issuer: ca, issuerKey: caKey)
        return (leaf, ca, root)
    }

    @Test func everyPolicyOfALongListIsRead() throws {
        let (leaf, _, _) = try Self.leafAndCA()
        #expect(Self.oids.joined(separator: "\n").utf8.count > 4096)
        #expect(JDKCertificatePolicies.policies(of: leaf) == Self.oids)
        // From a buffer too small for even the first line, the same.
        #expect(JDKCertificatePolicies.policies(of: leaf, startingCapacity: 8) == Self.oids)
    }

    /// The CA requires an explicit policy and names only the last of the leaf's 300: the JDK
    /// finds it and accepts; without it in the leaf's list, the chain is refused.
    @Test func theJDKFindsTheLastOfThreeHundredPolicies() throws {
        let (leaf, ca, root) = try Self.leafAndCA()
        let accepted = try RealLibraryFindingTests.okHttp([leaf, ca], pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .jvm)
        #expect(accepted.connectionProceeds, "\(accepted.explained)")
        let (without, otherCA, otherRoot) = try Self.leafAndCA(leafPolicies: Array(Self.oids.dropLast()))
        let refused = try RealLibraryFindingTests.okHttp([without, otherCA], pins: [without.spkiPin.okhttp], anchors: [otherRoot], platform: .jvm)
        #expect(!refused.connectionProceeds && refused.explained.contains("no valid certificate policy"), "\(refused.explained)")
    }

    /// The shim writes whole lines only, each with its NUL inside the given length: a line that
    /// would fill the buffer to its last byte is left out, and nothing is written past it.
    @Test func theShimWritesNothingPastItsBuffer() throws {
        let (leaf, _, _) = try Self.leafAndCA()
        let first = Self.oids[0] + "\n"
        for length in [first.utf8.count, first.utf8.count + 1] {
            var buffer = [CChar](repeating: 0x55, count: length + 1)
            let count = pp_x509_policy_oids(leaf.pointer, &buffer, Int32(length))
            #expect(count == 300)
            #expect(buffer[length] == 0x55, "the byte after the buffer, length \(length)")
            let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            #expect(text == (length > first.utf8.count ? first : ""), "length \(length)")
        }
    }
}
