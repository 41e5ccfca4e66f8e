import ArgumentParser
import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyPinning

struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Print SPKI pins of certificates, keys or a live server.",
        discussion: """
            For each certificate, public key or private key (PEM or DER files; of a private key \
            only the public half is used and nothing of the key itself is printed), or for the \
            chain a server presents with --connect, prints the subject, the SHA-256 fingerprint \
            and the SPKI pin in the OkHttp, curl, HPKP, TrustKit and Android notations. \
            --connect does not trust the server: it only reads the chain it sends; --out saves \
            that chain as PEM for `pinproxy verify --chain`. Through a proxy (--proxy) one HEAD \
            request follows the handshake: when the proxy answers it with its own 502 (it could \
            not reach the upstream), the chain is the proxy's stand-in and pin exits 2 saying why.

            Examples:
              pinproxy pin certs/pinproxy-ca.pem
              pinproxy pin --connect example.com:443
              pinproxy pin --connect 127.0.0.1:8443 --servername api.example.com \\
                  --out chain.pem
              pinproxy pin --connect example.com:443 --proxy http://127.0.0.1:8080
            """
    )

    @Argument(help: ArgumentHelp("Certificate, public key or private key files (PEM or DER).", valueName: "file"))
    var files: [String] = []

    @Option(help: ArgumentHelp("Fetch the chain presented by this server (IPv6: [::1]:443).", valueName: "host:port"))
    var connect: String?

    @Option(help: ArgumentHelp("SNI name to send with --connect (default: the host).", valueName: "name"))
    var servername: String?

    @Option(help: ArgumentHelp("With --connect: go through this HTTP proxy with CONNECT, e.g. a running pinproxy serve, to see the chain it presents.", valueName: "http://host:port"))
    var proxy: String?

    @Option(help: ArgumentHelp("Seconds to wait for --connect.", valueName: "seconds"))
    var timeout: Double = 10

    @Option(help: ArgumentHelp("With --connect: save the presented chain, leaf first, as PEM (for verify --chain).", valueName: "file"))
    var out: String?

    func run() throws {
        do {
            if let connect {
                guard files.isEmpty else { throw PinproxyError(.invalidArgument, "give either files or --connect, not both") }
                guard timeout > 0, timeout <= 300 else { throw PinproxyError(.invalidArgument, "--timeout must be more than 0 and at most 300 seconds") }
                let endpoint = try ChainFetcher.parse(endpoint: connect)
                if let servername { _ = try HostName(validating: servername) }
                let through = try proxy.map { text -> (host: String, port: UInt16) in
                    var rest = text
                    if rest.lowercased().hasPrefix("http://") { rest = String(rest.dropFirst(7)) }
                    if rest.hasSuffix("/") { rest = String(rest.dropLast()) }
                    guard !rest.contains("://") else { throw PinproxyError(.invalidArgument, "--proxy '\(text)': only http:// proxies are spoken (CONNECT)") }
                    return try ChainFetcher.parse(endpoint: rest)
                }
                let presented = try ChainFetcher.fetchPresented(host: endpoint.host, port: endpoint.port, serverName: servername, timeout: timeout, proxy: through)
                let chain = presented.chain
                let shown = ChainFetcher.display(host: endpoint.host, port: endpoint.port)
                if let failure = presented.upstreamFailure, let proxy {
                    // The chain is the proxy's stand-in, not one forged from the upstream's: say so, save nothing.
                    print("the proxy \(proxy) presented \(chain.count) certificate\(chain.count == 1 ? "" : "s") of its own for \(shown) (not verified):")
                    for (index, certificate) in chain.enumerated() {
                        print(PinReport.describe(certificate, label: "certificate #\(index)"))
                    }
                    throw PinproxyError(.connect, "the proxy \(proxy) could not reach \(shown): \(failure); the chain above is the proxy's own, not the one it forges from the upstream's\(out.map { "; nothing was written to \($0)" } ?? "")")
                }
                print("\(shown) presented \(chain.count) certificate\(chain.count == 1 ? "" : "s") (not verified):")
                for (index, certificate) in chain.enumerated() {
                    print(PinReport.describe(certificate, label: "certificate #\(index)"))
                }
                if let out {
                    try FileIO.write(Array(chain.map(\.pemEncoded).joined().utf8), to: out, mode: 0o644)
                    print("wrote the presented chain (\(chain.count) certificate\(chain.count == 1 ? "" : "s"), leaf first) to \(out)")
                }
                return
            }
            guard servername == nil else { throw PinproxyError(.invalidArgument, "--servername needs --connect") }
            guard proxy == nil else { throw PinproxyError(.invalidArgument, "--proxy needs --connect") }
            guard out == nil else { throw PinproxyError(.invalidArgument, "--out needs --connect (it saves the chain a server presents)") }
            guard !files.isEmpty else { throw PinproxyError(.invalidArgument, "name certificate or key files, or use --connect HOST:PORT") }
            var blocks: [String] = []
            for file in files {
                switch try KeyFile.read(contentsOf: file, allowingPrivateKeys: true) {
                case .publicKey(let key):
                    blocks.append(PinReport.describe(key, label: "\(file): public key"))
                case .publicHalfOfPrivateKey(let key):
                    blocks.append(PinReport.describe(key, label: "\(file): private key (the pin of its public half; the key itself is not shown)", ofPrivateKey: true))
                case .certificates(let certificates):
                    for (index, certificate) in certificates.enumerated() {
                        let label = certificates.count == 1 ? "\(file): certificate" : "\(file): certificate #\(index)"
                        blocks.append(PinReport.describe(certificate, label: label))
                    }
                }
            }
            print(blocks.joined(separator: "\n\n"))
        } catch let error as PinproxyError {
            throw CLIError(error)
        }
    }
}
