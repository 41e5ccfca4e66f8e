internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// Helpers shared by every type that calls into OpenSSL.
package enum OpenSSL {
    /// Drains the thread's OpenSSL error queue into readable strings.
    package static func drainErrors() -> [String] {
        var out: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            var file: UnsafePointer<CChar>? = nil
            var line: Int32 = 0
            var data: UnsafePointer<CChar>? = nil
            var flags: Int32 = 0
            let code = ERR_get_error_all(&file, &line, nil, &data, &flags)
            if code == 0 { break }
            ERR_error_string_n(code, &buffer, buffer.count)
            var text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let data, (flags & ERR_TXT_STRING) != 0 {
                let extra = String(cString: data)
                if !extra.isEmpty { text += " (\(extra))" }
            }
            out.append(text)
        }
        return out
    }

    /// An error carrying the drained OpenSSL error stack.
    package static func error(
        _ what: String, code: PinproxyError.Code = .openSSL,
        file: String = #fileID, line: Int = #line
    ) -> PinproxyError {
        PinproxyError(code, what, openSSLErrors: drainErrors(), file: file, line: line)
    }

    /// Fails with the OpenSSL error stack unless `result` is 1.
    package static func check(
        _ result: Int32, _ what: @autoclosure () -> String,
        file: String = #fileID, line: Int = #line
    ) throws {
        if result != 1 { throw error(what(), file: file, line: line) }
    }

    /// Runs `body` with a fresh memory BIO and returns what it wrote.
    package static func withMemoryBIO(_ body: (OpaquePointer) throws -> Void) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw error("BIO_new failed") }
        defer { BIO_free(bio) }
        try body(bio)
        var data: UnsafePointer<CChar>? = nil
        let length = pp_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// Runs `body` with a read-only memory BIO over `bytes`.
    package static func withReadBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) throws -> T) throws -> T {
        try bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                throw error("BIO_new_mem_buf failed")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// DER output of an i2d-style function.
    package static func encode(_ what: String, _ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws -> [UInt8] {
        let length = i2d(nil)
        guard length > 0 else { throw error("could not encode \(what)") }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d(&p)
        }
        guard written == length else { throw error("could not encode \(what)") }
        return out
    }

    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        _ = bytes.withUnsafeBufferPointer { SHA256($0.baseAddress, $0.count, &digest) }
        return digest
    }

    package static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        _ = bytes.withUnsafeBufferPointer { SHA1($0.baseAddress, $0.count, &digest) }
        return digest
    }

    package static func randomBytes(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try check(RAND_bytes(&out, Int32(count)), "RAND_bytes failed")
        return out
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        guard let time else { return .distantPast }
        var seconds: Int64 = 0
        guard pp_asn1_time_to_unix(time, &seconds) == 1 else { return .distantPast }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}

/// The process's OpenSSL library as a whole.
public enum OpenSSLLibrary {
    /// Keeps OpenSSL's global state until the process is gone: without this, OpenSSL frees its
    /// global locks from an `atexit` handler while dispatch threads may still be finishing a
    /// connection, and such a thread then unlocks a freed lock and crashes (signal 11 after a
    /// complete report, seen from `pinproxy check`). Call it first, before any other OpenSSL call:
    /// only the first initialisation decides.
    public static func keepUntilExit() {
        _ = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
    }
}
