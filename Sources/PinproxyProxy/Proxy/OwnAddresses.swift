import Foundation
import PinproxyCertificates

/// The addresses pinproxy itself answers on: its proxy listener and its
/// control API.
///
/// A request or CONNECT addressed to one of them is refused with 403 instead
/// of being relayed. Through the proxy, a client allowed to reach only the
/// proxy port (`--allow-remote`) would otherwise reach the loopback-only
/// control API, and a request to the proxy port would come back to the proxy.
///
/// Two checks, because a name alone cannot tell: before connecting, by the
/// target as written (IP literals and `localhost`; a listener on the any
/// address also answers on loopback and on every local interface); and once
/// connected, by the socket's peer address, which catches every name that
/// resolves to one of them (`0x7f000001`, the machine's own host name).
final class OwnAddresses: Sendable {
    /// One address the proxy listens on.
    struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        enum Role: String, Sendable {
            case proxy = "proxy port"
            case controlAPI = "control API"
        }

        var role: Role
        /// 4 or 16 bytes; all zero for a listener on the any address.
        var address: [UInt8]
        var port: Int

        var description: String {
            "pinproxy's \(role.rawValue) \(ListenAddress(host: HostName.format(address: address), port: port))"
        }

        /// The body of the 403 answer.
        var refusal: String {
            let hint = role == .controlAPI ? "; call the control API directly, not through the proxy" : ""
            return "this request is addressed to pinproxy itself (\(description)): the proxy does not relay requests to its own addresses\(hint)"
        }
    }

    private let endpoints = Locked<[Endpoint]>([])
    private let interfaceAddresses: @Sendable () -> [[UInt8]]

    /// `interfaceAddresses` lists this machine's addresses (replaceable for tests).
    init(interfaceAddresses: @escaping @Sendable () -> [[UInt8]] = Socket.interfaceAddresses) {
        self.interfaceAddresses = interfaceAddresses
    }

    /// Adds a bound address (with its real port).
    func add(_ address: ListenAddress, role: Endpoint.Role) {
        guard let bytes = HostName.parseNumeric(address.host) else { return }
        endpoints.withLock { $0.append(Endpoint(role: role, address: OwnAddresses.unmapped(bytes), port: address.port)) }
    }

    /// The endpoint `host:port` names, when the name alone says so.
    func endpoint(named host: HostName, port: Int) -> Endpoint? {
        switch host {
        case .dns("localhost"): return endpoint(reachedBy: [[127, 0, 0, 1], OwnAddresses.loopback6], port: port)
        case .dns: return nil  // checked once connected
        case .ipv4(let bytes), .ipv6(let bytes): return endpoint(reachedBy: [bytes], port: port)
        }
    }

    /// The endpoint a connected socket's peer is, if it is one of them.
    func endpoint(peerOf descriptor: Descriptor) -> Endpoint? {
        guard let peer = Socket.peerAddress(descriptor) else { return nil }
        return endpoint(reachedBy: [peer.address], port: peer.port)
    }

    /// The endpoint a connection to one of `addresses` at `port` would reach.
    func endpoint(reachedBy addresses: [[UInt8]], port: Int) -> Endpoint? {
        let candidates = endpoints.withLock { $0.filter { $0.port == port } }
        if candidates.isEmpty { return nil }  // the usual case: nothing to look up
        // Linux connects 0.0.0.0 and :: to the loopback address.
        let targets = addresses.map { address -> [UInt8] in
            let plain = OwnAddresses.unmapped(address)
            return plain.allSatisfy { $0 == 0 } ? (plain.count == 4 ? [127, 0, 0, 1] : OwnAddresses.loopback6) : plain
        }
        var local: [[UInt8]]?
        for endpoint in candidates {
            if !endpoint.address.allSatisfy({ $0 == 0 }) {
                if targets.contains(endpoint.address) { return endpoint }
                continue
            }
            // A listener on the any address: loopback and every local interface reach it.
            if targets.contains(where: OwnAddresses.isLoopback) { return endpoint }
            if local == nil { local = interfaceAddresses().map(OwnAddresses.unmapped) }
            if targets.contains(where: { local?.contains($0) == true }) { return endpoint }
        }
        return nil
    }

    static let loopback6: [UInt8] = [UInt8](repeating: 0, count: 15) + [1]

    static func isLoopback(_ address: [UInt8]) -> Bool {
        address.count == 4 ? address[0] == 127 : address == loopback6
    }

    /// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4 address.
    static func unmapped(_ address: [UInt8]) -> [UInt8] {
        guard address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xff, address[11] == 0xff else {
            return address
        }
        return Array(address[12...])
    }
}

extension TLSOutcomeEvent.Kind {
    /// A request or CONNECT addressed to the proxy's own listener or control API was refused (403).
    public static let selfAddressed = Self("self-addressed")
}
