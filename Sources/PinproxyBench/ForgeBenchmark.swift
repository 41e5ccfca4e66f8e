import Foundation
import PinproxyCertificates

/// Measures leaf forging against the raw signature it cannot avoid.
public enum ForgeBenchmark {
    public struct Result: Sendable {
        public var count: Int
        public var reusedKeyPerSecond: Double
        public var freshKeyPerSecond: Double
        public var rawSignPerSecond: Double
        public var cacheHitNanoseconds: Double
        /// Threads used for the all-core figures (one per active core).
        public var threads: Int
        public var parallelReusedKeyPerSecond: Double
        public var parallelRawSignPerSecond: Double
        public var parallelOverRawSign: Double { parallelReusedKeyPerSecond / parallelRawSignPerSecond }
        /// Reused-key forging rate over the raw P-256 signing rate.
        public var reusedOverRawSign: Double { reusedKeyPerSecond / rawSignPerSecond }
        public var freshOverRawSign: Double { freshKeyPerSecond / rawSignPerSecond }
    }

    /// Runs every measurement in one process, one after the other.
    public static func run(count: Int, authority: CertificateAuthority? = nil) throws -> Result {
        let ca = try authority ?? CertificateAuthority.create()
        let reused = try LeafForger(authority: ca, keyStrategy: .reused)
        let fresh = try LeafForger(authority: ca, keyStrategy: .freshPerLeaf)
        let names = try (0..<count).map { try HostName(validating: "host\($0).bench.pinproxy.test") }

        // Warm up both paths (template extensions, lazy SKI, allocator).
        for i in 0..<min(200, count) { _ = try reused.forge(LeafRequest(names[i])) }
        for i in 0..<min(50, count) { _ = try fresh.forge(LeafRequest(names[i])) }

        let reusedRate = try rate(count) { i in _ = try reused.forge(LeafRequest(names[i])) }
        let freshCount = max(1, count / 4)
        let freshRate = try rate(freshCount) { i in _ = try fresh.forge(LeafRequest(names[i])) }

        let signKey = ca.privateKey.isEC ? ca.privateKey.fastSigningCopy() : try PrivateKey.generateFastP256()
        let digest = OpenSSL.sha256(Array("pinproxy".utf8))
        var signature = [UInt8](repeating: 0, count: 80)
        let signRate = try rate(count) { _ in
            guard signKey.signDigest(digest, into: &signature) != nil else {
                throw OpenSSL.error("ECDSA_sign failed")
            }
        }

        let cache = LeafCache(forger: reused, capacity: 16)
        let hot = LeafRequest(names[0])
        _ = try cache.leaf(for: hot)
        let hits = max(count * 20, 10_000)
        let hitRate = try rate(hits) { _ in _ = try cache.leaf(for: hot) }

        // All cores at once, as the proxy forges for many connections: the same
        // forger shared by every thread, against raw signatures on every thread.
        let threads = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let parallelForge = try parallelRate(count, threads: threads) { i in _ = try reused.forge(LeafRequest(names[i])) }
        let parallelSign = try parallelRate(count, threads: threads) { _ in
            var local = [UInt8](repeating: 0, count: 80)
            guard signKey.signDigest(digest, into: &local) != nil else {
                throw OpenSSL.error("ECDSA_sign failed")
            }
        }

        return Result(count: count, reusedKeyPerSecond: reusedRate, freshKeyPerSecond: freshRate,
                      rawSignPerSecond: signRate, cacheHitNanoseconds: 1e9 / hitRate, threads: threads,
                      parallelReusedKeyPerSecond: parallelForge, parallelRawSignPerSecond: parallelSign)
    }

    private static func parallelRate(_ n: Int, threads: Int, _ body: @Sendable (Int) throws -> Void) throws -> Double {
        let failures = Locked<[any Error]>([])
        let start = DispatchTime.now().uptimeNanoseconds
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            var i = t
            while i < n {
                do { try body(i) } catch { failures.withLock { $0.append(error) }; return }
                i += threads
            }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        if let first = failures.withLock({ $0.first }) { throw first }
        return Double(n) / max(elapsed, 1e-9)
    }

    private static func rate(_ n: Int, _ body: (Int) throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<n { try body(i) }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Double(n) / max(elapsed, 1e-9)
    }
}
