import ArgumentParser
import Foundation
import PinproxyCertificates
import PinproxyPinning

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Evaluate a pinning policy against a certificate chain.",
        discussion: """
            The policy is a JSON policy file (see docs/policies.md), an Android \
            network_security_config.xml, or a TrustKit Info.plist. The chain file holds PEM \
            certificates, leaf first, in the order a server would send them (extras allowed). \
            Exit status: 0 ACCEPT (or REPORT-ONLY), 1 REJECT, 2 usage or input error. No network: to \
            judge a policy against live TLS and every attack, use 'pinproxy check'.

            --no-domain instead of --host evaluates as AFNetworking's \
            evaluateServerTrust:forDomain:nil does (afnetworking policies only): no \
            contradiction guard, and the trust evaluated without a host name.

            Examples (a server's chain, then the proxy's forged chain for the same host):
              pinproxy pin --connect api.example.com:443 --out chain.pem
              pinproxy verify --policy okhttp.json --chain chain.pem --host api.example.com
              pinproxy forge api.example.com --out forged.pem
              pinproxy verify --policy okhttp.json --chain forged.pem \\
                  --host api.example.com --user-anchor certs/pinproxy-ca.pem
            """
    )

    @Option(help: ArgumentHelp("Policy file (.json, .xml or .plist).", valueName: "file"))
    var policy: String

    @Option(help: ArgumentHelp("PEM file with the presented chain, leaf first.", valueName: "file"))
    var chain: String

    @Option(help: ArgumentHelp("Host name or IP address the client connected to, as its URL wrote it (a trailing dot is kept).", valueName: "host"))
    var host: String?

    @Flag(name: .customLong("no-domain"), help: "Evaluate for no host name (AFNetworking's forDomain:nil); instead of --host.")
    var noDomain = false

    @Option(help: ArgumentHelp("Evaluation time, ISO 8601: 2025-06-01 or 2025-06-01T12:00:00Z (default: now).", valueName: "time"))
    var at: String?

    @Option(name: .customLong("trust-store"),
            help: ArgumentHelp("PEM bundle replacing the system trust store (\(TrustStore.systemBundlePath)).", valueName: "file"))
    var trustStore: String?

    @Option(name: .customLong("user-anchor"),
            help: ArgumentHelp("CA installed by the device's user, such as the proxy CA (repeatable).", valueName: "file"))
    var userAnchors: [String] = []

    @Flag(help: "Print the verdict as JSON.")
    var json = false

    func validate() throws {
        if noDomain && host != nil { throw ValidationError("give --host or --no-domain, not both") }
        if !noDomain && host == nil { throw ValidationError("missing --host (or --no-domain for AFNetworking's forDomain:nil)") }
    }

    func run() throws {
        let verdict: Verdict
        do {
            if noDomain {
                let (presented, time, store) = try makeInputs()
                let loaded = try PolicyFile.load(contentsOf: policy)
                guard let domainless = loaded as? any DomainlessEvaluating else {
                    throw UsageError(message: "--no-domain: the \(loaded.family) family always evaluates for a host (only afnetworking has evaluateServerTrust:forDomain:nil); give --host")
                }
                verdict = domainless.evaluateWithoutDomain(presented, at: time, store: store)
            } else {
                let trust = try makeTrust()
                let loaded = try PolicyFile.load(contentsOf: policy)
                verdict = loaded.evaluate(trust)
            }
        } catch let error as PinproxyError {
            throw CLIError(error)
        } catch let error as UsageError {
            throw CLIError(error.message)
        }
        print(json ? VerdictReport.json(verdict) : VerdictReport.text(verdict))
        if verdict.decision == .reject, trustStore == nil, userAnchors.isEmpty, !json,
           verdict.steps.contains(where: { $0.description.contains("unknown issuer:") || $0.description.contains("is not an anchor") }) {
            // A private or test CA is the usual cause, and the pins were never reached.
            FileHandle.standardError.write(Data("hint: the chain does not end at a CA of this machine's trust store; for a private or test CA give it with --user-anchor CA.pem (installed on the device) or --trust-store BUNDLE.pem (the device's whole system store)\n".utf8))
        }
        if verdict.decision == .reject { throw ExitCode(1) }
    }

    private struct UsageError: Error { let message: String }

    private func makeTrust() throws -> ServerTrust {
        let host = self.host ?? ""
        _ = try HostName(validating: host)  // a bad host is reported before any file is read
        let (presented, time, store) = try makeInputs()
        // The host as written reaches the families that compare strings (a trailing dot stays).
        return try ServerTrust(presentedChain: presented, hostAsWritten: host, time: time, store: store)
    }

    private func makeInputs() throws -> ([Certificate], Date, TrustStore) {
        var time = Date()
        if let at {
            let formatter = ISO8601DateFormatter()
            let withFraction = ISO8601DateFormatter()
            withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let dayOnly = ISO8601DateFormatter()
            dayOnly.formatOptions = [.withFullDate]
            guard let parsed = formatter.date(from: at) ?? withFraction.date(from: at) ?? dayOnly.date(from: at) else {
                throw UsageError(message: "--at '\(at)' is not an ISO 8601 time such as 2025-06-01T12:00:00Z or 2025-06-01")
            }
            time = parsed
        }
        let presented = try ChainFile.load(contentsOf: chain)
        let users = try userAnchors.flatMap { try Certificate.load(contentsOf: $0) }
        let store: TrustStore
        if let trustStore {
            store = TrustStore(systemAnchors: try TrustStore.loadBundle(at: trustStore), userAnchors: users)
        } else {
            do { store = try TrustStore.system(userAnchors: users) } catch let error as PinproxyError {
                throw PinproxyError(error.code, "\(error.reason) (the system trust store; give --trust-store BUNDLE.pem on a machine without one)")
            }
        }
        return (presented, time, store)
    }
}
