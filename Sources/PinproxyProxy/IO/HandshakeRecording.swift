import PinproxyTLS

/// The bytes fed to a server-side handshake, kept until its ClientHello is
/// decided: a connection the proxy chooses not to intercept (a host it
/// passes through) is then tunnelled raw from its first byte.
struct HandshakeRecording {
    /// A ClientHello is far smaller; past this the recording stops growing.
    static let limit = 64 * 1024

    private(set) var bytes: [UInt8] = []
    private(set) var isRecording = false

    /// Starts over with `initial`, bytes read before the handshake began.
    mutating func start(with initial: ArraySlice<UInt8>) {
        isRecording = true
        bytes = Array(initial)
    }

    /// Keeps the last `count` bytes `engine` received, while recording and under ``limit``.
    mutating func record(_ count: Int, receivedBy engine: TLSConnection) {
        guard isRecording, count > 0, bytes.count < Self.limit else { return }
        engine.withReceived(count) { bytes.append(contentsOf: $0) }
    }

    /// Stops recording and returns what was kept.
    mutating func stop() -> [UInt8] {
        isRecording = false
        defer { bytes = [] }
        return bytes
    }
}
