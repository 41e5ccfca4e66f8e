import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// One row of the AFSecurityPolicy 4.x decision table.
struct AFCase: Sendable, CustomStringConvertible {
    let scenario: Scenario
    let mode: AFNetworkingPolicy.PinningMode
    let allowInvalid: Bool
    let validatesDomain: Bool
    let pinned: Bool
    let expected: Verdict.Decision

    var description: String {
        "\(scenario) / \(mode.rawValue) / allowInvalid \(yes(allowInvalid)) / validatesDomainName \(yes(validatesDomain)) / \(pinned ? "pinned" : "no pins") → \(expected.rawValue)"
    }
}

private func row(
    _ scenario: Scenario, _ mode: AFNetworkingPolicy.PinningMode,
    allowInvalid: Bool, domain: Bool, pinned: Bool, _ expected: Verdict.Decision
) -> AFCase {
    AFCase(scenario: scenario, mode: mode, allowInvalid: allowInvalid, validatesDomain: domain, pinned: pinned, expected: expected)
}

// Every expected verdict below was derived by walking the 4.x steps by hand:
//   1 guard: allowInvalid && validatesDomainName && (mode none || no pins) → REJECT
//   2 evaluate with SSL(host) or basic X.509 against system + user anchors
//   3 none: ACCEPT iff allowInvalid || valid
//   4 other modes: REJECT if invalid && !allowInvalid
//   5 certificate: pinned certificates as the only anchors, must be valid, ACCEPT iff a
//     certificate of that chain is pinned
//   6 publicKey: ACCEPT iff a key of the chain built in step 2 is pinned
// "Pinned" means the app ships the genuine leaf (the self-signed certificate in the
// self-signed scenario); "no pins" means pinnedCertificates is empty.
let afDecisionTable: [AFCase] = [
    // Genuine chain [leaf, intermediate], root in the system store. Valid with and without the host.
    row(.genuine, .none, allowInvalid: false, domain: false, pinned: false, .accept),        // 3: basic X.509 valid
    row(.genuine, .none, allowInvalid: false, domain: false, pinned: true, .accept),         // 3: valid; pins unused in mode none
    row(.genuine, .none, allowInvalid: false, domain: true, pinned: false, .accept),         // 3: SSL policy with host valid
    row(.genuine, .none, allowInvalid: false, domain: true, pinned: true, .accept),          // 3: valid
    row(.genuine, .none, allowInvalid: true, domain: false, pinned: false, .accept),         // 3: valid (allowInvalid also accepts)
    row(.genuine, .none, allowInvalid: true, domain: false, pinned: true, .accept),          // 3: valid
    row(.genuine, .none, allowInvalid: true, domain: true, pinned: false, .reject),          // 1: guard, mode none
    row(.genuine, .none, allowInvalid: true, domain: true, pinned: true, .reject),           // 1: guard, mode none even with pins
    row(.genuine, .publicKey, allowInvalid: false, domain: false, pinned: false, .reject),   // 6: no pinned keys
    row(.genuine, .publicKey, allowInvalid: false, domain: false, pinned: true, .accept),    // 6: leaf key pinned
    row(.genuine, .publicKey, allowInvalid: false, domain: true, pinned: false, .reject),    // 6: no pinned keys
    row(.genuine, .publicKey, allowInvalid: false, domain: true, pinned: true, .accept),     // 6: leaf key pinned
    row(.genuine, .publicKey, allowInvalid: true, domain: false, pinned: false, .reject),    // 6: no pinned keys
    row(.genuine, .publicKey, allowInvalid: true, domain: false, pinned: true, .accept),     // 6: leaf key pinned
    row(.genuine, .publicKey, allowInvalid: true, domain: true, pinned: false, .reject),     // 1: guard, no pins
    row(.genuine, .publicKey, allowInvalid: true, domain: true, pinned: true, .accept),      // 6: leaf key pinned
    row(.genuine, .certificate, allowInvalid: false, domain: false, pinned: false, .reject), // 5: no anchors, re-evaluation fails
    row(.genuine, .certificate, allowInvalid: false, domain: false, pinned: true, .accept),  // 5: pinned leaf is its own anchor
    row(.genuine, .certificate, allowInvalid: false, domain: true, pinned: false, .reject),  // 5: no anchors
    row(.genuine, .certificate, allowInvalid: false, domain: true, pinned: true, .accept),   // 5: valid for the host, leaf pinned
    row(.genuine, .certificate, allowInvalid: true, domain: false, pinned: false, .reject),  // 5: no anchors
    row(.genuine, .certificate, allowInvalid: true, domain: false, pinned: true, .accept),   // 5: leaf pinned
    row(.genuine, .certificate, allowInvalid: true, domain: true, pinned: false, .reject),   // 1: guard, no pins
    row(.genuine, .certificate, allowInvalid: true, domain: true, pinned: true, .accept),    // 5: leaf pinned

    // Self-signed [selfSigned] for the right host; invalid against the device anchors either way.
    row(.selfSigned, .none, allowInvalid: false, domain: false, pinned: false, .reject),      // 3: invalid, allowInvalid NO
    row(.selfSigned, .none, allowInvalid: false, domain: false, pinned: true, .reject),       // 3: invalid; pins unused
    row(.selfSigned, .none, allowInvalid: false, domain: true, pinned: false, .reject),       // 3: invalid
    row(.selfSigned, .none, allowInvalid: false, domain: true, pinned: true, .reject),        // 3: invalid
    row(.selfSigned, .none, allowInvalid: true, domain: false, pinned: false, .accept),       // 3: allowInvalid accepts anything
    row(.selfSigned, .none, allowInvalid: true, domain: false, pinned: true, .accept),        // 3: allowInvalid
    row(.selfSigned, .none, allowInvalid: true, domain: true, pinned: false, .reject),        // 1: guard
    row(.selfSigned, .none, allowInvalid: true, domain: true, pinned: true, .reject),         // 1: guard
    row(.selfSigned, .publicKey, allowInvalid: false, domain: false, pinned: false, .reject), // 4: invalid
    row(.selfSigned, .publicKey, allowInvalid: false, domain: false, pinned: true, .reject),  // 4: invalid
    row(.selfSigned, .publicKey, allowInvalid: false, domain: true, pinned: false, .reject),  // 4: invalid
    row(.selfSigned, .publicKey, allowInvalid: false, domain: true, pinned: true, .reject),   // 4: invalid
    row(.selfSigned, .publicKey, allowInvalid: true, domain: false, pinned: false, .reject),  // 6: no pinned keys
    row(.selfSigned, .publicKey, allowInvalid: true, domain: false, pinned: true, .accept),   // 6: its key is pinned
    row(.selfSigned, .publicKey, allowInvalid: true, domain: true, pinned: false, .reject),   // 1: guard
    row(.selfSigned, .publicKey, allowInvalid: true, domain: true, pinned: true, .accept),    // 6: its key is pinned
    row(.selfSigned, .certificate, allowInvalid: false, domain: false, pinned: false, .reject), // 4: invalid
    row(.selfSigned, .certificate, allowInvalid: false, domain: false, pinned: true, .reject),  // 4: invalid
    row(.selfSigned, .certificate, allowInvalid: false, domain: true, pinned: false, .reject),  // 4: invalid
    row(.selfSigned, .certificate, allowInvalid: false, domain: true, pinned: true, .reject),   // 4: invalid
    row(.selfSigned, .certificate, allowInvalid: true, domain: false, pinned: false, .reject),  // 5: no anchors
    row(.selfSigned, .certificate, allowInvalid: true, domain: false, pinned: true, .accept),   // 5: anchored on itself, pinned
    row(.selfSigned, .certificate, allowInvalid: true, domain: true, pinned: false, .reject),   // 1: guard
    row(.selfSigned, .certificate, allowInvalid: true, domain: true, pinned: true, .accept),    // 5: anchored on itself, host in SAN

    // Forged [forgedLeaf, proxyCA] with the proxy CA installed as a user anchor: valid either way.
    row(.forged, .none, allowInvalid: false, domain: false, pinned: false, .accept),        // 3: valid via user anchor
    row(.forged, .none, allowInvalid: false, domain: false, pinned: true, .accept),         // 3: valid; pins unused
    row(.forged, .none, allowInvalid: false, domain: true, pinned: false, .accept),         // 3: valid for the host
    row(.forged, .none, allowInvalid: false, domain: true, pinned: true, .accept),          // 3: valid
    row(.forged, .none, allowInvalid: true, domain: false, pinned: false, .accept),         // 3: valid
    row(.forged, .none, allowInvalid: true, domain: false, pinned: true, .accept),          // 3: valid
    row(.forged, .none, allowInvalid: true, domain: true, pinned: false, .reject),          // 1: guard
    row(.forged, .none, allowInvalid: true, domain: true, pinned: true, .reject),           // 1: guard
    row(.forged, .publicKey, allowInvalid: false, domain: false, pinned: false, .reject),   // 6: no pinned keys
    row(.forged, .publicKey, allowInvalid: false, domain: false, pinned: true, .reject),    // 6: forged leaf/CA keys not pinned
    row(.forged, .publicKey, allowInvalid: false, domain: true, pinned: false, .reject),    // 6: no pinned keys
    row(.forged, .publicKey, allowInvalid: false, domain: true, pinned: true, .reject),     // 6: keys not pinned
    row(.forged, .publicKey, allowInvalid: true, domain: false, pinned: false, .reject),    // 6: no pinned keys
    row(.forged, .publicKey, allowInvalid: true, domain: false, pinned: true, .reject),     // 6: keys not pinned
    row(.forged, .publicKey, allowInvalid: true, domain: true, pinned: false, .reject),     // 1: guard
    row(.forged, .publicKey, allowInvalid: true, domain: true, pinned: true, .reject),      // 6: keys not pinned
    row(.forged, .certificate, allowInvalid: false, domain: false, pinned: false, .reject), // 5: no anchors
    row(.forged, .certificate, allowInvalid: false, domain: false, pinned: true, .reject),  // 5: does not chain to the pinned leaf
    row(.forged, .certificate, allowInvalid: false, domain: true, pinned: false, .reject),  // 5: no anchors
    row(.forged, .certificate, allowInvalid: false, domain: true, pinned: true, .reject),   // 5: does not chain to the pinned leaf
    row(.forged, .certificate, allowInvalid: true, domain: false, pinned: false, .reject),  // 5: no anchors
    row(.forged, .certificate, allowInvalid: true, domain: false, pinned: true, .reject),   // 5: does not chain
    row(.forged, .certificate, allowInvalid: true, domain: true, pinned: false, .reject),   // 1: guard
    row(.forged, .certificate, allowInvalid: true, domain: true, pinned: true, .reject),    // 5: does not chain

    // Stuffed [forgedLeaf, proxyCA, leaf, intermediate], proxy CA installed. The built chain is
    // [forgedLeaf, proxyCA]; the appended genuine certificates never enter the trust.
    row(.stuffed, .none, allowInvalid: false, domain: false, pinned: false, .accept),        // 3: valid via user anchor
    row(.stuffed, .none, allowInvalid: false, domain: false, pinned: true, .accept),         // 3: valid
    row(.stuffed, .none, allowInvalid: false, domain: true, pinned: false, .accept),         // 3: valid
    row(.stuffed, .none, allowInvalid: false, domain: true, pinned: true, .accept),          // 3: valid
    row(.stuffed, .none, allowInvalid: true, domain: false, pinned: false, .accept),         // 3: valid
    row(.stuffed, .none, allowInvalid: true, domain: false, pinned: true, .accept),          // 3: valid
    row(.stuffed, .none, allowInvalid: true, domain: true, pinned: false, .reject),          // 1: guard
    row(.stuffed, .none, allowInvalid: true, domain: true, pinned: true, .reject),           // 1: guard
    row(.stuffed, .publicKey, allowInvalid: false, domain: false, pinned: false, .reject),   // 6: no pinned keys
    row(.stuffed, .publicKey, allowInvalid: false, domain: false, pinned: true, .reject),    // 6: genuine leaf not in the built chain
    row(.stuffed, .publicKey, allowInvalid: false, domain: true, pinned: false, .reject),    // 6: no pinned keys
    row(.stuffed, .publicKey, allowInvalid: false, domain: true, pinned: true, .reject),     // 6: genuine leaf not in the built chain
    row(.stuffed, .publicKey, allowInvalid: true, domain: false, pinned: false, .reject),    // 6: no pinned keys
    row(.stuffed, .publicKey, allowInvalid: true, domain: false, pinned: true, .reject),     // 6: genuine leaf not in the built chain
    row(.stuffed, .publicKey, allowInvalid: true, domain: true, pinned: false, .reject),     // 1: guard
    row(.stuffed, .publicKey, allowInvalid: true, domain: true, pinned: true, .reject),      // 6: genuine leaf not in the built chain
    row(.stuffed, .certificate, allowInvalid: false, domain: false, pinned: false, .reject), // 5: no anchors
    row(.stuffed, .certificate, allowInvalid: false, domain: false, pinned: true, .reject),  // 5: forged leaf does not chain to the pinned leaf
    row(.stuffed, .certificate, allowInvalid: false, domain: true, pinned: false, .reject),  // 5: no anchors
    row(.stuffed, .certificate, allowInvalid: false, domain: true, pinned: true, .reject),   // 5: does not chain
    row(.stuffed, .certificate, allowInvalid: true, domain: false, pinned: false, .reject),  // 5: no anchors
    row(.stuffed, .certificate, allowInvalid: true, domain: false, pinned: true, .reject),   // 5: does not chain
    row(.stuffed, .certificate, allowInvalid: true, domain: true, pinned: false, .reject),   // 1: guard
    row(.stuffed, .certificate, allowInvalid: true, domain: true, pinned: true, .reject),    // 5: does not chain

    // Wrong host [otherLeaf, intermediate]: valid as basic X.509, host mismatch with the SSL policy.
    row(.wrongHost, .none, allowInvalid: false, domain: false, pinned: false, .accept),        // 3: basic X.509 valid — no name check
    row(.wrongHost, .none, allowInvalid: false, domain: false, pinned: true, .accept),         // 3: basic X.509 valid
    row(.wrongHost, .none, allowInvalid: false, domain: true, pinned: false, .reject),         // 3: host mismatch, allowInvalid NO
    row(.wrongHost, .none, allowInvalid: false, domain: true, pinned: true, .reject),          // 3: host mismatch
    row(.wrongHost, .none, allowInvalid: true, domain: false, pinned: false, .accept),         // 3: valid as basic X.509
    row(.wrongHost, .none, allowInvalid: true, domain: false, pinned: true, .accept),          // 3: valid as basic X.509
    row(.wrongHost, .none, allowInvalid: true, domain: true, pinned: false, .reject),          // 1: guard
    row(.wrongHost, .none, allowInvalid: true, domain: true, pinned: true, .reject),           // 1: guard
    row(.wrongHost, .publicKey, allowInvalid: false, domain: false, pinned: false, .reject),   // 6: no pinned keys
    row(.wrongHost, .publicKey, allowInvalid: false, domain: false, pinned: true, .reject),    // 6: other leaf/intermediate/root keys not pinned
    row(.wrongHost, .publicKey, allowInvalid: false, domain: true, pinned: false, .reject),    // 4: host mismatch
    row(.wrongHost, .publicKey, allowInvalid: false, domain: true, pinned: true, .reject),     // 4: host mismatch
    row(.wrongHost, .publicKey, allowInvalid: true, domain: false, pinned: false, .reject),    // 6: no pinned keys
    row(.wrongHost, .publicKey, allowInvalid: true, domain: false, pinned: true, .reject),     // 6: keys not pinned
    row(.wrongHost, .publicKey, allowInvalid: true, domain: true, pinned: false, .reject),     // 1: guard
    row(.wrongHost, .publicKey, allowInvalid: true, domain: true, pinned: true, .reject),      // 6: keys not pinned
    row(.wrongHost, .certificate, allowInvalid: false, domain: false, pinned: false, .reject), // 5: no anchors
    row(.wrongHost, .certificate, allowInvalid: false, domain: false, pinned: true, .reject),  // 5: does not chain to the pinned leaf
    row(.wrongHost, .certificate, allowInvalid: false, domain: true, pinned: false, .reject),  // 4: host mismatch
    row(.wrongHost, .certificate, allowInvalid: false, domain: true, pinned: true, .reject),   // 4: host mismatch
    row(.wrongHost, .certificate, allowInvalid: true, domain: false, pinned: false, .reject),  // 5: no anchors
    row(.wrongHost, .certificate, allowInvalid: true, domain: false, pinned: true, .reject),   // 5: does not chain
    row(.wrongHost, .certificate, allowInvalid: true, domain: true, pinned: false, .reject),   // 1: guard
    row(.wrongHost, .certificate, allowInvalid: true, domain: true, pinned: true, .reject),    // 5: does not chain

    // Expired [expiredLeaf (genuine key), intermediate]: invalid either way; the built chain
    // still reaches the root, so it holds the genuine key.
    row(.expired, .none, allowInvalid: false, domain: false, pinned: false, .reject),        // 3: expired, allowInvalid NO
    row(.expired, .none, allowInvalid: false, domain: false, pinned: true, .reject),         // 3: expired
    row(.expired, .none, allowInvalid: false, domain: true, pinned: false, .reject),         // 3: expired
    row(.expired, .none, allowInvalid: false, domain: true, pinned: true, .reject),          // 3: expired
    row(.expired, .none, allowInvalid: true, domain: false, pinned: false, .accept),         // 3: allowInvalid accepts
    row(.expired, .none, allowInvalid: true, domain: false, pinned: true, .accept),          // 3: allowInvalid accepts
    row(.expired, .none, allowInvalid: true, domain: true, pinned: false, .reject),          // 1: guard
    row(.expired, .none, allowInvalid: true, domain: true, pinned: true, .reject),           // 1: guard
    row(.expired, .publicKey, allowInvalid: false, domain: false, pinned: false, .reject),   // 4: expired
    row(.expired, .publicKey, allowInvalid: false, domain: false, pinned: true, .reject),    // 4: expired
    row(.expired, .publicKey, allowInvalid: false, domain: true, pinned: false, .reject),    // 4: expired
    row(.expired, .publicKey, allowInvalid: false, domain: true, pinned: true, .reject),     // 4: expired
    row(.expired, .publicKey, allowInvalid: true, domain: false, pinned: false, .reject),    // 6: no pinned keys
    row(.expired, .publicKey, allowInvalid: true, domain: false, pinned: true, .accept),     // 6: genuine key matches, nothing re-validates (weakness)
    row(.expired, .publicKey, allowInvalid: true, domain: true, pinned: false, .reject),     // 1: guard
    row(.expired, .publicKey, allowInvalid: true, domain: true, pinned: true, .accept),      // 6: genuine key matches, no re-validation (weakness)
    row(.expired, .certificate, allowInvalid: false, domain: false, pinned: false, .reject), // 4: expired
    row(.expired, .certificate, allowInvalid: false, domain: false, pinned: true, .reject),  // 4: expired
    row(.expired, .certificate, allowInvalid: false, domain: true, pinned: false, .reject),  // 4: expired
    row(.expired, .certificate, allowInvalid: false, domain: true, pinned: true, .reject),   // 4: expired
    row(.expired, .certificate, allowInvalid: true, domain: false, pinned: false, .reject),  // 5: no anchors
    row(.expired, .certificate, allowInvalid: true, domain: false, pinned: true, .reject),   // 5: expired leaf is not the pinned leaf and does not chain to it
    row(.expired, .certificate, allowInvalid: true, domain: true, pinned: false, .reject),   // 1: guard
    row(.expired, .certificate, allowInvalid: true, domain: true, pinned: true, .reject),    // 5: does not chain to the pinned leaf
]

@Suite("AFNetworking 4.x decision table")
struct AFNetworkingDecisionTableTests {
    @Test("the table covers every combination exactly once")
    func coverage() {
        var seen = Set<String>()
        for c in afDecisionTable {
            seen.insert("\(c.scenario)|\(c.mode)|\(c.allowInvalid)|\(c.validatesDomain)|\(c.pinned)")
        }
        #expect(seen.count == Scenario.allCases.count * 3 * 2 * 2 * 2)
        #expect(afDecisionTable.count == seen.count)
    }

    @Test("verdict", arguments: afDecisionTable)
    func verdict(_ c: AFCase) {
        let pki = PKI.shared
        let policy = AFNetworkingPolicy(
            mode: c.mode, allowInvalidCertificates: c.allowInvalid, validatesDomainName: c.validatesDomain,
            pinnedCertificates: c.pinned ? c.scenario.pinned(pki) : [])
        let verdict = policy.evaluate(c.scenario.trust(pki))
        #expect(verdict.decision == c.expected, "\(c)\n\(verdict.steps.map(\.description).joined(separator: "\n"))")
        #expect(verdict.disposition == (c.expected == .accept ? AFNetworkingPolicy.useCredential : AFNetworkingPolicy.cancelChallenge))
        #expect(verdict.family == .afnetworking && verdict.profile == "4.x")
        #expect(!verdict.steps.isEmpty)
    }
}
