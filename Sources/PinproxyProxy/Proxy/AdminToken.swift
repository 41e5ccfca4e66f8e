import Foundation
import PinproxyCertificates

/// The bearer token of the control API: what a caller must send as `Authorization: Bearer …`
/// when the API listens beyond loopback (or when the daemon was given one anyway).
///
/// The secret is never part of a description, a log line or an error: `description` says only
/// that a token is there. It is compared in constant time, through its SHA-256 digest, so that
/// neither its content nor its length leaks through the time an answer takes.
public struct AdminToken: Sendable, CustomStringConvertible {
    /// The environment variable that `serve`, `check` and the harness read the token from when
    /// no `--admin-token-file` is given.
    public static let environmentVariable = "PINPROXY_ADMIN_TOKEN"
    /// Fewer characters than this are refused: a short token can be guessed.
    public static let minimumLength = 16

    let secret: String
    private let digest: [UInt8]

    /// Checks the token's form: RFC 6750's `b64token` characters, at least 16 of them.
    public init(_ secret: String, source: String) throws {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=".utf8)
        // The messages name where the token came from, never what it holds.
        guard secret.utf8.count >= Self.minimumLength else {
            throw PinproxyError(.invalidArgument, "the control API token in \(source) is shorter than \(Self.minimumLength) characters; make one with: openssl rand -hex 32")
        }
        guard secret.utf8.allSatisfy(allowed.contains) else {
            throw PinproxyError(.invalidArgument, "the control API token in \(source) has characters a bearer token cannot carry (letters, digits and -._~+/= only); make one with: openssl rand -hex 32")
        }
        self.secret = secret
        self.digest = OpenSSL.sha256(Array(secret.utf8))
    }

    /// The token from `file` (its first line, surrounding white space removed) when one is
    /// named, else from `PINPROXY_ADMIN_TOKEN`, else nil. A named file wins over the variable.
    public static func load(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AdminToken? {
        if let file {
            let text = String(decoding: try FileIO.read(file, limit: 4096), as: UTF8.self)
            let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            return try AdminToken(line.trimmingCharacters(in: .whitespaces), source: file)
        }
        guard let value = environment[environmentVariable], !value.isEmpty else { return nil }
        return try AdminToken(value.trimmingCharacters(in: .whitespacesAndNewlines), source: "$\(environmentVariable)")
    }

    /// Whether an `Authorization` field value is `Bearer <this token>` (the scheme in any case).
    func admits(authorization: String?) -> Bool {
        guard let authorization else { return false }
        let parts = authorization.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return false }
        let presented = OpenSSL.sha256(Array(parts[1].trimmingCharacters(in: .whitespaces).utf8))
        var difference: UInt8 = 0
        for (a, b) in zip(presented, digest) { difference |= a ^ b }
        return difference == 0
    }

    /// The field a client sends.
    public var authorizationValue: String { "Bearer \(secret)" }

    public var description: String { "AdminToken(redacted)" }
}
