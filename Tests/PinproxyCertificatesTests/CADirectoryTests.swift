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
        // The directory it made: nobody else may swap the certificate clients are told to trust.
        let directoryMode = try mode(dir.file("certs"))
        #expect(directoryMode & 0o022 == 0, "the CA directory is writable by others: \(String(directoryMode, radix: 8))")

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
        // Its certificate bag is not encrypted (an encrypted bag under an empty password is what
        // some trust-store importers refuse).
        let p12Info = try run(["openssl", "pkcs12", "-info", "-noout", "-in", store.pkcs12Path, "-passin", "pass:"])
        #expect(p12Info.output.contains("PKCS7 Data") && !p12Info.output.contains("PKCS7 Encrypted data"), "\(p12Info.output)")

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

    @Test func aKeyWithoutItsCertificateIsNeverOverwritten() throws {
        let dir = try TemporaryDirectory()
        let store = CADirectory(path: dir.path)
        let key = try PrivateKey.generate(.ecP256)
        let keyText = Array(try key.pemEncoded().utf8)
        try FileIO.write(keyText, to: store.privateKeyPath, mode: 0o600)
        #expect(store.exists, "a key alone is a CA here")
        #expect(throws: PinproxyError(.caExists, "")) { try store.store(try CertificateAuthority.create(), overwrite: false) }
        #expect(throws: (any Error).self) { _ = try store.loadOrCreate() }
        #expect(try FileIO.read(store.privateKeyPath) == keyText, "the key was replaced")
    }

    @Test func replacingACAKeepsOtherFilesThatEndInDotZero() throws {
        let dir = try TemporaryDirectory()
        let store = CADirectory(path: dir.path)
        try store.store(try CertificateAuthority.create(), overwrite: false)
        // Ten characters ending in ".0", but not an eight-digit hash: the user's.
        for name in ["release1.0", "notes-v2.0", "0123456g.0"] { _ = try dir.write("mine", to: name) }
        try store.store(try CertificateAuthority.create(), overwrite: true)
        for name in ["release1.0", "notes-v2.0", "0123456g.0"] {
            #expect(FileManager.default.fileExists(atPath: dir.file(name)), "\(name) was deleted")
        }
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

    /// Android's name is the hash in eight hex digits, leading zeros kept: a subject whose
    /// `subject_hash_old` begins with zeros (chosen for it) gets `00e12605.0`, as openssl says.
    @Test func androidFileNamesKeepTheirLeadingZeros() throws {
        let key = try PrivateKey.generate(.ecP256)
        let certificate = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "hash probe 7"), notBefore: Date(), notAfter: Date().addingTimeInterval(86_400)),
            subjectKey: key, signer: .selfSigned(key))
        let hash = try run(["openssl", "x509", "-noout", "-subject_hash_old"], input: certificate.pemEncoded).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(hash.hasPrefix("00"), "the subject no longer hashes to leading zeros: \(hash)")
        #expect(CADirectory.androidFileName(for: certificate) == hash + ".0")
        #expect(CADirectory.androidFileName(for: certificate).count == 10)
    }

    @Test func resolvesDirectory() {
        #expect(CADirectory.resolve("x", environment: ["PINPROXY_CA_DIR": "y"]).path == "x")
        #expect(CADirectory.resolve(nil, environment: ["PINPROXY_CA_DIR": "y"]).path == "y")
        #expect(CADirectory.resolve(nil, environment: [:]).path == "certs")
        #expect(CADirectory.resolve(nil, environment: ["PINPROXY_CA_DIR": ""]).path == "certs", "an empty variable is no directory")
        #expect(CADirectory.resolve("", environment: ["PINPROXY_CA_DIR": "y"]).path == "y")
    }
}
