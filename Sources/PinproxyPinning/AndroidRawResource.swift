import Foundation
import PinproxyCertificates

extension NetworkSecurityConfig {
    /// The certificates of `@raw/name`, looked up in `../raw/` and `raw/` next to the config file,
    /// then next to the file itself, with any extension.
    static func resolveRawResource(_ name: String, near directory: String, file: String, line: Int) throws -> (String, [Certificate]) {
        let candidates = [(directory as NSString).appendingPathComponent("../raw"),
                          (directory as NSString).appendingPathComponent("raw"), directory]
        let manager = FileManager.default
        for folder in candidates {
            guard let entries = try? manager.contentsOfDirectory(atPath: folder) else { continue }
            for entry in entries.sorted() where entry == name || (entry as NSString).deletingPathExtension == name {
                let path = (folder as NSString).appendingPathComponent(entry)
                do {
                    return (path, try rawCertificates(contentsOf: path))
                } catch let error as PinproxyError {
                    throw PinproxyError(.policyFile, "\(file):\(line): @raw/\(name): \(error.reason)")
                }
            }
        }
        throw PinproxyError(.policyFile, "\(file):\(line): @raw/\(name) not found (looked for \(name) or \(name).* in \(candidates.map { ($0 as NSString).standardizingPath }.joined(separator: ", ")))")
    }

    /// PEM certificates, or DER certificates one after the other: Android's
    /// `ResourceCertificateSource` reads the resource with `CertificateFactory.generateCertificates`,
    /// which takes both (its own tests ship a DER file holding two certificates).
    static func rawCertificates(contentsOf path: String) throws -> [Certificate] {
        let bytes = try FileIO.read(path)
        guard let pieces = concatenatedDER(bytes), pieces.count > 1 else { return try Certificate.load(contentsOf: path) }
        return try pieces.enumerated().map { index, der in
            do { return try Certificate(derEncoded: der) } catch let error as PinproxyError {
                throw PinproxyError(.decoding, "\(path): DER certificate \(index + 1) of \(pieces.count) does not decode", openSSLErrors: error.openSSLErrors)
            }
        }
    }

    /// The top-level DER SEQUENCEs of `bytes`, or nil when the bytes are not exactly such a series.
    static func concatenatedDER(_ bytes: [UInt8]) -> [[UInt8]]? {
        var pieces: [[UInt8]] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes[offset] == 0x30, offset + 1 < bytes.count else { return nil }
            var length = Int(bytes[offset + 1])
            var header = 2
            if length & 0x80 != 0 {
                let count = length & 0x7f
                guard (1...4).contains(count), offset + 2 + count <= bytes.count else { return nil }
                length = bytes[(offset + 2)..<(offset + 2 + count)].reduce(0) { $0 << 8 | Int($1) }
                header += count
            }
            guard offset + header + length <= bytes.count else { return nil }
            pieces.append(Array(bytes[offset..<(offset + header + length)]))
            offset += header + length
        }
        return pieces
    }
}
