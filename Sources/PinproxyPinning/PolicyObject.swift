import Foundation
import PinproxyCertificates

/// A JSON object being read: remembers which keys were used so unknown ones are errors.
final class PolicyObject {
    let values: [String: Any]
    let file: String
    let keyPath: String
    /// What `world:` references stand for; nil outside the harness.
    let world: PolicyWorld?
    private var used = Set<String>()
    /// Every key the reader asked for, present or not: the keys this object may have.
    private var asked = Set<String>()

    init(_ values: [String: Any], file: String, keyPath: String, world: PolicyWorld? = nil) {
        self.values = values
        self.file = file
        self.keyPath = keyPath
        self.world = world
    }

    var keys: [String] { Array(values.keys) }

    /// `key` under `keyPath` as an error names it: `certificatePinner.profile` for a key that
    /// reads as a name, `certificatePinner["*.example.com"]` for one with dots or other marks
    /// (a host pattern, a domain), so that where the key ends is plain.
    /// A key may carry the index of a list entry (`pinnedCertificates[0]`), kept as it is.
    static func path(_ keyPath: String, _ key: String) -> String {
        var name = Substring(key)
        var index = ""
        if let open = key.firstIndex(of: "["), key.hasSuffix("]"),
           key[open...].allSatisfy({ $0 == "[" || $0 == "]" || ("0"..."9").contains($0) }) {
            name = key[..<open]
            index = String(key[open...])
        }
        let plain = name.first.map { $0.isLetter || $0 == "_" } == true
            && name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "_" || $0 == "-" }
        if plain { return (keyPath.isEmpty ? String(name) : keyPath + "." + name) + index }
        let quoted = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return keyPath + "[\"" + quoted + "\"]" + index
    }

    func error(_ key: String, _ problem: String) -> PinproxyError {
        PinproxyError(.policyFile, "\(file): key '\(Self.path(keyPath, key))': \(problem)")
    }

    func optional<T>(_ key: String, as type: T.Type) throws -> T? {
        asked.insert(key)
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
        guard let value = try optional(key, as: type) else { throw missing(key) }
        return value
    }

    /// The error for a required `key` that is absent. A key present instead that looks like a
    /// misspelling of it (`certPinner`) is the real mistake, so it is named first.
    func missing(_ key: String, _ problem: String = "is required") -> PinproxyError {
        asked.insert(key)
        let unread = values.keys.filter { !used.contains($0) && !asked.contains($0) }.sorted()
        if let typo = unread.first(where: { NearestName.suggestion(for: $0, among: [key]) != nil }) {
            return error(typo, "unknown key (did you mean '\(key)'?)")
        }
        return error(key, problem)
    }

    func object(_ key: String) throws -> PolicyObject? {
        guard let dictionary = try optional(key, as: [String: Any].self) else { return nil }
        return PolicyObject(dictionary, file: file, keyPath: Self.path(keyPath, key), world: world)
    }

    func objects(_ key: String) throws -> [PolicyObject]? {
        guard let list = try optional(key, as: [Any].self) else { return nil }
        return try list.enumerated().map { index, item in
            guard let dictionary = item as? [String: Any] else { throw error(key, "entry \(index) must be an object") }
            return PolicyObject(dictionary, file: file, keyPath: (Self.path(keyPath, key)) + "[\(index)]", world: world)
        }
    }

    /// Fails on the first key nobody read.
    func finish() throws {
        if let unknown = values.keys.sorted().first(where: { !used.contains($0) }) {
            let known = asked.sorted()
            let nearest = NearestName.hint(for: unknown, among: known)
            throw error(unknown, known.isEmpty ? "unknown key" : "unknown key\(nearest); known keys here: \(known.joined(separator: ", "))")
        }
    }

    /// A path relative to the policy file's directory, made absolute so messages show where
    /// it was looked for (`..` is kept: it shows how the name was resolved).
    func resolve(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var directory = FilePaths.parent(of: file)
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
        return PinproxyError(.policyFile, "\(file): key '\(Self.path(keyPath, key))': \(reason)", openSSLErrors: failure.openSSLErrors)
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
