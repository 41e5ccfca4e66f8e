import Foundation
import PinproxyTestSupport
import Testing

/// Every module imports only what docs/architecture.md allows it ("Who may import what").
@Suite struct ModuleImportsTests {
    /// Modules every file may import: the system's.
    static let system: Set<String> = ["Foundation", "FoundationXML", "FoundationEssentials", "Dispatch", "Glibc", "Darwin", "Synchronization"]

    /// The `imports` block of docs/architecture.md: module → what it may import.
    static func allowed() throws -> [String: Set<String>] {
        let doc = try String(contentsOfFile: packageRoot + "/docs/architecture.md", encoding: .utf8)
        guard let start = doc.range(of: "```imports\n"), let end = doc.range(of: "```", range: start.upperBound..<doc.endIndex) else {
            Issue.record("docs/architecture.md has no ```imports block")
            return [:]
        }
        var rules: [String: Set<String>] = [:]
        for line in doc[start.upperBound..<end.lowerBound].split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            rules[String(parts[0])] = Set((parts.count > 1 ? parts[1] : "").split(separator: " ").map(String.init))
        }
        return rules
    }

    /// The modules named by the import lines at the head of `text` (before the first declaration,
    /// so that code quoted in a string, such as a Python script's `import asyncio`, is not read).
    static func imports(in text: String) -> [String] {
        var names: [String] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("//") || line.hasPrefix("#") { continue }
            let words = line.split(separator: " ").map(String.init)
            guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                  words[..<index].allSatisfy({ $0.hasPrefix("@") || ["internal", "public", "package", "private", "fileprivate"].contains($0) })
            else { break }
            names.append(String(words[index + 1].split(separator: ".").first!))
        }
        return names
    }

    /// Swift files per module: `Sources/<module>` and `Fuzz/Targets` (PinproxyFuzzing).
    static func moduleFiles() throws -> [(module: String, files: [String])] {
        let manager = FileManager.default
        var result: [(String, [String])] = []
        let sources = packageRoot + "/Sources"
        for module in try manager.contentsOfDirectory(atPath: sources).sorted() {
            let files = (manager.subpaths(atPath: "\(sources)/\(module)") ?? []).filter { $0.hasSuffix(".swift") }
            if !files.isEmpty { result.append((module, files.map { "Sources/\(module)/\($0)" })) }
        }
        let fuzz = (manager.subpaths(atPath: packageRoot + "/Fuzz/Targets") ?? []).filter { $0.hasSuffix(".swift") }
        result.append(("PinproxyFuzzing", fuzz.map { "Fuzz/Targets/\($0)" }))
        return result
    }

    @Test func everyModuleImportsOnlyWhatTheArchitectureAllows() throws {
        let rules = try Self.allowed()
        #expect(rules["PinproxyHarness"] != nil, "the imports block lists the modules")
        var checked = 0
        for (module, files) in try Self.moduleFiles() {
            guard let allowed = rules[module] else {
                Issue.record("Sources/\(module) has no line in docs/architecture.md's imports block")
                continue
            }
            for file in files {
                let text = try String(contentsOfFile: packageRoot + "/" + file, encoding: .utf8)
                for name in Self.imports(in: text) where !Self.system.contains(name) && name != module {
                    #expect(allowed.contains(name), "\(file) imports \(name), which docs/architecture.md does not allow \(module)")
                    checked += 1
                }
            }
        }
        #expect(checked > 100, "the check read the imports (\(checked))")
    }

    @Test func opensslIsImportedOnlyWhereTheArchitectureSaysWhy() throws {
        let rules = try Self.allowed()
        let withOpenSSL = rules.filter { !$0.value.isDisjoint(with: ["COpenSSL", "CPinproxyShims"]) }.keys.sorted()
        #expect(withOpenSSL == ["PinproxyCertificates", "PinproxyPinning", "PinproxyTLS"])
    }

    @Test func theImportReaderStopsAtTheFirstDeclaration() {
        let text = "// header\nimport Foundation\n@_exported import PinproxyBase\ninternal import COpenSSL\n\nlet script = \"\"\"\nimport asyncio\n\"\"\"\n"
        #expect(Self.imports(in: text) == ["Foundation", "PinproxyBase", "COpenSSL"])
    }
}
