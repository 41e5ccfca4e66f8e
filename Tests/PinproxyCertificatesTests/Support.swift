import Foundation
import Testing
@testable import PinproxyCertificates

/// Runs an external program and captures its output.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var output: String { stdout + stderr }
}

@discardableResult
func run(_ arguments: [String], input: String? = nil, in directory: String? = nil) throws -> ProcessResult {
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

/// A fresh temporary directory, removed when the value is dropped by the test.
final class TemporaryDirectory {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "pinproxy-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
    func write(_ text: String, to name: String) throws -> String {
        let p = file(name)
        try text.write(toFile: p, atomically: true, encoding: .utf8)
        return p
    }
}

/// `openssl x509 -text -noout` of a certificate.
func opensslText(_ certificate: Certificate) throws -> String {
    try run(["openssl", "x509", "-text", "-noout"], input: certificate.pemEncoded).stdout
}

/// Verifies `leaf` (plus intermediates) against `ca` with the openssl CLI the strict way.
func opensslVerify(leaf: Certificate, untrusted: [Certificate] = [], ca: Certificate, hostname: String? = nil,
                   ip: String? = nil, extra: [String] = []) throws -> ProcessResult {
    let dir = try TemporaryDirectory()
    let caPath = try dir.write(ca.pemEncoded, to: "ca.pem")
    let leafPath = try dir.write(leaf.pemEncoded, to: "leaf.pem")
    var args = ["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", caPath]
    if !untrusted.isEmpty {
        args += ["-untrusted", try dir.write(untrusted.map(\.pemEncoded).joined(), to: "untrusted.pem")]
    }
    if let hostname { args += ["-verify_hostname", hostname] }
    if let ip { args += ["-verify_ip", ip] }
    args += extra
    args.append(leafPath)
    return try run(args)
}

/// One CA shared by tests that only need some CA (creating one is cheap, but this keeps runs short).
let sharedAuthority: CertificateAuthority = try! CertificateAuthority.create()
