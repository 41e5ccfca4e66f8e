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

    @Test func expiredEndedADayAgoAndLastedThirtyDaysUnderAnOldCA() throws {
        // A CA a hundred days old leaves room for the whole window: it ended a day
        // before now and began thirty days before that.
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let old = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Old"),
                                                              notBefore: now.addingTimeInterval(-100 * 86_400),
                                                              notAfter: now.addingTimeInterval(100 * 86_400)),
                                        subjectKey: world.proxyCA.privateKey, signer: .selfSigned(world.proxyCA.privateKey))
        let window = try ExpiredAttack.window(now: now, authority: old)
        #expect(window.end == now.addingTimeInterval(-86_400))
        #expect(window.start == now.addingTimeInterval(-31 * 86_400))
        // A CA eleven days old: the window begins with it.
        let younger = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Younger"),
                                                                  notBefore: now.addingTimeInterval(-11 * 86_400),
                                                                  notAfter: now.addingTimeInterval(100 * 86_400)),
                                            subjectKey: world.proxyCA.privateKey, signer: .selfSigned(world.proxyCA.privateKey))
        let clipped = try ExpiredAttack.window(now: now, authority: younger)
        #expect(clipped.start == younger.notBefore)
        #expect(clipped.end == now.addingTimeInterval(-86_400))
    }

    @Test func notYetValidStartsInADayAndLastsThirtyDaysUnderALongLivedCA() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let long = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Long"),
                                                               notBefore: now.addingTimeInterval(-86_400),
                                                               notAfter: now.addingTimeInterval(365 * 86_400)),
                                         subjectKey: world.proxyCA.privateKey, signer: .selfSigned(world.proxyCA.privateKey))
        let window = try NotYetValidAttack.window(now: now, authority: long)
        #expect(window.start == now.addingTimeInterval(86_400))
        #expect(window.end == now.addingTimeInterval(31 * 86_400))
    }

    @Test func wrongHostNamesTheNeighbourOfAnIPv6Host() throws {
        let loopback: [UInt8] = Array(repeating: 0, count: 15) + [1]
        #expect(try WrongHostAttack.wrongName(for: .ipv6(loopback), authority: world.proxyCA) == .ipv6(Array(repeating: 0, count: 16)))
        let documentation: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [2]
        #expect(try WrongHostAttack.wrongName(for: .ipv6(documentation), authority: world.proxyCA)
                == .ipv6([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [3]))
        let chain = try present(.wrongHost, host: .ipv6(loopback))
        #expect(names(chain.certificate) == ["IP:::"])
    }

    @Test func stuffSendsTheProxyCAOnceWhenTheGenuineChainHoldsIt() throws {
        // An origin whose certificate the proxy CA itself issued: its chain is
        // appended without a second copy of the CA forge already sends.
        let origin = try LeafForger(authority: world.proxyCA, keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost"]).certificate
        let context = AttackContext(host: .dns("localhost"), upstreamChain: [origin], genuineChain: [origin, world.proxyCA.certificate],
                                    resources: resources)
        let stuffed = try AttackCatalog.standard.requireStrategy(for: .stuff).present(context)
        #expect(stuffed.chain == [world.proxyCA.certificate, origin])
    }

    @Test func fakeParentFollowsTheWholeGenuineChainNotOnlyItsLeaf() throws {
        // The same leaf, once with the root the verifier reached and once with only
        // what the server sent: each gets stand-ins for its own chain.
        let strategy = try AttackCatalog.standard.requireStrategy(for: .fakeParent)
        let full = try strategy.present(AttackContext(host: .dns("localhost"), upstreamChain: world.presented,
                                                      genuineChain: world.genuine, resources: resources)).all
        let sent = try strategy.present(AttackContext(host: .dns("localhost"), upstreamChain: world.presented,
                                                      resources: resources)).all
        #expect(full[1...].map(\.spkiPin) == world.genuine.map(\.spkiPin))
        #expect(sent[1...].map(\.spkiPin) == world.presented.map(\.spkiPin))
    }

    @Test func notYetValidNeedsSixSecondsOfTheCAsLife() throws {
        let end = Date(timeIntervalSince1970: 1_800_003_600)
        let ending = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Ending"),
                                                                 notBefore: end.addingTimeInterval(-86_400), notAfter: end),
                                           subjectKey: world.proxyCA.privateKey, signer: .selfSigned(world.proxyCA.privateKey))
        #expect(throws: PinproxyError.self) { try NotYetValidAttack.window(now: end.addingTimeInterval(-5), authority: ending) }
        let last = try NotYetValidAttack.window(now: end.addingTimeInterval(-6), authority: ending)
        #expect(last.start == end.addingTimeInterval(-4))
        #expect(last.end == end)
    }

    @Test func everyProfileKeepsItsOwnLeafForAHost() throws {
        // One host, one set of resources: no profile is served another's cached leaf,
        // whether the upstream answered or not.
        let profiles: [AttackProfile] = [.forge, .selfSigned, .wrongHost, .expired, .notYetValid, .untrustedCA, .misissued]
        for upstream in [world.presented, []] {
            let context = AttackContext(host: .dns("localhost"), upstreamChain: upstream, resources: resources)
            let leaves = try profiles.map { try AttackCatalog.standard.requireStrategy(for: $0).present(context).certificate }
            #expect(Set(leaves.map(ObjectIdentifier.init)).count == profiles.count, "upstream of \(upstream.count)")
            #expect(leaves[1].isSelfSigned)
            #expect(leaves[3].notAfter < Date() && leaves[4].notBefore > Date())
        }
    }

    @Test func aGivenUntrustedCAIsTheOneUsed() throws {
        var options = CertificateAuthority.Options()
        options.commonName = "Given Untrusted CA"
        let given = try CertificateAuthority.create(options)
        let withGiven = try AttackResources(authority: world.proxyCA, untrustedAuthority: given)
        #expect(withGiven.untrustedAuthority?.certificate == given.certificate)
        let chain = try present(.untrustedCA, resources: withGiven)
        #expect(chain.chain == [given.certificate])
        #expect(chain.certificate.isIssued(by: given.certificate))
    }

    @Test func eventsNameTheCertificateEachProfileShows() {
        let phrases: [(AttackProfile, String)] = [
            (.forge, "forged certificate"), (.stuff, "forged chain (with the genuine chain appended)"),
            (.selfSigned, "self-signed certificate"), (.wrongHost, "certificate for another host"),
            (.expired, "expired certificate"), (.notYetValid, "not-yet-valid certificate"),
            (.untrustedCA, "certificate from an untrusted CA"), (.misissued, "misissued certificate"),
            (.fakeParent, "certificate from fake parents"), (.passthrough, "genuine certificate"),
            (.rotateRekey, "rotated certificate"), (.rotateCASwitch, "rotated certificate"), (AttackProfile("custom"), "forged certificate"),
        ]
        for (profile, phrase) in phrases {
            let event = TLSOutcomeEvent(kind: .intercepted, host: "a.test", clientAddress: "127.0.0.1:1", profile: profile.name)
            #expect(event.message == "client accepted the \(phrase) for a.test and sent a request (profile \(profile.name))")
        }
    }

    @Test func registeringAProfileAgainReplacesItInPlace() throws {
        var catalog = AttackCatalog.standard
        catalog.register(.expired, SelfSignedAttack())
        #expect(catalog.profiles == AttackCatalog.standard.profiles)
        #expect(catalog.helpLines.count == 10)
        #expect(try catalog.requireStrategy(for: .expired).catches == SelfSignedAttack().catches)
        catalog.register(AttackProfile("custom"), ForgeAttack())
        #expect(catalog.profiles.last == AttackProfile("custom"))
        // Built from a dictionary: ordered by name.
        let named = AttackCatalog(strategies: [.wrongHost: WrongHostAttack(), .expired: ExpiredAttack(), .forge: ForgeAttack()])
        #expect(named.profiles == [.expired, .forge, .wrongHost])
        #expect(named.helpLines.first?.hasPrefix("expired     ") == true)
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

    @Test func fakeParentKeepsAnIntermediatesStandInPerParent() throws {
        // An EC intermediate under an RSA root, first as the server sent it (no root
        // above it), then with the root the verifier reached: the second chain's
        // intermediate stand-in is signed with a key of its RSA parent's type, so
        // OpenSSL links it and fails on a signature (7), not on a missing issuer (20).
        var options = CertificateAuthority.Options()
        options.keyAlgorithm = .rsa2048
        options.commonName = "RSA Root"
        let root = try CertificateAuthority.create(options)
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let intermediate = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "EC Intermediate"), notBefore: Date().addingTimeInterval(-86_400),
                                  notAfter: Date().addingTimeInterval(365 * 86_400), pathLength: 0),
            subjectKey: intermediateKey, signer: .authority(root.certificate, root.privateKey))
        let leaf = try LeafForger(authority: try CertificateAuthority(certificate: intermediate, privateKey: intermediateKey),
                                  keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost"]).certificate
        let strategy = try AttackCatalog.standard.requireStrategy(for: .fakeParent)
        let sent = try strategy.present(AttackContext(host: .dns("localhost"), upstreamChain: [leaf, intermediate], resources: resources)).all
        #expect(sent.count == 3)
        let built = try strategy.present(AttackContext(host: .dns("localhost"), upstreamChain: [leaf, intermediate],
                                                       genuineChain: [leaf, intermediate, root.certificate], resources: resources)).all
        try #require(built.count == 4)
        #expect(built[2] !== sent[2])
        #expect(try opensslErrors(built, trusting: [root.certificate], host: "localhost", in: world).first == 7)
    }

    @Test func withoutAGenuineChainChainAttacksFallBackToForge() throws {
        let context = AttackContext(host: .dns("localhost"), upstreamChain: [], resources: resources)
        for profile in [AttackProfile.stuff, .fakeParent] {
            let chain = try AttackCatalog.standard.requireStrategy(for: profile).present(context)
            #expect(chain.chain == [world.proxyCA.certificate], "\(profile)")
        }
    }
}
