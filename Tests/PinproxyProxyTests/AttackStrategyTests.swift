import Foundation
import PinproxyCertificates
import PinproxyProxy
import Synchronization
import Testing

/// Each attack strategy on its own, in process: the chain it presents for a
/// genuine root → intermediate → leaf chain.
@Suite("Attack strategies")
struct AttackStrategyTests {
    let world: AttackWorld
    let resources: AttackResources

    init() throws {
        world = try AttackWorld()
        resources = try AttackResources(authority: world.proxyCA, misissuingAuthority: world.misissuing)
    }

    func present(_ profile: AttackProfile, host: HostName = .dns("localhost"), resources: AttackResources? = nil) throws -> PresentedChain {
        let context = AttackContext(host: host, upstreamChain: world.presented, genuineChain: world.genuine,
                                    resources: resources ?? self.resources)
        return try AttackCatalog.standard.requireStrategy(for: profile).present(context)
    }

    func names(_ certificate: Certificate) -> [String] { certificate.subjectAlternativeNames.map(\.description) }

    @Test func catalogHoldsTheTenProfilesInOrder() throws {
        #expect(AttackCatalog.standard.profiles.map(\.name) == [
            "passthrough", "forge", "stuff", "self-signed", "wrong-host", "expired", "not-yet-valid",
            "untrusted-ca", "misissued", "fake-parent",
        ])
        #expect(AttackCatalog.standard.helpLines.count == 10)
        #expect(throws: PinproxyError.self) { try AttackCatalog.standard.requireStrategy(for: AttackProfile("nonsense")) }
    }

    @Test func passthroughDoesNotIntercept() throws {
        let strategy = try AttackCatalog.standard.requireStrategy(for: .passthrough)
        #expect(!strategy.intercepts)
        #expect(AttackCatalog.standard.profiles.filter { AttackCatalog.standard.strategy(for: $0)?.intercepts == false } == [.passthrough])
    }

    @Test func forgeSignsALeafForTheHostWithTheProxyCA() throws {
        let chain = try present(.forge)
        #expect(chain.chain == [world.proxyCA.certificate])
        #expect(chain.certificate.isIssued(by: world.proxyCA.certificate))
        #expect(names(chain.certificate).contains("DNS:localhost"))
        #expect(names(chain.certificate).contains("IP:127.0.0.1"))  // imitated from the genuine leaf
    }

    @Test func stuffAppendsTheGenuineChainToForgesOwn() throws {
        let forged = try present(.forge)
        let stuffed = try present(.stuff)
        #expect(stuffed.certificate === forged.certificate)  // the same cached leaf: no signature of its own
        #expect(stuffed.chain == [world.proxyCA.certificate] + world.genuine)
    }

    @Test func selfSignedIsItsOwnIssuer() throws {
        let chain = try present(.selfSigned)
        #expect(chain.chain.isEmpty)
        #expect(chain.certificate.isSelfSigned)
        #expect(names(chain.certificate).contains("DNS:localhost"))
    }

    @Test func wrongHostNamesAChildOfTheHost() throws {
        let chain = try present(.wrongHost)
        #expect(names(chain.certificate) == ["DNS:pinproxy-wrong-host.localhost"])
        #expect(chain.chain == [world.proxyCA.certificate])
        #expect(chain.certificate.isIssued(by: world.proxyCA.certificate))
        let ipChain = try present(.wrongHost, host: .ipv4([127, 0, 0, 1]))
        #expect(names(ipChain.certificate) == ["IP:127.0.0.0"])
    }

    @Test func wrongHostStaysInsideNameConstraints() throws {
        func ca(dns: [String] = [], ip: [String] = []) throws -> CertificateAuthority {
            var options = CertificateAuthority.Options()
            options.nameConstraints = try NameConstraints(permittedDNS: dns, permittedIP: ip.map { try IPNetwork(parsing: $0) })
            return try CertificateAuthority.create(options)
        }
        // A CA for exactly the host still signs for names under it; a sibling would be outside.
        let exact = try ca(dns: ["api.example.test"])
        #expect(try WrongHostAttack.wrongName(for: .dns("api.example.test"), authority: exact) == .dns("pinproxy-wrong-host.api.example.test"))
        // One address only: no neighbour, but DNS names in the reserved 'invalid' domain.
        let oneAddress = try ca(ip: ["127.0.0.1/32"])
        #expect(try WrongHostAttack.wrongName(for: .ipv4([127, 0, 0, 1]), authority: oneAddress) == .dns("pinproxy-wrong-host.invalid"))
        let network = try ca(ip: ["127.0.0.0/8"])
        #expect(try WrongHostAttack.wrongName(for: .ipv4([127, 0, 0, 1]), authority: network) == .ipv4([127, 0, 0, 0]))
        // A host name too long for a child label falls back to 'invalid', which a DNS-only CA refuses.
        let long = String(repeating: "a", count: 60) + "." + String(repeating: "b", count: 60) + "." + String(repeating: "c", count: 60) + "." + String(repeating: "d", count: 50) + ".test"
        #expect(try WrongHostAttack.wrongName(for: try HostName(validating: long), authority: try ca()) == .dns("pinproxy-wrong-host.invalid"))
        #expect(throws: PinproxyError.self) {
            try WrongHostAttack.wrongName(for: try HostName(validating: long), authority: try ca(dns: ["test"]))
        }
        // And the leaf itself is forged under the constraint.
        let resources = try AttackResources(authority: exact)
        let chain = try present(.wrongHost, host: .dns("api.example.test"), resources: resources)
        #expect(names(chain.certificate) == ["DNS:pinproxy-wrong-host.api.example.test"])
    }

    @Test func expiredEndedInThePastWithinTheCAsLife() throws {
        let now = Date()
        let chain = try present(.expired)
        let leaf = chain.certificate
        #expect(leaf.notAfter < now)
        #expect(leaf.notBefore >= world.proxyCA.certificate.notBefore)
        #expect(leaf.notBefore < leaf.notAfter)
        #expect(leaf.isIssued(by: world.proxyCA.certificate))
        #expect(names(leaf).contains("DNS:localhost"))
        #expect(try present(.expired).certificate === leaf)  // cached

        // A CA ten seconds old: the leaf lived within those ten seconds.
        let caBorn = Date(timeIntervalSince1970: 1_800_000_000)
        let young = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Young"), notBefore: caBorn,
                                                                notAfter: caBorn.addingTimeInterval(86_400)),
                                          subjectKey: world.proxyCA.privateKey, signer: .selfSigned(world.proxyCA.privateKey))
        let window = try ExpiredAttack.window(now: caBorn.addingTimeInterval(10), authority: young)
        #expect(window.start == caBorn)
        #expect(window.end == caBorn.addingTimeInterval(5))
        #expect(throws: PinproxyError.self) { try ExpiredAttack.window(now: caBorn.addingTimeInterval(1), authority: young) }
    }

    @Test func notYetValidStartsLaterAndEndsWithinTheCA() throws {
        let now = Mutex(Date())
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let resources = try AttackResources(authority: world.proxyCA, clock: clock)
        let leaf = try present(.notYetValid, resources: resources).certificate
        #expect(leaf.notBefore > clock())
        #expect(leaf.notAfter <= world.proxyCA.certificate.notAfter)
        #expect(leaf.isIssued(by: world.proxyCA.certificate))
        #expect(try present(.notYetValid, resources: resources).certificate === leaf)
        // Remade before it could become valid.
        now.withLock { $0 = $0.addingTimeInterval(13 * 3600) }
        let remade = try present(.notYetValid, resources: resources).certificate
        #expect(remade !== leaf)
        #expect(remade.notBefore > clock())

        // A CA ending in an hour: the leaf starts in twenty minutes and ends with it.
        let end = Date(timeIntervalSince1970: 1_800_003_600)
        let ending = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Ending"),
                                                                 notBefore: end.addingTimeInterval(-86_400), notAfter: end),
                                           subjectKey: world.proxyCA.privateKey, signer: .selfSigned(world.proxyCA.privateKey))
        let window = try NotYetValidAttack.window(now: end.addingTimeInterval(-3600), authority: ending)
        #expect(window.start == end.addingTimeInterval(-2400))
        #expect(window.end == end)
    }

    @Test func untrustedCAIsGeneratedOnceAndTrustedByNoOne() throws {
        #expect(resources.untrustedAuthority == nil)  // made when first needed
        let first = try present(.untrustedCA)
        let second = try present(.untrustedCA, host: .dns("other.test"))
        let ca = try #require(resources.untrustedAuthority)
        #expect(first.chain == [ca.certificate])
        #expect(second.chain == [ca.certificate])
        #expect(first.certificate.isIssued(by: ca.certificate))
        #expect(ca.certificate != world.proxyCA.certificate && ca.certificate != world.root.certificate)
    }

    @Test func misissuedComesFromTheSecondCAAndNeedsIt() throws {
        let chain = try present(.misissued)
        #expect(chain.chain == [world.misissuing.certificate])
        #expect(chain.certificate.isIssued(by: world.misissuing.certificate))
        let bare = try AttackResources(authority: world.proxyCA)
        #expect(throws: PinproxyError.self) { try present(.misissued, resources: bare) }
        let strategy = try AttackCatalog.standard.requireStrategy(for: .misissued)
        #expect(strategy.unavailability(in: ProxyConfiguration())?.contains("--misissuing-ca") == true)
        var configured = ProxyConfiguration()
        configured.misissuingAuthority = world.misissuing
        #expect(strategy.unavailability(in: configured) == nil)
    }

    @Test func fakeParentCarriesEveryGenuineKeyOnAChainLinkedOnlyByName() throws {
        let chain = try present(.fakeParent)
        let all = chain.all
        try #require(all.count == 4)
        #expect(all[1...].map(\.spkiPin) == world.genuine.map(\.spkiPin))
        #expect(all[1].subject == "OU=pinproxy fake parent,CN=localhost")
        #expect(all[2].subject == world.intermediate.certificate.subject)
        #expect(all[3].subject == world.root.certificate.subject)
        for (child, parent) in zip(all, all.dropFirst()) {
            #expect(child.issuer == parent.subject)
            #expect(child.authorityKeyIdentifier == parent.subjectKeyIdentifier)
            #expect(!child.isIssued(by: parent))
        }
        #expect(all[3].issuer == all[3].subject)
        #expect(!all[3].isSelfSigned)
        #expect(names(chain.certificate).contains("DNS:localhost"))

        // Another host under the same genuine CAs shares their stand-ins.
        let other = try present(.fakeParent, host: .ipv4([127, 0, 0, 1])).all
        #expect(other[2] === all[2] && other[3] === all[3])
        #expect(other[1] !== all[1])
        #expect(try present(.fakeParent).certificate === chain.certificate)  // cached
    }

    @Test func fakeParentLinksAnRSAChainByNameToo() throws {
        // Stand-ins signed with a key of their issuer's type: OpenSSL then builds the path and fails on a
        // signature (7), where a mismatched key type leaves the leaf without an issuer (20).
        var options = CertificateAuthority.Options()
        options.keyAlgorithm = .rsa2048
        options.commonName = "RSA Root"
        let root = try CertificateAuthority.create(options)
        let leaf = try LeafForger(authority: root, keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost"]).certificate
        let context = AttackContext(host: .dns("localhost"), upstreamChain: [leaf], genuineChain: [leaf, root.certificate], resources: resources)
        let chain = try AttackCatalog.standard.requireStrategy(for: .fakeParent).present(context).all
        #expect(chain.count == 3)
        #expect(chain[2].hasRSAKey && chain[2].spkiPin == root.certificate.spkiPin)
        #expect(try opensslErrors(chain, trusting: [root.certificate], host: "localhost", in: world).first == 7)
    }

    @Test func withoutAGenuineChainChainAttacksFallBackToForge() throws {
        let context = AttackContext(host: .dns("localhost"), upstreamChain: [], resources: resources)
        for profile in [AttackProfile.stuff, .fakeParent] {
            let chain = try AttackCatalog.standard.requireStrategy(for: profile).present(context)
            #expect(chain.chain == [world.proxyCA.certificate], "\(profile)")
        }
    }
}
