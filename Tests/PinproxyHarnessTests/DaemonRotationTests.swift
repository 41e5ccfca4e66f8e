import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// `serve --rotation-ca`: a running daemon shows a real client its staging origin's next
/// certificate change, per host and switchable at run time; real curl with the pin of
/// today's leaf refuses the re-key and the CA switch, and the events and `/health` name
/// the profile.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct DaemonRotationTests {
    @Test func curlMeetsEveryRotationProfileOfARunningDaemon() throws {
        let directory = try TemporaryDirectory()
        var options = CertificateAuthority.Options()
        options.commonName = "Team Staging CA"
        let staging = try CertificateAuthority.create(options)
        options.commonName = "Team Next CA"
        let next = try CertificateAuthority.create(options)
        try CADirectory(path: directory.file("staging")).store(staging, overwrite: false)
        try CADirectory(path: directory.file("next")).store(next, overwrite: false)
        let stagingPEM = try directory.write(staging.certificate.pemEncoded, to: "staging.pem")
        let bothPEM = try directory.write(staging.certificate.pemEncoded + next.certificate.pemEncoded, to: "both.pem")
        // The staging origin: a leaf issued by the team's CA.
        let host = try HostName(validating: "staging.example.com")
        let leafKey = try PrivateKey.generate(.ecP256)
        let start = Date().addingTimeInterval(-3_600)
        let leaf = try Certificate.issue(.serverLeaf(names: [host], notBefore: start, notAfter: start.addingTimeInterval(30 * 86_400)),
                                         subjectKey: leafKey, signer: .authority(staging.certificate, staging.privateKey))
        let origin = try OriginServer(host: host, chain: [leaf], key: leafKey)
        defer { origin.stop() }

        let daemon = try ControlAPIProxyTests.Daemon(arguments: [
            "--dir", directory.file("ca"), "--upstream-ca", stagingPEM,
            "--rotation-ca", directory.file("staging"), "--rotation-ca", directory.file("next"),
        ])
        let proxy = try ControlAPIProxy(proxy: daemon.proxy, admin: daemon.admin)
        defer { proxy.close() }
        try proxy.resolve(host, to: OriginServer.address)
        let known = try proxy.profiles()
        for name in ["rotate-rekey", "rotate-new-intermediate", "rotate-ca-switch"] {
            #expect(known.contains { $0.profile.name == name && $0.unavailable == nil }, "\(known)")
        }

        func curl(_ profile: AttackProfile, trusting bundle: String, pinned: Bool) throws -> Int32 {
            try proxy.use(profile, for: host)
            var arguments = ["curl", "-sS", "-o", "/dev/null", "--proxy", daemon.proxy, "--cacert", bundle]
            if pinned { arguments += ["--pinnedpubkey", leaf.spkiPin.curl] }
            return try run(arguments + ["https://\(host):\(origin.port)/"]).status
        }
        // Today's app: today's leaf pinned, trusting the staging CA.
        #expect(try curl(.passthrough, trusting: stagingPEM, pinned: true) == 0)
        #expect(try curl(.rotateRekey, trusting: stagingPEM, pinned: true) == 90, "the pin of the old key refuses the re-key")
        #expect(try curl(.rotateRekey, trusting: stagingPEM, pinned: false) == 0, "the re-keyed chain is valid")
        #expect(try curl(.rotateNewIntermediate, trusting: stagingPEM, pinned: false) == 0, "the new intermediate chains to the staging CA")
        #expect(try curl(.rotateNewIntermediate, trusting: stagingPEM, pinned: true) == 90)
        #expect(try curl(.rotateCASwitch, trusting: stagingPEM, pinned: false) == 60, "a device that trusts only the old CA")
        #expect(try curl(.rotateCASwitch, trusting: bothPEM, pinned: false) == 0)

        // What each profile presents: a fresh leaf key every time (the daemon never holds the
        // genuine leaf's key); the new intermediate between the leaf and the staging CA; the
        // second CA's leaf.
        func presented(_ profile: AttackProfile) throws -> [Certificate] {
            try proxy.use(profile, for: host)
            let port = try #require(UInt16(daemon.proxy.split(separator: ":").last ?? ""))
            return try ChainFetcher.fetch(host: host.description, port: UInt16(origin.port), serverName: host.description, proxy: ("127.0.0.1", port))
        }
        let rekeyed = try presented(.rotateRekey)
        #expect(rekeyed.first?.issuer == staging.certificate.subject && rekeyed.first?.spkiPin != leaf.spkiPin, "\(rekeyed.map(\.subject))")
        let underNew = try presented(.rotateNewIntermediate)
        #expect(underNew.count == 3 && underNew[1].subject != staging.certificate.subject && underNew[0].issuer == underNew[1].subject
                && underNew[1].issuer == staging.certificate.subject && underNew[2] == staging.certificate, "\(underNew.map { "\($0.subject) <- \($0.issuer)" })")
        let switched = try presented(.rotateCASwitch)
        #expect(switched.first?.issuer == next.certificate.subject, "\(switched.map(\.subject))")

        // The events name the profile and speak of a rotated certificate, a refusal as an outage to
        // come; /health counts them.
        let events = proxy.events(host: host.description, since: Date().addingTimeInterval(-60))
        #expect(events.contains { $0.profile == "rotate-rekey" && $0.kind == .closedAfterHandshakeWithoutRequest }, "\(events.map { "\($0.kind) \($0.profile ?? "-")" })")
        #expect(events.contains { $0.profile == "rotate-ca-switch" && $0.kind == .intercepted
                && $0.message.hasPrefix("client accepted the rotated certificate for staging.example.com") })
        #expect(events.contains { $0.profile == "rotate-ca-switch" && $0.kind.isDefiniteRefusal
                && $0.message.contains("refused the rotated certificate") && $0.message.contains("an outage to come") },
                "\(events.map(\.message))")
        #expect(!events.contains { $0.message.contains("forged") }, "\(events.map(\.message))")
        let health = try run(["curl", "-sS", daemon.admin + "/health"]).stdout
        for name in ["rotate-rekey", "rotate-new-intermediate", "rotate-ca-switch"] {
            #expect(health.contains("\"\(name)\""), "\(health)")
        }
    }

    @Test func withOneCAOnlyTheSwitchIsUnavailableAndAMissingCAIsAnInputError() throws {
        let directory = try TemporaryDirectory()
        try CADirectory(path: directory.file("staging")).store(try CertificateAuthority.create(), overwrite: false)
        let one = try ControlAPIProxyTests.Daemon(arguments: ["--dir", directory.file("ca"), "--rotation-ca", directory.file("staging")])
        let proxy = try ControlAPIProxy(proxy: one.proxy, admin: one.admin)
        defer { proxy.close() }
        let known = try proxy.profiles()
        #expect(known.first { $0.profile == .rotateCASwitch }?.unavailable?.contains("give --rotation-ca twice") == true, "\(known)")
        #expect(known.first { $0.profile == .rotateRekey }?.unavailable == nil)
        let refused = try pinproxy(["serve", "--listen", "127.0.0.1:0", "--dir", directory.file("ca2"), "--rotation-ca", directory.file("missing")])
        #expect(refused.status == 2 && refused.stderr.contains("--rotation-ca \(directory.file("missing"))"), "\(refused.output)")
    }
}
