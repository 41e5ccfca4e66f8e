import ArgumentParser
import Foundation
import PinproxyCertificates

struct ForgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forge",
        abstract: "Forge a leaf certificate for one or more host names, signed by the CA.",
        discussion: "Writes the chain (leaf, then CA) as PEM to --out or standard output; --key-out writes the leaf key with mode 0600."
    )

    @OptionGroup var location: CADirectoryOptions

    @Argument(help: ArgumentHelp("DNS names or IP literals; the first becomes the CN.", valueName: "host"))
    var hosts: [String]

    @Option(help: ArgumentHelp("Write the chain PEM here instead of standard output.", valueName: "file"))
    var out: String?

    @Option(name: .customLong("key-out"), help: ArgumentHelp("Write the leaf private key PEM here (mode 0600).", valueName: "file"))
    var keyOut: String?

    @Option(help: ArgumentHelp("Imitate this genuine certificate's names (PEM or DER).", valueName: "file"))
    var imitate: String?

    @Option(help: ArgumentHelp("Leaf key: reused or fresh.", valueName: "strategy"))
    var key: String = LeafForger.KeyStrategy.reused.rawValue

    func validate() throws {
        guard !hosts.isEmpty else { throw ValidationError("name at least one host") }
        guard LeafForger.KeyStrategy(rawValue: key) != nil else { throw ValidationError("--key must be 'reused' or 'fresh'") }
        try OutputFiles.check([("--out", out), ("--key-out", keyOut)], caDirectory: location.caDirectory)
    }

    func run() throws {
        try reportingErrors {
            let names = try hosts.map { try HostName(validating: $0) }
            let ca = try location.caDirectory.load()
            let forger = try LeafForger(authority: ca, keyStrategy: LeafForger.KeyStrategy(rawValue: key)!)
            let genuine = try imitate.map { path -> Certificate in
                guard let first = try Certificate.load(contentsOf: path).first else {
                    throw PinproxyError(.decoding, "\(path): no certificate")
                }
                return first
            }
            let leaf = try forger.forge(LeafRequest(names: names, imitating: genuine))
            let pem = leaf.chain.map(\.pemEncoded).joined()
            if let out {
                try FileIO.write(Array(pem.utf8), to: out, mode: 0o644)
                printError("wrote \(out): \(leaf.certificate.subject), SANs \(leaf.certificate.subjectAlternativeNames.map(\.description).joined(separator: ", "))")
            } else {
                print(pem, terminator: "")
            }
            if let keyOut {
                try FileIO.write(Array(try leaf.privateKey.pemEncoded().utf8), to: keyOut, mode: 0o600)
                printError("wrote \(keyOut) (mode 0600)")
            }
        }
    }
}
