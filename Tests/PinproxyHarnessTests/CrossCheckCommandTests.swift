import Foundation
import PinproxyTestSupport
import Testing

/// `pinproxy check --cross-check` as a user runs it: both verdicts per row, the notes, the exit status.
@Suite(.timeLimit(.minutes(10)))
struct CrossCheckCommandTests {
    /// The compiled OkHttp client, cached once for every run of this suite.
    static let cache = ["XDG_CACHE_HOME": RealLibraryCache.directory.path]

    /// Every `okhttp` and `curl` example in docs/examples.
    static let examples: [String] = {
        let directory = packageRoot + "/docs/examples"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { name in
            guard name.hasSuffix(".json"), let data = FileManager.default.contents(atPath: directory + "/" + name),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return false }
            return ["okhttp", "curl"].contains(object["family"] as? String)
        }.sorted()
    }()

    /// The table's rows as cells, cut where the header's columns start (the reason runs to the end).
    static func cells(_ stdout: String) throws -> (header: [String], rows: [[String]]) {
        let lines = stdout.split(separator: "\n").map { Array($0) }
        let header = try #require(lines.first { String($0).hasPrefix("SCENARIO ") })
        var starts: [Int] = [0]
        // Columns are two spaces apart at least; one space is inside a cell ("PROXY CA").
        for index in 2..<header.count where header[index] != " " && header[index - 1] == " " && header[index - 2] == " " { starts.append(index) }
        func cut(_ line: [Character]) -> [String] {
            starts.enumerated().map { column, start in
                let end = column + 1 < starts.count ? min(starts[column + 1], line.count) : line.count
                return start < end ? String(line[start..<end]).trimmingCharacters(in: .whitespaces) : ""
            }
        }
        let names = ["direct", "passthrough", "forge", "stuff", "self-signed", "wrong-host", "expired", "not-yet-valid", "untrusted-ca", "misissued", "fake-parent"]
        let rows = lines.filter { line in names.contains { String(line).hasPrefix($0 + " ") } }.map(cut)
        return (cut(header), rows)
    }

    @Test(arguments: examples)
    func everyOkHttpAndCurlExampleAgreesWithTheRealLibrary(example: String) throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let r = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/" + example, "--cross-check", "--scenarios", "attacks",
                              "--json", directory.file("r.json")], environment: Self.cache)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.file("r.json")))) as? [String: Any])
        let rows = try #require(json["results"] as? [[String: Any]])
        #expect(rows.count == 22, "\(r.output)")
        if json["profile"] as? String == "presented-chain, android" {
            // OkHttp before 3.1.2 does not run here: said once, before the rows, and the emulation runs alone.
            let note = "note: cross-check: profile presented-chain models OkHttp before 3.1.2 (CVE-2016-2402)"
            #expect(r.stdout.components(separatedBy: note).count == 2, "\(r.stdout)")
            #expect(r.stdout.range(of: note)!.lowerBound < r.stdout.range(of: "SCENARIO ")!.lowerBound)
            #expect(json["realLibrary"] == nil && rows.allSatisfy { $0["real"] == nil })
            #expect(r.status == 1, "the emulation's stuff row reproduces CVE-2016-2402: \(r.output)")
            return
        }
        #expect(r.status == 0, "\(r.output)")
        if json["family"] as? String == "okhttp" {
            // The examples are Android policies; the real OkHttp runs on the JVM: said once, before the rows.
            #expect(json["profile"] as? String == "cleaned-chain, jvm", "\(json["profile"] ?? "-")")
            let note = "note: the policy's platform is android: compared as platform jvm, where the real library runs"
            #expect(r.stdout.components(separatedBy: note).count == 2, "\(r.stdout)")
            #expect(r.stdout.range(of: note).map { $0.lowerBound < r.stdout.range(of: "SCENARIO ")!.lowerBound } == true, "\(r.stdout)")
        } else {
            #expect(!r.stdout.contains("compared as platform"), "\(r.stdout)")
        }
        let library = try #require(json["realLibrary"] as? String, "\(r.output)")
        #expect(library.hasPrefix(json["family"] as? String == "curl" ? "curl 7." : "okhttp/3.13.1 on Java "), "\(library)")
        #expect(json["disagreements"] as? Int == 0)
        for row in rows {
            let real = try #require(row["real"] as? [String: Any], "\(row)")
            #expect(row["emulationMatchesReal"] as? Bool == true && row["status"] as? String == "PASS", "\(row["scenario"] ?? "?"): \(r.stdout)")
            #expect(real["actual"] as? String == row["actual"] as? String && real["refusedAt"] as? String == row["refusedAt"] as? String,
                    "\(row["scenario"] ?? "?"): emulation \(row["actual"] ?? "?") \(row["refusedAt"] ?? "-"), real \(real["actual"] ?? "?") \(real["refusedAt"] ?? "-")")
        }
        // The table: both verdicts on every row, equal, each with its moment.
        let (header, table) = try Self.cells(r.stdout)
        #expect(header.prefix(6) == ["SCENARIO", "PROXY CA", "EXPECTED", "EMULATION", "REAL", "RESULT"], "\(header)")
        #expect(table.count == 22, "\(r.stdout)")
        for cells in table {
            #expect(cells[3] == cells[4] && cells[5] == "PASS", "\(cells.prefix(6))")
            #expect(cells[3] == "ACCEPT" || cells[3] == "REJECT (handshake)" || cells[3] == "REJECT (after handshake)", "\(cells.prefix(6))")
        }
        #expect(r.stdout.contains("22 scenarios: 22 passed, 0 failed, 0 errors; the emulation and \(library) agree on 22 of 22 rows in "), "\(r.stdout)")
    }

    /// `--scenarios` chooses the rows with `--cross-check` as without it: the rotations run
    /// through the real library too, and a family with no real library here runs the same rows
    /// as a plain check (the default, `all`, included).
    @Test func crossCheckRunsTheRowsScenariosAsksFor() throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let rotations = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/okhttp.json", "--cross-check", "--scenarios", "rotations",
                                      "--json", directory.file("rotations.json")], environment: Self.cache)
        #expect(rotations.status == 0, "\(rotations.output)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.file("rotations.json")))) as? [String: Any])
        let rows = try #require(json["results"] as? [[String: Any]])
        #expect(rows.count == 14 && rows.allSatisfy { $0["real"] != nil && $0["emulationMatchesReal"] as? Bool == true }, "\(rotations.output)")
        #expect(rotations.stdout.contains("ROTATION ") && !rotations.stdout.contains("SCENARIO "), "\(rotations.stdout)")
        let mixed = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/okhttp.json", "--cross-check", "--scenarios", "all",
                                  "--profiles", "direct,re-key"], environment: Self.cache)
        #expect(mixed.status == 0 && mixed.stdout.contains("the emulation and okhttp/3.13.1"), "\(mixed.output)")
        for scenarios in [[String](), ["--scenarios", "rotations"]] {
            let plain = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/trustkit.json"] + scenarios)
            let crossed = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/trustkit.json", "--cross-check"] + scenarios)
            let count = { (output: String) in output.split(separator: "\n").first { $0.contains(" scenarios: ") }.map(String.init) ?? "" }
            #expect(plain.status == crossed.status && !count(plain.stdout).isEmpty
                    && count(plain.stdout).prefix(while: { $0 != ":" }) == count(crossed.stdout).prefix(while: { $0 != ":" }),
                    "\(scenarios): \(count(plain.stdout)) against \(count(crossed.stdout))")
        }
    }

    @Test func aFamilyWithoutARealLibraryHereRunsTheEmulationAloneAndSaysSoOnce() throws {
        try CheckCommandTests.requireBinary()
        let r = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/afnetworking-publickey.json", "--cross-check", "--profiles", "direct,forge"],
                             environment: Self.cache)
        #expect(r.status == 0, "\(r.output)")
        let note = "note: cross-check: afnetworking runs on Apple's Security framework (SecTrust), which does not run on Linux"
        #expect(r.stdout.components(separatedBy: note).count == 2 && r.stdout.hasPrefix(note), "\(r.stdout)")
        #expect(r.stdout.contains("  ACTUAL  ") && !r.stdout.contains("EMULATION"), "\(r.stdout)")
    }

    @Test func crossCheckNeedsAPolicyFile() throws {
        try CheckCommandTests.requireBinary()
        for arguments in [["--cross-check"], ["--cross-check", "--client", "curl {url}"]] {
            let r = try pinproxy(["check"] + arguments)
            #expect(r.status == 2 && r.stderr.split(separator: "\n").count == 1, "\(arguments): \(r.output)")
        }
        let r = try pinproxy(["check", "--cross-check", "--client", "curl {url}"])
        #expect(r.stderr.contains("--cross-check runs the real library a policy file names: give --policy FILE, not --client"), "\(r.stderr)")
    }
}
