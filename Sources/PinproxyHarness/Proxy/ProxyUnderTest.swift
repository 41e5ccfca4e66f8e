import Foundation
import PinproxyCertificates
import PinproxyProxy

/// An attack profile the proxy knows, and whether it can mount it here.
public struct ProfileAvailability: Sendable, Equatable {
    public var profile: AttackProfile
    /// Why the profile cannot be used (the `misissued` attack without a second CA); nil when it can.
    public var unavailable: String?

    public init(profile: AttackProfile, unavailable: String? = nil) {
        self.profile = profile
        self.unavailable = unavailable
    }
}

/// The proxy a check runs through: one the harness starts in-process
/// (``InProcessProxy``), or a running daemon driven through its control API
/// (``ControlAPIProxy``).
public protocol ProxyUnderTest: AnyObject, Sendable {
    /// Where clients connect.
    var address: ListenAddress { get }
    /// What reports call the proxy before its address: `in-process` or `daemon`.
    var kind: String { get }
    /// What setting the proxy up changed that every report should say (what a killed check had
    /// left on a daemon, removed); empty when nothing.
    var setupNotes: [String] { get }
    /// The proxy's CA, which a tester installs on the device.
    var caCertificate: Certificate { get }
    /// The certificate of the CA the proxy's `misissued` profile signs with; nil when it has none.
    /// The harness makes it the world's misissuer, which the device trusts.
    var misissuingCertificate: Certificate? { get }
    /// The profiles the proxy knows, in its catalog's order.
    func profiles() throws -> [ProfileAvailability]
    /// Serves `host` with `profile` from the next connection on.
    func use(_ profile: AttackProfile, for host: HostName) throws
    /// Connects to `host` at the numeric `address` from the next connection on, instead of
    /// resolving it: clients `CONNECT` to the world's host by name, as a device would, and
    /// the proxy reaches the loopback origin. ``close()`` undoes it.
    func resolve(_ host: HostName, to address: String) throws
    /// The proxy's TLS outcome for the client whose local port is `clientPort`,
    /// recorded at or after `since`; waits up to `timeout` for it.
    func event(clientPort: Int, since: Date, timeout: TimeInterval) -> TLSOutcomeEvent?
    /// Every outcome the proxy recorded for connections to `host` at or after `since`, oldest first
    /// (an external client's port is not known, and it may connect more than once).
    func events(host: String, since: Date) -> [TLSOutcomeEvent]
    /// The flows the proxy recorded for that client.
    func flows(clientPort: Int) -> [Flow]
    /// Puts back what the check changed and stops what it started.
    func close()
}

extension ProxyUnderTest {
    /// Polls `lookup` until it yields a value or `timeout` passes: the proxy records an
    /// outcome on its own queue, a moment after the client has gone.
    func waitFor<T>(timeout: TimeInterval, interval: TimeInterval = 0.002, _ lookup: () -> T?) -> T? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let value = lookup() { return value }
            if Date() >= deadline { return nil }
            Thread.sleep(forTimeInterval: interval)
        }
    }
}

/// `"127.0.0.1:40502"` → 40502.
func port(ofAddress address: String) -> Int? {
    guard let colon = address.lastIndex(of: ":") else { return nil }
    return Int(address[address.index(after: colon)...])
}
