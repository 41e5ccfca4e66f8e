import Foundation

extension Array where Element == UInt8 {
    /// Lower-case hex, optionally separated (`"ab:cd"`).
    public func hexString(separator: String = "") -> String {
        map { String(format: "%02x", $0) }.joined(separator: separator)
    }

    /// Standard base64 with padding.
    public var base64: String { Data(self).base64EncodedString() }
}
