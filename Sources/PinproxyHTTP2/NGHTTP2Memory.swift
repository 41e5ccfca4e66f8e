internal import CNGHTTP2
internal import CPinproxyIO
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
///
/// Small blocks (up to 1 KiB: streams, outbound items, decoded field texts,
/// copied field lists) go round a free list of the session's own by size
/// class once freed, at most 32 KiB of them: a relayed request's ~17
/// allocations reuse the last request's instead of going to the C library,
/// whose thread cache (seven blocks a size) a burst of streams overflows. The
/// list is emptied when the session falls idle (``releaseIdlePages()``) and
/// when it goes.
///
/// The allocation functions themselves are C (`pp_h2mem_*` in CPinproxyIO):
/// the same in Swift closures (thunk, closure, the object lent) cost ~1,300
/// instructions a request.
final class NGHTTP2Memory {
    /// The frame buffer's mapping: whole pages.
    static let frameBufferAllocation = pp_h2mem_frame_allocation()

    /// The frame buffers allocated now and whether their pages were handed
    /// back; touched by nghttp2 only inside calls on its session, on the
    /// session's loop.
    private let state: UnsafeMutablePointer<pp_h2mem>

    init() {
        state = .allocate(capacity: 1)
        state.initialize(to: pp_h2mem())
    }

    deinit {
        // The session, deleted first, gave every frame buffer and block back.
        pp_h2mem_destroy(state)
        state.deallocate()
    }

    /// The `nghttp2_mem` to create a session with; valid while this object lives.
    var mem: nghttp2_mem {
        nghttp2_mem(mem_user_data: UnsafeMutableRawPointer(state), malloc: pp_h2mem_malloc, free: pp_h2mem_free,
                    calloc: pp_h2mem_calloc, realloc: pp_h2mem_realloc)
    }

    /// Frees the blocks kept for reuse and hands the frame buffers' pages
    /// back to the system. Only while nothing waits in them: the session has
    /// no output to give.
    func releaseIdlePages() -> Bool { pp_h2mem_release_idle(state) != 0 }

    /// The session serialised frames: the pages are in use again.
    func noteOutput() { pp_h2mem_note_output(state) }

    /// Bytes of freed blocks kept for reuse (for tests).
    var pooledBytes: Int { Int(pp_h2mem_pooled(state)) }

    /// Frame buffers allocated now (for tests).
    var frameBufferCount: Int { Int(state.pointee.count) }
    /// Where they are mapped (for tests).
    var frameBufferAddresses: [UnsafeMutableRawPointer] {
        (0..<state.pointee.count).compactMap { pp_h2mem_frame(state, $0) }
    }
}
