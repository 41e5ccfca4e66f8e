import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyPinning

/// `pinproxy verify --no-domain`: AFNetworking's `evaluateServerTrust:forDomain:nil` from the command line.
@Suite("pinproxy verify --no-domain", .serialized)
struct NoDomainCLITests {
    let pki = PKI.shared

    private func verify(_ dir: TemporaryDirectory, _ policy: String, _ chain: String, _ extra: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let executable = try #require(pinproxyExecutable, "build the pinproxy executable first (make test builds it)")
        let path = { (dir.path as NSString).appendingPathComponent($0) }
        return try run(executable, ["verify", "--policy", path(policy), "--chain", path(chain), "--trust-store", path("store.pem")] + extra)
    }

    @Test func allowInvalidCertificatesWithoutADomainSkipsTheGuard() throws {
        let dir = try TemporaryDirectory()
        try dir.write("store.pem", pki.root.pemEncoded)
        try dir.write("self-signed.pem", pki.selfSigned.pemEncoded)
        try dir.write("allow.json", #"{"family":"afnetworking","allowInvalidCertificates":true}"#)
        let domainless = try verify(dir, "allow.json", "self-signed.pem", ["--no-domain"])
        #expect(domainless.status == 0, "\(domainless)")
        #expect(domainless.stdout.hasPrefix("ACCEPT — afnetworking (4.x) for (no domain)"), "\(domainless.stdout)")
        #expect(domainless.stdout.contains("skipped: no domain was given"))
        let named = try verify(dir, "allow.json", "self-signed.pem", ["--host", "api.example.com"])
        #expect(named.status == 1, "\(named)")
        #expect(named.stdout.contains("you MUST use pinning"))
    }

    @Test func theTrustIsEvaluatedWithoutAHostName() throws {
        let dir = try TemporaryDirectory()
        try dir.write("store.pem", pki.root.pemEncoded)
        try dir.write("other.pem", [pki.otherLeaf, pki.intermediate].map(\.pemEncoded).joined())
        try dir.write("none.json", #"{"family":"afnetworking"}"#)
        let result = try verify(dir, "none.json", "other.pem", ["--no-domain", "--json"])
        #expect(result.status == 0, "\(result)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["host"] as? String == "(no domain)")
        #expect((object["steps"] as? [[String: Any]])?.contains { ($0["action"] as? String)?.contains("SSL policy without a host name") == true } == true)
    }

    @Test func otherFamiliesAndBothOptionsAreUsageErrors() throws {
        let dir = try TemporaryDirectory()
        try dir.write("store.pem", pki.root.pemEncoded)
        try dir.write("genuine.pem", pki.leaf.pemEncoded)
        try dir.write("okhttp.json", #"{"family":"okhttp","certificatePinner":{"api.example.com":["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}"#)
        let okhttp = try verify(dir, "okhttp.json", "genuine.pem", ["--no-domain"])
        #expect(okhttp.status == 2)
        #expect(okhttp.stderr.contains("--no-domain: the okhttp family always evaluates for a host"), "\(okhttp.stderr)")
        let both = try verify(dir, "okhttp.json", "genuine.pem", ["--no-domain", "--host", "api.example.com"])
        #expect(both.status == 2)
        #expect(both.stderr.contains("give --host or --no-domain, not both"), "\(both.stderr)")
    }
}
