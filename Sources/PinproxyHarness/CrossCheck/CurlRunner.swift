import Foundation
import PinproxyCertificates
import PinproxyPinning

/// The machine's curl, run with the policy's `--pinnedpubkey`, `--insecure` and `--cacert`.
///
/// The device's trust store is the world's public roots (`{ca}`, plus the proxy CA in the
/// rows where the device installed it), unless the policy names its own `cacert`, which
/// replaces them as it replaces curl's default bundle. curl also searches its built-in CA
/// directory (`/etc/ssl/certs` on Debian) beside `--cacert`; an empty `--capath` keeps the
/// machine's own roots out, so the real run trusts exactly what the emulation trusts.
/// `-q` keeps a `~/.curlrc` out of it.
public struct CurlRunner: RealLibraryRunner {
    public let name: String
    let curl: String
    let policy: CurlPolicy

    /// The runner, or why curl cannot run here.
    static func prepare(_ policy: CurlPolicy) -> RealLibraryAvailability {
        guard let curl = RealLibraries.executable("curl") else {
            return .unavailable("no real curl here: no curl on PATH (install curl); the rows are the emulation alone")
        }
        let asked = try? ChildProcess.run(shell: "\(ClientCommand.quote(curl)) --version", environment: ProcessInfo.processInfo.environment, timeout: 20)
        guard let asked, asked.status == 0, let first = asked.output.split(separator: "\n").first, first.hasPrefix("curl ") else {
            return .unavailable("no real curl here: \(curl) --version failed; the rows are the emulation alone")
        }
        return .available(CurlRunner(name: name(versionLine: String(first)), curl: curl, policy: policy))
    }

    /// `curl 7.88.1 (OpenSSL/3.0.19)` from the first line of `curl --version`.
    static func name(versionLine: String) -> String {
        let words = versionLine.split(separator: " ")
        let tls = words.first { $0.hasPrefix("OpenSSL/") || $0.hasPrefix("GnuTLS/") || $0.hasPrefix("wolfSSL/") || $0.hasPrefix("mbedTLS/") }
        return words.prefix(2).joined(separator: " ") + (tls.map { " (\($0))" } ?? "")
    }

    public func command(deviceTrustsProxyCA: Bool, in harness: Harness) throws -> ClientCommand {
        let q = ClientCommand.quote
        let world = harness.world
        let emptyDirectory = (world.directory as NSString).appendingPathComponent("curl-capath")
        try FileManager.default.createDirectory(atPath: emptyDirectory, withIntermediateDirectories: true)
        let bundle = try policy.caBundle.map { try q(world.writeBundle($0, as: "curl-cacert.pem")) }
            ?? (deviceTrustsProxyCA ? "{device-ca}" : "{ca}")
        var words = [q(curl), "-q", "-sS", "-o", "/dev/null", "--resolve", "{resolve}", "--capath", q(emptyDirectory),
                     "--cacert", bundle, "--pinnedpubkey", q(policy.commandLineValue)]
        if policy.insecure { words.append("--insecure") }
        words.append("{url}")
        return try ClientCommand(words.joined(separator: " "))
    }
}
