import ArgumentParser
import Foundation
import PinproxyCertificates

struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Create, show or import the proxy's root CA.",
        discussion: """
            The CA lives in a directory (--dir, else $PINPROXY_CA_DIR, else ./certs): \
            pinproxy-ca.pem and pinproxy-ca.cer, the certificate to install on test devices (PEM, \
            DER), and pinproxy-ca-key.pem, its private key (mode 0600). 'pinproxy serve' creates \
            one on first run.

            Examples:
              pinproxy ca init --dir certs
              pinproxy ca show
              pinproxy ca import --cert ~/.mitmproxy/mitmproxy-ca.pem --dir certs
            """,
        subcommands: [Init.self, Show.self, Import.self]
    )

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a new root CA.",
            discussion: "Refuses to replace an existing CA unless --force is given. The private key is written with mode 0600 and never printed."
        )

        @OptionGroup var location: CADirectoryOptions

        @Option(help: ArgumentHelp("Key type: \(PrivateKey.Algorithm.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "type"))
        var key: String = PrivateKey.Algorithm.ecP256.rawValue

        @Option(help: "Common name of the CA.")
        var name: String = CertificateAuthority.defaultCommonName

        @Option(help: "Days from now the CA is valid for (1–36500; its validity also starts one day back).")
        var days: Int = 3650

        @Option(name: .customLong("permit-dns"), help: ArgumentHelp("Only allow leaves under this DNS suffix (repeatable).", valueName: "suffix"))
        var permitDNS: [String] = []

        @Option(name: .customLong("permit-ip"), help: ArgumentHelp("Only allow leaves for addresses in this CIDR network (repeatable).", valueName: "cidr"))
        var permitIP: [String] = []

        @Flag(help: "Replace an existing CA.")
        var force = false

        func validate() throws {
            guard PrivateKey.Algorithm(rawValue: key) != nil else {
                throw ValidationError("unknown key type '\(key)'; choose one of \(PrivateKey.Algorithm.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard (1...36500).contains(days) else { throw ValidationError("--days must be between 1 and 36500") }
        }

        func run() throws {
            try reportingErrors {
                var options = CertificateAuthority.Options()
                options.keyAlgorithm = PrivateKey.Algorithm(rawValue: key)!
                options.commonName = name
                options.validityDays = days
                if !permitDNS.isEmpty || !permitIP.isEmpty {
                    options.nameConstraints = try NameConstraints(
                        permittedDNS: permitDNS, permittedIP: try permitIP.map { try IPNetwork(parsing: $0) })
                }
                let directory = location.caDirectory
                if directory.exists && !force {
                    throw PinproxyError(.caExists, "a CA already exists in \(directory.path); pass --force to replace it (devices that trust the old CA will no longer trust the proxy)")
                }
                let ca = try CertificateAuthority.create(options)
                let files = try directory.store(ca, overwrite: force)
                print("created CA \(ca.certificate.subject)")
                for file in files { print("  \(file)") }
                print("SPKI pin: \(ca.certificate.spkiPin.okhttp)")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the CA's details, pins and install instructions.")

        @OptionGroup var location: CADirectoryOptions

        func run() throws {
            try reportingErrors {
                let directory = location.caDirectory
                do {
                    let ca = try directory.load()
                    print(CADescription.render(ca.certificate, directory: directory))
                } catch let error as PinproxyError where error.code == .io && FileManager.default.fileExists(atPath: directory.privateKeyPath)
                                                          && !FileManager.default.isReadableFile(atPath: directory.privateKeyPath)
                                                          && FileManager.default.isReadableFile(atPath: directory.certificatePEMPath) {
                    // Everything shown is public: a teammate or a CI user who may read the
                    // certificate but not the key still gets its pins and install steps.
                    guard let certificate = try Certificate.load(contentsOf: directory.certificatePEMPath).first else { throw error }
                    print(CADescription.render(certificate, directory: directory,
                                               keyNote: "(\(directory.privateKeyPath) is not readable by you: serve and forge need it, this listing does not)"))
                }
            }
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Adopt an existing CA (for example mitmproxy's mitmproxy-ca.pem).",
            discussion: "--cert may hold both the certificate and the key, as mitmproxy-ca.pem does; otherwise pass --key."
        )

        @OptionGroup var location: CADirectoryOptions

        @Option(help: ArgumentHelp("CA certificate PEM (may also hold the key).", valueName: "file"))
        var cert: String

        @Option(help: ArgumentHelp("CA private key PEM.", valueName: "file"))
        var key: String?

        @Option(name: .customLong("password-file"),
                help: ArgumentHelp("File whose first line is the password of an encrypted key (never prompted, never echoed).", valueName: "file"))
        var passwordFile: String?

        @Flag(help: "Replace an existing CA.")
        var force = false

        func run() throws {
            try reportingErrors {
                let certificateText = String(decoding: try FileIO.read(cert), as: UTF8.self)
                let keyText = try key.map { String(decoding: try FileIO.read($0), as: UTF8.self) }
                let password = try passwordFile.map { path in
                    String(decoding: try FileIO.read(path), as: UTF8.self)
                        .split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                }
                let ca: CertificateAuthority
                do {
                    ca = try CertificateAuthority.parse(certificatePEM: certificateText, keyPEM: keyText, password: password)
                } catch let error as PinproxyError {
                    // Name the file the problem is in.
                    let file = error.reason.contains("key") ? (key ?? cert) : cert
                    // The library's reason cannot name this command's flag; say how to give the password.
                    let reason = password == nil
                        ? error.reason.replacingOccurrences(of: "give its password", with: "give its password with --password-file FILE")
                        : error.reason
                    throw PinproxyError(error.code, "\(file): \(reason)", openSSLErrors: error.openSSLErrors)
                }
                try ca.checkValidity()
                let files = try location.caDirectory.store(ca, overwrite: force)
                print("imported CA \(ca.certificate.subject)")
                for file in files { print("  \(file)") }
                print("SPKI pin: \(ca.certificate.spkiPin.okhttp)")
            }
        }
    }
}

/// The text `pinproxy ca show` prints.
enum CADescription {
    /// How long a CA has left, to the nearest day (to the nearest hour under two days):
    /// a CA made with `--days 2` a moment ago has 2 more days, not 1.
    static func remaining(_ seconds: TimeInterval) -> String {
        let hours = Int((seconds / 3_600).rounded())
        if hours < 1 { return "less than an hour more" }
        if hours < 48 { return hours == 1 ? "1 more hour" : "\(hours) more hours" }
        return "\(Int((seconds / 86_400).rounded())) more days"
    }

    static func render(_ c: Certificate, directory: CADirectory, keyNote: String? = nil) -> String {
        let pin = c.spkiPin
        let iso = ISO8601DateFormatter()
        let android = CADirectory.androidFileName(for: c)
        var lines: [String] = [
            "Subject:      \(c.subject)",
            "Key:          \(c.publicKeyAlgorithmDescription)" + (keyNote.map { " " + $0 } ?? ""),
            "Serial:       \(c.serialNumberHex)",
            "Not before:   \(iso.string(from: c.notBefore))",
            "Not after:    \(iso.string(from: c.notAfter))",
            "Status:       \(CertificateAuthority.validityProblem(of: c).map { $0.uppercased() + " — forging will fail" } ?? "valid for \(remaining(c.notAfter.timeIntervalSinceNow))")",
            "SHA-256:      \(c.sha256FingerprintText)",
        ]
        if let constraints = CertificateAuthority.nameConstraintsText(of: c) {
            lines.append("Name constraints:")
            lines += constraints.split(separator: "\n").map { "  " + $0.trimmingCharacters(in: .whitespaces) }
        } else {
            lines.append("Name constraints: none (the CA can sign for any name)")
        }
        lines += [
            "",
            "SPKI pin (SHA-256 of the SubjectPublicKeyInfo):",
            "  OkHttp:        \(pin.okhttp)",
            "  curl:          \(pin.curl)",
            "  HPKP:          \(pin.hpkp)",
            "  TrustKit:      \(pin.base64)",
            "  Android XML:   \(pin.androidXML)",
            "",
            "Files:",
            "  certificate (PEM):      \(directory.certificatePEMPath)",
            "  certificate (DER .cer): \(directory.certificateDERPath)",
            "  Android system store:   \(directory.androidPath(for: c))",
            "  PKCS#12 (no key):       \(directory.pkcs12Path)",
            "  private key (0600):     \(directory.privateKeyPath)",
            "",
            "Install (testing devices only; remove when done):",
            "  Debian/Ubuntu:    sudo cp \(directory.certificatePEMPath) /usr/local/share/ca-certificates/pinproxy-ca.crt && sudo update-ca-certificates",
            "  iOS simulator:    xcrun simctl keychain booted add-root-cert \(directory.certificatePEMPath)",
            "  Android emulator: adb root && adb remount && adb push \(directory.androidPath(for: c)) /system/etc/security/cacerts/\(android) && adb shell chmod 644 /system/etc/security/cacerts/\(android) && adb reboot",
            "                    (apps targeting API 24+ ignore user-installed CAs unless their network_security_config trusts them)",
            "  Firefox:          Settings > Privacy & Security > Certificates > View Certificates > Authorities > Import \(directory.certificatePEMPath)",
            "  curl:             curl --proxy http://127.0.0.1:8080 --cacert \(directory.certificatePEMPath) https://example.test/",
            "                    (8080 is serve's default --listen; give the address serve printed when you chose another)",
        ]
        return lines.joined(separator: "\n")
    }
}
