import Foundation
import PinproxyCertificates
import Synchronization

/// The anchors a device trusts: the system store and the CAs its user installed.
///
/// A tester who installs the proxy CA on a device adds it to ``userAnchors``;
/// families differ in whether they honour those (iOS and curl do, Android apps
/// targeting API 24+ do not unless their network security config says so).
public struct TrustStore: Sendable {
    /// Roots shipped with the operating system.
    public var systemAnchors: [Certificate]
    /// CAs installed by the device's user.
    public var userAnchors: [Certificate]

    public init(systemAnchors: [Certificate], userAnchors: [Certificate] = []) {
        self.systemAnchors = systemAnchors
        self.userAnchors = userAnchors
    }

    /// The Debian/Ubuntu system bundle.
    public static let systemBundlePath = "/etc/ssl/certs/ca-certificates.crt"

    /// The system bundle of this machine, read once per process.
    public static func system(userAnchors: [Certificate] = []) throws -> TrustStore {
        TrustStore(systemAnchors: try loadBundle(at: systemBundlePath), userAnchors: userAnchors)
    }

    /// Every certificate of a PEM bundle, cached by path for the life of the process.
    public static func loadBundle(at path: String) throws -> [Certificate] {
        if let cached = bundleCache.withLock({ $0[path] }) { return cached }
        let certificates = try Certificate.load(contentsOf: path)
        bundleCache.withLock { $0[path] = certificates }
        return certificates
    }

    private static let bundleCache = Mutex<[String: [Certificate]]>([:])
}
