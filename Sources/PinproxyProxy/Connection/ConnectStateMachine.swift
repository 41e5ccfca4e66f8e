import PinproxyCertificates
import PinproxyHTTP1

/// The CONNECT layer's decisions, on values alone: fed the CONNECT request
/// and the client's first bytes, it returns what to do, in order.
///
/// ```
/// forward:  connect(head) ─▶ refuse 407/400/403
///                         ─▶ establish ─▶ passthrough host ─▶ tunnel
///                                      ─▶ handshake deadline ─▶ firstBytes ─▶ intercept (TLS record)
///                                                                          ─▶ tunnel (anything else)
/// reverse:  reverseStarted ─▶ handshake deadline ─▶ firstBytes ─▶ intercept (TLS record)
///                                                               ─▶ refuse 400 (anything else)
/// ```
struct ConnectStateMachine {
    enum Action: Equatable {
        /// Answer with this error and close the client (it may still be
        /// sending); `challenge` adds `Proxy-Authenticate: Basic`.
        case refuse(status: Int, reason: String, challenge: Bool)
        case recordSelfAddressed(OwnAddresses.Endpoint, host: HostName, port: Int)
        /// `200 Connection established`.
        case establish(host: HostName, port: Int)
        /// The rules pass this host through: the connection's outcome.
        case recordPassthrough(host: HostName, port: Int)
        /// The client's TLS handshake must be done by a deadline from now.
        case armHandshakeDeadline(host: HostName, port: Int)
        /// Read the client's first bytes (none came with the CONNECT).
        case readFirstBytes
        /// Relay raw bytes to `host:port`, beginning with `initial`;
        /// `sniffed`: because the first bytes were not TLS.
        case tunnel(host: HostName, port: Int, initial: ArraySlice<UInt8>, sniffed: Bool)
        /// A TLS record: intercept, beginning with `initial`.
        case intercept(initial: ArraySlice<UInt8>)
    }

    enum State: Equatable {
        case awaitingConnect
        case awaitingFirstBytes(host: HostName, port: Int, reverse: Bool)
        /// Handed on (tunnel or interception) or refused.
        case done
    }

    private(set) var state: State
    private let credentials: String?
    private let ownEndpoint: (HostName, Int) -> OwnAddresses.Endpoint?
    private let profile: (HostName) -> AttackProfile

    /// Forward mode: a CONNECT request comes first.
    init(credentials: String?, ownEndpoint: @escaping (HostName, Int) -> OwnAddresses.Endpoint?,
         profile: @escaping (HostName) -> AttackProfile) {
        self.state = .awaitingConnect
        self.credentials = credentials
        self.ownEndpoint = ownEndpoint
        self.profile = profile
    }

    /// Reverse mode: the connection is for `origin` from the start and must begin with TLS.
    init(reverseTo origin: HostName, port: Int) {
        self.state = .awaitingFirstBytes(host: origin, port: port, reverse: true)
        self.credentials = nil
        self.ownEndpoint = { _, _ in nil }
        self.profile = { _ in .forge }
    }

    /// A reverse-mode connection was accepted.
    mutating func reverseStarted() -> [Action] {
        guard case .awaitingFirstBytes(let host, let port, true) = state else { return [] }
        return [.armHandshakeDeadline(host: host, port: port), .readFirstBytes]
    }

    /// A CONNECT request, and the bytes that came after it.
    mutating func connect(_ head: HTTP1RequestHead, tail: ArraySlice<UInt8>) -> [Action] {
        guard state == .awaitingConnect else { return [] }
        state = .done
        guard ProxyAuthorization.allows(head, credentials: credentials) else {
            return [.refuse(status: 407, reason: ProxyAuthorization.refusal(for: head), challenge: true)]
        }
        guard case .authority(let host, let port) = head.target, (1...65535).contains(port) else {
            return [.refuse(status: 400, reason: "CONNECT needs host:port with a port from 1 to 65535", challenge: false)]
        }
        if let own = ownEndpoint(host, port) {
            return [.recordSelfAddressed(own, host: host, port: port), .refuse(status: 403, reason: own.refusal, challenge: false)]
        }
        var actions: [Action] = [.establish(host: host, port: port)]
        if profile(host) == .passthrough {
            actions += [.recordPassthrough(host: host, port: port), .tunnel(host: host, port: port, initial: tail, sniffed: false)]
            return actions
        }
        actions.append(.armHandshakeDeadline(host: host, port: port))
        state = .awaitingFirstBytes(host: host, port: port, reverse: false)
        if tail.isEmpty { return actions + [.readFirstBytes] }
        return actions + firstBytes(tail)
    }

    /// The client's first bytes after CONNECT (or on a reverse-mode connection).
    mutating func firstBytes(_ bytes: ArraySlice<UInt8>) -> [Action] {
        guard case .awaitingFirstBytes(let host, let port, let reverse) = state else { return [] }
        state = .done
        if bytes.first == 0x16 { return [.intercept(initial: bytes)] }
        if reverse {
            return [.refuse(status: 400, reason: "this port speaks TLS (reverse proxy for \(host.uriHost)); use https://", challenge: false)]
        }
        return [.tunnel(host: host, port: port, initial: bytes, sniffed: true)]
    }
}
