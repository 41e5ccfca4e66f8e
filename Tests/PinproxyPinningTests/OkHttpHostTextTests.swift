import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// The host text `CertificatePinner` matches patterns against, held against real OkHttp 3.13.1:
/// `HttpUrl.parse("https://HOST/").host()` on the JDK for each host, beside `OkHttpPolicy.canonicalHost`.
@Suite(.timeLimit(.minutes(5)))
struct OkHttpHostTextTests {
    /// IPv6 forms whose text differs between OkHttp and `inet_ntop` (a dotted IPv4 tail), runs of
    /// zero groups of each length and position, mapped and compatible IPv4, IPv4, upper case and
    /// Unicode names.
    static let hosts = [
        "[::1.2.3.4]", "[::0.0.1.2]", "[::1]", "[::]", "[::ffff:1.2.3.4]", "[::ffff:0:1.2.3.4]", "[1:0:0:2:0:0:0:3]",
        "[1:0:0:2:0:0:3:4]", "[1:0:2:3:4:5:6:7]", "[2001:DB8::1]", "[fe80::]", "[0:0:1::]", "[64:ff9b::192.0.2.33]",
        "192.168.1.1", "API.Example.COM", "münchen.de",
    ]

    static let program = """
        import okhttp3.HttpUrl;
        public class HostText {
          public static void main(String[] hosts) {
            for (String host : hosts) System.out.println(HttpUrl.get("https://" + host + "/").host());
          }
        }
        """

    @Test("canonicalHost writes each host as real OkHttp's HttpUrl.host() does")
    func hostsAsRealOkHttpWritesThem() throws {
        let java = try #require(RealLibraries.executable("java"), "no java on PATH: install openjdk-17-jdk-headless (make deps)")
        let javac = try #require(RealLibraries.executable("javac"), "no javac on PATH: install openjdk-17-jdk-headless (make deps)")
        let jars = ["okhttp.jar", "okio.jar"].map { "\(RealLibraries.debianJavaLibraries)/\($0)" }
        let missing = jars.filter { !FileManager.default.fileExists(atPath: $0) }
        guard missing.isEmpty else { Issue.record("\(missing) missing: install libokhttp-java (make deps)"); return }
        let directory = try PinproxyTestSupport.TemporaryDirectory()
        let source = try directory.write(Self.program, to: "HostText.java")
        let classpath = jars.joined(separator: ":")
        let compiled = try run(javac, ["-cp", classpath, "-d", directory.path, source])
        guard compiled.status == 0 else { Issue.record("javac: \(compiled.stderr)"); return }
        let real = try run(java, ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath + ":" + directory.path, "HostText"] + Self.hosts)
        guard real.status == 0 else { Issue.record("java: \(real.stderr)"); return }
        let okHttp = real.stdout.split(separator: "\n").map(String.init)
        guard okHttp.count == Self.hosts.count else { Issue.record("\(real.stdout)"); return }
        for (host, expected) in zip(Self.hosts, okHttp) {
            #expect(try OkHttpPolicy.canonicalHost(host) == expected, "\(host)")
        }
    }

    /// A pattern written with a dotted IPv4 tail pins the host OkHttp writes without one.
    @Test func aDottedPatternPinsTheHostOkHttpWrites() throws {
        let pin = try OkHttpPolicy.Pin(pattern: "[::1.2.3.4]", pin: "sha256/" + [UInt8](repeating: 9, count: 32).base64)
        #expect(pin.pattern == "::102:304")
        let policy = OkHttpPolicy(pins: [pin])
        #expect(policy.uncoveredReason(host: try HostName(validating: "::102:304")) == nil)
        #expect(policy.uncoveredReason(host: try HostName(validating: "::1.2.3.5")) != nil)
    }
}
