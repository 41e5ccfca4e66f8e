import Foundation

/// A value a capture writer replays (see ``JSONReplay``), with a test for
/// "the same storage" that is cheaper than `==`.
///
/// The flows of one connection carry copies of one outcome and one set of
/// TLS details: copies that share every string and array buffer. With many
/// connections, a writer looking up a connection's value compared it first
/// with other connections' values, equal in most fields but each in its
/// own buffers, and `==` walked the bytes of every such field (the host, the
/// forged leaf's pin, each certificate's names) until the one that differed:
/// a fifth of the writer's instructions per flow in forward mode. Comparing
/// the fields' storage costs a few instructions per field and settles most
/// lookups; `==` remains the fallback for values equal in other buffers.
protocol ReplayIdentity: Equatable {
    /// Whether every stored property of `self` and `other` is the same
    /// storage (strings and arrays) or the same plain value. It implies
    /// `self == other`; `false` says nothing. Lists every stored property:
    /// one left out would let a value that differs only there be replayed
    /// (CaptureReplayTests checks the lists against the types).
    func sharesStorage(with other: Self) -> Bool
    /// Whether flows carry copies of one value often enough to look for
    /// shared storage first. Requests, responses and their header lists are
    /// parsed anew for every exchange: for them, a lookup compares with `==`
    /// only (looking at storage first cost more than it saved).
    static var sharedAcrossFlows: Bool { get }
}

extension ReplayIdentity {
    func sharesStorage(with other: Self) -> Bool { false }
    static var sharedAcrossFlows: Bool { false }
}

extension String {
    /// Whether both are the same string object, or the same small string
    /// held inline: the same bits, so the same contents.
    @inline(__always)
    func sharesStorage(with other: String) -> Bool {
        unsafeBitCast(self, to: (UInt64, UInt64).self) == unsafeBitCast(other, to: (UInt64, UInt64).self)
    }
}

extension Optional where Wrapped == String {
    @inline(__always)
    func sharesStorage(with other: String?) -> Bool {
        switch (self, other) {
        case (nil, nil): return true
        case (let a?, let b?): return a.sharesStorage(with: b)
        default: return false
        }
    }
}

extension Array {
    /// Whether both use one buffer: the same elements. (Two empty arrays share
    /// the empty buffer, and are equal too.)
    @inline(__always)
    func sharesStorage(with other: [Element]) -> Bool {
        count == other.count
            && withUnsafeBufferPointer { mine in other.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress } }
    }
}

extension Array: ReplayIdentity where Element == FlowHeader {}
extension FlowRequest: ReplayIdentity {}
extension FlowResponse: ReplayIdentity {}

extension TLSOutcomeEvent: ReplayIdentity {
    static var sharedAcrossFlows: Bool { true }

    func sharesStorage(with other: TLSOutcomeEvent) -> Bool {
        // Copies of one outcome share its box; other values compare the
        // fields that tell connections apart first.
        if shared.isShared(with: other.shared) { return true }
        return time == other.time
            && clientAddress.sharesStorage(with: other.clientAddress)
            && kind.rawValue.sharesStorage(with: other.kind.rawValue)
            && host.sharesStorage(with: other.host)
            && port == other.port
            && alert.sharesStorage(with: other.alert)
            && reason.sharesStorage(with: other.reason)
            && profile.sharesStorage(with: other.profile)
    }
}

extension ClientTLSDetails: ReplayIdentity {
    static var sharedAcrossFlows: Bool { true }

    func sharesStorage(with other: ClientTLSDetails) -> Bool {
        if shared.isShared(with: other.shared) { return true }
        return forgedLeafSerial.sharesStorage(with: other.forgedLeafSerial)
            && sni.sharesStorage(with: other.sni)
            && version.sharesStorage(with: other.version)
            && cipher.sharesStorage(with: other.cipher)
            && alpn.sharesStorage(with: other.alpn)
            && forgedLeafPin.sharesStorage(with: other.forgedLeafPin)
            && profile.sharesStorage(with: other.profile)
    }
}

extension UpstreamTLSDetails: ReplayIdentity {
    static var sharedAcrossFlows: Bool { true }

    func sharesStorage(with other: UpstreamTLSDetails) -> Bool {
        if shared.isShared(with: other.shared) { return true }
        return chain.sharesStorage(with: other.chain)
            && verified == other.verified
            && resumed == other.resumed
            && version.sharesStorage(with: other.version)
            && cipher.sharesStorage(with: other.cipher)
            && alpn.sharesStorage(with: other.alpn)
            && verifierReason.sharesStorage(with: other.verifierReason)
    }
}
