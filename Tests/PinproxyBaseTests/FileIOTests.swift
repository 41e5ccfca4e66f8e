import Foundation
import PinproxyTestSupport
import Testing
@testable import PinproxyBase

/// `FileIO.read` says what went wrong in plain words, with the path.
@Suite struct FileIOTests {
    private func reason(_ path: String, limit: Int = FileIO.defaultReadLimit) -> String? {
        do {
            _ = try FileIO.read(path, limit: limit)
            return nil
        } catch let error as PinproxyError {
            return error.reason
        } catch {
            return "\(error)"
        }
    }

    @Test func aFileIsReadWhole() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write(String(repeating: "x", count: 200_000), to: "big.txt")
        #expect(try FileIO.read(path).count == 200_000)
        #expect(try FileIO.read("/dev/null").isEmpty)
    }

    @Test func eachFailureIsNamed() throws {
        let dir = try TemporaryDirectory()
        #expect(reason(dir.path) == "cannot read \(dir.path): it is a directory")
        #expect(reason(dir.file("missing.pem")) == "cannot read \(dir.file("missing.pem")): no such file")
        #expect(reason(dir.file("nowhere/missing.pem"))
                == "cannot read \(dir.file("nowhere/missing.pem")): no such file (the directory \(dir.file("nowhere")) does not exist)")
        // A bare relative name has no directory to name.
        #expect(reason("x") == "cannot read x: no such file")
        #expect(reason("/no-such-file-\(getpid())") == "cannot read /no-such-file-\(getpid()): no such file")
        let file = try dir.write("abc", to: "file.pem")
        #expect(reason(file + "/inside.pem") == "cannot read \(file)/inside.pem: a part of the path is not a directory")
        let big = try dir.write(String(repeating: "x", count: 2048), to: "big.pem")
        #expect(reason(big, limit: 1024) == "cannot read \(big): it is larger than 1 KiB")
        // A device that never ends stops at the limit instead of filling memory.
        #expect(reason("/dev/zero", limit: 1 << 20) == "cannot read /dev/zero: it is larger than 1 MiB")
        for text in [reason(dir.path), reason(big, limit: 1024)].compactMap({ $0 }) {
            #expect(!text.contains("NSCocoaErrorDomain") && !text.contains("error 256"), "\(text)")
        }
    }

    @Test func aSocketIsNotAFile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("control.sock")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind \(path): \(errno)")
        #expect(reason(path) == "cannot read \(path): it is a socket, not a file")
    }

    /// A named pipe is read to its end, as `--chain <(openssl ...)` gives one.
    @Test func aPipeIsReadToItsEnd() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("fifo")
        try #require(mkfifo(path, 0o600) == 0)
        let writer = Thread {
            let fd = open(path, O_WRONLY)
            guard fd >= 0 else { return }
            let text = Array("through a pipe\n".utf8)
            _ = text.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            close(fd)
        }
        writer.start()
        #expect(String(decoding: try FileIO.read(path), as: UTF8.self) == "through a pipe\n")
    }

    /// Root reads any file, so the permission case is checked on the mapping, and on a real
    /// file when the tests run as another user.
    @Test func permissionDeniedIsNamed() throws {
        #expect(FileIO.reason(errno: EACCES) == "permission denied")
        #expect(FileIO.reason(errno: EPERM) == "permission denied")
        #expect(FileIO.reason(errno: EISDIR) == "it is a directory")
        #expect(FileIO.reason(errno: ENOENT) == "no such file")
        #expect(FileIO.reason(errno: EIO) == String(cString: strerror(EIO)))
        guard getuid() != 0 else { return }
        let dir = try TemporaryDirectory()
        let path = try dir.write("secret", to: "locked.pem")
        try #require(chmod(path, 0) == 0)
        #expect(reason(path) == "cannot read \(path): permission denied")
    }

    @Test func sizesAreShortText() {
        #expect(FileIO.sizeText(64 << 20) == "64 MiB")
        #expect(FileIO.sizeText(1024) == "1 KiB")
        #expect(FileIO.sizeText(1000) == "1000 bytes")
    }
}
