import Foundation
import Testing
import PinproxyCertificates
import PinproxyTestSupport

@Suite struct ForgeCommandTests {
    @Test func forgesAChainThatOpenSSLAccepts() throws {
        let dir = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", dir.path]).status == 0)
        let out = dir.file("chain.pem"), keyOut = dir.file("leaf-key.pem")
        let result = try pinproxy(["forge", "--dir", dir.path, "api.example.test", "10.0.0.1", "--out", out, "--key-out", keyOut])
        #expect(result.status == 0, "\(result.output)")
        let chain = try Certificate.load(contentsOf: out)
        #expect(chain.count == 2)
        #expect(chain[0].subjectAlternativeNames == [.dns("api.example.test"), .ipAddress([10, 0, 0, 1])])
        let verify = try run(["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-verify_hostname", "api.example.test",
                              "-CAfile", dir.file("pinproxy-ca.pem"), out])
        #expect(verify.status == 0, "\(verify.output)")
        let mode = (try FileManager.default.attributesOfItem(atPath: keyOut)[.posixPermissions] as! NSNumber).intValue
        #expect(mode == 0o600)
        let key = try PrivateKey(pemEncoded: String(contentsOfFile: keyOut, encoding: .utf8))
        #expect(key.matches(chain[0]))
    }

    @Test func writesToStandardOutput() throws {
        let dir = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", dir.path]).status == 0)
        let result = try pinproxy(["forge", "--dir", dir.path, "stdout.test"])
        #expect(result.status == 0)
        #expect(try Certificate.all(pemEncoded: result.stdout).count == 2)
        #expect(!result.stdout.contains("PRIVATE KEY"))
    }

    @Test(arguments: ["a.test,DNS:evil.test", "bad name.test", String(repeating: "x", count: 300) + ".test", "*.*.test"])
    func refusesHostileNames(host: String) throws {
        let dir = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", dir.path]).status == 0)
        let result = try pinproxy(["forge", "--dir", dir.path, host])
        #expect(result.status != 0)
        #expect(result.stderr.contains("invalid host name"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func withoutACAExplainsWhatToDo() throws {
        let dir = try TemporaryDirectory()
        let result = try pinproxy(["forge", "--dir", dir.path, "a.test"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("pinproxy ca init"))
    }

    @Test func benchPrintsFiguresAndRatios() throws {
        let result = try pinproxy(["bench", "forge", "--count", "300"])
        #expect(result.status == 0, "\(result.output)")
        for label in ["reused leaf key", "fresh key per leaf", "raw ECDSA P-256", "ratio reused-key forging / raw sign", "cache hit"] {
            #expect(result.stdout.contains(label), "missing \(label)")
        }
        // Every figure is a positive number.
        let numbers = result.stdout.split(separator: "\n").compactMap { line in
            line.split(separator: " ").compactMap { Double($0) }.last
        }
        #expect(numbers.count >= 6)
        #expect(numbers.allSatisfy { $0 > 0 })
    }

    @Test func benchHTTP1PrintsFiguresAndRatios() throws {
        let result = try pinproxy(["bench", "http1", "--exchanges", "2000", "--rounds", "1"])
        #expect(result.status == 0, "\(result.output)")
        for label in ["general entry points", "copy-free entry points", "baseline", "ratio general / baseline", "ratio copy-free / baseline"] {
            #expect(result.stdout.contains(label), "missing \(label)")
        }
        let numbers = result.stdout.split(separator: "\n").dropFirst().compactMap { line in
            line.split(separator: " ").compactMap { Double($0) }.last
        }
        #expect(numbers.count == 5)
        #expect(numbers.allSatisfy { $0 > 0 })
        let refused = try pinproxy(["bench", "http1", "--rounds", "0"])
        #expect(refused.status == 2)
    }

    @Test func helpListsTheCommands() throws {
        let result = try pinproxy(["--help"])
        for command in ["ca", "forge", "serve", "verify", "pin", "bench"] {
            #expect(result.stdout.contains("  \(command)"), "missing \(command)")
        }
    }
}
