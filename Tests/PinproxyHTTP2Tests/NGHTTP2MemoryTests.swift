import CPinproxyIO
import Glibc
@testable import PinproxyHTTP2
import Testing

/// The session allocator's free list (`pp_h2mem_*`): freed small blocks are
/// reused by size class, what it keeps is bounded, and it is emptied when the
/// session falls idle.
@Suite("HTTP/2 session allocator: the free list")
struct NGHTTP2MemoryTests {
    /// A fresh allocator state, emptied and freed after `body`.
    func withMemory(_ body: (UnsafeMutablePointer<pp_h2mem>, UnsafeMutableRawPointer) throws -> Void) rethrows {
        let state = UnsafeMutablePointer<pp_h2mem>.allocate(capacity: 1)
        state.initialize(to: pp_h2mem())
        defer {
            pp_h2mem_destroy(state)
            state.deallocate()
        }
        try body(state, UnsafeMutableRawPointer(state))
    }

    @Test("a freed block comes back for the next allocation of its size class, not for another class")
    func reuseByClass() throws {
        try withMemory { state, user in
            let first = try #require(pp_h2mem_malloc(100, user))
            pp_h2mem_free(first, user)
            #expect(pp_h2mem_pooled(state) > 0)
            let other = try #require(pp_h2mem_malloc(300, user))
            #expect(other != first, "300 bytes are another class than 100")
            let again = try #require(pp_h2mem_malloc(97, user))
            #expect(again == first, "97 bytes share 100's class (multiples of 32)")
            #expect(pp_h2mem_pooled(state) == 0)
            pp_h2mem_free(other, user)
            pp_h2mem_free(again, user)
        }
    }

    @Test("calloc zeroes a reused block that held bytes")
    func callocZeroesReusedBlocks() throws {
        try withMemory { _, user in
            let dirty = try #require(pp_h2mem_malloc(64, user))
            memset(dirty, 0xAB, 64)
            pp_h2mem_free(dirty, user)
            let zeroed = try #require(pp_h2mem_calloc(8, 8, user))
            #expect(zeroed == dirty)
            let bytes = UnsafeRawBufferPointer(start: zeroed, count: 64)
            #expect(bytes.allSatisfy { $0 == 0 })
            pp_h2mem_free(zeroed, user)
            #expect(pp_h2mem_calloc(Int.max, 4, user) == nil, "an overflowing count is refused")
        }
    }

    @Test("realloc keeps the contents across classes and onto the heap, and stays put within a class")
    func reallocKeepsContents() throws {
        try withMemory { _, user in
            let small = try #require(pp_h2mem_malloc(40, user))
            for i in 0..<40 { small.storeBytes(of: UInt8(i), toByteOffset: i, as: UInt8.self) }
            let same = try #require(pp_h2mem_realloc(small, 60, user))
            #expect(same == small, "60 bytes still fit 40's class of 64")
            let grown = try #require(pp_h2mem_realloc(same, 700, user))
            for i in 60..<700 { grown.storeBytes(of: UInt8(i & 0xFF), toByteOffset: i, as: UInt8.self) }
            let large = try #require(pp_h2mem_realloc(grown, 5000, user))
            let larger = try #require(pp_h2mem_realloc(large, 9000, user))
            let bytes = UnsafeRawBufferPointer(start: larger, count: 700)
            #expect((0..<40).allSatisfy { bytes[$0] == UInt8($0) })
            #expect((60..<700).allSatisfy { bytes[$0] == UInt8($0 & 0xFF) })
            let shrunk = try #require(pp_h2mem_realloc(larger, 10, user))
            #expect((0..<10).allSatisfy { UnsafeRawBufferPointer(start: shrunk, count: 10)[$0] == UInt8($0) })
            pp_h2mem_free(shrunk, user)
            let fresh = try #require(pp_h2mem_realloc(nil, 16, user))
            pp_h2mem_free(fresh, user)
        }
    }

    @Test("the free list keeps at most its bound; blocks past it and large blocks go back to the heap")
    func bounded() throws {
        try withMemory { state, user in
            let blocks = try (0..<200).map { _ in try #require(pp_h2mem_malloc(1000, user)) }
            let large = try #require(pp_h2mem_malloc(4096, user))
            pp_h2mem_free(large, user)
            #expect(pp_h2mem_pooled(state) == 0, "a block above the classes is not kept")
            for block in blocks { pp_h2mem_free(block, user) }
            let pooled = pp_h2mem_pooled(state)
            #expect(pooled > Int(PP_H2MEM_POOL_BYTES) - 1100 && pooled <= Int(PP_H2MEM_POOL_BYTES))
        }
    }

    @Test("falling idle empties the free list; a session goes on afterwards")
    func idleEmptiesTheList() throws {
        let client = try HTTP2Session(role: .client)
        let server = try HTTP2Session(role: .server)
        #expect(try HTTP2IdleMemoryTests.exchange(client, server, path: "/a").count == 20_000)
        #expect(client.memory.pooledBytes > 0 && server.memory.pooledBytes > 0, "a finished stream's blocks wait for the next")
        #expect(client.releaseIdleMemory() && server.releaseIdleMemory())
        #expect(client.memory.pooledBytes == 0 && server.memory.pooledBytes == 0)
        #expect(try HTTP2IdleMemoryTests.exchange(client, server, path: "/b") == Array(repeating: 0x61, count: 20_000))
        #expect(client.memory.pooledBytes > 0)
    }
}
