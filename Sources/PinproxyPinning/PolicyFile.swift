import Foundation
import PinproxyCertificates

/// Reads policy files: JSON for every family but Android (one schema, see
/// docs/policies.md), Android's network_security_config XML as it ships, and a
/// TrustKit Info.plist.
///
/// Every problem is an error naming the file, the key and what is wrong:
/// unknown keys, wrong types, missing or undecodable certificate files, malformed
/// pins. Nothing falls back to a default silently.
public enum PolicyFile {
    private enum SniffedXML { case androidConfig, plist, otherXML }

    /// What an XML file without a telling extension is; nil when it does not start like XML.
    private static func sniffedXML(_ bytes: [UInt8]) -> SniffedXML? {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        guard let first = body.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }), first == UInt8(ascii: "<") else { return nil }
        let head = String(decoding: body.prefix(4096), as: UTF8.self)
        if head.contains("<network-security-config") { return .androidConfig }
        if head.contains("<plist") || head.contains("<!DOCTYPE plist") { return .plist }
        return .otherXML
    }

    /// Loads the policy in `path`, choosing the format by extension (`.xml`, `.plist`), else by
    /// content (`<network-security-config`, `<plist`), else JSON.
    ///
    /// With a `world`, certificate paths and pins may be written as `world:leaf`,
    /// `world:intermediate`, `world:root` or `world:misissuer` (see ``PolicyWorld``).
    public static func load(contentsOf path: String, world: PolicyWorld? = nil) throws -> any PinningPolicy {
        let lower = path.lowercased()
        if lower.hasSuffix(".xml") { return AndroidPolicy(config: try NetworkSecurityConfig.load(contentsOf: path, world: world)) }
        let bytes: [UInt8]
        do { bytes = try FileIO.read(path) } catch let error as PinproxyError {
            throw PinproxyError(.policyFile, error.reason)
        }
        if lower.hasSuffix(".plist") { return try loadTrustKitPlist(Data(bytes), file: path, world: world) }
        // Another name (`policy`, `config.txt`): XML is told apart by what it holds.
        switch sniffedXML(bytes) {
        case .androidConfig: return AndroidPolicy(config: try NetworkSecurityConfig.load(contentsOf: path, world: world))
        case .plist: return try loadTrustKitPlist(Data(bytes), file: path, world: world)
        case .otherXML:
            throw PinproxyError(.policyFile, "\(path) holds XML but neither a <network-security-config> nor a <plist>; policies are JSON, Android's network_security_config.xml or a TrustKit Info.plist")
        case nil: break
        }
        if let problem = JSONSyntax.check(bytes) {
            let (line, column) = JSONSyntax.position(of: problem.offset, in: bytes)
            throw PinproxyError(.policyFile, "\(path):\(line):\(column): not valid JSON: \(problem.message)")
        }
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            let why = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? (error as NSError).localizedDescription
            if let offset = JSONSyntax.offset(inParserError: error) {
                let (line, column) = JSONSyntax.position(of: offset, in: bytes)
                throw PinproxyError(.policyFile, "\(path):\(line):\(column): not valid JSON: \(why)")
            }
            throw PinproxyError(.policyFile, "\(path): not valid JSON: \(why)")
        }
        guard let dictionary = value as? [String: Any] else {
            throw PinproxyError(.policyFile, "\(path): the top level must be a JSON object with a \"family\" key")
        }
        return try load(PolicyObject(dictionary, file: path, keyPath: "", world: world))
    }

    static func load(_ object: PolicyObject) throws -> any PinningPolicy {
        guard let familyName = try object.optional("family", as: String.self) else {
            throw object.missing("family", "is required: one of \(PolicyFamily.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let family = PolicyFamily(rawValue: familyName) else {
            throw object.error("family", "unknown family '\(familyName)'\(NearestName.hint(for: familyName, among: PolicyFamily.allCases.map(\.rawValue))); expected one of \(PolicyFamily.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let policy: any PinningPolicy
        switch family {
        case .afnetworking: policy = try afnetworking(object)
        case .customAnchors: policy = try customAnchors(object)
        case .alamofire: policy = try alamofire(object)
        case .okhttp: policy = try okhttp(object)
        case .trustkit: policy = try trustkit(object)
        case .androidNSC: policy = try android(object)
        case .curl: policy = try curl(object)
        }
        try object.finish()
        return policy
    }

    // MARK: - families

    static func afnetworking(_ object: PolicyObject) throws -> AFNetworkingPolicy {
        let profileName = try object.optional("profile", as: String.self) ?? AFNetworkingPolicy.Profile.current.rawValue
        guard let profile = AFNetworkingPolicy.Profile(rawValue: profileName) else {
            throw object.error("profile", "unknown profile '\(profileName)'\(NearestName.hint(for: profileName, among: AFNetworkingPolicy.Profile.allCases.map(\.rawValue))); expected one of \(AFNetworkingPolicy.Profile.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var mode = AFNetworkingPolicy.PinningMode.none
        if let text = try object.optional("SSLPinningMode", as: String.self) {
            let names: [String: AFNetworkingPolicy.PinningMode] = [
                "none": .none, "AFSSLPinningModeNone": .none,
                "publicKey": .publicKey, "AFSSLPinningModePublicKey": .publicKey,
                "certificate": .certificate, "AFSSLPinningModeCertificate": .certificate,
            ]
            guard let parsed = names[text] else {
                throw object.error("SSLPinningMode", "'\(text)'\(NearestName.hint(for: text, among: names.keys.sorted())) is not none, publicKey or certificate")
            }
            mode = parsed
        }
        return AFNetworkingPolicy(
            mode: mode,
            allowInvalidCertificates: try object.optional("allowInvalidCertificates", as: Bool.self) ?? false,
            validatesDomainName: try object.optional("validatesDomainName", as: Bool.self) ?? true,
            pinnedCertificates: try object.certificates("pinnedCertificates") ?? [],
            profile: profile)
    }

    static func customAnchors(_ object: PolicyObject) throws -> CustomAnchorsPolicy {
        guard let anchors = try object.certificates("anchorCertificates") else {
            throw object.missing("anchorCertificates", "is required: the CA certificate files the app sets as anchors")
        }
        return CustomAnchorsPolicy(
            anchorCertificates: anchors,
            anchorCertificatesOnly: try object.optional("anchorCertificatesOnly", as: Bool.self) ?? true,
            validatesDomainName: try object.optional("validatesDomainName", as: Bool.self) ?? true)
    }

    static func alamofire(_ object: PolicyObject) throws -> AlamofirePolicy {
        let all = try object.optional("allHostsMustBeEvaluated", as: Bool.self) ?? true
        guard let evaluators = try object.object("evaluators") else {
            throw object.missing("evaluators", "is required: an object mapping host names to evaluators")
        }
        var map: [String: AlamofirePolicy.Evaluator] = [:]
        for host in evaluators.keys {
            do { _ = try HostName(validating: host) } catch let error as PinproxyError {
                throw evaluators.error(host, error.reason)
            }
            guard let entry = try evaluators.object(host) else { throw evaluators.error(host, "must be an evaluator object") }
            map[host] = try alamofireEvaluator(entry)
        }
        try evaluators.finish()
        return AlamofirePolicy(evaluators: map, allHostsMustBeEvaluated: all)
    }

    static func alamofireEvaluator(_ object: PolicyObject) throws -> AlamofirePolicy.Evaluator {
        let type = try object.require("type", as: String.self)
        let evaluator: AlamofirePolicy.Evaluator
        switch type {
        case "DefaultTrustEvaluator":
            evaluator = .defaultEvaluator(validateHost: try object.optional("validateHost", as: Bool.self) ?? true)
        case "PinnedCertificatesTrustEvaluator":
            evaluator = .pinnedCertificates(
                certificates: try object.certificates("certificates") ?? [],
                acceptSelfSignedCertificates: try object.optional("acceptSelfSignedCertificates", as: Bool.self) ?? false,
                performDefaultValidation: try object.optional("performDefaultValidation", as: Bool.self) ?? true,
                validateHost: try object.optional("validateHost", as: Bool.self) ?? true)
        case "PublicKeysTrustEvaluator":
            evaluator = .publicKeys(
                keys: try object.publicKeys("keys") ?? [],
                performDefaultValidation: try object.optional("performDefaultValidation", as: Bool.self) ?? true,
                validateHost: try object.optional("validateHost", as: Bool.self) ?? true)
        case "CompositeTrustEvaluator":
            guard let list = try object.objects("evaluators") else {
                throw object.missing("evaluators", "is required for CompositeTrustEvaluator")
            }
            evaluator = .composite(try list.map { child in
                let parsed = try alamofireEvaluator(child)
                try child.finish()
                return parsed
            })
        case "DisabledTrustEvaluator":
            evaluator = .disabled
        case "RevocationTrustEvaluator":
            evaluator = .revocation(
                performDefaultValidation: try object.optional("performDefaultValidation", as: Bool.self) ?? true,
                validateHost: try object.optional("validateHost", as: Bool.self) ?? true,
                options: try revocationOptions(object))
        default:
            let evaluators = ["DefaultTrustEvaluator", "RevocationTrustEvaluator", "PinnedCertificatesTrustEvaluator",
                              "PublicKeysTrustEvaluator", "CompositeTrustEvaluator", "DisabledTrustEvaluator"]
            throw object.error("type", "unknown evaluator '\(type)'\(NearestName.hint(for: type, among: evaluators)); expected DefaultTrustEvaluator, RevocationTrustEvaluator, PinnedCertificatesTrustEvaluator, PublicKeysTrustEvaluator, CompositeTrustEvaluator or DisabledTrustEvaluator")
        }
        try object.finish()
        return evaluator
    }

    /// `options`: a list of `RevocationTrustEvaluator.Options` names; Alamofire's default is `.any`.
    static func revocationOptions(_ object: PolicyObject) throws -> AlamofirePolicy.RevocationOptions {
        guard let list = try object.optional("options", as: [Any].self) else { return .any }
        let known = AlamofirePolicy.RevocationOptions.names
        var options: AlamofirePolicy.RevocationOptions = []
        for (index, item) in list.enumerated() {
            guard let name = item as? String, let option = known.first(where: { $0.0 == name })?.1 else {
                throw object.error("options", "entry \(index) is not one of \(known.map(\.0).joined(separator: ", "))")
            }
            options.insert(option)
        }
        return options
    }

    static func okhttp(_ object: PolicyObject) throws -> OkHttpPolicy {
        let profileName = try object.optional("profile", as: String.self) ?? OkHttpPolicy.Profile.cleanedChain.rawValue
        guard let profile = OkHttpPolicy.Profile(rawValue: profileName) else {
            throw object.error("profile", "unknown profile '\(profileName)'\(NearestName.hint(for: profileName, among: OkHttpPolicy.Profile.allCases.map(\.rawValue))); expected cleaned-chain or presented-chain")
        }
        let platformName = try object.optional("platform", as: String.self) ?? OkHttpPolicy.Platform.android.rawValue
        guard let platform = OkHttpPolicy.Platform(rawValue: platformName) else {
            throw object.error("platform", "unknown platform '\(platformName)'\(NearestName.hint(for: platformName, among: OkHttpPolicy.Platform.allCases.map(\.rawValue))); expected android or jvm")
        }
        guard let pinner = try object.object("certificatePinner") else {
            throw object.missing("certificatePinner", "is required: an object mapping host patterns to lists of pins")
        }
        var pins: [OkHttpPolicy.Pin] = []
        for pattern in pinner.keys.sorted() {
            guard let list = try pinner.optional(pattern, as: [Any].self) else { continue }
            if list.isEmpty { throw pinner.error(pattern, "lists no pins") }
            // A bad pattern is the key's fault, whichever pin comes first.
            do { _ = try OkHttpPolicy.Pin.canonicalPattern(pattern) } catch let error as PinproxyError {
                throw pinner.error(pattern, error.reason)
            }
            for (index, item) in list.enumerated() {
                guard let text = item as? String else { throw pinner.error(pattern, "entry \(index) is not a string") }
                do {
                    pins.append(try OkHttpPolicy.Pin(pattern: pattern, pin: try pinner.world.pinText(text, notation: \.okhttp)))
                } catch let error as PinproxyError {
                    throw pinner.error(pattern, "entry \(index): \(error.reason)")
                }
            }
        }
        try pinner.finish()
        return OkHttpPolicy(pins: pins, profile: profile, platform: platform)
    }

    static func trustkit(_ object: PolicyObject) throws -> TrustKitPolicy {
        if let plist = try object.optional("infoPlist", as: String.self) {
            let path = object.resolve(plist)
            let bytes: [UInt8]
            do { bytes = try FileIO.read(path) } catch let error as PinproxyError {
                throw object.fileError("infoPlist", name: plist, path: path, error)
            }
            return try loadTrustKitPlist(Data(bytes), file: path, world: object.world)
        }
        return try trustKitConfiguration(object)
    }

    static func trustKitConfiguration(_ object: PolicyObject) throws -> TrustKitPolicy {
        _ = try object.optional("TSKSwizzleNetworkDelegates", as: Bool.self)
        if object.keys.contains("TSKIgnorePinningForUserDefinedTrustAnchors") {
            throw object.error("TSKIgnorePinningForUserDefinedTrustAnchors", "is a macOS-only setting this harness does not emulate; remove it")
        }
        guard let pinned = try object.object("TSKPinnedDomains") else {
            throw object.missing("TSKPinnedDomains", "is required")
        }
        var domains: [TrustKitPolicy.DomainPinning] = []
        for domain in pinned.keys.sorted() {
            do { _ = try HostName(validating: domain) } catch let error as PinproxyError { throw pinned.error(domain, error.reason) }
            guard let entry = try pinned.object(domain) else { throw pinned.error(domain, "must be an object") }
            if try entry.optional("TSKExcludeSubdomainFromParentPolicy", as: Bool.self) == true {
                if let other = entry.keys.sorted().first(where: { $0 != "TSKExcludeSubdomainFromParentPolicy" }) {
                    throw entry.error(other, "is not allowed beside TSKExcludeSubdomainFromParentPolicy; TrustKit refuses to start (\"initialized with TSKExcludeSubdomainFromParentPolicy for domain \(domain) but detected additional configuration keys\")")
                }
                domains.append(.excluded(domain))
                continue
            }
            guard let hashes = try entry.optional("TSKPublicKeyHashes", as: [Any].self) else {
                throw entry.missing("TSKPublicKeyHashes", "is required")
            }
            let pins = try hashes.enumerated().map { index, item -> SPKIPin in
                guard let written = item as? String else { throw entry.error("TSKPublicKeyHashes", "entry \(index) is not a string") }
                let text: String
                do { text = try entry.world.pinText(written, notation: \.base64) } catch let error as PinproxyError {
                    throw entry.error("TSKPublicKeyHashes", "entry \(index): \(error.reason)")
                }
                // TrustKit base64-decodes each entry as it is: a notation prefix makes it refuse to start.
                if let prefix = ["sha256/", "sha1/", "pin-sha256="].first(where: { text.hasPrefix($0) }) {
                    throw entry.error("TSKPublicKeyHashes", "entry \(index) '\(text)' starts with '\(prefix)'; TrustKit takes the bare base64 digest")
                }
                do { return try SPKIPin(parsing: text) } catch let error as PinproxyError {
                    throw entry.error("TSKPublicKeyHashes", "entry \(index): \(error.reason)")
                }
            }
            var expiration: Date? = nil
            if let text = try entry.optional("TSKExpirationDate", as: String.self) {
                guard let date = NetworkSecurityConfig.parseDay(text) else {
                    throw entry.error("TSKExpirationDate", "'\(text)' is not a yyyy-MM-dd date")
                }
                expiration = date
            }
            _ = try entry.optional("TSKDisableDefaultReportUri", as: Bool.self)
            _ = try entry.optional("TSKPublicKeyAlgorithms", as: [Any].self)  // ignored by TrustKit since 1.6
            let reports = try (entry.optional("TSKReportURIs", as: [Any].self) ?? []).enumerated().map { index, item -> String in
                guard let text = item as? String else { throw entry.error("TSKReportURIs", "entry \(index) is not a string") }
                return text
            }
            domains.append(TrustKitPolicy.DomainPinning(
                domain: domain, publicKeyHashes: pins,
                includeSubdomains: try entry.optional("TSKIncludeSubdomains", as: Bool.self) ?? false,
                enforcePinning: try entry.optional("TSKEnforcePinning", as: Bool.self) ?? true,
                expirationDate: expiration, reportURIs: reports))
            try entry.finish()
        }
        try pinned.finish()
        do {
            return try TrustKitPolicy(domains: domains)
        } catch let error as PinproxyError {
            throw PinproxyError(.policy, "\(object.file): TSKPinnedDomains: \(error.reason)")
        }
    }

    /// An Info.plist with a `TSKConfiguration` dictionary, or a bare TrustKit configuration.
    static func loadTrustKitPlist(_ data: Data, file: String, world: PolicyWorld?) throws -> TrustKitPolicy {
        let value: Any
        do {
            value = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            let why = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? (error as NSError).localizedDescription
            throw PinproxyError(.policyFile, "\(file): not a readable property list (\(why))")
        }
        guard let root = value as? [String: Any] else {
            throw PinproxyError(.policyFile, "\(file): the property list's top level must be a dictionary")
        }
        if let nested = root["TSKConfiguration"] {
            guard let configuration = nested as? [String: Any] else {
                throw PinproxyError(.policyFile, "\(file): key 'TSKConfiguration' must be a dictionary")
            }
            let object = PolicyObject(configuration, file: file, keyPath: "TSKConfiguration", world: world)
            let policy = try trustKitConfiguration(object)
            try object.finish()
            return policy
        }
        let object = PolicyObject(root, file: file, keyPath: "", world: world)
        let policy = try trustKitConfiguration(object)
        try object.finish()
        return policy
    }

    static func android(_ object: PolicyObject) throws -> AndroidPolicy {
        let name = try object.require("networkSecurityConfig", as: String.self)
        let path = object.resolve(name)
        if !FileManager.default.isReadableFile(atPath: path) {
            do { _ = try FileIO.read(path) } catch let error as PinproxyError {
                throw object.fileError("networkSecurityConfig", name: name, path: path, error)
            }
        }
        let sdk = try object.optional("targetSdkVersion", as: Int.self) ?? 24
        guard (1...100).contains(sdk) else { throw object.error("targetSdkVersion", "\(sdk) is not an Android API level") }
        return AndroidPolicy(config: try NetworkSecurityConfig.load(contentsOf: path, world: object.world), targetSdkVersion: sdk)
    }

    static func curl(_ object: PolicyObject) throws -> CurlPolicy {
        let written = try object.require("pinnedpubkey", as: String.self)
        // World references become sha256// pins, one per `;`-separated entry.
        let value: String
        do {
            value = try written.split(separator: ";", omittingEmptySubsequences: false)
                .map { try object.world.pinText(String($0), notation: \.curl) }.joined(separator: ";")
        } catch let error as PinproxyError {
            throw object.error("pinnedpubkey", error.reason)
        }
        let pins: [SPKIPin]
        var neverMatching: [String] = []
        let source: String
        let commandLine: String
        if value.hasPrefix("sha256//") {
            // Read as curl reads it: an entry it can never match is no error to curl, only a pin that never holds.
            (pins, neverMatching) = CurlPolicy.readPins(value)
            source = written
            commandLine = value
        } else {
            let path = object.resolve(value)
            do { pins = [try CurlPolicy.readPublicKeyFile(path)] } catch let error as PinproxyError {
                let failure = object.fileError("pinnedpubkey", name: value, path: path, error)
                // OkHttp's or HPKP's notation, which curl reads as a file name.
                guard value.hasPrefix("sha256/") || value.hasPrefix("pin-sha256") else { throw failure }
                throw PinproxyError(.policyFile, failure.reason + " — curl reads a value that does not start with sha256// as the path of a "
                                    + "public-key file; a hash is written sha256//<base64> (two slashes)")
            }
            source = value
            commandLine = path
        }
        let bundle = try object.optional("cacert", as: String.self).map { name -> [Certificate] in
            try object.loadCertificates(name, key: "cacert")
        }
        return CurlPolicy(pinnedPublicKeys: pins, source: source,
                          insecure: try object.optional("insecure", as: Bool.self) ?? false, caBundle: bundle,
                          neverMatchingEntries: neverMatching, commandLineValue: commandLine)
    }
}
