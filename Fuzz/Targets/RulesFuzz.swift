import Foundation
import PinproxyCertificates
import PinproxyProxy

// The control API's rules JSON (`PUT /rules`), through the public Codable
// decoding of InterceptionRules that the admin server uses, then the
// catalog check it runs before the rules take effect.

extension FuzzTarget {
    public static let rules = FuzzTarget(
        "rules", "a PUT /rules body into JSONDecoder().decode(InterceptionRules.self), validate, encode, decode again, match hosts"
    ) { input throws(FuzzFailure) in
        try RulesFuzz.run(input)
    }
}

enum RulesFuzz {
    static let hosts: [HostName] = ["api.example.com", "a.b.example.com", "example.com", "127.0.0.1", "[::1]", "xn--bcher-kva.example"]
        .compactMap { try? HostName(validating: $0) }

    static func run(_ input: [UInt8]) throws(FuzzFailure) {
        let rules: InterceptionRules
        do { rules = try JSONDecoder().decode(InterceptionRules.self, from: Data(input)) } catch {
            FuzzLog.note("refused: \(error)")
            return
        }
        do { try rules.validate(against: .standard) } catch { FuzzLog.note("invalid: \(error)") }
        let encoded: Data
        do { encoded = try JSONEncoder().encode(rules) } catch { throw fail("decoded rules do not encode: \(error)") }
        let again: InterceptionRules
        do { again = try JSONDecoder().decode(InterceptionRules.self, from: encoded) } catch {
            throw fail("rules as GET /rules returns them do not decode: \(error)\n\(String(decoding: encoded, as: UTF8.self))")
        }
        try require(again == rules, "rules changed through their own JSON")
        for host in hosts {
            let profile = rules.profile(for: host)
            try require(again.profile(for: host) == profile, "the re-read rules serve \(host) differently")
            if rules.passthrough.contains(where: { $0.matches(host) }) {
                try require(profile == .passthrough, "\(host) matches a passthrough pattern but is served by \(profile)")
            }
        }
    }
}
