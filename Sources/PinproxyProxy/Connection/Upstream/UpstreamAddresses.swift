import Foundation
import PinproxyCertificates

/// Upstream host names the proxy connects to at a fixed numeric address instead
/// of resolving them, as curl's `--resolve` does, without the port: the client's
/// `CONNECT` target (or absolute URL) carries it.
///
/// Set at start (`pinproxy serve --resolve HOST:ADDRESS`) and replaced at run time
/// (`PUT /resolve`); the pinning harness points a running daemon at its world's
/// loopback origin this way and puts the map back afterwards. New upstream
/// connections see a change at once. One map is shared by every copy of the
/// ``ProxyConfiguration`` that holds it, so the running server and its control
/// API read and change the same entries.
public final class UpstreamAddresses: Sendable {
    private let entries: Locked<[HostName: String]>

    /// An empty map: every name is resolved.
    public init() { entries = Locked([:]) }

    /// The numeric address `host` is pinned to, or nil to resolve it.
    public func address(for host: HostName) -> String? { entries.withLock { $0[host] } }

    /// Every entry, `host name → address`, both in canonical text.
    public var all: [String: String] {
        entries.withLock { map in Dictionary(uniqueKeysWithValues: map.map { ($0.key.description, $0.value) }) }
    }

    /// Pins `host` to `address` (both checked as ``entry(host:address:)`` does).
    public func set(_ host: String, to address: String) throws {
        let (name, numeric) = try Self.entry(host: host, address: address)
        entries.withLock { $0[name] = numeric }
    }

    /// Replaces every entry with `map` (`host name → address`); nothing changes when one is invalid.
    public func replace(with map: [String: String]) throws {
        var checked: [HostName: (written: String, address: String)] = [:]
        for (host, address) in map.sorted(by: { $0.key < $1.key }) {
            let (name, numeric) = try Self.entry(host: host, address: address)
            // Two spellings of one name (case, a trailing dot): one address, or the map is ambiguous.
            if let earlier = checked[name], earlier.address != numeric {
                throw PinproxyError(.invalidArgument, "'\(earlier.written)' and '\(host)' are the same name (\(name)) with two addresses, \(earlier.address) and \(numeric): give it one")
            }
            checked[name] = (host, numeric)
        }
        entries.withLock { $0 = checked.mapValues(\.address) }
    }

    /// Parses `HOST:ADDRESS` (`api.example.test:127.0.0.1`, `api.example.test:::1`,
    /// `api.example.test:[::1]`, `[2001:db8::7]:127.0.0.1`), the form of `--resolve`.
    public static func parse(_ text: String) throws -> (host: String, address: String) {
        // An IPv6 name is bracketed; anything else ends at the first colon.
        let end = text.hasPrefix("[") ? text.firstIndex(of: "]").map { text.index(after: $0) } : text.startIndex
        guard let end, let colon = text[end...].firstIndex(of: ":") else {
            throw PinproxyError(.invalidArgument, "--resolve wants HOST:ADDRESS, e.g. api.example.test:127.0.0.1, not '\(text)'")
        }
        let host = String(text[..<colon])
        let address = String(text[text.index(after: colon)...])
        // curl's HOST:PORT:ADDRESS: the port has no place here (2001:db8::1 is an address, not a port and one).
        let parts = address.split(separator: ":", maxSplits: 1)
        if HostName.parseNumeric(address) == nil, parts.count == 2, parts[0].allSatisfy(\.isNumber),
           HostName.parseNumeric(String(parts[1])) != nil || parts[1].hasPrefix("[") {
            throw PinproxyError(.invalidArgument, "--resolve '\(text)': give HOST:ADDRESS without a port (\(host):\(parts[1])); the CONNECT target carries the port")
        }
        do { _ = try entry(host: host, address: address) } catch let error as PinproxyError {
            throw PinproxyError(.invalidArgument, "--resolve '\(text)': \(error.reason)")
        }
        return (host, address)
    }

    /// Checks one entry: `host` a DNS name (not a wildcard) or an IP literal, which
    /// then connects elsewhere (the harness's world may be named by an address),
    /// `address` a numeric IPv4 or IPv6 address (brackets allowed); returns both canonical.
    static func entry(host: String, address: String) throws -> (HostName, String) {
        let name: HostName
        // Any wildcard is refused as one, whether or not it would be a valid certificate pattern.
        if host.hasPrefix("*") { throw PinproxyError(.invalidArgument, "'\(host)' is a wildcard; give one host name") }
        do { name = try HostName(validating: host) } catch let error as PinproxyError {
            throw PinproxyError(.invalidArgument, error.reason)
        }
        if name.isWildcard { throw PinproxyError(.invalidArgument, "'\(host)' is a wildcard; give one host name") }
        guard let numeric = try? HostName(validating: address), numeric.isIPAddress else {
            throw PinproxyError(.invalidArgument, "'\(address)' for \(name) is not a numeric IPv4 or IPv6 address")
        }
        return (name, numeric.description)
    }
}
