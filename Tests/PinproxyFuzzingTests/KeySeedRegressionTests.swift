import Foundation
import PinproxyFuzzing
import PinproxyTestSupport
import Testing

/// Inputs the fuzzers found that hold a private key, so they cannot be kept in
/// Fuzz/regressions: each is made again here at test time, as `Fuzz/make-seeds.py --keys`
/// makes it for the fuzzer, and run through its target.
@Suite("Fuzz inputs with keys, made at test time")
struct KeySeedRegressionTests {
    @Test("a CA whose PKCS#8 key had its scalar altered is not imported, so no leaf is forged with it")
    func alteredScalar() throws {
        let directory = try TemporaryDirectory()
        let input = try AlteredKeyCA(in: directory).combinedPEM
        let target = try #require(FuzzTarget.named("certificates"))
        #expect(throws: Never.self) { try target.run(Array(input.utf8)) }
    }
}
