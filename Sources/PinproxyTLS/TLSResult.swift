import PinproxyCertificates

/// What one non-blocking handshake step achieved.
public enum TLSHandshakeResult: Sendable, Equatable {
    /// The handshake finished.
    case complete
    /// Feed more network bytes from the peer, then call again.
    case wantRead
    /// OpenSSL could not write; call again once the output was taken. (The
    /// engine's output buffer never refuses, so this is not expected.)
    case wantWrite
    /// (Server side) the ClientHello arrived and the handshake is paused until
    /// the caller installs a certificate or rejects it.
    case clientHello(ClientHello)
    /// The peer closed the connection before the handshake finished.
    case closed
    /// The handshake failed; the reason says why.
    case failed(TLSFailure)
}

/// What one non-blocking read or write achieved.
public enum TLSIOResult: Sendable, Equatable {
    /// This many bytes were read or written.
    case bytes(Int)
    /// Nothing more until more network bytes are fed (for a write: TLS 1.2
    /// renegotiation or a key update waits on the peer).
    case wantRead
    /// OpenSSL could not write; call again once the output was taken (not
    /// expected with the engine's output buffer, which never refuses).
    case wantWrite
    /// The peer closed the TLS session (close_notify or end of stream).
    case closed
    /// The session failed.
    case failed(TLSFailure)
}

/// Why a TLS session failed, in words and in its parts.
public struct TLSFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broad class of failure, which decides how the proxy reports it.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The peer sent a fatal alert (see ``TLSFailure/receivedAlert``).
        public static let alertReceived = Kind("alert-received")
        /// This side could not verify the peer's certificate.
        public static let verificationFailed = Kind("verification-failed")
        /// No protocol version or cipher suite both sides support.
        public static let noSharedParameters = Kind("no-shared-parameters")
        /// The bytes were not TLS at all (for example plain HTTP).
        public static let notTLS = Kind("not-tls")
        /// The transport failed underneath (reset, I/O error).
        public static let transport = Kind("transport")
        /// Anything else.
        public static let other = Kind("other")
    }

    public var kind: Kind
    /// Plain-words reason, suitable for a log line or a 502 body.
    public var reason: String
    /// The alert the peer sent, if any.
    public var receivedAlert: TLSAlert?
    /// The certificate verification error, when ``kind`` is `verificationFailed`.
    public var verificationError: String?
    /// The OpenSSL error queue at the moment of failure.
    public var openSSLErrors: [String]

    public init(kind: Kind, reason: String, receivedAlert: TLSAlert? = nil,
                verificationError: String? = nil, openSSLErrors: [String] = []) {
        self.kind = kind
        self.reason = reason
        self.receivedAlert = receivedAlert
        self.verificationError = verificationError
        self.openSSLErrors = openSSLErrors
    }

    public var description: String { reason }

    public static func == (a: TLSFailure, b: TLSFailure) -> Bool {
        a.kind == b.kind && a.reason == b.reason && a.receivedAlert == b.receivedAlert
    }
}

/// The parts of a ClientHello the proxy decides on.
public struct ClientHello: Sendable, Equatable {
    /// The server_name extension as sent, byte for byte decoded as Latin-1 so
    /// hostile bytes (NUL, commas) survive for logging; validate before use.
    public var serverNameRaw: String?
    /// The server name validated as a ``HostName``; nil if absent or refused
    /// (a wildcard such as `*.example.test` is refused: it names no host).
    public var serverName: HostName?
    /// Why the sent server name was refused, if it was.
    public var serverNameProblem: String?
    /// ALPN protocols the client offered, in its order.
    public var alpn: [String]

    public init(serverNameRaw: String?, serverName: HostName?, serverNameProblem: String?, alpn: [String]) {
        self.serverNameRaw = serverNameRaw
        self.serverName = serverName
        self.serverNameProblem = serverNameProblem
        self.alpn = alpn
    }
}

/// Negotiated parameters of an established session.
public struct TLSSessionInfo: Sendable, Equatable {
    public var version: String
    public var cipher: String
    public var alpn: String?
    public var serverName: String?

    public init(version: String, cipher: String, alpn: String?, serverName: String?) {
        self.version = version
        self.cipher = cipher
        self.alpn = alpn
        self.serverName = serverName
    }
}
