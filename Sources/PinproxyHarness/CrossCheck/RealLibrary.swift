import Foundation
import PinproxyCertificates
import PinproxyPinning

/// A real client library that runs a policy's own configuration on this machine, beside the
/// built-in emulation of it (`check --cross-check`).
///
/// A runner is a ``ClientCommand`` per device-trust setting: the harness runs it once per
/// row through the proxy, and judges it from what the proxy and the origin saw together with
/// its exit status, exactly as `check --client` judges any command. The emulation's claims
/// are then facts about the library, row by row, or a row marked `EMULATION≠REAL`.
public protocol RealLibraryRunner: Sendable {
    /// What runs, as reports name it (`okhttp/3.13.1 on Java 17.0.15`, `curl 7.88.1 (OpenSSL/3.0.19)`).
    var name: String { get }
    /// The command for one row, configured as the policy says, on a device whose trust store
    /// is the world's public roots, plus the proxy CA when `deviceTrustsProxyCA`.
    func command(deviceTrustsProxyCA: Bool, in harness: Harness) throws -> ClientCommand
    /// What a reader of the rows should know before them: where this version of the library
    /// reads the policy otherwise than the emulation does.
    var notes: [String] { get }
    /// The emulation the rows compare with: `policy` as it reads where this library runs, and
    /// a note when that is not the policy as written.
    func emulation(of policy: any PinningPolicy) -> (policy: any PinningPolicy, note: String?)
}

extension RealLibraryRunner {
    public var notes: [String] { [] }
    public func emulation(of policy: any PinningPolicy) -> (policy: any PinningPolicy, note: String?) { (policy, nil) }
}

/// Whether a real library can run a policy here.
public enum RealLibraryAvailability: Sendable {
    case available(any RealLibraryRunner)
    /// No real library runs this policy on this machine: why, and what to install when that helps.
    case unavailable(String)

    /// The runner, when there is one.
    public var runner: (any RealLibraryRunner)? {
        if case .available(let runner) = self { return runner }
        return nil
    }
}

/// Finds the real library for a policy: OkHttp on the JVM and curl run on Linux; Apple's
/// Security framework and Android's trust manager do not, so those families rest on reading
/// their sources (docs/policies.md, "How we know").
public enum RealLibraries {
    /// Where Debian's `libokhttp-java` installs its jars.
    public static let debianJavaLibraries = "/usr/share/java"

    /// The runner for `policy`, preparing it (the OkHttp client is compiled into
    /// `cacheDirectory` on first use; default ``defaultCacheDirectory(environment:)``).
    public static func runner(for policy: any PinningPolicy, javaLibraries: String = debianJavaLibraries,
                              cacheDirectory: String? = nil) -> RealLibraryAvailability {
        switch policy.family {
        case .okhttp:
            guard let okhttp = policy as? OkHttpPolicy else { return .unavailable("no real library for this okhttp policy object") }
            guard okhttp.checkedChain == .cleanedChain else {
                return .unavailable("profile \(okhttp.checkedChain.rawValue) models OkHttp before 3.1.2 (CVE-2016-2402), and the OkHttp that runs here (Debian's libokhttp-java) checks the cleaned chain: the rows are the emulation alone")
            }
            guard let cache = cacheDirectory ?? defaultCacheDirectory() else {
                return .unavailable("no cache directory for the compiled OkHttp client: set XDG_CACHE_HOME or HOME")
            }
            return OkHttpJVMRunner.prepare(pins: okhttp.pins, javaLibraries: javaLibraries, cacheDirectory: cache)
        case .curl:
            guard let curl = policy as? CurlPolicy else { return .unavailable("no real library for this curl policy object") }
            return CurlRunner.prepare(curl)
        case .afnetworking, .customAnchors, .alamofire, .trustkit:
            return .unavailable("\(policy.family) runs on Apple's Security framework (SecTrust), which does not run on Linux: its rules rest on reading the sources (docs/policies.md, \"How we know\")")
        case .androidNSC:
            return .unavailable("android-nsc runs in Android's platform trust manager (Conscrypt), which does not run on Linux: its rules rest on reading the sources (docs/policies.md, \"How we know\")")
        }
    }

    /// pinproxy's cache: `$XDG_CACHE_HOME/pinproxy` (an absolute path, as the XDG base-directory
    /// specification requires; a relative one is ignored), else `$HOME/.cache/pinproxy`.
    public static func defaultCacheDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return (xdg as NSString).appendingPathComponent("pinproxy")
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return (home as NSString).appendingPathComponent(".cache/pinproxy")
    }

    /// The first executable `name` on `PATH`.
    static func executable(_ name: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
