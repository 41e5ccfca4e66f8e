import Foundation

/// File reading and writing with errors that name the path.
public enum FileIO {
    /// The most `read` takes by default: every file pinproxy reads (certificates, keys,
    /// policies) is far smaller, and a device such as /dev/zero never ends.
    public static let defaultReadLimit = 64 << 20

    /// The whole file at `path`. Errors say what happened, with the path: `cannot read
    /// PATH: no such file`, `it is a directory`, `permission denied`, `it is larger than
    /// 64 MiB`, ... Pipes and devices (`<(...)`, /dev/stdin) are read to their end.
    public static func read(_ path: String) throws -> [UInt8] {
        try read(path, limit: defaultReadLimit)
    }

    /// The whole file at `path`, refused when it holds more than `limit` bytes.
    public static func read(_ path: String, limit: Int) throws -> [UInt8] {
        func failure(_ reason: String) -> PinproxyError { PinproxyError(.io, "cannot read \(path): \(reason)") }
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw failure(reason(openErrno: errno, path: path)) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw failure(reason(errno: errno)) }
        let kind = status.st_mode & S_IFMT
        if kind == S_IFDIR { throw failure("it is a directory") }
        if kind == S_IFREG && Int(status.st_size) > limit { throw failure("it is larger than \(sizeText(limit))") }
        var bytes: [UInt8] = []
        if kind == S_IFREG { bytes.reserveCapacity(Int(status.st_size)) }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure(reason(errno: errno))
            }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else { throw failure("it is larger than \(sizeText(limit))") }
            bytes.append(contentsOf: chunk[..<n])
        }
    }

    /// Why `open` failed, in plain words. A missing directory on the way and a socket get their
    /// own words; anything else is the system's text.
    static func reason(openErrno code: Int32, path: String) -> String {
        if code == ENOENT, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            let parent = String(path[..<slash])
            if !FileManager.default.fileExists(atPath: parent) {
                return "no such file (the directory \(parent) does not exist)"
            }
        }
        if code == ENXIO {
            var status = stat()
            if stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK { return "it is a socket, not a file" }
        }
        return reason(errno: code)
    }

    /// `errno` in plain words: `no such file`, `permission denied`, `it is a directory`, ...
    static func reason(errno code: Int32) -> String {
        switch code {
        case ENOENT: return "no such file"
        case EACCES, EPERM: return "permission denied"
        case EISDIR: return "it is a directory"
        case ENOTDIR: return "a part of the path is not a directory"
        case ELOOP: return "too many symbolic links (a loop?)"
        case ENAMETOOLONG: return "the path is too long"
        case EMFILE, ENFILE: return "too many open files"
        default: return String(cString: strerror(code))
        }
    }

    /// `64 MiB`, `512 bytes`.
    static func sizeText(_ bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// Writes atomically with the given permission bits (the file never exists with wider ones).
    public static func write(_ bytes: [UInt8], to path: String, mode: UInt32) throws {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw PinproxyError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
        var offset = 0
        var failure: Int32 = 0
        bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; failure = errno; return }
                offset += n
            }
        }
        if failure == 0, fchmod(fd, mode_t(mode)) != 0 { failure = errno }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw PinproxyError(.io, "cannot write \(path): \(String(cString: strerror(failure)))")
        }
    }
}
