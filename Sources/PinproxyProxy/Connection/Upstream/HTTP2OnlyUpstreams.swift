import Foundation
import PinproxyBase

/// Upstreams found to speak only HTTP/2, remembered for a while so that the
/// next connection to them offers `h2` at once instead of being refused
/// first.
///
/// An HTTP/1.1 client's upstream is offered `http/1.1` (what a direct
/// connection would offer). Some servers refuse that:
/// - with the TLS alert `no_application_protocol` (120) in the handshake, as
///   OpenSSL's `s_server -alpn h2` and Go's `crypto/tls` do;
/// - by completing the handshake without ALPN and closing at once, without
///   a byte, as nghttp2's `nghttpd` does ("Client did not advertise HTTP/2
///   protocol");
/// - by completing it without ALPN and answering with HTTP/2 frames (their
///   SETTINGS, then GOAWAY), as a server that speaks HTTP/2 to everyone does.
///
/// The proxy then connects again once, offering `h2` only; when the
/// upstream picks it, HTTP/1.1 requests are translated, and the target is
/// remembered here. An entry lasts ``lifetime``; at most ``capacity``
/// targets are kept (the oldest goes first). Shared by every connection's
/// loop, behind a lock.
final class HTTP2OnlyUpstreams: Sendable {
    /// How long a target is remembered after it was last found to speak only HTTP/2.
    static let lifetime: TimeInterval = 10 * 60
    /// How many targets are remembered.
    static let capacity = 256

    private let entries = Locked<[UpstreamTarget: Date]>([:])

    init() {}

    /// Whether `target` was found to speak only HTTP/2 less than ``lifetime`` ago.
    func contains(_ target: UpstreamTarget, now: Date = Date()) -> Bool {
        entries.withLock { entries in
            guard let seen = entries[target] else { return false }
            if now.timeIntervalSince(seen) < Self.lifetime { return true }
            entries[target] = nil
            return false
        }
    }

    /// Remembers that `target` speaks only HTTP/2.
    func remember(_ target: UpstreamTarget, now: Date = Date()) {
        entries.withLock { entries in
            if entries[target] == nil, entries.count >= Self.capacity,
               let oldest = entries.min(by: { $0.value < $1.value })?.key {
                entries[oldest] = nil
            }
            entries[target] = now
        }
    }

    /// Forgets `target` (offered `h2` only, it did not pick it).
    func forget(_ target: UpstreamTarget) {
        entries.withLock { entries in entries[target] = nil }
    }

    /// What to offer `target` when the layer asks for the default offer:
    /// `h2` only when it is remembered as speaking only HTTP/2.
    func alpn(for target: UpstreamTarget, http2: Bool) -> [String]? {
        http2 && target.tls && contains(target) ? Self.offer : nil
    }

    /// The offer of the second attempt: `h2` and nothing else.
    static let offer = ["h2"]

    /// Whether `bytes`, the first an upstream sent where an HTTP/1.1 response
    /// was expected, begin with an HTTP/2 frame on the connection (stream 0):
    /// SETTINGS (4) or GOAWAY (7). An HTTP/1 response starts with `HTTP/`.
    static func looksLikeHTTP2Frames(_ bytes: some Collection<UInt8>) -> Bool {
        // Checked on the first slice of every response: an HTTP/1 one fails at its first byte, unallocated.
        guard bytes.first == 0 else { return false }
        let head = Array(bytes.prefix(9))
        guard head.count == 9, head[3] == 4 || head[3] == 7 else { return false }
        return head[5] & 0x7f == 0 && head[6] == 0 && head[7] == 0 && head[8] == 0
    }
}
