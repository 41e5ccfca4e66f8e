import Foundation
import Testing
import PinproxyCertificates
import PinproxyTestSupport

/// Every command reports a failure as one line on stderr, `pinproxy: error: …`, and exits 2.
@Suite struct ErrorReportingTests {
    /// Checks the one-line contract and returns the line (without its newline).
    @discardableResult
    static func expectOneErrorLine(_ result: ProcessResult, containing fragment: String? = nil,
                                   sourceLocation: SourceLocation = #_sourceLocation) -> String {
        #expect(result.status == 2, "exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "stdout: \(result.stdout)", sourceLocation: sourceLocation)
        #expect(result.stderr.hasSuffix("\n") && result.stderr.filter { $0 == "\n" }.count == 1,
                "not one line: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.hasPrefix("pinproxy: error: "), "\(result.stderr)", sourceLocation: sourceLocation)
        if let fragment {
            #expect(result.stderr.contains(fragment), "missing \(fragment): \(result.stderr)", sourceLocation: sourceLocation)
        }
        return String(result.stderr.dropLast())
    }

    /// Every command and subcommand `--help` lists, found by walking the help tree.
    static func commandPaths() throws -> [[String]] {
        var found: [[String]] = []
        var pending: [[String]] = [[]]
        while let path = pending.popLast() {
            let help = try pinproxy(path + ["--help"])
            #expect(help.status == 0, "\(path): \(help.output)")
            let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            guard let start = lines.firstIndex(of: "SUBCOMMANDS:") else { continue }
            for line in lines[(start + 1)...] {
                guard line.hasPrefix("  "), !line.hasPrefix("  See ") else { break }
                // A command's line starts its name after two spaces; wrapped
                // abstracts continue further in.
                guard let match = line.prefixMatch(of: /\ \ ([a-z0-9][a-z0-9-]*)(\s|$)/) else { continue }
                let name = String(match.output.1)
                guard name != "help", path.count < 3 else { continue }
                found.append(path + [name])
                pending.append(path + [name])
            }
        }
        return found
    }

    @Test func anUnknownFlagIsOneLineInEveryCommand() throws {
        let paths = try ErrorReportingTests.commandPaths()
        let names = Set(paths.map { $0.joined(separator: " ") })
        for expected in ["ca", "ca init", "ca show", "ca import", "forge", "serve", "verify", "pin",
                         "bench", "bench forge", "bench proxy", "bench http1"] {
            #expect(names.contains(expected), "help does not list \(expected): \(names.sorted())")
        }
        for path in [[]] + paths {
            let line = ErrorReportingTests.expectOneErrorLine(try pinproxy(path + ["--no-such-flag"]))
            // Before any missing required option: the unknown one is the mistake to fix.
            #expect(line.contains("unknown option '--no-such-flag'"), "\(line)")
            #expect(!line.contains("did you mean"), "\(line)")
            let command = (["pinproxy"] + path).joined(separator: " ")
            #expect(line.hasSuffix("(see '\(command) --help')"), "\(line)")
        }
    }

    /// A mistyped option is named, with the nearest known one, even when a required option is missing too.
    @Test(arguments: [
        (["check", "--polcy", "x.json"], "unknown option '--polcy' (did you mean '--policy'?) (see 'pinproxy check --help')"),
        (["verify", "--polcy", "x.json"], "unknown option '--polcy' (did you mean '--policy'?) (see 'pinproxy verify --help')"),
        (["verify", "--policy", "x.json", "--chian=c.pem", "--host", "a.test"], "unknown option '--chian' (did you mean '--chain'?) (see 'pinproxy verify --help')"),
        (["ca", "init", "--dri", "ca"], "unknown option '--dri' (did you mean '--dir'?) (see 'pinproxy ca init --help')"),
        (["ca", "import", "--crt", "c.pem"], "unknown option '--crt' (did you mean '--cert'?) (see 'pinproxy ca import --help')"),
        (["serve", "--listn", "127.0.0.1:0"], "unknown option '--listn' (did you mean '--listen'?) (see 'pinproxy serve --help')"),
        (["pin", "-x", "c.pem"], "unknown option '-x' (see 'pinproxy pin --help')"),
        (["--polcy"], "unknown option '--polcy' (see 'pinproxy --help')"),
        // An option's value is not an option, whatever it looks like.
        (["serve", "--rule", "--x=forge", "--lisen", "127.0.0.1:0"], "unknown option '--lisen' (did you mean '--listen'?)"),
    ])
    func aMistypedOptionIsNamed(arguments: [String], message: String) throws {
        let dir = try TemporaryDirectory()
        let line = ErrorReportingTests.expectOneErrorLine(try pinproxy(arguments, in: dir.path), containing: message)
        #expect(!line.contains("Missing expected argument"), "\(line)")
    }

    @Test(arguments: [
        (["ca", "init", "--days", "0"], "--days must be between 1 and 36500"),
        (["ca", "init", "--days", "abc"], "The value 'abc' is invalid for '--days <days>'"),
        (["ca", "import"], "Missing expected argument '--cert <file>'"),
        (["forge", "bad name.test"], "invalid host name \"bad name.test\""),
        (["serve", "--loops", "0"], "--loops must be 1–256"),
        (["serve", "--listen", "nonsense"], "invalid address 'nonsense'"),
        (["serve", "--listen", ":19087"], "invalid address ':19087': no host before ':'; write 127.0.0.1:19087 or the bare port 19087 for loopback"),
        (["serve", "--listen", "proxy.example:19087"], "invalid address 'proxy.example:19087': the host must be an IP address or localhost"),
        (["serve", "--upstream-http2", "no"], "--upstream-http2 must be on or off, not 'no'"),
        (["verify", "--policy", "p.json", "--chain", "c.pem", "--host", "a.test", "--at", "yesterday"],
         "--at 'yesterday' is not an ISO 8601 time"),
        (["pin", "--timeout", "0", "--connect", "127.0.0.1:1"], "--timeout must be more than 0"),
        (["bench", "http1", "--rounds", "0"], "--rounds must be 1–100"),
        (["ca", "init", "--days", "-5"], "--days -5: a value that starts with '-' is read as an option; write --days=-5 (see 'pinproxy ca init --help')"),
        (["ca", "init", "--days=-5"], "--days must be between 1 and 36500"),
        (["verify", "--policy", "p.json", "--chain", "c.pem", "--host", "-a.example.com"],
         "--host -a.example.com: a value that starts with '-' is read as an option; write --host=-a.example.com (see 'pinproxy verify --help')"),
        // A known option where the value should be is a missing value, as the parser says.
        (["verify", "--policy", "p.json", "--chain", "c.pem", "--host", "-h"], "Missing value for '--host <host>'"),
        (["chek", "--policy", "p.json"], "unknown command 'chek' (did you mean 'check'?) (see 'pinproxy --help')"),
        (["ca", "chow"], "unknown command 'chow' (did you mean 'show'?) (see 'pinproxy ca --help')"),
        (["bench", "proxi"], "unknown command 'proxi' (did you mean 'proxy'?) (see 'pinproxy bench --help')"),
        (["xyzzy"], "unknown command 'xyzzy'; the commands here are ca, forge, serve, verify, pin, check, demo, bench (see 'pinproxy --help')"),
        // Two options naming one output file, or an output over the CA's own files.
        (["forge", "a.test", "--out", "same.pem", "--key-out", "./same.pem"], "--out and --key-out both name same.pem: each needs a file of its own"),
        (["forge", "a.test", "--dir", "ca", "--out", "ca/pinproxy-ca-key.pem"],
         "--out ca/pinproxy-ca-key.pem is the CA's own pinproxy-ca-key.pem: writing there would destroy the CA; name another file"),
        (["serve", "--har", "x.out", "--events", "x.out"], "--har and --events both name x.out: each needs a file of its own"),
        (["serve", "--ca-dir", "ca", "--har", "ca/pinproxy-ca.pem"], "--har ca/pinproxy-ca.pem is the CA's own pinproxy-ca.pem"),
        (["serve", "--ca-dir", "ca", "--events", "ca/../ca/pinproxy-ca.p12"], "--events ca/../ca/pinproxy-ca.p12 is the CA's own pinproxy-ca.p12"),
        (["check", "--policy", "p.json", "--junit", "r.xml", "--markdown", "r.xml"], "--junit and --markdown both name r.xml"),
        // The help command names the same mistake rather than printing the top-level help.
        (["help", "chek"], "unknown command 'chek' (did you mean 'check'?) (see 'pinproxy --help')"),
        (["help", "ca", "chow"], "unknown command 'chow' (did you mean 'show'?) (see 'pinproxy --help')"),
    ])
    func aBadValueIsOneLine(arguments: [String], message: String) throws {
        let dir = try TemporaryDirectory()
        ErrorReportingTests.expectOneErrorLine(try pinproxy(arguments, in: dir.path), containing: message)
        // Nothing was created on the way to the error.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test(arguments: [
        ["ca", "import", "--cert", "missing.pem"],
        ["pin", "missing.pem"],
        ["verify", "--policy", "policy.json", "--chain", "missing.pem", "--host", "a.test"],
        ["serve", "--listen", "127.0.0.1:0", "--upstream-ca", "missing.pem"],
    ])
    func anUnreadableFileIsOneLine(arguments: [String]) throws {
        let dir = try TemporaryDirectory()
        ErrorReportingTests.expectOneErrorLine(try pinproxy(arguments, in: dir.path), containing: "missing.pem: no such file")
    }

    /// Every option that reads a file says, in plain words and with the path, that it got a directory.
    @Test func aDirectoryGivenForAFileIsNamedSoByEveryCommand() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.file("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(try pinproxy(["ca", "init", "--dir", dir.file("ca")]).status == 0)
        let cert = dir.file("ca/pinproxy-ca.pem"), key = dir.file("ca/pinproxy-ca-key.pem")
        #expect(FileManager.default.fileExists(atPath: cert) && FileManager.default.fileExists(atPath: key))
        let policy = try dir.write(#"{"family": "okhttp", "certificatePinner": {"a.test": ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}"#, to: "policy.json")
        let pinsFolder = try dir.write(#"{"family": "afnetworking", "SSLPinningMode": "publicKey", "pinnedCertificates": ["folder"]}"#, to: "pins.json")
        let plistFolder = try dir.write(#"{"family": "trustkit", "infoPlist": "folder"}"#, to: "trustkit.json")
        let verify = ["verify", "--policy", policy, "--chain", cert, "--host", "a.test"]
        let cases: [[String]] = [
            ["ca", "import", "--dir", dir.file("imported"), "--cert", folder],
            ["ca", "import", "--dir", dir.file("imported"), "--cert", cert, "--key", folder],
            ["ca", "import", "--dir", dir.file("imported"), "--cert", cert, "--password-file", folder],
            ["ca", "show", "--dir", dir.file("folder-ca")],
            ["pin", folder],
            ["verify", "--policy", folder, "--chain", cert, "--host", "a.test"],
            ["verify", "--policy", policy, "--chain", folder, "--host", "a.test"],
            verify + ["--trust-store", folder],
            verify + ["--user-anchor", folder],
            ["verify", "--policy", pinsFolder, "--chain", cert, "--host", "a.test"],
            ["verify", "--policy", plistFolder, "--chain", cert, "--host", "a.test"],
            ["check", "--policy", folder],
            ["check", "--policy", policy, "--origin-chain", folder, "--origin-key", key],
            ["check", "--policy", policy, "--origin-chain", cert, "--origin-key", folder],
            ["serve", "--listen", "127.0.0.1:0", "--upstream-ca", folder],
        ]
        try FileManager.default.createDirectory(atPath: dir.file("folder-ca/pinproxy-ca.pem"), withIntermediateDirectories: true)
        for arguments in cases {
            let line = ErrorReportingTests.expectOneErrorLine(try pinproxy(arguments))
            #expect(line.contains(": it is a directory"), "\(arguments): \(line)")
            #expect(line.components(separatedBy: "folder").count == 2, "the path once: \(arguments): \(line)")
            #expect(line.contains("folder"), "\(arguments): \(line)")
            #expect(!line.contains("NSCocoaErrorDomain") && !line.contains("error 256"), "\(arguments): \(line)")
        }
    }

    @Test func aFileThatIsNotACertificateIsOneLine() throws {
        let dir = try TemporaryDirectory()
        let garbage = try dir.write("not a certificate\n", to: "garbage.pem")
        ErrorReportingTests.expectOneErrorLine(try pinproxy(["pin", garbage]), containing: "\(garbage): neither a certificate")
        ErrorReportingTests.expectOneErrorLine(try pinproxy(["ca", "import", "--dir", dir.file("ca"), "--cert", garbage]),
                                               containing: "\(garbage): no certificate found")
    }

    /// One reader of certificate files: `pin` and `verify --chain` word a damaged PEM file alike.
    @Test func aDamagedPEMIsOneMessageInEveryCommand() throws {
        let dir = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", dir.file("ca")]).status == 0)
        var lines = try String(contentsOfFile: dir.file("ca/pinproxy-ca.pem"), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        lines.remove(at: 2)  // a line of base64 lost: the block no longer decodes
        let damaged = try dir.write(lines.joined(separator: "\n"), to: "damaged.pem")
        let policy = try dir.write(#"{"family": "curl", "pinnedpubkey": "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#, to: "policy.json")
        let expected = "\(damaged): CERTIFICATE block 1 of 1 is damaged"
        let pin = ErrorReportingTests.expectOneErrorLine(try pinproxy(["pin", damaged]), containing: expected)
        let verify = ErrorReportingTests.expectOneErrorLine(try pinproxy(["verify", "--policy", policy, "--chain", damaged, "--host", "a.test"]),
                                                            containing: expected)
        #expect(pin == verify)
        // A good block before the damaged one does not hide it.
        let good = try String(contentsOfFile: dir.file("ca/pinproxy-ca.pem"), encoding: .utf8)
        let second = try dir.write(good + lines.joined(separator: "\n"), to: "second-damaged.pem")
        ErrorReportingTests.expectOneErrorLine(try pinproxy(["pin", second]), containing: "\(second): CERTIFICATE block 2 of 2 is damaged")
    }

    @Test func controlCharactersInInputAreShownEscaped() throws {
        let dir = try TemporaryDirectory()
        let line = ErrorReportingTests.expectOneErrorLine(
            try pinproxy(["pin", "line\nbreak\u{1B}[31m.pem"], in: dir.path), containing: "line\\x0abreak\\x1b[31m.pem")
        #expect(!line.contains("\u{1B}"))
    }

    @Test func versionPrintsTheOneVersion() throws {
        #expect(PinproxyVersion.current.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+/) != nil, "\(PinproxyVersion.current)")
        let result = try pinproxy(["--version"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.stdout == PinproxyVersion.current + "\n")
        #expect(result.stderr.isEmpty)
    }
}
