import Foundation

/// One libFuzzer target: a name and the check it runs on each input.
///
/// The same function serves the libFuzzer executables (`Fuzz/Entry/<name>`)
/// and the regression tests, so an input kept under
/// `Fuzz/regressions/<name>/` is replayed through exactly the code that
/// found it. A check throws ``FuzzFailure`` when an invariant does not hold;
/// the executables turn that into a crash libFuzzer records, the tests into
/// a failed expectation. Memory errors and Swift traps crash either way.
public struct FuzzTarget: Sendable {
    /// The name used for the executable (`fuzz-<name>`) and the corpus folders.
    public let name: String
    /// What the target feeds its input to, for the documentation.
    public let summary: String
    private let check: @Sendable ([UInt8]) throws(FuzzFailure) -> Void

    init(_ name: String, _ summary: String, _ check: @escaping @Sendable ([UInt8]) throws(FuzzFailure) -> Void) {
        self.name = name
        self.summary = summary
        self.check = check
    }

    /// Runs the target's checks on `input`.
    public func run(_ input: [UInt8]) throws(FuzzFailure) {
        try check(input)
    }

    /// Runs the target on libFuzzer's input and stops the process when an
    /// invariant fails, so that libFuzzer keeps the input as a crash.
    public func runOrTrap(_ data: UnsafePointer<UInt8>?, _ count: Int) {
        let input = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        do {
            try run(input)
        } catch {
            fatalError("fuzz target \(name): \(error)")
        }
    }

    /// Every target, in the order `make fuzz` runs them.
    public static let all: [FuzzTarget] = [
        http1Request, http1Response, hostName, clientHello,
        policyJSON, policyAndroidXML, policyTrustKitPlist, certificates, rules, http2Frames, http2Responses,
    ]

    /// The target called `name`, if any.
    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// An invariant that did not hold for an input.
public struct FuzzFailure: Error, CustomStringConvertible {
    public var message: String
    public var file: String
    public var line: Int

    public var description: String { "\(file):\(line): \(message)" }
}

/// Throws ``FuzzFailure`` with `message` unless `condition` holds.
func require(
    _ condition: Bool, _ message: @autoclosure () -> String, file: String = #fileID, line: Int = #line
) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(message: message(), file: file, line: line) }
}

/// Throws ``FuzzFailure`` with `message`.
func fail(_ message: String, file: String = #fileID, line: Int = #line) -> FuzzFailure {
    FuzzFailure(message: message, file: file, line: line)
}

/// Notes on what a target did with an input, printed to standard error
/// when `PINPROXY_FUZZ_VERBOSE` is set: for writing seeds that get past
/// the first checks (`PINPROXY_FUZZ_VERBOSE=1 fuzz-<name> -runs=0 <seeds>`).
enum FuzzLog {
    static let isVerbose = ProcessInfo.processInfo.environment["PINPROXY_FUZZ_VERBOSE"] != nil

    static func note(_ message: @autoclosure () -> String) {
        if isVerbose { FileHandle.standardError.write(Data(("fuzz: " + message() + "\n").utf8)) }
    }
}
