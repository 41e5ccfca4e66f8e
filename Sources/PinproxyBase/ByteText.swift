import Foundation

extension Array where Element == UInt8 {
    /// Lower-case hex, optionally separated (`"ab:cd"`).
    public func hexString(separator: String = "") -> String {
        map { String(format: "%02x", $0) }.joined(separator: separator)
    }

    /// Standard base64 with padding.
    public var base64: String { Data(self).base64EncodedString() }

    /// The bytes `body` writes into `capacity` bytes of scratch space (it
    /// returns how many), in an array of just that size.
    ///
    /// For the hot paths that lay out a head of a size known beforehand:
    /// `init(unsafeUninitializedCapacity:initializingWith:)` allocates
    /// through the standard library's unspecialised path, which looks the
    /// array's storage type up at run time on every call (~530 instructions
    /// against ~200 for this, a head's bytes copied once included; callgrind).
    @inlinable
    public init(writingAtMost capacity: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) -> Int) {
        self = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Swift.max(capacity, 1)) { scratch in
            let count = body(scratch)
            precondition(count >= 0 && count <= scratch.count, "wrote outside the scratch space")
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<count]))
            return bytes
        }
    }
}
