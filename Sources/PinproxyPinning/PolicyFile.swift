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
    /// Loads the policy in `path`, choosing the format by extension (`.xml`, `.plist`, else JSON).
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
        let familyName = try object.require("family", as: String.self)
        guard let family = PolicyFamily(rawValue: familyName) else {
            throw object.error("family", "unknown family '\(familyName)'; expected one of \(PolicyFamily.allCases.map(\.rawValue).joined(separator: ", "))")
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
            throw object.error("profile", "unknown profile '\(profileName)'; expected one of \(AFNetworkingPolicy.Profile.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var mode = AFNetworkingPolicy.PinningMode.none
        if let text = try object.optional("SSLPinningMode", as: String.self) {
            let names: [String: AFNetworkingPolicy.PinningMode] = [
                "none": .none, "AFSSLPinningModeNone": .none,
                "publicKey": .publicKey, "AFSSLPinningModePublicKey": .publicKey,
                "certificate": .certificate, "AFSSLPinningModeCertificate": .certificate,
            ]
            guard let parsed = names[text] else {
                throw object.error("SSLPinningMode", "'\(text)' is not none, publicKey or certificate")
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
            throw object.error("anchorCertificates", "is required: the CA certificate files the app sets as anchors")
        }
        return CustomAnchorsPolicy(
            anchorCertificates: anchors,
            anchorCertificatesOnly: try object.optional("anchorCertificatesOnly", as: Bool.self) ?? true,
            validatesDomainName: try object.optional("validatesDomainName", as: Bool.self) ?? true)
    }

    static func alamofire(_ object: PolicyObject) throws -> AlamofirePolicy {
        let all = try object.optional("allHostsMustBeEvaluated", as: Bool.self) ?? true
        guard let evaluators = try object.object("evaluators") else {
            throw object.error("evaluators", "is required: an object mapping host names to evaluators")
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
                throw object.error("evaluators", "is required for CompositeTrustEvaluator")
            }
            evaluator = .composite(try list.map { child in
                let parsed = try alamofireEvaluator(child)
                try child.finish()
                return parsed
            })
        case "DisabledTrustEvaluator":
            evaluator = .disabled
        default:
            throw object.error("type", "unknown evaluator '\(type)'; expected DefaultTrustEvaluator, PinnedCertificatesTrustEvaluator, PublicKeysTrustEvaluator, CompositeTrustEvaluator or DisabledTrustEvaluator")
        }
        try object.finish()
        return evaluator
    }

    static func okhttp(_ object: PolicyObject) throws -> OkHttpPolicy {
        let profileName = try object.optional("profile", as: String.self) ?? OkHttpPolicy.Profile.cleanedChain.rawValue
        guard let profile = OkHttpPolicy.Profile(rawValue: profileName) else {
            throw object.error("profile", "unknown profile '\(profileName)'; expected cleaned-chain or presented-chain")
        }
        guard let pinner = try object.object("certificatePinner") else {
            throw object.error("certificatePinner", "is required: an object mapping host patterns to lists of pins")
        }
        var pins: [OkHttpPolicy.Pin] = []
        for pattern in pinner.keys.sorted() {
            guard let list = try pinner.optional(pattern, as: [Any].self) else { continue }
            if list.isEmpty { throw pinner.error(pattern, "lists no pins") }
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
        return OkHttpPolicy(pins: pins, profile: profile)
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
            throw object.error("TSKPinnedDomains", "is required")
        }
        var domains: [TrustKitPolicy.DomainPinning] = []
        for domain in pinned.keys.sorted() {
            do { _ = try HostName(validating: domain) } catch let error as PinproxyError { throw pinned.error(domain, error.reason) }
            guard let entry = try pinned.object(domain) else { throw pinned.error(domain, "must be an object") }
            guard let hashes = try entry.optional("TSKPublicKeyHashes", as: [Any].self) else {
                throw entry.error("TSKPublicKeyHashes", "is required")
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
        let source: String
        if value.hasPrefix("sha256//") {
            do { pins = try CurlPolicy.parsePins(value) } catch let error as PinproxyError {
                throw object.error("pinnedpubkey", error.reason)
            }
            source = written
        } else {
            let path = object.resolve(value)
            do { pins = [try CurlPolicy.readPublicKeyFile(path)] } catch let error as PinproxyError {
                throw object.fileError("pinnedpubkey", name: value, path: path, error)
            }
            source = value
        }
        let bundle = try object.optional("cacert", as: String.self).map { name -> [Certificate] in
            try object.loadCertificates(name, key: "cacert")
        }
        return CurlPolicy(pinnedPublicKeys: pins, source: source,
                          insecure: try object.optional("insecure", as: Bool.self) ?? false, caBundle: bundle)
    }
}

/// A JSON object being read: remembers which keys were used so unknown ones are errors.
final class PolicyObject {
    let values: [String: Any]
    let file: String
    let keyPath: String
    /// What `world:` references stand for; nil outside the harness.
    let world: PolicyWorld?
    private var used = Set<String>()

    init(_ values: [String: Any], file: String, keyPath: String, world: PolicyWorld? = nil) {
        self.values = values
        self.file = file
        self.keyPath = keyPath
        self.world = world
    }

    var keys: [String] { Array(values.keys) }

    func error(_ key: String, _ problem: String) -> PinproxyError {
        PinproxyError(.policyFile, "\(file): key '\(keyPath.isEmpty ? key : keyPath + "." + key)': \(problem)")
    }

    func optional<T>(_ key: String, as type: T.Type) throws -> T? {
        guard let raw = values[key] else { return nil }
        used.insert(key)
        if raw is NSNull { throw error(key, "is null") }
        let isBoolean = Self.isBoolean(raw)
        if T.self == Bool.self {
            guard isBoolean, let value = raw as? T else { throw error(key, "must be true or false") }
            return value
        }
        if T.self == Int.self {
            guard !isBoolean, let number = raw as? NSNumber, let value = Int(exactly: number.doubleValue) as? T else {
                throw error(key, "must be an integer")
            }
            return value
        }
        if isBoolean || raw is NSNumber { throw error(key, "must be \(Self.describe(T.self))") }
        guard let value = raw as? T else { throw error(key, "must be \(Self.describe(T.self))") }
        return value
    }

    func require<T>(_ key: String, as type: T.Type) throws -> T {
        guard let value = try optional(key, as: type) else { throw error(key, "is required") }
        return value
    }

    func object(_ key: String) throws -> PolicyObject? {
        guard let dictionary = try optional(key, as: [String: Any].self) else { return nil }
        return PolicyObject(dictionary, file: file, keyPath: keyPath.isEmpty ? key : keyPath + "." + key, world: world)
    }

    func objects(_ key: String) throws -> [PolicyObject]? {
        guard let list = try optional(key, as: [Any].self) else { return nil }
        return try list.enumerated().map { index, item in
            guard let dictionary = item as? [String: Any] else { throw error(key, "entry \(index) must be an object") }
            return PolicyObject(dictionary, file: file, keyPath: (keyPath.isEmpty ? key : keyPath + "." + key) + "[\(index)]", world: world)
        }
    }

    /// Fails on the first key nobody read.
    func finish() throws {
        if let unknown = values.keys.sorted().first(where: { !used.contains($0) }) {
            throw error(unknown, "unknown key")
        }
    }

    /// A path relative to the policy file's directory, made absolute so messages show where
    /// it was looked for (`..` is kept: it shows how the name was resolved).
    func resolve(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var directory = (file as NSString).deletingLastPathComponent
        if !directory.hasPrefix("/") {
            directory = (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(directory)
        }
        return (directory as NSString).appendingPathComponent(path)
    }

    /// An error about the file `name` (as written in the policy) read from `path`: the message
    /// shows the resolved path and, for a relative name, that it was relative to the policy file.
    func fileError(_ key: String, name: String, path: String, _ failure: PinproxyError) -> PinproxyError {
        let shown = name.hasPrefix("/") ? path : "\(path) (relative to the policy file)"
        let reason: String
        if let range = failure.reason.range(of: path) {
            reason = failure.reason.replacingCharacters(in: range, with: shown)
        } else {
            reason = "\(shown): \(failure.reason)"
        }
        return PinproxyError(.policyFile, "\(file): key '\(keyPath.isEmpty ? key : keyPath + "." + key)': \(reason)", openSSLErrors: failure.openSSLErrors)
    }

    /// A list of certificate files (each PEM — any number — or one DER certificate).
    func certificates(_ key: String) throws -> [Certificate]? {
        guard let list = try optional(key, as: [Any].self) else { return nil }
        var out: [Certificate] = []
        for (index, item) in list.enumerated() {
            guard let name = item as? String else { throw error(key, "entry \(index) must be a file path") }
            out += try loadCertificates(name, key: "\(key)[\(index)]")
        }
        return out
    }

    /// The certificates of the file `name`, relative to the policy file, or the world certificate it names.
    func loadCertificates(_ name: String, key: String) throws -> [Certificate] {
        if PolicyWorld.isReference(name) {
            do { return [try world.certificate(name)] } catch let failure as PinproxyError { throw error(key, failure.reason) }
        }
        let path = resolve(name)
        do {
            return try Certificate.load(contentsOf: path)
        } catch let failure as PinproxyError {
            throw fileError(key, name: name, path: path, failure)
        }
    }

    /// A list of public-key or certificate files, reduced to SPKI pins.
    func publicKeys(_ key: String) throws -> [SPKIPin]? {
        guard let list = try optional(key, as: [Any].self) else { return nil }
        return try list.enumerated().map { index, item in
            guard let name = item as? String else { throw error(key, "entry \(index) must be a file path") }
            if PolicyWorld.isReference(name) {
                do { return try world.certificate(name).spkiPin } catch let failure as PinproxyError {
                    throw error("\(key)[\(index)]", failure.reason)
                }
            }
            let path = resolve(name)
            do {
                return try KeyFile.pin(contentsOf: path)
            } catch let failure as PinproxyError {
                throw fileError("\(key)[\(index)]", name: name, path: path, failure)
            }
        }
    }

    /// Whether a parsed value is a boolean rather than a number.
    ///
    /// JSON `true`/`false` and `1`/`0` both come out of JSONSerialization as NSNumber and
    /// both cast to Bool, so the cast cannot tell them apart. Booleans are the shared
    /// CFBoolean-style instances, encoded as `c` (char); JSON numbers are `i`, `q` or `d`.
    /// A property list's `<true/>`/`<false/>` is a Swift `Bool` on Linux and a CFBoolean
    /// NSNumber on Apple platforms; `<integer>` is an NSNumber of an integer type.
    static func isBoolean(_ raw: Any) -> Bool {
        if Swift.type(of: raw) == Bool.self { return true }
        guard let number = raw as? NSNumber, Swift.type(of: raw) != Int.self, Swift.type(of: raw) != Double.self else { return false }
        return String(cString: number.objCType) == "c"
    }

    private static func describe(_ type: Any.Type) -> String {
        if type == String.self { return "a string" }
        if type == [Any].self { return "a list" }
        if type == [String: Any].self { return "an object" }
        return "\(type)"
    }
}

/// Reads a file holding a public key or a certificate and yields its SPKI pin.
public enum KeyFile {
    /// What a key file holds.
    public enum Contents: Sendable {
        case certificates([Certificate])
        case publicKey(PublicKey)
        /// The public half of a private key; the private key itself is not kept.
        case publicHalfOfPrivateKey(PublicKey)
    }

    /// Reads PEM certificates, a PEM public key, a DER certificate or a DER SubjectPublicKeyInfo;
    /// with `allowingPrivateKeys`, also an unencrypted private key (PEM or DER), of which only
    /// the public half is returned.
    public static func read(contentsOf path: String, allowingPrivateKeys: Bool = false) throws -> Contents {
        let bytes = try FileIO.read(path)
        let derive = "write its public key with: openssl pkey -in \((path as NSString).lastPathComponent) -pubout -out key.pem"
        if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN") {
            if text.contains("-----BEGIN CERTIFICATE-----") {
                let certificates = try Certificate.all(pemEncoded: text)
                // A block that does not decode is skipped by the reader: with none left the file says nothing.
                if certificates.isEmpty { throw PinproxyError(.decoding, "\(path): no readable certificate in its CERTIFICATE block") }
                return .certificates(certificates)
            }
            if text.contains("-----BEGIN PUBLIC KEY-----") {
                do { return .publicKey(try PublicKey(pemEncoded: text)) } catch let error as PinproxyError {
                    throw PinproxyError(.decoding, "\(path): \(error.reason)", openSSLErrors: error.openSSLErrors)
                }
            }
            if text.contains("PRIVATE KEY-----") {
                guard allowingPrivateKeys else {
                    throw PinproxyError(.decoding, "\(path) is a private key; name a public key or a certificate instead: \(derive)")
                }
                // Checked first: OpenSSL would prompt on the terminal for the passphrase.
                if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
                    throw PinproxyError(.decoding, "\(path) is an encrypted private key; pinproxy does not ask for passphrases: \(derive)")
                }
                do {
                    return .publicHalfOfPrivateKey(try PublicKey(of: PrivateKey(pemEncoded: text)))
                } catch let error as PinproxyError {
                    throw PinproxyError(.decoding, "\(path): not a readable private key (\(error.reason))")
                }
            }
            throw PinproxyError(.decoding, "\(path): holds neither a CERTIFICATE nor a PUBLIC KEY\(allowingPrivateKeys ? " nor a PRIVATE KEY" : "") PEM block")
        }
        if let certificate = try? Certificate(derEncoded: bytes) { return .certificates([certificate]) }
        if let key = try? PublicKey(derEncoded: bytes) { return .publicKey(key) }
        if let key = try? PrivateKey(derEncoded: bytes) {
            guard allowingPrivateKeys else {
                throw PinproxyError(.decoding, "\(path) is a private key; name a public key or a certificate instead: \(derive)")
            }
            return .publicHalfOfPrivateKey(try PublicKey(of: key))
        }
        throw PinproxyError(.decoding, "\(path): neither a certificate nor a \(allowingPrivateKeys ? "public or private" : "public") key (PEM or DER)")
    }

    /// The SPKI pin of the key (or of the first certificate) in `path`.
    public static func pin(contentsOf path: String) throws -> SPKIPin {
        switch try read(contentsOf: path) {
        case .publicKey(let key), .publicHalfOfPrivateKey(let key): return key.spkiPin
        case .certificates(let certificates):
            guard let first = certificates.first else { throw PinproxyError(.decoding, "\(path): no certificate") }
            return first.spkiPin
        }
    }
}
