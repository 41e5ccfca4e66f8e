import Foundation
import PinproxyFuzzing
import PinproxyTestSupport
import Testing

/// One file kept for a fuzz target: `Fuzz/<kind>/<target>/<file>`.
struct KeptInput: CustomTestStringConvertible, Sendable {
    let target: String
    let path: String

    var testDescription: String { "\(target)/\((path as NSString).lastPathComponent)" }

    /// Every file under `Fuzz/<kind>/<target>/`, for every target folder.
    static func all(_ kind: String) -> [KeptInput] {
        let root = (packageRoot as NSString).appendingPathComponent("Fuzz/\(kind)")
        let manager = FileManager.default
        let folders = ((try? manager.contentsOfDirectory(atPath: root)) ?? []).sorted()
        return folders.flatMap { folder -> [KeptInput] in
            let directory = (root as NSString).appendingPathComponent(folder)
            let files = ((try? manager.contentsOfDirectory(atPath: directory)) ?? []).sorted().filter { !$0.hasPrefix(".") }
            return files.map { KeptInput(target: folder, path: (directory as NSString).appendingPathComponent($0)) }
        }
    }

    /// Runs the file through its target, exactly as the fuzzer ran it.
    func replay() throws {
        let target = try #require(FuzzTarget.named(self.target), "no fuzz target is called '\(self.target)'")
        let bytes = try #require(FileManager.default.contents(atPath: path), "cannot read \(path)")
        #expect(throws: Never.self) { try target.run(Array(bytes)) }
    }
}

/// Inputs the fuzzers found that once crashed pinproxy or broke one of the
/// targets' invariants, replayed through the same entry points; and the
/// seed corpus, which must pass too.
@Suite("Fuzz inputs replayed")
struct FuzzReplayTests {
    @Test("every input that once failed passes its fuzz target now", arguments: KeptInput.all("regressions"))
    func regression(_ input: KeptInput) throws {
        try input.replay()
    }

    @Test("every seed passes its fuzz target", arguments: KeptInput.all("corpus"))
    func seed(_ input: KeptInput) throws {
        try input.replay()
    }

    @Test("every fuzz target has seeds, and every kept folder names a target")
    func folders() {
        let seeded = Set(KeptInput.all("corpus").map(\.target))
        for target in FuzzTarget.all {
            #expect(seeded.contains(target.name), "Fuzz/corpus/\(target.name) holds no seed")
        }
        for input in KeptInput.all("corpus") + KeptInput.all("regressions") {
            #expect(FuzzTarget.named(input.target) != nil, "\(input.path) is in a folder that names no fuzz target")
        }
    }
}
