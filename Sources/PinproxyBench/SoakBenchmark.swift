import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy

/// `pinproxy bench soak`: many clients for minutes through pinproxy in
/// forward mode, recording to `--har` and `--events` files, watching the
/// proxy's memory and descriptors.
///
/// The clients (``SoakClientScript``, Python asyncio, one process) loop over
/// a mix until the time is up: keep-alive connections with several
/// requests, one request per new connection, uploads, downloads abandoned
/// part-way, and CONNECTs to hosts served by every attack profile whose
/// certificate a verifying client refuses. Every host maps to one nginx
/// origin (``ProxyConfiguration/upstreamAddresses``). Each interval prints
/// what the clients did, their unexpected errors and the proxy's resident
/// set and open descriptors; at the end every request a client completed
/// must be in the HAR (each carries a unique `id` in its query), except
/// those to the passthrough host, which the proxy tunnels without seeing.
public struct SoakBenchmark {
    public struct Options: Sendable {
        public var minutes = 10.0
        public var clients = 1000
        /// Seconds between samples.
        public var interval = 10.0
        public var loops: Int?
        public init() {}
    }

    /// One interval's totals so far.
    public struct Sample: Sendable {
        public var seconds: Double
        public var requests: Int
        public var connections: Int
        public var uploads: Int
        public var aborted: Int
        public var refused: Int
        public var errors: Int
        public var residentMegabytes: Double
        public var descriptors: Int
        public var openConnections: Int
    }

    public struct Result: Sendable {
        public var samples: [Sample]
        /// Unexpected errors by kind, as the clients saw them.
        public var errorKinds: [String: Int]
        /// Requests the clients completed.
        public var completed: Int
        /// Of those, how many the HAR lacks.
        public var missingFromHAR: Int
        public var harEntries: Int
        public var capture: CaptureStatistics
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    /// Hosts the clients accept (the proxy CA is theirs) and hosts whose certificate they refuse.
    static let acceptedProfiles: [AttackProfile] = [.forge, .passthrough, .stuff]
    static var refusedProfiles: [AttackProfile] {
        AttackCatalog.standard.profiles.filter { !acceptedProfiles.contains($0) }
    }
    static func host(_ profile: AttackProfile) -> String { "\(profile.name).soak.test" }

    public func run(progress: (Sample) -> Void = { _ in }) throws -> Result {
        guard let python = BenchTools.find("python3") else { throw PinproxyError(.io, "python3 is needed for the soak clients") }
        ProcessFigures.raiseDescriptorLimit()
        let profiles = SoakBenchmark.acceptedProfiles + SoakBenchmark.refusedProfiles
        let origin = try BenchOrigin(bulkMegabytes: 4, hostNames: profiles.map(SoakBenchmark.host))
        defer { origin.stop() }
        let directory = origin.directory

        var configuration = ProxyConfiguration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.upstreamTrust = .file(origin.caPath)
        configuration.eventLoops = options.loops
        configuration.timeouts.drain = 2
        var rules = InterceptionRules()
        for profile in profiles where profile != .forge {
            let pattern = try HostPattern(parsing: SoakBenchmark.host(profile))
            if profile == .passthrough { rules.passthrough.append(pattern) } else { rules.rules.append(.init(pattern: pattern, profile: profile)) }
        }
        configuration.rules = rules
        for profile in profiles { try configuration.upstreamAddresses.set(SoakBenchmark.host(profile), to: "127.0.0.1") }
        var misissuing = CertificateAuthority.Options()
        misissuing.commonName = "pinproxy soak misissuing CA"
        configuration.misissuingAuthority = try CertificateAuthority.create(misissuing)
        var logger = Logger(label: "pinproxy-soak")
        logger.logLevel = .critical
        let authority = try CertificateAuthority.create()
        let harPath = directory + "/soak.har", eventsPath = directory + "/soak.jsonl"
        let daemon = try ProxyDaemon(configuration: configuration, authority: authority, harPath: harPath, eventsPath: eventsPath,
                                     logger: logger)
        let port = try daemon.start().port
        var stopped = false
        defer { if !stopped { daemon.stop() } }

        // The clients trust the proxy CA (forge, stuff) and the origin's CA (passthrough).
        let trust = directory + "/clients-ca.pem"
        let originCA = try String(contentsOfFile: origin.caPath, encoding: .utf8)
        try FileIO.write(Array((authority.certificate.pemEncoded + originCA).utf8), to: trust, mode: 0o644)
        let script = directory + "/soak_client.py", ids = directory + "/completed-ids"
        try FileIO.write(Array(SoakClientScript.source.utf8), to: script, mode: 0o644)
        func list(_ profiles: [AttackProfile]) -> String { profiles.map { "\"\(SoakBenchmark.host($0))\"" }.joined(separator: ",") }
        let hosts = "{\"ok\":[\(list(SoakBenchmark.acceptedProfiles))],\"refused\":[\(list(SoakBenchmark.refusedProfiles))],\"tunnelled\":[\(list([.passthrough]))]}"

        let clients = Process()
        clients.executableURL = URL(fileURLWithPath: python)
        clients.arguments = [script, String(port), String(origin.port), trust, String(options.clients),
                             String(options.minutes * 60), String(options.interval), ids, hosts]
        let output = Pipe()
        clients.standardOutput = output
        clients.standardError = FileHandle.nullDevice
        try clients.run()
        defer { if clients.isRunning { clients.terminate() } }

        var samples: [Sample] = []
        var kinds: [String: Int] = [:]
        var buffered = Data()
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffered += chunk
            while let newline = buffered.firstIndex(of: 0x0a) {
                let line = buffered[buffered.startIndex..<newline]
                buffered = Data(buffered[buffered.index(after: newline)...])
                guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { continue }
                kinds = (object["kinds"] as? [String: Int]) ?? kinds
                if object["final"] != nil { continue }
                func count(_ key: String) -> Int { object[key] as? Int ?? 0 }
                let sample = Sample(
                    seconds: object["t"] as? Double ?? 0, requests: count("requests"), connections: count("connections"),
                    uploads: count("uploads"), aborted: count("aborted"), refused: count("refused"), errors: count("errors"),
                    residentMegabytes: ProcessFigures.residentMegabytes(), descriptors: ProcessFigures.openDescriptors(),
                    openConnections: daemon.server.openConnections)
                samples.append(sample)
                progress(sample)
            }
        }
        clients.waitUntilExit()

        daemon.server.recorder.flush()
        let completed = Set((try String(contentsOfFile: ids, encoding: .utf8)).split(separator: "\n").compactMap { Int($0) })
        let recorded = try SoakBenchmark.requestIDs(inHAR: harPath)
        daemon.stop()
        stopped = true
        return Result(samples: samples, errorKinds: kinds, completed: completed.count,
                      missingFromHAR: completed.subtracting(recorded.ids).count, harEntries: recorded.entries,
                      capture: daemon.server.recorder.statistics)
    }

    /// The `id=N` of every entry's URL, scanned from the file's bytes (a
    /// long soak's HAR is too large to parse whole), and how many entries
    /// there are (each has one `"startedDateTime"`).
    static func requestIDs(inHAR path: String) throws -> (ids: Set<Int>, entries: Int) {
        let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        let marker = Array(#""url":""#.utf8), entryMarker = Array(#""startedDateTime""#.utf8)
        var ids = Set<Int>(), entries = 0
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            let b = bytes.bindMemory(to: UInt8.self)
            var i = 0
            func matches(_ m: [UInt8], at i: Int) -> Bool {
                i + m.count <= b.count && (0..<m.count).allSatisfy { b[i + $0] == m[$0] }
            }
            while i < b.count {
                if b[i] == UInt8(ascii: "\""), matches(entryMarker, at: i) {
                    entries += 1
                    i += entryMarker.count
                } else if b[i] == UInt8(ascii: "\""), matches(marker, at: i) {
                    i += marker.count
                    while i < b.count, b[i] != UInt8(ascii: "\"") {
                        if b[i] == UInt8(ascii: "="), i >= 3, b[i - 2] == UInt8(ascii: "i"), b[i - 1] == UInt8(ascii: "d") {
                            var value = 0, j = i + 1
                            while j < b.count, let digit = Int(exactly: b[j]) .map({ $0 - 48 }), (0...9).contains(digit) {
                                value = value * 10 + digit
                                j += 1
                            }
                            ids.insert(value)
                        }
                        i += 1
                    }
                } else {
                    i += 1
                }
            }
        }
        return (ids, entries)
    }
}

/// This process's resident set and open descriptors, from /proc.
enum ProcessFigures {
    /// Raises the soft descriptor limit to the hard one, or to `wanted` when
    /// more is needed and allowed (root may raise the hard limit too); each
    /// proxied connection holds two. Child processes inherit it.
    static func raiseDescriptorLimit(to wanted: Int = 0) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let target = max(rlim_t(wanted), limit.rlim_max)
        var raised = rlimit(rlim_cur: target, rlim_max: target)
        if target > limit.rlim_max, setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    static func residentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) else { return 0 }
        return kilobytes / 1024
    }

    /// Hands the allocator's free pages back to the system (glibc's
    /// `malloc_trim`), so that the resident set counts what is in use rather
    /// than what earlier, closed connections left in the heap. Looked up at
    /// run time: `malloc.h` is not part of Swift's Glibc module.
    static func returnFreeMemory() {
        #if os(Linux)
        typealias MallocTrim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        #endif
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }
}
