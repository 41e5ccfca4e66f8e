import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// `pinproxy serve`'s attack options, on the built binary: --attack, --rule, --misissuing-ca, --help.
@Suite("pinproxy serve attack options (binary)", .timeLimit(.minutes(10)))
struct ServeAttackOptionsTests {
    func serve(_ arguments: [String], in f: Fixtures) throws -> ProcessResult {
        let binary = try ServeCommandTests.requireBinary()
        return try runProcess(binary, ["serve", "--dir", f.directory.file("ca"), "--listen", "127.0.0.1:0"] + arguments, timeout: 20)
    }

    @Test("serve --help lists every profile with one line on what it catches")
    func helpListsProfiles() throws {
        let r = try runProcess(try ServeCommandTests.requireBinary(), ["serve", "--help"], timeout: 20)
        #expect(r.status == 0)
        let lines = r.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        for profile in AttackCatalog.standard.profiles {
            let strategy = try AttackCatalog.standard.requireStrategy(for: profile)
            #expect(lines.contains("\(profile.name) \(strategy.catches)"), "\(profile): \(r.stdout)")
        }
        #expect(r.stdout.contains("--misissuing-ca <dir>"))
    }

    @Test("a profile that cannot run, or does not exist, stops serve with one line and exit 2",
          arguments: [["--attack", "misissued"], ["--rule", "**.test=misissued"], ["--attack", "nonsense"],
                      ["--misissuing-ca", "/nonexistent/ca", "--attack", "misissued"], ["--rule", "**.test=rotate-rekey"],
                      ["--attack", "forged"]])
    func refusedAtStart(arguments: [String]) throws {
        let f = try Fixtures()
        let r = try serve(arguments, in: f)
        #expect(!r.timedOut, "serve started with \(arguments)")
        #expect(r.status == 2, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        if arguments.contains("**.test=rotate-rekey") {
            // A rotation profile is a known name that needs the team's CA, not an unknown one.
            #expect(r.stderr.contains("the rotate-rekey profile is not enabled: rotation profiles need the CA that issues your staging certificates: start the proxy with --rotation-ca DIR"), "\(r.stderr)")
        } else if arguments.contains("forged") {
            #expect(r.stderr.contains("unknown attack profile 'forged' (did you mean 'forge'?); known: passthrough, forge"), "\(r.stderr)")
        } else if arguments.contains("nonsense") {
            #expect(r.stderr.contains("unknown attack profile 'nonsense'; known: passthrough, forge, stuff, self-signed"), "\(r.stderr)")
        } else if arguments.contains("/nonexistent/ca") {
            #expect(r.stderr.contains("--misissuing-ca: no CA in /nonexistent/ca"), "\(r.stderr)")
        } else {
            #expect(r.stderr.contains("the misissued profile needs a second CA: start the proxy with --misissuing-ca DIR"), "\(r.stderr)")
        }
    }

    @Test("a --misissuing-ca with the proxy CA's own name is pointed out at start, with the command that tells them apart")
    func misissuingCAWithTheSameName() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let misissuingDir = f.directory.file("public-ca")
        _ = try CADirectory(path: misissuingDir).store(try CertificateAuthority.create(), overwrite: false)
        let caDir = f.directory.file("ca")
        _ = try CADirectory(path: caDir).store(try CertificateAuthority.create(), overwrite: false)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--dir", caDir, "--listen", "127.0.0.1:0", "--misissuing-ca", misissuingDir]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let ready = serveReadyLine(out)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(ready.hasPrefix("pinproxy ready"), "\(log)")
        #expect(log.contains("the --misissuing-ca has the same name as the proxy CA") && log.contains("--name \"pinproxy misissuing CA\""), "\(log)")
    }

    @Test("--misissuing-ca DIR: a client that trusts that CA accepts the misissued chain, one that trusts the proxy CA refuses it")
    func misissuedWithItsCA() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let misissuingDir = f.directory.file("public-ca")
        let misissuing = try CertificateAuthority.create()
        _ = try CADirectory(path: misissuingDir).store(misissuing, overwrite: false)
        let caDir = f.directory.file("ca")
        try CADirectory(path: caDir).store(f.proxyCA, overwrite: false)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--dir", caDir, "--listen", "127.0.0.1:0", "--upstream-ca", f.originCAPath,
                             "--misissuing-ca", misissuingDir, "--attack", "misissued"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let line = serveReadyLine(out, deadline: Date().addingTimeInterval(30))
        let port = try #require(readyLinePort(line), "\(line)")
        let url = "https://localhost:\(origin.port)/hello"
        let trusting = try curl(["--proxy", "http://127.0.0.1:\(port)", "--cacert", CADirectory(path: misissuingDir).certificatePEMPath, url])
        #expect(trusting.stdout == "hello from origin\n", "\(trusting.stderr)")
        let proxyOnly = try curl(["--proxy", "http://127.0.0.1:\(port)", "--cacert", "\(caDir)/pinproxy-ca.pem", url])
        #expect(proxyOnly.status == 60, "\(proxyOnly.stderr)")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}
