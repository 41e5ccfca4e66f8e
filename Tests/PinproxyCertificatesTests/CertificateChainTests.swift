import Foundation
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

@Suite struct CertificateChainTests {
    @Test func keepsOrderThroughPEMAndStacks() throws {
        let forged = try LeafForger(authority: sharedAuthority).forge(hostNames: ["chain.test"])
        // Deliberately out of order, with a duplicate: a chain keeps what it was given.
        let chain = CertificateChain([forged.chain[1], forged.chain[0], forged.chain[1]])
        let parsed = try CertificateChain(pemEncoded: chain.pemEncoded)
        #expect(parsed == chain)
        #expect(parsed.count == 3)
        #expect(parsed.leaf == sharedAuthority.certificate)

        let stack = try chain.makeStack()
        defer { CertificateChain.freeStack(stack) }
        #expect(CertificateChain(borrowingStack: stack) == chain)
    }

    @Test func loadsFilesAndDescribesEachCertificate() throws {
        let forged = try LeafForger(authority: sharedAuthority).forge(hostNames: ["describe.test"])
        let dir = try TemporaryDirectory()
        let path = try dir.write(CertificateChain(forged.chain).pemEncoded, to: "chain.pem")
        let loaded = try CertificateChain(contentsOf: path)
        #expect(loaded.count == 2)
        let lines = loaded.description.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("#0 CN=describe.test"))
        #expect(lines[1].contains(sharedAuthority.certificate.spkiPin.okhttp))
        // The openssl CLI reads the same two certificates.
        let count = try run(["sh", "-c", "grep -c 'BEGIN CERTIFICATE' '\(path)'"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(count == "2")
    }

    /// A damaged block is named rather than the certificates after it dropped without a word.
    @Test func aDamagedBlockIsNamed() throws {
        let forged = try LeafForger(authority: sharedAuthority).forge(hostNames: ["damaged.test"])
        let good = forged.chain[0].pemEncoded
        var lines = forged.chain[1].pemEncoded.split(separator: "\n").map(String.init)
        lines[2] = String(repeating: "!", count: lines[2].count)
        let dir = try TemporaryDirectory()
        let path = try dir.write(good + lines.joined(separator: "\n") + "\n", to: "damaged.pem")
        do {
            _ = try CertificateChain(contentsOf: path)
            Issue.record("loaded a file with a damaged block")
        } catch let error as PinproxyError {
            #expect(error.code == .decoding)
            #expect(error.reason.contains("block 2 of 2 is damaged"), "\(error.reason)")
        }
    }

    @Test func refusesFilesWithoutCertificates() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("not a certificate\n", to: "junk.pem")
        #expect(throws: PinproxyError(.decoding, "")) { try CertificateChain(contentsOf: path) }
    }
}
