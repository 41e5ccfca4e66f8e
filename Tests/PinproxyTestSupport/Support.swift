import Foundation

// Process, file and binary helpers shared by every test target.

/// The package root (this file is Tests/PinproxyTestSupport/Support.swift).
public let packageRoot: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// Runs an external program and captures its output.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// Both streams, for failure messages.
    public var output: String { stdout + stderr }
}

@discardableResult
public func run(_ arguments: [String], input: String? = nil, in directory: String? = nil) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let out = Pipe(), err = Pipe(), inp = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = inp
    try process.run()
    if let input { inp.fileHandleForWriting.write(Data(input.utf8)) }
    try inp.fileHandleForWriting.close()
    // Read both pipes concurrently so a full pipe never blocks the child.
    final class Box: @unchecked Sendable { var data = Data() }
    let errBox = Box()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        errBox.data = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return ProcessResult(status: process.terminationStatus,
                         stdout: String(decoding: outData, as: UTF8.self),
                         stderr: String(decoding: errBox.data, as: UTF8.self))
}

/// A fresh temporary directory, removed when the last reference goes.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String
    public init() throws {
        path = NSTemporaryDirectory() + "pinproxy-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
    public func write(_ text: String, to name: String) throws -> String {
        let p = file(name)
        try text.write(toFile: p, atomically: true, encoding: .utf8)
        return p
    }
}

/// The built `pinproxy` executable: the newest of the package's build folders.
public let pinproxyBinary: String = {
    let root = packageRoot
    let candidates = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
        .filter { $0.hasPrefix(".build") }
        .flatMap { dir in ["debug", "release"].map { "\(root)/\(dir)/\($0)/pinproxy" } }
        .filter { FileManager.default.isExecutableFile(atPath: $0) }
    let newest = candidates.max { a, b in
        let da = (try? FileManager.default.attributesOfItem(atPath: a)[.modificationDate] as? Date) ?? .distantPast
        let db = (try? FileManager.default.attributesOfItem(atPath: b)[.modificationDate] as? Date) ?? .distantPast
        return da < db
    }
    return newest ?? "\(root)/.build/debug/pinproxy"
}()

/// Runs `pinproxy` with `arguments` and an environment without a CA directory override;
/// `wrapper` goes before the binary (`timeout -s KILL 60` for a command that must end).
public func pinproxy(_ arguments: [String], environment: [String: String] = [:], wrapper: [String] = [],
                     in directory: String? = nil) throws -> ProcessResult {
    var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
    env.merge(environment) { $1 }
    return try run(["env", "-i"] + env.map { "\($0)=\($1)" } + wrapper + [pinproxyBinary] + arguments, in: directory)
}

/// Makes `process` start `executable` with `arguments` as a terminal's shell would: with no
/// signal blocked. The threads of this test process block most signals and a child inherits
/// the mask; a process that relies on a signal arriving as it does from a shell is started so.
public func startWithSignalsUnblocked(_ process: Process, _ executable: String, _ arguments: [String]) {
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = ["-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
                         executable] + arguments
}
