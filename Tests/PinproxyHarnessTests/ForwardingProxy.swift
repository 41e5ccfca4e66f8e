import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyProxy

/// The in-process proxy behind a wrapper whose members a test overrides to
/// make the proxy lie in one way (where it sends a host, what it records).
class ForwardingProxy: ProxyUnderTest, @unchecked Sendable {
    // Sendable: `inner` is set once and is Sendable itself; subclasses add only `let`s.
    let inner: InProcessProxy
    init(_ inner: InProcessProxy) { self.inner = inner }

    var address: ListenAddress { inner.address }
    var kind: String { inner.kind }
    var setupNotes: [String] { inner.setupNotes }
    var caCertificate: Certificate { inner.caCertificate }
    var misissuingCertificate: Certificate? { inner.misissuingCertificate }
    func profiles() throws -> [ProfileAvailability] { try inner.profiles() }
    func use(_ profile: AttackProfile, for host: HostName) throws { try inner.use(profile, for: host) }
    func resolve(_ host: HostName, to address: String) throws { try inner.resolve(host, to: address) }
    func event(clientPort: Int, since: Date, timeout: TimeInterval) -> TLSOutcomeEvent? {
        inner.event(clientPort: clientPort, since: since, timeout: timeout)
    }
    func events(host: String, since: Date) -> [TLSOutcomeEvent] { inner.events(host: host, since: since) }
    func flows(clientPort: Int) -> [Flow] { inner.flows(clientPort: clientPort) }
    func close() { inner.close() }
}
