import Foundation
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

@Suite struct CADirectoryTests {
    @Test func storesEveryFormatWithSafeModes() throws {
        let dir = try TemporaryDirectory()
        let store = CADirectory(path: dir.file("certs"))
        let ca = try CertificateAuthority.create()
        let files = try store.store(ca, overwrite: false)
        #expect(files.count == 5)
        for file in files { #expect(FileManager.default.fileExists(atPath: file), "\(file)") }

        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
        }
        #expect(try mode(store.privateKeyPath) == 0o600)
        #expect(try mode(store.certificatePEMPath) == 0o644)

        // PEM and DER hold the same certificate; the key is the CA's key.
        let der = try Certificate(derEncoded: try FileIO.read(store.certificateDERPath))
        #expect(der == ca.certificate)
        let key = try PrivateKey(pemEncoded: String(contentsOfFile: store.privateKeyPath, encoding: .utf8))
        #expect(key.matches(ca.certificate))
        // Nothing private outside the key file.
        for file in files where file != store.privateKeyPath {
            let bytes = try FileIO.read(file)
            #expect(!String(decoding: bytes, as: UTF8.self).contains("PRIVATE KEY"), "\(file)")
        }

        // Android's file name is OpenSSL's subject_hash_old.
        let hash = try run(["openssl", "x509", "-noout", "-subject_hash_old", "-in", store.certificatePEMPath])
        #expect(store.androidPath(for: ca.certificate).hasSuffix("/" + hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + ".0"))

        // The PKCS#12 bundle opens with an empty password and holds the certificate only.
        let p12 = try run(["openssl", "pkcs12", "-in", store.pkcs12Path, "-passin", "pass:", "-nokeys"])
        #expect(p12.status == 0, "\(p12.output)")
        #expect(p12.stdout.contains("BEGIN CERTIFICATE"))
        let p12Keys = try run(["openssl", "pkcs12", "-in", store.pkcs12Path, "-passin", "pass:", "-nocerts", "-nodes"])
        #expect(!p12Keys.stdout.contains("PRIVATE KEY"))

        // Round trip.
        let loaded = try store.load()
        #expect(loaded.certificate == ca.certificate)
    }

    @Test func refusesToOverwriteWithoutForce() throws {
        let dir = try TemporaryDirectory()
        let store = CADirectory(path: dir.path)
        let first = try CertificateAuthority.create()
        try store.store(first, overwrite: false)
        let second = try CertificateAuthority.create()
        #expect(throws: PinproxyError(.caExists, "")) { try store.store(second, overwrite: false) }
        #expect(try store.load().certificate == first.certificate)
        try store.store(second, overwrite: true)
        #expect(try store.load().certificate == second.certificate)
        // The old Android file is gone, only the new one remains.
        let android = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".0") }
        #expect(android == [CADirectory.androidFileName(for: second.certificate)])
    }

    @Test func loadOrCreateCreatesOnce() throws {
        let dir = try TemporaryDirectory()
        let store = CADirectory(path: dir.file("new"))
        let (a, createdA) = try store.loadOrCreate()
        let (b, createdB) = try store.loadOrCreate()
        #expect(createdA && !createdB)
        #expect(a.certificate == b.certificate)
    }

    @Test func missingCAIsAClearError() throws {
        let dir = try TemporaryDirectory()
        do {
            _ = try CADirectory(path: dir.path).load()
            Issue.record("loaded a CA from an empty directory")
        } catch let error as PinproxyError {
            #expect(error.code == .caMissing)
            // The command to run names this directory: without --dir the CA would land in ./certs.
            #expect(error.reason.contains("pinproxy ca init --dir \(dir.path)"), "\(error.reason)")
        }
    }

    @Test func resolvesDirectory() {
        #expect(CADirectory.resolve("x", environment: ["PINPROXY_CA_DIR": "y"]).path == "x")
        #expect(CADirectory.resolve(nil, environment: ["PINPROXY_CA_DIR": "y"]).path == "y")
        #expect(CADirectory.resolve(nil, environment: [:]).path == "certs")
    }
}
