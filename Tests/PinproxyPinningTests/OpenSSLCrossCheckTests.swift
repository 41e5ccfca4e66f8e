import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// The curl profile — OpenSSL's verification as curl configures it — against `openssl verify`
/// with the same inputs and curl's flags (partial chains, purpose TLS server, security level 1).
@Suite("Cross-check with openssl verify")
struct OpenSSLCrossCheckTests {
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let chain: @Sendable (PKI) -> [Certificate]
        let anchors: @Sendable (PKI) -> [Certificate]
        var host: HostName? = PKI.shared.host
        var timeOffset: TimeInterval = 0
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "genuine", chain: { [$0.leaf, $0.intermediate] }, anchors: { [$0.root] }),
        Case(name: "genuine, extras and shuffled", chain: { [$0.leaf, $0.selfSigned, $0.root, $0.intermediate] }, anchors: { [$0.root] }),
        Case(name: "genuine, no host", chain: { [$0.leaf, $0.intermediate] }, anchors: { [$0.root] }, host: nil),
        Case(name: "wrong host", chain: { [$0.otherLeaf, $0.intermediate] }, anchors: { [$0.root] }),
        Case(name: "wrong host, no host check", chain: { [$0.otherLeaf, $0.intermediate] }, anchors: { [$0.root] }, host: nil),
        Case(name: "expired", chain: { [$0.expiredLeaf, $0.intermediate] }, anchors: { [$0.root] }),
        Case(name: "not yet valid", chain: { [$0.leaf, $0.intermediate] }, anchors: { [$0.root] }, timeOffset: -60 * 86_400),
        Case(name: "unknown issuer", chain: { [$0.leaf, $0.intermediate] }, anchors: { [$0.otherRoot] }),
        Case(name: "missing intermediate", chain: { [$0.leaf] }, anchors: { [$0.root] }),
        Case(name: "self-signed, not an anchor", chain: { [$0.selfSigned] }, anchors: { [$0.root] }),
        Case(name: "self-signed, pinned as anchor", chain: { [$0.selfSigned] }, anchors: { [$0.selfSigned] }),
        Case(name: "leaf as anchor", chain: { [$0.leaf, $0.intermediate] }, anchors: { [$0.leaf] }),
        Case(name: "intermediate as anchor", chain: { [$0.leaf, $0.intermediate] }, anchors: { [$0.intermediate] }),
        Case(name: "forged, proxy CA trusted", chain: { [$0.forgedLeaf, $0.proxyCA.certificate] }, anchors: { [$0.root, $0.proxyCA.certificate] }),
        Case(name: "forged, proxy CA not trusted", chain: { [$0.forgedLeaf, $0.proxyCA.certificate] }, anchors: { [$0.root] }),
        Case(name: "stuffed, proxy CA not trusted", chain: { [$0.forgedLeaf, $0.proxyCA.certificate, $0.leaf, $0.intermediate] }, anchors: { [$0.root] }),
        Case(name: "misissued by a second trusted root", chain: { [$0.misissuedLeaf] }, anchors: { [$0.root, $0.otherRoot] }),
    ]

    @Test("same verdict and first error", arguments: cases)
    func crossCheck(_ c: Case) throws {
        let pki = PKI.shared
        let chain = c.chain(pki)
        let anchors = c.anchors(pki)
        let time = pki.now.addingTimeInterval(c.timeOffset)
        let ours = TrustEvaluator.evaluate(chain, policy: .ssl(host: c.host, platform: .curl), at: time, anchors: .only(anchors))

        let dir = try TemporaryDirectory()
        let leafFile = try dir.write("leaf.pem", chain[0].pemEncoded)
        let untrustedFile = try dir.write("untrusted.pem", chain.map(\.pemEncoded).joined())
        let anchorFile = try dir.write("anchors.pem", anchors.map(\.pemEncoded).joined())
        var arguments = ["verify", "-partial_chain", "-purpose", "sslserver", "-auth_level", String(CurlSecurityLevel.current),
                         "-attime", String(Int(time.timeIntervalSince1970)),
                         "-no-CApath", "-no-CAstore", "-CAfile", anchorFile, "-untrusted", untrustedFile]
        switch c.host {
        case .dns(let name)?: arguments += ["-verify_hostname", name]
        case let ip? where ip.isIPAddress: arguments += ["-verify_ip", ip.description]
        default: break
        }
        arguments.append(leafFile)
        let openssl = try run("/usr/bin/openssl", arguments)
        let theirsValid = openssl.status == 0
        #expect(ours.isValid == theirsValid, "\(c): ours \(ours.reason); openssl: \(openssl.stdout) \(openssl.stderr)")

        if !theirsValid {
            // "error 20 at 0 depth lookup: ..." — the first error openssl met.
            let text = openssl.stdout + openssl.stderr
            let pattern = try NSRegularExpression(pattern: "error (\\d+) at (\\d+) depth")
            if let match = pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
               let codeRange = Range(match.range(at: 1), in: text), let code = Int(text[codeRange]) {
                #expect(ours.failures.first?.code == code, "\(c): ours \(ours.failures.map(\.code)), openssl \(code): \(text)")
            } else {
                Issue.record("openssl verify failed without an error line: \(text)")
            }
        }
    }
}
