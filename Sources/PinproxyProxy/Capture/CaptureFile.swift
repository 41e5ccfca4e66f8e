import Foundation
import PinproxyCertificates

/// A file descriptor opened for writing, with write loops that finish or throw.
///
/// Used only under its owner's lock, hence not `Sendable`.
final class CaptureFile {
    let path: String
    private var descriptor: Int32

    /// Creates or truncates `path` (or opens it for appending), readable by its owner only: a
    /// capture holds what the clients sent (Authorization fields, cookies, with
    /// `--capture-bodies` the bodies), as the key log of `SSLKEYLOGFILE` holds session keys.
    init(path: String, append: Bool) throws(PinproxyError) {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let fd = open(path, flags, 0o600)
        guard fd >= 0 else {
            throw PinproxyError(.io, "cannot open \(path) for writing: \(String(cString: strerror(errno)))")
        }
        // An existing file keeps its mode on open: a capture written over a regular file makes it
        // its owner's too (never a device or a pipe: `--events /dev/stdout` leaves the terminal be).
        var status = stat()
        if fstat(fd, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG { _ = fchmod(fd, 0o600) }
        descriptor = fd
    }

    /// Writes all of `bytes` at the current position (or the end, when appending).
    func write(_ bytes: [UInt8]) throws(PinproxyError) {
        let failure: PinproxyError? = bytes.withUnsafeBytes { buffer in
            do throws(PinproxyError) { try write(buffer) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int) throws(PinproxyError) {
        let failure: PinproxyError? = bytes.withUnsafeBytes { buffer in
            do throws(PinproxyError) { try write(buffer, at: offset) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// Writes all of `buffer` at the current position (or the end, when appending).
    func write(_ buffer: UnsafeRawBufferPointer) throws(PinproxyError) {
        try loop(buffer) { pointer, count, done in Foundation.write(descriptor, pointer + done, count - done) }
    }

    /// Writes all of `buffer` at `offset`.
    func write(_ buffer: UnsafeRawBufferPointer, at offset: Int) throws(PinproxyError) {
        try loop(buffer) { pointer, count, done in pwrite(descriptor, pointer + done, count - done, off_t(offset + done)) }
    }

    private func loop(
        _ buffer: UnsafeRawBufferPointer, _ call: (UnsafeRawPointer, Int, Int) -> Int
    ) throws(PinproxyError) {
        guard let base = buffer.baseAddress else { return }
        var done = 0
        while done < buffer.count {
            let result = call(base, buffer.count, done)
            if result < 0 {
                if errno == EINTR { continue }
                throw PinproxyError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            done += result
        }
    }

    /// The file's size in bytes, or nil when it cannot be read.
    func size() -> Int? {
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else { return nil }
        return Int(status.st_size)
    }

    /// Cuts the file to `length` bytes, dropping what a failed write left behind.
    func truncate(to length: Int) {
        if descriptor >= 0 { _ = ftruncate(descriptor, off_t(length)) }
    }

    func sync() { if descriptor >= 0 { _ = fsync(descriptor) } }

    /// Closes the descriptor; later writes fail with EBADF.
    func close() {
        if descriptor >= 0 { _ = Foundation.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}
