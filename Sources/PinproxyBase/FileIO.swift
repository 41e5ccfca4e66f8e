import Foundation

/// File reading and writing with errors that name the path.
public enum FileIO {
    public static func read(_ path: String) throws -> [UInt8] {
        do {
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            let why = (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
            throw PinproxyError(.io, "cannot read \(path): \(FileManager.default.fileExists(atPath: path) ? why : "no such file")")
        }
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
