import Foundation
import Synchronization
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

@Suite struct LeafCacheTests {
    @Test func countsHitsAndMisses() throws {
        let cache = LeafCache(forger: try LeafForger(authority: sharedAuthority), capacity: 8)
        let a1 = try cache.leaf(for: LeafRequest(.dns("a.test")))
        let a2 = try cache.leaf(for: LeafRequest(.dns("a.test")))
        _ = try cache.leaf(for: LeafRequest(.dns("b.test")))
        #expect(a1.certificate === a2.certificate)
        #expect(cache.statistics == LeafCache.Statistics(hits: 1, misses: 2, renewals: 0, evictions: 0, count: 2))
    }

    @Test func evictsLeastRecentlyUsed() throws {
        let cache = LeafCache(forger: try LeafForger(authority: sharedAuthority), capacity: 2)
        let a = try cache.leaf(for: LeafRequest(.dns("a.test")))
        _ = try cache.leaf(for: LeafRequest(.dns("b.test")))
        _ = try cache.leaf(for: LeafRequest(.dns("a.test")))      // a is now most recent
        _ = try cache.leaf(for: LeafRequest(.dns("c.test")))      // evicts b
        #expect(cache.statistics.evictions == 1)
        #expect(cache.statistics.count == 2)
        let a2 = try cache.leaf(for: LeafRequest(.dns("a.test")))
        #expect(a2.certificate === a.certificate)                 // still cached
        let missesBefore = cache.statistics.misses
        _ = try cache.leaf(for: LeafRequest(.dns("b.test")))      // was evicted
        #expect(cache.statistics.misses == missesBefore + 1)
    }

    @Test func renewsWellBeforeExpiry() throws {
        let now = Mutex(Date())
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let forger = try LeafForger(authority: sharedAuthority, clock: clock)
        let cache = LeafCache(forger: forger, capacity: 4, clock: clock)
        let first = try cache.leaf(for: LeafRequest(.dns("renew.test")))
        now.withLock { $0 = $0.addingTimeInterval(10 * 86_400) }
        let same = try cache.leaf(for: LeafRequest(.dns("renew.test")))
        #expect(same.certificate === first.certificate)
        now.withLock { $0 = $0.addingTimeInterval(20 * 86_400) }   // 30 days on: past half of 47
        let renewed = try cache.leaf(for: LeafRequest(.dns("renew.test")))
        #expect(renewed.certificate !== first.certificate)
        #expect(renewed.notAfter > first.notAfter)
        #expect(cache.statistics.renewals == 1)
    }

    @Test func keysByIdentityIncludingTheImitatedCertificate() throws {
        let cache = LeafCache(forger: try LeafForger(authority: sharedAuthority), capacity: 8)
        let key = try PrivateKey.generate(.ecP256)
        let genuine = try Certificate.issue(
            .serverLeaf(names: [.dns("x.test"), .dns("alt.x.test")], notBefore: Date(), notAfter: Date().addingTimeInterval(3600)),
            subjectKey: key, signer: .selfSigned(key))
        let plain = try cache.leaf(for: LeafRequest(.dns("x.test")))
        let imitated = try cache.leaf(for: LeafRequest(names: [.dns("x.test")], imitating: genuine))
        #expect(plain.certificate !== imitated.certificate)
        #expect(imitated.certificate.subjectAlternativeNames.contains(.dns("alt.x.test")))
        #expect(cache.statistics.misses == 2)
    }

    /// The first name becomes the CN, so the same names in another order are another leaf.
    @Test func namesInAnotherOrderAreAnotherLeaf() throws {
        let cache = LeafCache(forger: try LeafForger(authority: sharedAuthority), capacity: 8)
        let ab = try cache.leaf(for: LeafRequest(names: [.dns("a.test"), .dns("b.test")]))
        let ba = try cache.leaf(for: LeafRequest(names: [.dns("b.test"), .dns("a.test")]))
        #expect(ab.certificate.subjectCommonName == "a.test")
        #expect(ba.certificate.subjectCommonName == "b.test")
        #expect(cache.statistics.misses == 2)
    }

    /// An entry is remade once the clock is past its renewal date, not at it.
    @Test func anEntryIsRemadeOnlyOnceTheClockPassesItsRenewalDate() throws {
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let forger = try LeafForger(authority: sharedAuthority, clock: clock)
        let cache = LeafCache(forger: forger, capacity: 4, clock: clock)
        let key = LeafCacheKey(names: [.dns("edge.test")], imitated: nil, variant: "edge")
        let renewAt = clock().addingTimeInterval(60)
        let make = { try forger.forge(hostNames: ["edge.test"]) }
        let first = try cache.leaf(for: key, renewal: { _ in renewAt }, make: make)
        now.withLock { $0 = renewAt }
        #expect(try cache.leaf(for: key, renewal: { _ in renewAt }, make: make).certificate === first.certificate)
        now.withLock { $0 = renewAt.addingTimeInterval(1) }
        #expect(try cache.leaf(for: key, renewal: { _ in renewAt }, make: make).certificate !== first.certificate)
        #expect(cache.statistics.renewals == 1)
    }

    @Test func removingEverythingKeepsTheCounters() throws {
        let cache = LeafCache(forger: try LeafForger(authority: sharedAuthority), capacity: 8)
        let before = try cache.leaf(for: LeafRequest(.dns("a.test")))
        _ = try cache.leaf(for: LeafRequest(.dns("a.test")))
        cache.removeAll()
        #expect(cache.statistics == LeafCache.Statistics(hits: 1, misses: 1, renewals: 0, evictions: 0, count: 0))
        let after = try cache.leaf(for: LeafRequest(.dns("a.test")))
        #expect(after.certificate !== before.certificate)
        #expect(cache.statistics == LeafCache.Statistics(hits: 1, misses: 2, renewals: 0, evictions: 0, count: 1))
    }

    @Test func concurrentUseLosesNothing() throws {
        let cache = LeafCache(forger: try LeafForger(authority: sharedAuthority), capacity: 32)
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            let name = "c\(i % 40).test"
            guard let leaf = try? cache.leaf(for: LeafRequest(.dns(name))) else {
                Issue.record("lookup failed")
                return
            }
            #expect(leaf.certificate.subjectAlternativeNames == [.dns(name)])
        }
        let s = cache.statistics
        #expect(s.hits + s.misses == 400)
        #expect(s.count <= 32)
    }
}
