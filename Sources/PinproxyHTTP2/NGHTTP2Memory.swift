internal import CNGHTTP2
import Glibc

/// The allocator of one nghttp2 session (`nghttp2_mem`): the C library's own,
/// except for the session's outbound frame buffer, which gets a mapping of its
/// own so that an idle session can give its pages back
/// (``releaseIdlePages()``) and a closed one leaves nothing in the heap.
///
/// Every nghttp2 session allocates, when it is created, one outbound frame
/// buffer of `NGHTTP2_FRAMEBUF_CHUNKLEN` bytes (a frame header, a pad byte and
/// a 16 KiB payload) and keeps it for its whole life, though it only holds a
/// frame between its serialisation and `nghttp2_session_mem_send`'s return:
/// once ``HTTP2Session/takeOutput(limit:)`` has copied everything out, its
/// content is dead. An idle intercepted HTTP/2 connection has two sessions
/// (client leg and upstream leg), so these buffers were about 32 KiB of the
/// 84 KiB such a connection held (docs/proxy.md, "Idle connections").
/// `MADV_DONTNEED` on those pages hands them to the system; the next frame
/// faults fresh zeroed pages in.
///
/// The buffer is mapped (`mmap`), not taken from the heap: page-aligned heap
/// memory (`posix_memalign`) left a free chunk of up to a page before each
/// buffer, which the connection's small allocations then shared with its
/// transients, and it counted 20 KiB per session in the allocator's figures
/// while holding nothing. A mapping costs two system calls per session (an
/// HTTP/2 connection, not a request), and `munmap` returns all of it.
///
/// The buffer is told apart by its size alone, exactly the chunk length;
/// nothing else nghttp2 allocates has that size: inbound frames are at most
/// 16,384 bytes and header tables grow in powers of two. Should a later
/// nghttp2 change the constant, the buffer is simply no longer recognised and
/// nothing is released — never the wrong memory.
final class NGHTTP2Memory {
    /// `NGHTTP2_FRAMEBUF_CHUNKLEN`: `NGHTTP2_FRAME_HDLEN` + 1 + `NGHTTP2_MAX_PAYLOADLEN`.
    static let frameBufferLength = 9 + 1 + 16_384
    private static let pageSize = max(4096, sysconf(Int32(_SC_PAGESIZE)))
    /// The frame buffer's mapping: whole pages.
    static let frameBufferAllocation = (frameBufferLength + pageSize - 1) / pageSize * pageSize

    // nghttp2 allocates only inside calls on its session, on the session's
    // loop: the two properties below skip the run-time exclusivity checks
    // (about 17 per request, on every allocation and free).
    /// Frame buffers currently allocated (one; more while a header block
    /// longer than 16 KiB is being sent).
    @exclusivity(unchecked) private var frameBuffers: [UnsafeMutableRawPointer] = []
    /// Whether the frame buffers' pages were given back and not written since
    /// (as far as this allocator can tell: a release after a release is skipped
    /// until ``noteOutput()``).
    @exclusivity(unchecked) private var pagesReleased = false

    /// The `nghttp2_mem` to create a session with; valid while this object lives.
    var mem: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: Unmanaged.passUnretained(self).toOpaque(),
            malloc: { size, user in NGHTTP2Memory.with(user) { $0.allocate(size) } },
            free: { pointer, user in NGHTTP2Memory.with(user) { $0.free(pointer) } },
            calloc: { count, size, _ in Glibc.calloc(count, size) },
            realloc: { pointer, size, user in NGHTTP2Memory.with(user) { $0.reallocate(pointer, size) } })
    }

    /// Hands the frame buffers' pages back to the system. Only while nothing
    /// waits in them: the session has no output to give.
    func releaseIdlePages() -> Bool {
        guard !pagesReleased, !frameBuffers.isEmpty else { return false }
        for buffer in frameBuffers { _ = madvise(buffer, Self.frameBufferAllocation, MADV_DONTNEED) }
        pagesReleased = true
        return true
    }

    /// The session serialised frames: the pages are in use again.
    func noteOutput() { pagesReleased = false }

    /// Frame buffers allocated now (for tests).
    var frameBufferCount: Int { frameBuffers.count }
    /// Where they are mapped (for tests).
    var frameBufferAddresses: [UnsafeMutableRawPointer] { frameBuffers }

    /// Calls `body` with the allocator `user` points to, lent rather than
    /// retained: it outlives its session, and nghttp2 allocates only inside
    /// the session's calls. (A retain and a release on each of the ~17
    /// allocations and frees per relayed HTTP/2 request were ~70 atomic
    /// operations.)
    @inline(__always)
    private static func with<R>(_ user: UnsafeMutableRawPointer?, _ body: (NGHTTP2Memory) -> R) -> R {
        Unmanaged<NGHTTP2Memory>.fromOpaque(user!)._withUnsafeGuaranteedRef(body)
    }

    private func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        guard size == Self.frameBufferLength else { return Glibc.malloc(size) }
        guard let buffer = mmap(nil, Self.frameBufferAllocation, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              buffer != MAP_FAILED else { return nil }
        frameBuffers.append(buffer)
        return buffer
    }

    private func free(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        guard let index = frameBuffers.firstIndex(of: pointer) else { return Glibc.free(pointer) }
        frameBuffers.remove(at: index)
        munmap(pointer, Self.frameBufferAllocation)
    }

    private func reallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let pointer else { return allocate(size) }
        guard frameBuffers.contains(pointer) else { return Glibc.realloc(pointer, size) }
        guard let moved = allocate(size) else { return nil }
        moved.copyMemory(from: pointer, byteCount: min(size, Self.frameBufferLength))
        free(pointer)
        return moved
    }
}
