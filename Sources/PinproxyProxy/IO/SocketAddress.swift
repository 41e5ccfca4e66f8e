import Foundation
import PinproxyCertificates

/// A numeric host and port to listen on, such as `127.0.0.1:8080` or `[::1]:8080`.
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port`, `[v6]:port` or a bare `port` (loopback).
    public init(parsing text: String) throws {
        func bad(_ why: String) -> PinproxyError { PinproxyError(.invalidArgument, "invalid address '\(text)': \(why)") }
        var host = "127.0.0.1"
        var portText = text
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw bad("unbalanced brackets") }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw bad("expected :port after the address") }
            portText = String(rest.dropFirst())
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
            if host.contains(":") { throw bad("put IPv6 addresses in brackets") }
        }
        if host == "localhost" { host = "127.0.0.1" }
        // A text with no number where the port goes is a wrong form, not a wrong port.
        guard let port = Int(portText) else {
            throw bad("'\(portText)' is not a port number; expected HOST:PORT, [IPv6]:PORT or a bare PORT")
        }
        guard (0...65535).contains(port) else { throw bad("port must be 0–65535") }
        guard !host.isEmpty else {
            // Go's and some proxies' ":PORT" means every interface; here loopback is the default and
            // listening beyond it is asked for by name.
            throw bad("no host before ':'; write 127.0.0.1:\(port) or the bare port \(port) for loopback, or 0.0.0.0:\(port) for every interface (which serve allows only with --allow-remote)")
        }
        guard HostName.parseNumeric(host) != nil else { throw bad("the host must be an IP address or localhost (no other name is looked up)") }
        self.host = host
        self.port = port
    }

    /// Whether the address only accepts connections from this machine.
    public var isLoopback: Bool {
        guard let bytes = HostName.parseNumeric(host) else { return false }
        if bytes.count == 4 { return bytes[0] == 127 }
        return bytes == [UInt8](repeating: 0, count: 15) + [1]
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension HostName {
    /// The bytes of a numeric IPv4 or IPv6 address, nil for anything else.
    static func parseNumeric(_ text: String) -> [UInt8]? {
        guard let name = try? HostName(validating: text) else { return nil }
        return name.addressBytes
    }
}
