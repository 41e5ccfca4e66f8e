import Foundation
import Testing
import PinproxyCertificates
import PinproxyTestSupport

@Suite struct CACommandTests {
    @Test func initWritesEveryFileAndNeverPrintsTheKey() throws {
        let dir = try TemporaryDirectory()
        let result = try pinproxy(["ca", "init", "--dir", dir.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(!result.output.contains("PRIVATE KEY"))
        #expect(result.stdout.contains("SPKI pin: sha256/"))
        let store = CADirectory(path: dir.path)
        let mode = (try FileManager.default.attributesOfItem(atPath: store.privateKeyPath)[.posixPermissions] as! NSNumber).intValue
        #expect(mode == 0o600)
        let ca = try store.load()
        #expect(result.stdout.contains(ca.certificate.spkiPin.okhttp))
        #expect(ca.certificate.subjectCommonName == CertificateAuthority.defaultCommonName)
    }

    /// `ca show` prints public data only: a user who may read the certificate but not the key
    /// (a teammate, a CI user) gets the details, pins and install steps, with a note on the key.
    /// Run as root, the command runs as nobody (root reads every file); otherwise the key is made unreadable.
    @Test func showNeedsOnlyTheCertificate() throws {
        let dir = try TemporaryDirectory()
        let store = dir.file("ca")
        #expect(try pinproxy(["ca", "init", "--dir", store]).status == 0)
        let ca = try CADirectory(path: store).load()
        for path in [dir.path, store] { try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path) }
        let wrapper: [String]
        if getuid() == 0 {
            wrapper = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
        } else {
            wrapper = []
            try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: CADirectory(path: store).privateKeyPath)
        }
        let shown = try pinproxy(["ca", "show", "--dir", store], wrapper: wrapper)
        #expect(shown.status == 0, "\(shown.output)")
        #expect(shown.stdout.contains("Key:          EC P-256 (\(CADirectory(path: store).privateKeyPath) is not readable by you"), "\(shown.stdout)")
        #expect(shown.stdout.contains(ca.certificate.spkiPin.okhttp) && shown.stdout.contains("Status:       valid for"), "\(shown.stdout)")
        // A missing key is still an error, not a listing.
        try FileManager.default.removeItem(atPath: CADirectory(path: store).privateKeyPath)
        let missing = try pinproxy(["ca", "show", "--dir", store])
        #expect(missing.status == 2 && missing.stderr.contains("pinproxy-ca-key.pem"), "\(missing.output)")
    }

    @Test func initHonoursTheEnvironmentDirectory() throws {
        let dir = try TemporaryDirectory()
        let target = dir.file("from-env")
        let result = try pinproxy(["ca", "init"], environment: ["PINPROXY_CA_DIR": target])
        #expect(result.status == 0, "\(result.output)")
        #expect(FileManager.default.fileExists(atPath: target + "/pinproxy-ca.pem"))
    }

    @Test func initRefusesToOverwriteWithoutForce() throws {
        let dir = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", dir.path]).status == 0)
        let before = try CADirectory(path: dir.path).load().certificate
        let again = try pinproxy(["ca", "init", "--dir", dir.path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("--force"))
        #expect(try CADirectory(path: dir.path).load().certificate == before)
        let forced = try pinproxy(["ca", "init", "--dir", dir.path, "--force"])
        #expect(forced.status == 0, "\(forced.output)")
        #expect(try CADirectory(path: dir.path).load().certificate != before)
    }

    @Test func initOptions() throws {
        let dir = try TemporaryDirectory()
        let result = try pinproxy(["ca", "init", "--dir", dir.path, "--key", "rsa-2048", "--name", "Team QA CA", "--days", "30"])
        #expect(result.status == 0, "\(result.output)")
        let text = try run(["openssl", "x509", "-noout", "-text", "-in", dir.file("pinproxy-ca.pem")]).stdout
        #expect(text.contains("CN = Team QA CA"))
        #expect(text.contains("(2048 bit)"))
        let ca = try CADirectory(path: dir.path).load().certificate
        // 30 days from now, from a day back.
        #expect(abs(ca.notAfter.timeIntervalSinceNow - 30 * 86_400) < 30)
        #expect(abs(ca.notAfter.timeIntervalSince(ca.notBefore) - 31 * 86_400) < 5)
    }

    @Test(arguments: [
        (["ca", "init", "--key", "dsa-1024"], "unknown key type"),
        (["ca", "init", "--days", "0"], "--days"),
        (["ca", "init", "--permit-ip", "10.0.0.0/99"], "prefix length"),
        (["ca", "init", "--permit-dns", "bad,name"], "invalid host name"),
        (["ca", "init", "--no-such-flag"], "no-such-flag"),
    ])
    func badFlagsGetClearErrors(arguments: [String], message: String) throws {
        let dir = try TemporaryDirectory()
        let result = try pinproxy(arguments + ["--dir", dir.path])
        #expect(result.status == 2, "usage and input errors exit 2")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("pinproxy-ca-key.pem")))
    }

    @Test func nameConstraintsEndToEnd() throws {
        let dir = try TemporaryDirectory()
        let created = try pinproxy(["ca", "init", "--dir", dir.path, "--permit-dns", "example.test", "--permit-ip", "127.0.0.0/8"])
        #expect(created.status == 0, "\(created.output)")
        let show = try pinproxy(["ca", "show", "--dir", dir.path])
        #expect(show.stdout.contains("DNS:example.test"))
        #expect(show.stdout.contains("IP:127.0.0.0/255.0.0.0"))
        let good = try pinproxy(["forge", "--dir", dir.path, "api.example.test", "127.0.0.1"])
        #expect(good.status == 0, "\(good.output)")
        let bad = try pinproxy(["forge", "--dir", dir.path, "evil.test"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("name constraints do not permit evil.test"), "\(bad.stderr)")
    }

    @Test func showPrintsPinsThatMatchOpenSSL() throws {
        let dir = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", dir.path]).status == 0)
        let show = try pinproxy(["ca", "show", "--dir", dir.path])
        #expect(show.status == 0, "\(show.output)")
        let pem = dir.file("pinproxy-ca.pem")
        let pin = try run(["sh", "-c", "openssl x509 -in '\(pem)' -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(pin.count == 44)
        for notation in ["sha256/\(pin)", "sha256//\(pin)", "pin-sha256=\"\(pin)\"", "<pin digest=\"SHA-256\">\(pin)</pin>"] {
            #expect(show.stdout.contains(notation), "missing \(notation)")
        }
        let fingerprint = try run(["openssl", "x509", "-in", pem, "-noout", "-fingerprint", "-sha256"]).stdout
        let expected = fingerprint.split(separator: "=").last!.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(show.stdout.contains(expected))
        for hint in ["update-ca-certificates", "simctl keychain", "/system/etc/security/cacerts/", "Firefox", "0600"] {
            #expect(show.stdout.contains(hint), "missing \(hint)")
        }
        #expect(!show.output.contains("PRIVATE KEY"))
    }

    @Test func showWithoutACAExplainsWhatToDo() throws {
        let dir = try TemporaryDirectory()
        let result = try pinproxy(["ca", "show", "--dir", dir.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("pinproxy ca init"))
    }

    @Test func importsMitmproxyStyleCombinedPEM() throws {
        let dir = try TemporaryDirectory()
        let key = dir.file("k.pem"), cert = dir.file("c.pem")
        let made = try run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=mitmproxy/O=mitmproxy",
                            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        #expect(made.status == 0, "\(made.output)")
        let combined = try dir.write(try String(contentsOfFile: key, encoding: .utf8) + String(contentsOfFile: cert, encoding: .utf8), to: "mitmproxy-ca.pem")
        let store = dir.file("store")
        let imported = try pinproxy(["ca", "import", "--dir", store, "--cert", combined])
        #expect(imported.status == 0, "\(imported.output)")
        #expect(try CADirectory(path: store).load().certificate.subjectCommonName == "mitmproxy")

        // Separate files work too.
        let store2 = dir.file("store2")
        #expect(try pinproxy(["ca", "import", "--dir", store2, "--cert", cert, "--key", key]).status == 0)

        // A key that does not belong to the certificate is refused and nothing is written.
        let otherKey = dir.file("other.pem")
        #expect(try run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", otherKey]).status == 0)
        let store3 = dir.file("store3")
        let mismatched = try pinproxy(["ca", "import", "--dir", store3, "--cert", cert, "--key", otherKey])
        #expect(mismatched.status != 0)
        #expect(mismatched.stderr.contains("does not belong"), "\(mismatched.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store3 + "/pinproxy-ca.pem"))

        // A key whose private scalar was altered while the public key embedded in its PKCS#8
        // still matches the certificate: OpenSSL reads it, and comparing public keys passes.
        let altered = try AlteredKeyCA(in: dir)
        #expect(try run(["openssl", "pkey", "-in", altered.keyPath, "-noout"]).status == 0)
        for (name, arguments) in [("store6", ["--cert", altered.certificatePath, "--key", altered.keyPath]),
                                  ("store7", ["--cert", try dir.write(altered.combinedPEM, to: "altered-combined.pem")])] {
            let refused = try pinproxy(["ca", "import", "--dir", dir.file(name)] + arguments)
            #expect(refused.status != 0, "\(refused.output)")
            #expect(refused.stderr.contains("does not belong"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file(name) + "/pinproxy-ca.pem"))
        }

        // A certificate file without a key says where the key should come from.
        let noKey = try pinproxy(["ca", "import", "--dir", dir.file("store4"), "--cert", cert])
        #expect(noKey.status != 0)
        #expect(noKey.stderr.contains("--key"), "\(noKey.stderr)")
        let missing = try pinproxy(["ca", "import", "--dir", dir.file("store5"), "--cert", dir.file("nope.pem")])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no such file"), "\(missing.stderr)")
    }
}

@Suite struct CAImportEdgeCaseTests {
    @Test func refusesAnExpiredCAAndNamesTheProblem() throws {
        let dir = try TemporaryDirectory()
        let key = try PrivateKey.generate(.ecP256)
        let spec = CertificateSpec.certificateAuthority(
            subject: DistinguishedName(commonName: "old"),
            notBefore: Date(timeIntervalSinceNow: -400 * 86_400), notAfter: Date(timeIntervalSinceNow: -30 * 86_400))
        let certificate = try Certificate.issue(spec, subjectKey: key, signer: .selfSigned(key))
        let combined = try dir.write(try key.pemEncoded() + certificate.pemEncoded, to: "old-ca.pem")
        let result = try pinproxy(["ca", "import", "--dir", dir.file("store"), "--cert", combined])
        #expect(result.status == 2)
        #expect(result.stderr.contains("the CA expired on"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("store") + "/pinproxy-ca.pem"))
    }

    @Test func importsAnEncryptedKeyWithAPasswordFile() throws {
        let dir = try TemporaryDirectory()
        let key = dir.file("k.pem"), cert = dir.file("c.pem")
        let made = try run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-passout", "pass:hunter2", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=enc",
                            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        #expect(made.status == 0, "\(made.output)")
        let without = try pinproxy(["ca", "import", "--dir", dir.file("a"), "--cert", cert, "--key", key])
        #expect(without.status == 2)
        #expect(without.stderr.contains("\(key): the private key is encrypted"), "\(without.stderr)")
        #expect(without.stderr.contains("give its password with --password-file FILE"), "\(without.stderr)")
        let passwordFile = try dir.write("hunter2\n", to: "pw")
        let with = try pinproxy(["ca", "import", "--dir", dir.file("b"), "--cert", cert, "--key", key, "--password-file", passwordFile])
        #expect(with.status == 0, "\(with.output)")
        #expect(!with.output.contains("hunter2"))
        // Stored unencrypted with mode 0600, so the daemon can start unattended.
        let stored = try String(contentsOfFile: dir.file("b") + "/pinproxy-ca-key.pem", encoding: .utf8)
        #expect(stored.contains("BEGIN PRIVATE KEY"))
    }

    @Test func showSaysHowLongTheCAIsValid() throws {
        let dir = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", dir.path, "--days", "30"]).status == 0)
        let show = try pinproxy(["ca", "show", "--dir", dir.path])
        #expect(show.stdout.contains("Status:       valid for 30 more days"), "\(show.stdout)")
        let short = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", short.path, "--days", "1"]).status == 0)
        let day = try pinproxy(["ca", "show", "--dir", short.path])
        #expect(day.stdout.contains("Status:       valid for 24 more hours"), "\(day.stdout)")
    }

    /// `ca show` for a CA whose certificate ends `seconds` from now (stored as `ca init` stores one).
    static let remainingCases: [(hours: Double, text: String)] = [
        (0.4, "less than an hour more"), (1.67, "2 more hours"), (47.4, "47 more hours"),
        (47.6, "2 more days"), (57.6, "2 more days"), (62.4, "3 more days"),
    ]
    @Test(arguments: remainingCases)
    func remainingValidityIsRoundedNotTruncated(hours: Double, text: String) throws {
        let seconds = hours * 3_600
        let dir = try TemporaryDirectory()
        var options = CertificateAuthority.Options()
        options.validityDays = 10
        // Created so that its ten days of validity from `now` end `seconds` from the real now.
        let ca = try CertificateAuthority.create(options, now: Date().addingTimeInterval(seconds - 10 * 86_400))
        _ = try CADirectory(path: dir.path).store(ca, overwrite: true)
        let show = try pinproxy(["ca", "show", "--dir", dir.path])
        #expect(show.stdout.contains("Status:       valid for \(text)\n"), "\(show.stdout)")
    }

    @Test func forgingWithAnExpiredCASaysHowToMakeANewOne() throws {
        let dir = try TemporaryDirectory()
        var options = CertificateAuthority.Options()
        options.validityDays = 1
        _ = try CADirectory(path: dir.path).store(try CertificateAuthority.create(options, now: Date().addingTimeInterval(-3 * 86_400)), overwrite: true)
        let r = try pinproxy(["forge", "--dir", dir.path, "api.example.test"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("the CA expired on") && r.stderr.contains("pinproxy ca init --force"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }
}
