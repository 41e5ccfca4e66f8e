import Foundation
import PinproxyCertificates
import PinproxyPinning

// Policy files through the real loader, PolicyFile.load(contentsOf:), which
// picks the format by extension: the input is written to a scratch file
// beside the fixture files policies may name (see ``FuzzFixtures``). A
// policy that loads is evaluated on a chain forged for api.example.com and
// its verdict rendered, as `pinproxy verify` does.

extension FuzzTarget {
    public static let policyJSON = FuzzTarget(
        "policy-json", "a JSON policy file (every family) into PolicyFile.load, then evaluate and report"
    ) { input throws(FuzzFailure) in
        // Names in a policy are read as files: keep them inside the scratch folder.
        guard PolicyFileFuzz.namesOnlyScratchFiles(input) else { return }
        try PolicyFileFuzz.load(input, as: "policy.json")
    }

    public static let policyAndroidXML = FuzzTarget(
        "policy-xml", "an Android network_security_config XML into PolicyFile.load, then evaluate and report"
    ) { input throws(FuzzFailure) in
        try PolicyFileFuzz.load(input, as: "policy.xml")
    }

    public static let policyTrustKitPlist = FuzzTarget(
        "policy-plist", "a TrustKit Info.plist into PolicyFile.load, then evaluate and report"
    ) { input throws(FuzzFailure) in
        try PolicyFileFuzz.load(input, as: "policy.plist")
    }
}

enum PolicyFileFuzz {
    static func load(_ input: [UInt8], as name: String) throws(FuzzFailure) {
        let fixtures = FuzzFixtures.shared
        let path = try FuzzScratch.write(input, to: name)
        let policy: any PinningPolicy
        do {
            policy = try PolicyFile.load(contentsOf: path)
        } catch let error as PinproxyError {
            try require(!error.reason.isEmpty, "a policy error without a reason")
            FuzzLog.note("refused: \(error.reason)")
            return
        } catch {
            throw fail("the loader threw \(type(of: error)), not a PinproxyError: \(error)")
        }
        var trusts = [ServerTrust(presentedChain: fixtures.chain, host: fixtures.host, store: fixtures.store)]
        if let dotted = try? ServerTrust(presentedChain: fixtures.chain, hostAsWritten: "API.example.com.", store: fixtures.store) {
            trusts.append(dotted)
        }
        for trust in trusts {
            let verdict = policy.evaluate(trust)
            FuzzLog.note("\(policy.family) policy: \(verdict.decision) for \(trust.hostAsWritten)")
            try require(verdict.family == policy.family, "a \(policy.family) policy gave a \(verdict.family) verdict")
            try require(!verdict.steps.isEmpty, "a verdict without steps")
            _ = VerdictReport.text(verdict)
            _ = VerdictReport.json(verdict)
        }
    }

    /// Whether every string in a JSON input is a name the loader resolves
    /// inside the scratch folder: not absolute, no `..`. Anything else
    /// could name a device (`/dev/zero`) and stall the run; inputs that are
    /// not JSON name no file and pass.
    static func namesOnlyScratchFiles(_ input: [UInt8]) -> Bool {
        guard let value = try? JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed]) else { return true }
        func safe(_ value: Any) -> Bool {
            switch value {
            case let text as String: return !text.hasPrefix("/") && !text.contains("..")
            case let list as [Any]: return list.allSatisfy(safe)
            case let object as [String: Any]: return object.allSatisfy { !$0.key.hasPrefix("/") && safe($0.value) }
            default: return true
            }
        }
        return safe(value)
    }
}
