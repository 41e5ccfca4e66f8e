import Foundation
import PinproxyCertificates
import PinproxyPinning
import PinproxyProxy

/// `pinproxy demo`: what pinning protects against, in four real connections
/// through the proxy, each carrying a fake secret, with the proxy CA installed
/// on the device as a tester would install it; and what it costs, in a fifth.
///
/// 1. no pinning: the client accepts the forged chain and the proxy reads the secret;
/// 2. AFNetworking publicKey pinning: refused inside the handshake, with the reason;
/// 3. OkHttp's CertificatePinner against a stuffed chain: refused after the handshake;
/// 4. OkHttp before CVE-2016-2402 against the same stuffed chain: VULNERABLE;
/// 5. OkHttp pinning only the intermediate, when the genuine server moves to a new
///    intermediate (Let's Encrypt, June 2024): OUTAGE — the app refuses its own server.
public enum Demo {
    /// One part of the story, as it came out.
    public struct Part: Sendable {
        public var title: String
        /// `INTERCEPTED`, `REFUSED`, `VULNERABLE`, or `UNEXPECTED`.
        public var outcome: String
        public var lines: [String]
        /// Whether the part came out as the story says it does.
        public var asExpected: Bool
    }

    /// Runs the five parts in `harness` (whose world's host must be under a public suffix; its
    /// world generated, for the rotation of the fifth).
    public static func run(in harness: Harness) throws -> [Part] {
        let world = harness.world
        let host = world.host.description
        let leafPin = world.leaf.spkiPin.okhttp
        let parts: [(String, any PinningPolicy, AttackProfile, String)] = [
            ("No pinning (AFNetworking SSLPinningMode none) vs forge", AFNetworkingPolicy(), .forge, "INTERCEPTED"),
            ("AFNetworking publicKey pinning (the genuine leaf's key) vs forge",
             AFNetworkingPolicy(mode: .publicKey, pinnedCertificates: [world.leaf]), .forge, "REFUSED"),
            ("OkHttp CertificatePinner (cleaned chain, the genuine leaf's pin) vs stuff (forged chain + genuine chain appended)",
             OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: host, pin: leafPin)]), .stuff, "REFUSED"),
            ("OkHttp before 2.7.5/3.1.2 (pins checked on the presented chain) vs stuff",
             OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: host, pin: leafPin)], profile: .presentedChain), .stuff, "VULNERABLE"),
        ]
        var told = parts.enumerated().map { index, part in
            let (title, policy, profile, expected) = part
            let result = harness.run(Scenario(profile: profile, deviceTrustsProxyCA: true), policy: policy)
            return describe(index: index, title: title, result: result, expected: expected, harness: harness)
        }
        if let intermediate = world.intermediate {
            let policy = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: host, pin: intermediate.spkiPin.okhttp)])
            let result = harness.run(Scenario(rotation: "new-intermediate", passthrough: true), policy: policy)
            told.append(describeRotation(index: told.count, result: result))
        }
        return told
    }

    /// The outage part: the genuine server, passed through untouched, with a new intermediate.
    private static func describeRotation(index: Int, result: ScenarioResult) -> Part {
        let title = "OkHttp pinning only the intermediate vs the genuine server moving to a new intermediate (no attacker)"
        let outcome: String
        var lines: [String] = []
        switch result.status {
        case .outage:
            outcome = "OUTAGE"
            let parts = result.reason.components(separatedBy: " — OUTAGE: ")
            lines.append("the app refuses its own server: \(parts[0])")
            if parts.count > 1 { lines.append(parts[1]) }
        case .pass:
            outcome = "SURVIVED"
            lines.append(result.reason)
        default:
            outcome = "UNEXPECTED"
            lines.append(result.reason)
        }
        return Part(title: "\(index + 1). \(title)", outcome: outcome, lines: lines, asExpected: outcome == "OUTAGE")
    }

    private static func describe(index: Int, title: String, result: ScenarioResult, expected: String, harness: Harness) -> Part {
        var lines: [String] = []
        let accepted = result.actual == "ACCEPT" || result.actual == "REPORT-ONLY"
        let outcome: String
        if result.status == .error {
            outcome = "UNEXPECTED"
            lines.append(result.reason)
        } else if accepted {
            let cves = result.weaknesses.filter { $0.hasPrefix("CVE-") }
            outcome = cves.isEmpty ? "INTERCEPTED" : "VULNERABLE"
            if let weakness = result.verdict?.weaknesses.first(where: { $0.name.hasPrefix("CVE-") }) {
                lines.append("\(weakness.name): \(weakness.explanation)")
                lines.append(result.reason)
            } else {
                lines.append("the client accepted the forged chain: \(result.reason)")
            }
            if let request = harness.interceptedRequest(of: result) {
                lines.append("the proxy read the request: GET \(request.url)  Authorization: \(request.authorization ?? "(none)")")
            }
        } else {
            outcome = "REFUSED"
            lines.append(result.reason)
            if let observed = result.proxyObserved { lines.append("the proxy saw: \(observed); no request, no secret") }
        }
        return Part(title: "\(index + 1). \(title)", outcome: outcome, lines: lines, asExpected: outcome == expected)
    }

    /// The story as a person reads it at a glance. `command` is how the reader ran pinproxy
    /// (`.build/debug/pinproxy` from `make demo`, `pinproxy` on the PATH): the next steps use it.
    public static func text(_ parts: [Part], harness: Harness, elapsed: TimeInterval, colour: Bool = false,
                            command: String = "pinproxy") -> String {
        let world = harness.world
        var out = [
            "pinproxy demo: a client sends a fake secret to https://\(world.host):\(harness.origin.port) through a man-in-the-middle",
            "world on 127.0.0.1: a public root and intermediate (the device's system store) → \(world.host); proxy \(harness.proxy.address), its CA installed on the device",
            "",
        ]
        for part in parts {
            out.append(part.title)
            let label = part.outcome.padding(toLength: 12, withPad: " ", startingAt: 0)
            let painted = colour ? paint(label, part.outcome) : label
            for (n, line) in part.lines.enumerated() {
                out.append("   " + (n == 0 ? painted : String(repeating: " ", count: 12)) + " " + line)
            }
            out.append("")
        }
        out += next(command: command)
        out.append(String(format: "(done in %.2f s)", elapsed))
        return out.joined(separator: "\n")
    }

    /// The next steps, one command a line: from the source tree each runs as pasted (its example
    /// policy, `make run`); elsewhere the first names a policy the reader writes.
    static func next(command: String, inSourceTree: Bool = FileManager.default.fileExists(atPath: examplePolicy)) -> [String] {
        let cmd = command.contains(" ") ? "'\(command)'" : command
        // Outside the source tree the policy is the reader's to write: that line does not run as pasted.
        var lines = [inSourceTree ? "Next, each line runs as pasted:" : "Next (the first line once you have written my-policy.json):"]
        if inSourceTree {
            lines.append("  \(cmd) check --policy \(examplePolicy)   # the whole matrix for one policy, attacks and rotations; one per family in docs/examples/")
        } else {
            lines.append("  \(cmd) check --policy my-policy.json   # the whole matrix for your policy, attacks and rotations (format: docs/policies.md)")
        }
        lines.append("  \(cmd) check --client 'curl -sS -o /dev/null --resolve {resolve} --cacert {ca} --pinnedpubkey {pin} {url}'   # a real client")
        lines.append(inSourceTree ? "  make run   # the proxy for your app, control API on 127.0.0.1:8081 (stop with Ctrl-C)"
                                  : "  \(cmd) serve --admin 127.0.0.1:8081   # the proxy for your app (stop with Ctrl-C)")
        if inSourceTree && command != "pinproxy" {
            lines.append("  make install   # pinproxy on your PATH (PREFIX=/usr/local, or ~/.local without root)")
        }
        return lines
    }

    /// The example policy the next steps suggest, relative to the source tree's root.
    static let examplePolicy = "docs/examples/okhttp.json"

    private static func paint(_ text: String, _ outcome: String) -> String {
        let code = outcome == "REFUSED" || outcome == "SURVIVED" ? "32;1" : outcome == "UNEXPECTED" ? "33;1" : outcome == "OUTAGE" ? "35;1" : "31;1"
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }
}
