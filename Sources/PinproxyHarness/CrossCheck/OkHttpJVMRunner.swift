import Foundation
import PinproxyCertificates
import PinproxyPinning

/// Real OkHttp on the JVM: Debian's `libokhttp-java` under the machine's JDK, through the
/// small client in ``OkHttpJVMClient``, configured with the policy's `certificatePinner`.
///
/// The client is compiled on first use into the cache directory, under a key made of its
/// source, the jars (path, size, modification time) and the compiler, so an upgraded package
/// or JDK compiles it again; concurrent checks each compile into a staging directory and
/// the first rename wins.
public struct OkHttpJVMRunner: RealLibraryRunner {
    /// The jars the client needs, in `libokhttp-java`'s names.
    public static let jarNames = ["okhttp.jar", "okio.jar", "okhttp-tls.jar"]
    /// What a machine without them installs.
    static let packages = "libokhttp-java and openjdk-17-jdk-headless"

    public let name: String
    let java: String
    let classpath: String
    /// `certificatePinner` entries as OkHttp's builder takes them: pattern, then pin.
    let pins: [(pattern: String, pin: String)]
    /// Where this run compiled the client; nil when it was in the cache already.
    let compiledInto: String?

    /// The runner, or why OkHttp cannot run here (what is missing, what to install).
    static func prepare(pins: [OkHttpPolicy.Pin], javaLibraries: String, cacheDirectory: String) -> RealLibraryAvailability {
        let jars = jarNames.map { (javaLibraries as NSString).appendingPathComponent($0) }
        if let missing = jars.first(where: { !FileManager.default.fileExists(atPath: $0) }) {
            return .unavailable("no real OkHttp here: \(missing) is missing (install \(packages)); the rows are the emulation alone")
        }
        guard let java = RealLibraries.executable("java"), let javac = RealLibraries.executable("javac") else {
            return .unavailable("no real OkHttp here: no java and javac on PATH (install \(packages)); the rows are the emulation alone")
        }
        do {
            let client = try compile(jars: jars, java: java, javac: javac, cacheDirectory: cacheDirectory)
            return .available(OkHttpJVMRunner(
                name: client.version, java: java, classpath: ([client.classes] + jars).joined(separator: ":"),
                pins: pins.map { ($0.pattern, $0.pinText) }, compiledInto: client.compiledNow ? client.classes : nil))
        } catch {
            return .unavailable("no real OkHttp here: \(ScenarioRunner.text(of: error)); the rows are the emulation alone")
        }
    }

    /// OkHttp matches `**.` patterns since 4.3.0 (CHANGELOG: "Match any number of subdomains
    /// with two asterisks"); before, `Pin` takes `**.example.com` as a literal host name that no
    /// host equals, so the pins under it apply nowhere. The emulation reads `**.` as 4.3+ does.
    public var notes: [String] {
        let compiled = compiledInto.map { ["compiled the OkHttp client into \($0) (once: later checks reuse it)"] } ?? []
        return compiled + doubleStarNotes
    }

    /// The real client runs on the JVM, so it is compared with the JVM emulation (the JDK's PKIX
    /// trust manager and OkHttp's own chain cleaner) under the same pins; an Android policy
    /// says so, since Conscrypt does not run here.
    public func emulation(of policy: any PinningPolicy) -> (policy: any PinningPolicy, note: String?) {
        guard var okhttp = policy as? OkHttpPolicy, okhttp.platform != .jvm else { return (policy, nil) }
        let written = okhttp.platform.rawValue
        okhttp.platform = .jvm
        return (okhttp, "the policy's platform is \(written): compared as platform jvm, where the real library runs (the same pins; Android's Conscrypt does not run on Linux)")
    }

    private var doubleStarNotes: [String] {
        let doubleStar = pins.map(\.pattern).filter { $0.hasPrefix("**.") }
        guard !doubleStar.isEmpty, let major = Int(name.dropFirst("okhttp/".count).prefix { $0.isNumber }), major < 4 else { return [] }
        let patterns = Array(Set(doubleStar)).sorted().joined(separator: ", ")
        return ["\(name) has no ** patterns (OkHttp 4.3.0 added them): it takes \(patterns) as a literal host name that no host equals, so those pins apply nowhere there, while the emulation reads them as OkHttp 4.3+ does; rows that differ on this are EMULATION≠REAL"]
    }

    public func command(deviceTrustsProxyCA: Bool, in harness: Harness) throws -> ClientCommand {
        let q = ClientCommand.quote
        // Options for a short-lived JVM: C1 only, the serial collector.
        var words = [q(java), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", q(classpath), OkHttpJVMClient.className,
                     "{url}", "{proxy}", "{host}", "{address}", deviceTrustsProxyCA ? "{device-ca}" : "{ca}"]
        for entry in pins { words += [q(entry.pattern), q(entry.pin)] }
        return try ClientCommand(words.joined(separator: " "))
    }

    /// The compiled client in the cache, and the OkHttp and Java versions it reports.
    struct CompiledClient {
        let classes: String
        let version: String
        /// Whether this call compiled it (false: found in the cache).
        let compiledNow: Bool
    }

    static func compile(jars: [String], java: String, javac: String, cacheDirectory: String) throws -> CompiledClient {
        // /usr/bin/javac is an alternatives link: the JDK it leads to is what compiles.
        var key = OkHttpJVMClient.source + "\n" + URL(fileURLWithPath: javac).resolvingSymlinksInPath().path
        for jar in jars {
            let attributes = try? FileManager.default.attributesOfItem(atPath: URL(fileURLWithPath: jar).resolvingSymlinksInPath().path)
            let size = (attributes?[.size] as? NSNumber)?.int64Value ?? -1
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            key += "\n\(jar) \(size) \(modified)"
        }
        let parent = (cacheDirectory as NSString).appendingPathComponent("okhttp-jvm")
        let directory = (parent as NSString).appendingPathComponent(Array(OpenSSL.sha256(Array(key.utf8)).prefix(12)).hexString())
        let versionFile = (directory as NSString).appendingPathComponent("version.txt")
        if let version = try? String(contentsOfFile: versionFile, encoding: .utf8),
           FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent(OkHttpJVMClient.className + ".class")) {
            return CompiledClient(classes: directory, version: version.trimmingCharacters(in: .whitespacesAndNewlines), compiledNow: false)
        }
        let staging = (parent as NSString).appendingPathComponent(".staging-\(getpid())-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        } catch {
            throw PinproxyError(.io, "cannot create the cache directory \(parent): \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(atPath: staging) }
        let sourceFile = (staging as NSString).appendingPathComponent(OkHttpJVMClient.className + ".java")
        try FileIO.write(Array(OkHttpJVMClient.source.utf8), to: sourceFile, mode: 0o644)
        let q = ClientCommand.quote
        let classpath = jars.joined(separator: ":")
        let environment = ProcessInfo.processInfo.environment
        let compiled = try ChildProcess.run(shell: "\(q(javac)) -nowarn -cp \(q(classpath)) -d \(q(staging)) \(q(sourceFile))",
                                            environment: environment, timeout: 300)
        guard compiled.status == 0 else {
            throw PinproxyError(.io, "javac could not compile the OkHttp client (exit \(compiled.status)): \(compiled.output.prefix(400))")
        }
        let asked = try ChildProcess.run(shell: "\(q(java)) -cp \(q(staging + ":" + classpath)) \(OkHttpJVMClient.className) --version",
                                         environment: environment, timeout: 120)
        let version = asked.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard asked.status == 0, version.hasPrefix("okhttp/") else {
            throw PinproxyError(.io, "the compiled OkHttp client does not start (exit \(asked.status)): \(asked.output.prefix(400))")
        }
        try FileIO.write(Array((version + "\n").utf8), to: (staging as NSString).appendingPathComponent("version.txt"), mode: 0o644)
        // Another check may have finished first: its directory is as good as ours.
        if rename(staging, directory) != 0 && !FileManager.default.fileExists(atPath: versionFile) {
            throw PinproxyError(.io, "cannot move the compiled OkHttp client into \(directory): \(String(cString: strerror(errno)))")
        }
        return CompiledClient(classes: directory, version: version, compiledNow: true)
    }
}
