internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates
import PinproxyTestSupport
@testable import PinproxyTLS

/// A CA, a leaf it issued for `api.example.test`, and the CA's PEM file for
/// client contexts to trust. Generated at test time; shared by the tests.
struct TLSFixture: Sendable {
    let authority: CertificateAuthority
    let leaf: ForgedLeaf
    let caFile: String
    let directory: TemporaryDirectory

    static let host = "api.example.test"

    static let shared: TLSFixture = try! TLSFixture(commonName: "pinproxy TLS tests CA")
    /// A second, unrelated CA: a client trusting only it refuses the shared leaf.
    static let stranger: TLSFixture = try! TLSFixture(commonName: "pinproxy TLS tests other CA")

    init(commonName: String) throws {
        var options = CertificateAuthority.Options()
        options.commonName = commonName
        authority = try CertificateAuthority.create(options)
        leaf = try LeafForger(authority: authority).forge(hostNames: [TLSFixture.host])
        directory = try TemporaryDirectory()
        caFile = try directory.write(authority.certificate.pemEncoded, to: "ca.pem")
    }
}

/// Two engines joined in memory: whatever one writes to the network, the
/// other is fed, in chunks of `chunk` bytes (one byte at a time when 1).
final class MemoryPair {
    let client: TLSConnection
    let server: TLSConnection
    /// Feed at most this many bytes per call.
    var chunk: Int
    /// Network bytes moved, per direction.
    private(set) var clientToServer: [UInt8] = []
    private(set) var serverToClient: [UInt8] = []

    init(clientALPN: [String] = ["http/1.1"], serverALPN: [String] = ["http/1.1"],
         trust: TLSFixture = .shared, serverName: String? = TLSFixture.host,
         maxVersion: Int32? = nil, chunk: Int = .max) throws {
        let clientContext = try TLSContext.client(trust: .file(trust.caFile), alpn: clientALPN)
        let serverContext = try TLSContext.server(alpn: serverALPN)
        client = try TLSConnection(context: clientContext)
        server = try TLSConnection(context: serverContext)
        if let serverName { try client.configureClient(serverName: HostName(validating: serverName)) }
        if let maxVersion {
            for side in [client, server] { _ = SSL_ctrl(side.ssl, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(maxVersion), nil) }
        }
        self.chunk = chunk
    }

    /// Joins two engines made by the test.
    init(client: TLSConnection, server: TLSConnection, chunk: Int = .max) {
        self.client = client
        self.server = server
        self.chunk = chunk
    }

    /// Moves `from`'s output into `to`, `chunk` bytes per feed; returns how many bytes moved.
    @discardableResult
    func move(from: TLSConnection, to: TLSConnection) -> Int {
        let bytes = from.takeOutput()
        if from === client { clientToServer += bytes } else { serverToClient += bytes }
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + min(chunk, bytes.count - offset))
            bytes[offset..<end].withUnsafeBytes { to.feed($0) }
            offset = end
        }
        return bytes.count
    }

    /// Moves both ways once.
    @discardableResult
    func exchange() -> Int { move(from: client, to: server) + move(from: server, to: client) }

    /// Drives both handshakes until both are done or one fails, installing
    /// the shared leaf when the server pauses at the ClientHello (or
    /// refusing it with `rejectHello`). Returns the last results.
    func handshake(rejectHello: TLSAlert? = nil) -> (client: TLSHandshakeResult, server: TLSHandshakeResult) {
        var clientResult = client.handshake()
        var serverResult = TLSHandshakeResult.wantRead
        for _ in 0..<10_000 {
            exchange()
            serverResult = server.handshake()
            if case .clientHello = serverResult {
                if let rejectHello {
                    server.rejectClientHello(alert: rejectHello, reason: "refused by the test")
                } else {
                    try! server.installCertificate(TLSFixture.shared.leaf)
                }
                serverResult = server.handshake()
            }
            exchange()
            clientResult = client.handshake()
            if clientResult.isDone && serverResult.isDone { break }
            if clientResult.isFailure || serverResult.isFailure {
                // Let the alert reach the other side before stopping.
                exchange()
                if !clientResult.isFailure { clientResult = client.handshake() }
                if !serverResult.isFailure { serverResult = server.handshake() }
                break
            }
        }
        return (clientResult, serverResult)
    }

    /// Writes all of `bytes` on `side`, returning each write's result.
    func writeAll(_ bytes: [UInt8], on side: TLSConnection) -> [TLSIOResult] {
        var results: [TLSIOResult] = []
        var offset = 0
        while offset < bytes.count {
            let result = bytes[offset...].withUnsafeBytes { side.write($0) }
            results.append(result)
            guard case .bytes(let n) = result else { break }
            offset += n
        }
        return results
    }

    /// Reads what `side` can decrypt now; the last result says why it stopped.
    func readAvailable(on side: TLSConnection) -> (bytes: [UInt8], last: TLSIOResult) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let result = buffer.withUnsafeMutableBytes { side.read(into: $0) }
            guard case .bytes(let n) = result else { return (bytes, result) }
            bytes += buffer[0..<n]
        }
    }
}

extension TLSHandshakeResult {
    var isDone: Bool {
        if case .complete = self { return true }
        return false
    }

    var isFailure: Bool {
        switch self {
        case .failed, .closed: return true
        default: return false
        }
    }

    var failure: TLSFailure? {
        if case .failed(let failure) = self { return failure }
        return nil
    }
}

/// The TLS records in `bytes`: (content type, length) of each.
func records(in bytes: [UInt8]) -> [(type: UInt8, length: Int)] {
    var found: [(UInt8, Int)] = []
    var i = 0
    while i + 5 <= bytes.count {
        let length = Int(bytes[i + 3]) << 8 | Int(bytes[i + 4])
        found.append((bytes[i], length))
        i += 5 + length
    }
    return found
}
