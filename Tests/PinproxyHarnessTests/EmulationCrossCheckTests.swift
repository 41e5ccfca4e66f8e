import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// One cache for the compiled OkHttp client across this process's tests: it is compiled once.
enum RealLibraryCache {
    static let directory = try! TemporaryDirectory()
}

/// `check --cross-check` in the library: the emulation and the real library row by row.
@Suite(.timeLimit(.minutes(10)))
struct EmulationCrossCheckTests {
    static func example(_ name: String) -> String { "\(packageRoot)/docs/examples/\(name)" }

    @Test func aWrongEmulationMakesTheRowEmulationNotRealAndTheRunFail() throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let genuine = try harness.loadPolicy(contentsOf: Self.example("okhttp.json"))
        let real = RealLibraries.runner(for: genuine, cacheDirectory: RealLibraryCache.directory.path)
        let okhttp = try #require(real.runner, "\(real)")
        #expect(okhttp.name.hasPrefix("okhttp/3."), "\(okhttp.name)")
        // The test double: an emulation that pins the wrong key (the misissuing CA's), while
        // real OkHttp runs the example's own pins.
        let wrong = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: Matrix.host, pin: harness.world.misissuer.spkiPin.okhttp)])
        let report = try harness.crossCheck(wrong, real: real, deviceTrust: .yes, selected: ["direct", "forge"])
        #expect(report.realLibrary == okhttp.name && report.results.count == 2, "\(Matrix.dump(report))")
        // The emulation is Android's (the default); the real OkHttp runs on the JVM: the rows compare the JVM emulation, once said.
        #expect(report.profile == "cleaned-chain, jvm" && report.notes.filter { $0.contains("compared as platform jvm") }.count == 1, "\(report.notes)")
        let onTheJVM = OkHttpPolicy(pins: wrong.pins, platform: .jvm)
        let jvmReport = try harness.crossCheck(onTheJVM, real: real, deviceTrust: .yes, selected: ["direct"])
        #expect(!jvmReport.notes.contains { $0.contains("compared as platform") } && jvmReport.profile == "cleaned-chain, jvm", "\(jvmReport.notes)")

        // The genuine server: the wrong pins refuse it, real OkHttp with the right ones accepts it.
        let direct = try #require(report.results.first { $0.scenario == "direct" })
        #expect(direct.emulationMatchesReal == false && direct.status == .fail, "\(Matrix.dump(report))")
        #expect(direct.actual == "REJECT" && direct.refusedAt == .afterHandshake && direct.real?.actual == "ACCEPT", "\(Matrix.dump(report))")
        #expect(direct.reason.hasPrefix("EMULATION≠REAL: the emulation says REJECT (after handshake), \(okhttp.name) ACCEPT"), "\(direct.reason)")
        // The forged chain with the proxy CA installed: both refuse it after the handshake, on the pins.
        let forge = try #require(report.results.first { $0.scenario == "forge" })
        #expect(forge.emulationMatchesReal == true && forge.status == .pass, "\(Matrix.dump(report))")
        #expect(forge.verdictText == "REJECT (after handshake)" && forge.real?.verdictText == "REJECT (after handshake)", "\(Matrix.dump(report))")
        #expect(forge.real?.reason.contains("Certificate pinning failure!") == true, "\(forge.real?.reason ?? "")")

        #expect(report.disagreements == 1 && report.exitStatus == 1)
        let table = TableReport.text(report)
        let directLine = try #require(table.split(separator: "\n").first { $0.hasPrefix("direct ") })
        #expect(directLine.contains("REJECT (after handshake)  ACCEPT") && directLine.contains("EMULATION≠REAL"), "\(table)")
        #expect(table.contains("SCENARIO  PROXY CA  EXPECTED  EMULATION") && table.contains("  REAL  "), "\(table)")
        #expect(table.contains("the emulation and \(okhttp.name) agree on 1 of 2 rows"), "\(table)")
        let junit = String(decoding: JUnitReport.data(report), as: UTF8.self)
        #expect(junit.contains("type=\"EmulationMismatch\"") && junit.contains("EMULATION≠REAL"), "\(junit)")
        #expect(MarkdownReport.text(report).contains("| direct | yes | ACCEPT | REJECT (after handshake) | ACCEPT | **EMULATION≠REAL** |"))
        let json = try #require(try JSONSerialization.jsonObject(with: JSONReport.data(report)) as? [String: Any])
        #expect(json["disagreements"] as? Int == 1 && json["realLibrary"] as? String == okhttp.name)
        let rows = try #require(json["results"] as? [[String: Any]])
        #expect(rows.map { $0["emulationMatchesReal"] as? Bool } == [false, true])
        #expect((rows.first?["real"] as? [String: Any])?["actual"] as? String == "ACCEPT")
    }

    /// Policies beyond the examples, each proving rules the examples do not reach: an OkHttp
    /// `*.` pattern pinning the root (pattern matching by OkHttp itself, the cleaned chain's
    /// anchor, another host's pins left alone), and curl `--insecure` (no chain check, the pin
    /// alone, after the handshake).
    @Test(arguments: [
        #"{"family": "okhttp", "certificatePinner": {"*.example.com": ["world:root"], "other.example.org": ["world:misissuer"]}}"#,
        #"{"family": "curl", "pinnedpubkey": "world:leaf", "insecure": true}"#,
    ])
    func realLibrariesAgreeOnPolicyVariants(policy text: String) throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let directory = try TemporaryDirectory()
        let policy = try harness.loadPolicy(contentsOf: try directory.write(text, to: "policy.json"))
        let real = RealLibraries.runner(for: policy, cacheDirectory: RealLibraryCache.directory.path)
        let report = try harness.crossCheck(policy, real: real)
        #expect(report.realLibrary != nil && report.results.count == 22, "\(real) \(Matrix.dump(report))")
        #expect(report.results.allSatisfy { $0.emulationMatchesReal == true && $0.real?.actual == $0.actual }, "\(Matrix.dump(report))")
        #expect(report.exitStatus == 0 && report.passed == 22, "\(Matrix.dump(report))")
        if policy.family == .curl {
            // Nothing is refused in the handshake: only the pin decides, after it, in both.
            #expect(report.results.allSatisfy { $0.refusedAt != .handshake && $0.real?.refusedAt != .handshake }, "\(Matrix.dump(report))")
        }
    }

    /// OkHttp 3.x has no `**.` patterns: real 3.13.1 pins nothing under `**.example.com`, the
    /// emulation (OkHttp 4.3+) pins api.example.com. The cross-check shows it and says why.
    @Test func aDoubleStarPatternIsReadByOkHttp3AsALiteralHost() throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let directory = try TemporaryDirectory()
        let policy = try harness.loadPolicy(contentsOf: try directory.write(#"{"family": "okhttp", "certificatePinner": {"**.example.com": ["world:leaf"]}}"#, to: "policy.json"))
        let real = RealLibraries.runner(for: policy, cacheDirectory: RealLibraryCache.directory.path)
        let name = try #require(real.runner?.name)
        try #require(name.hasPrefix("okhttp/3."), "the OkHttp here is \(name)")
        let report = try harness.crossCheck(policy, real: real, deviceTrust: .no, selected: ["direct", "misissued"])
        #expect(report.notes.contains { $0.hasPrefix("\(name) has no ** patterns (OkHttp 4.3.0 added them): it takes **.example.com as a literal host name") }, "\(report.notes)")
        let misissued = try #require(report.results.first { $0.scenario == "misissued" })
        #expect(misissued.verdictText == "REJECT (after handshake)" && misissued.real?.actual == "ACCEPT" && misissued.emulationMatchesReal == false, "\(Matrix.dump(report))")
        #expect(report.results.first?.emulationMatchesReal == true && report.exitStatus == 1, "\(Matrix.dump(report))")
    }

    @Test func withoutTheRealLibraryTheEmulationRunsAloneAndSaysSoOnce() throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let policy = try harness.loadPolicy(contentsOf: Self.example("okhttp.json"))
        let nothing = try TemporaryDirectory()
        let missing = RealLibraries.runner(for: policy, javaLibraries: nothing.path, cacheDirectory: nothing.path)
        #expect(missing.runner == nil)
        let report = try harness.crossCheck(policy, real: missing, deviceTrust: .no, selected: ["direct", "forge"])
        #expect(report.realLibrary == nil && report.exitStatus == 0, "\(Matrix.dump(report))")
        #expect(report.results.allSatisfy { $0.real == nil && $0.emulationMatchesReal == nil && $0.status == .pass }, "\(Matrix.dump(report))")
        let note = "cross-check: no real OkHttp here: \(nothing.path)/okhttp.jar is missing (install libokhttp-java and openjdk-17-jdk-headless); the rows are the emulation alone"
        #expect(report.notes.first == note, "\(report.notes)")
        let table = TableReport.text(report)
        #expect(table.components(separatedBy: "no real OkHttp here").count == 2 && table.contains("  ACTUAL  "), "\(table)")

        // The families no real library runs here, and the OkHttp profile this OkHttp is not.
        for (text, why) in [
            (#"{"family": "afnetworking"}"#, "afnetworking runs on Apple's Security framework (SecTrust), which does not run on Linux"),
            (#"{"family": "android-nsc", "networkSecurityConfig": "nsc.xml"}"#, "android-nsc runs in Android's platform trust manager (Conscrypt), which does not run on Linux"),
            (#"{"family": "okhttp", "profile": "presented-chain", "certificatePinner": {"api.example.com": ["world:leaf"]}}"#, "profile presented-chain models OkHttp before 3.1.2 (CVE-2016-2402)"),
        ] {
            _ = try nothing.write("<network-security-config/>", to: "nsc.xml")
            let loaded = try harness.loadPolicy(contentsOf: try nothing.write(text, to: "policy.json"))
            guard case .unavailable(let reason) = RealLibraries.runner(for: loaded, cacheDirectory: nothing.path) else {
                Issue.record("a real library for \(text)")
                continue
            }
            #expect(reason.hasPrefix(why) || reason.contains(why), "\(reason)")
        }
    }

    @Test func theOkHttpClientIsCompiledOnceIntoTheCache() throws {
        let cache = try TemporaryDirectory()
        let jars = OkHttpJVMRunner.jarNames.map { "\(RealLibraries.debianJavaLibraries)/\($0)" }
        let java = try #require(RealLibraries.executable("java"), "install openjdk-17-jdk-headless")
        let javac = try #require(RealLibraries.executable("javac"), "install openjdk-17-jdk-headless")
        let first = try OkHttpJVMRunner.compile(jars: jars, java: java, javac: javac, cacheDirectory: cache.path)
        #expect(first.compiledNow && first.version.hasPrefix("okhttp/3.13.1 on Java "), "\(first.version)")
        #expect(first.classes.hasPrefix(cache.path + "/okhttp-jvm/"))
        #expect(FileManager.default.fileExists(atPath: first.classes + "/PinproxyOkHttpClient.class"))
        // A runner says where it compiled the client, the first time only.
        let policy = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: Matrix.host, pin: "sha256/" + String(repeating: "A", count: 43) + "=")])
        let fresh = try TemporaryDirectory()
        let compiling = try #require(RealLibraries.runner(for: policy, cacheDirectory: fresh.path).runner)
        #expect(compiling.notes.count == 1 && compiling.notes.first?.hasPrefix("compiled the OkHttp client into \(fresh.path)/okhttp-jvm/") == true, "\(compiling.notes)")
        #expect(RealLibraries.runner(for: policy, cacheDirectory: fresh.path).runner?.notes == [])
        let second = try OkHttpJVMRunner.compile(jars: jars, java: java, javac: javac, cacheDirectory: cache.path)
        #expect(!second.compiledNow && second.classes == first.classes && second.version == first.version)
        // Nothing left of the staging directories.
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/okhttp-jvm") == [URL(fileURLWithPath: first.classes).lastPathComponent])
    }

    @Test func theCacheDirectoryFollowsXDG() {
        #expect(RealLibraries.defaultCacheDirectory(environment: ["XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"]) == "/x/cache/pinproxy")
        #expect(RealLibraries.defaultCacheDirectory(environment: ["XDG_CACHE_HOME": "relative", "HOME": "/home/u"]) == "/home/u/.cache/pinproxy")
        #expect(RealLibraries.defaultCacheDirectory(environment: ["HOME": "/home/u"]) == "/home/u/.cache/pinproxy")
        #expect(RealLibraries.defaultCacheDirectory(environment: [:]) == nil)
    }

    @Test func rowsAgreeOnVerdictAndMomentAndAnUnjudgedSideIsAnError() {
        func row(_ actual: String, _ at: DecisionPoint?, _ status: ScenarioResult.Status = .pass) -> ScenarioResult {
            ScenarioResult(scenario: "forge", deviceTrustsProxyCA: true, expected: .reject, actual: actual, status: status, reason: "why",
                           refusedAt: at, proxyObserved: nil, originReceivedRequest: false, modelDependent: false, weaknesses: [],
                           verdict: nil, clientExitStatus: nil, clientOutput: nil, milliseconds: 0, clientPort: nil)
        }
        let same = CrossCheck.merge(emulated: row("REJECT", .handshake), real: row("REJECT", .handshake), library: "lib")
        #expect(same.emulationMatchesReal == true && same.status == .pass)
        let unknownMoment = CrossCheck.merge(emulated: row("REJECT", .handshake), real: row("REJECT", nil), library: "lib")
        #expect(unknownMoment.emulationMatchesReal == true && unknownMoment.status == .pass)
        let moment = CrossCheck.merge(emulated: row("REJECT", .handshake), real: row("REJECT", .afterHandshake), library: "lib")
        #expect(moment.emulationMatchesReal == false && moment.status == .fail)
        #expect(moment.reason == "EMULATION≠REAL: the emulation says REJECT (handshake), lib REJECT (after handshake) — emulation: why")
        // Both accepted an attack: they agree, and the row fails on the verdict itself.
        let bothWrong = CrossCheck.merge(emulated: row("ACCEPT", nil, .fail), real: row("ACCEPT", nil, .fail), library: "lib")
        #expect(bothWrong.emulationMatchesReal == true && bothWrong.status == .fail && TableReport.resultText(bothWrong) == "FAIL")
        let unjudged = CrossCheck.merge(emulated: row("REJECT", .handshake), real: row("ERROR", nil, .error), library: "lib")
        #expect(unjudged.emulationMatchesReal == nil && unjudged.status == .error && unjudged.reason.hasPrefix("lib could not be judged: why"))
    }
}
