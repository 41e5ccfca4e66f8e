internal import COpenSSL
import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyTLS

/// The upstream session cache's rules, on sessions made in memory: TLS 1.3
/// tickets are offered once, TLS 1.2 sessions again; expired sessions are
/// dropped; the least recently stored upstream goes first.
@Suite("Upstream session cache")
struct SessionCacheTests {
    private func session(_ version: Int32, timeout: Int = 300, age: Int = 0) -> CachedSession {
        let s = SSL_SESSION_new()!
        _ = SSL_SESSION_set_protocol_version(s, version)
        _ = SSL_SESSION_set_time(s, time(nil) - age)
        _ = SSL_SESSION_set_timeout(s, timeout)
        return CachedSession(takingOwnership: s, peerChain: [], verifiedChain: [])
    }

    @Test func aTLS13TicketIsOfferedOnceATLS12SessionAgain() {
        let cache = TLSSessionCache()
        let ticket = session(TLS1_3_VERSION)
        cache.store(ticket, for: "a")
        #expect(cache.take("a") === ticket)
        #expect(cache.take("a") == nil)
        let resumable = session(TLS1_2_VERSION)
        cache.store(resumable, for: "b")
        #expect(cache.take("b") === resumable)
        #expect(cache.take("b") === resumable)
        #expect(cache.take("c") == nil)
    }

    @Test func ticketsAreKeptPerUpstreamUpToTheLimitNewestFirst() {
        let cache = TLSSessionCache(capacity: 10, perUpstream: 2)
        let tickets = (0..<3).map { _ in session(TLS1_3_VERSION) }
        for t in tickets { cache.store(t, for: "a") }
        #expect(cache.count == 2)
        #expect(cache.take("a") === tickets[2])
        #expect(cache.take("a") === tickets[1])
        #expect(cache.take("a") == nil)
    }

    @Test func aTLS12SessionReplacesTheUpstreamsOthers() {
        let cache = TLSSessionCache()
        cache.store(session(TLS1_3_VERSION), for: "a")
        cache.store(session(TLS1_2_VERSION), for: "a")
        let newest = session(TLS1_2_VERSION)
        cache.store(newest, for: "a")
        #expect(cache.count == 1)
        #expect(cache.take("a") === newest)
        #expect(cache.count == 1)
    }

    @Test func expiredSessionsAreNotOffered() {
        let cache = TLSSessionCache()
        cache.store(session(TLS1_2_VERSION, timeout: 60, age: 120), for: "a")
        #expect(cache.take("a") == nil)
        #expect(cache.count == 0)
        // Its last second is past: a session whose time and timeout end now is not offered.
        cache.store(session(TLS1_2_VERSION, timeout: 60, age: 60), for: "b")
        #expect(cache.take("b") == nil)
        cache.store(session(TLS1_2_VERSION, timeout: 60, age: 50), for: "c")
        #expect(cache.take("c") != nil)
    }

    @Test func theLeastRecentlyStoredUpstreamIsForgottenFirstAndAFailureForgetsAll() {
        let cache = TLSSessionCache(capacity: 2)
        cache.store(session(TLS1_2_VERSION), for: "a")
        cache.store(session(TLS1_2_VERSION), for: "b")
        cache.store(session(TLS1_2_VERSION), for: "a")
        cache.store(session(TLS1_2_VERSION), for: "c")
        #expect(cache.take("b") == nil)
        #expect(cache.take("a") != nil)
        cache.forget("c")
        #expect(cache.take("c") == nil)
    }

    @Test func theKeyNamesAddressPortAndServerName() throws {
        let name = try HostName(validating: "api.example.test")
        let other = try HostName(validating: "other.example.test")
        let key = TLSSessionCache.key(address: "127.0.0.1", port: 443, serverName: name)
        #expect(key != TLSSessionCache.key(address: "127.0.0.2", port: 443, serverName: name))
        #expect(key != TLSSessionCache.key(address: "127.0.0.1", port: 8443, serverName: name))
        #expect(key != TLSSessionCache.key(address: "127.0.0.1", port: 443, serverName: other))
    }
}
