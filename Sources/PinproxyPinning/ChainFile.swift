import Foundation
import PinproxyCertificates

/// The file `verify --chain` reads: the certificates a server presents, leaf first.
public enum ChainFile {
    /// Every certificate of `path` (PEM, any number, or one DER certificate).
    ///
    /// A PEM block of a private key (`PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY`,
    /// `ENCRYPTED PRIVATE KEY`) is refused rather than skipped: a server never sends its key,
    /// so a chain file holding one was assembled by mistake, and the key should not travel
    /// with it. The message never quotes the file's content.
    public static func load(contentsOf path: String) throws -> [Certificate] {
        let bytes = try FileIO.read(path)
        // Searched whatever else the file holds: a DER certificate or stray
        // bytes that are not UTF-8 beside a key block do not hide it.
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN"), text.contains("PRIVATE KEY-----") {
            throw PinproxyError(.decoding, "\(path) holds a private key (a PRIVATE KEY PEM block); a chain file holds certificates only: the certificates the server presents, leaf first, without its key")
        }
        return try Certificate.load(contentsOf: path)
    }
}
