/// The one error type of pinproxy's libraries.
///
/// Errors are compared by ``code`` only: the reason and the OpenSSL error
/// stack are for people. New codes are added as `static let`s in an extension,
/// by any module, so the set never has to be closed.
public struct PinproxyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }
    }

    public var code: Code
    /// A plain-words explanation, suitable for a log line or a CLI message.
    public var reason: String
    /// The OpenSSL error queue drained at the moment the error was made.
    public var openSSLErrors: [String]
    public var file: String
    public var line: Int

    public init(
        _ code: Code, _ reason: String, openSSLErrors: [String] = [],
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.reason = reason
        self.openSSLErrors = openSSLErrors
        self.file = file
        self.line = line
    }

    public var description: String {
        if openSSLErrors.isEmpty { return reason }
        return "\(reason) (\(openSSLErrors.joined(separator: "; ")))"
    }

    public static func == (lhs: PinproxyError, rhs: PinproxyError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension PinproxyError.Code {
    /// A call into OpenSSL failed; ``PinproxyError/openSSLErrors`` says how.
    public static let openSSL = Self("openssl")
    /// Input could not be decoded (PEM, DER, base64, a pin, a date).
    public static let decoding = Self("decoding")
    /// A host name or IP literal is not acceptable in a certificate.
    public static let invalidHostName = Self("invalid-host-name")
    /// A file could not be read or written.
    public static let io = Self("io")
    /// A CA already exists where one would be created.
    public static let caExists = Self("ca-exists")
    /// No CA where one is needed.
    public static let caMissing = Self("ca-missing")
    /// A private key does not belong to the certificate it came with.
    public static let keyMismatch = Self("key-mismatch")
    /// An argument is out of range or contradicts another.
    public static let invalidArgument = Self("invalid-argument")
}
