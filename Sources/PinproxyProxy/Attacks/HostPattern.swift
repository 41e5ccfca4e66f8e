import Foundation
import PinproxyCertificates

/// A host pattern with OkHttp's semantics: `host` exactly, `*.host` exactly
/// one more label, `**.host` any number of labels including none.
public struct HostPattern: Hashable, Sendable, Codable, CustomStringConvertible {
    public let text: String
    private let suffix: String
    private enum Kind: Hashable { case exact, oneLabel, anyLabels }
    private let kind: Kind

    public init(parsing text: String) throws {
        let lower = text.lowercased()
        let body: String
        if lower.hasPrefix("**.") { kind = .anyLabels; body = String(lower.dropFirst(3)) }
        else if lower.hasPrefix("*.") { kind = .oneLabel; body = String(lower.dropFirst(2)) }
        else { kind = .exact; body = lower }
        guard let host = try? HostName(validating: body), !host.isWildcard else {
            throw PinproxyError(.invalidArgument, "invalid host pattern '\(text)': use host, *.host or **.host")
        }
        self.text = text
        self.suffix = host.description
    }

    public init(from decoder: any Decoder) throws {
        try self.init(parsing: try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }

    public func matches(_ host: HostName) -> Bool {
        let name = host.description
        switch kind {
        case .exact: return name == suffix
        case .anyLabels: return name == suffix || name.hasSuffix("." + suffix)
        case .oneLabel:
            guard name.hasSuffix("." + suffix) else { return false }
            let head = name.dropLast(suffix.count + 1)
            return !head.isEmpty && !head.contains(".")
        }
    }

    public var description: String { text }
}
