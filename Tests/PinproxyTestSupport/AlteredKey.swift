import Foundation

/// A CA certificate and a PKCS#8 file for it whose private scalar was altered while the public
/// key embedded in the PKCS#8 still matches the certificate: what a corrupted or tampered key
/// file looks like. OpenSSL reads it without complaint and takes the embedded public key as the
/// key's own, so comparing public keys says the pair matches; every signature it makes fails.
/// Made with openssl in `directory` at test time (no key is committed).
public struct AlteredKeyCA {
    public let certificatePath: String
    public let keyPath: String
    /// The certificate's PEM followed by the altered key's (`ca import --cert` of one file).
    public let combinedPEM: String

    public init(in directory: TemporaryDirectory) throws {
        let key = directory.file("genuine.key"), cert = directory.file("ca.pem")
        let made = try run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=Altered Key CA",
                            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        guard made.status == 0 else { throw AlteredKeyError("openssl req failed: \(made.output)") }
        let pem = try String(contentsOfFile: key, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: key)
        let altered = try Self.alteringScalar(pkcs8PEM: pem)
        certificatePath = cert
        keyPath = try directory.write(altered, to: "altered.key")
        combinedPEM = try String(contentsOfFile: cert, encoding: .utf8) + altered
    }

    /// Flips the lowest bit of the private scalar in an EC PKCS#8 PEM (`ECPrivateKey`: version 1,
    /// then the 32-byte scalar as `04 20 …`), leaving the embedded public key (`a1 44 03 42 00 04 …`) as it was.
    public static func alteringScalar(pkcs8PEM: String) throws -> String {
        let base64 = pkcs8PEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard var der = Data(base64Encoded: base64).map(Array.init) else { throw AlteredKeyError("the key is not PEM") }
        let marker: [UInt8] = [0x02, 0x01, 0x01, 0x04, 0x20]
        guard let start = (0...(der.count - marker.count)).first(where: { Array(der[$0..<$0 + marker.count]) == marker }) else {
            throw AlteredKeyError("no P-256 ECPrivateKey scalar in the key")
        }
        let publicKeyMarker: [UInt8] = [0xa1, 0x44, 0x03, 0x42, 0x00, 0x04]
        let rest = Array(der[(start + marker.count + 32)...])
        guard rest.count >= publicKeyMarker.count, Array(rest.prefix(publicKeyMarker.count)) == publicKeyMarker else {
            throw AlteredKeyError("the key carries no embedded public key after its scalar")
        }
        der[start + marker.count + 31] ^= 0x01
        let lines = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PRIVATE KEY-----\n\(lines)\n-----END PRIVATE KEY-----\n"
    }
}

public struct AlteredKeyError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
