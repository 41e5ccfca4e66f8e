import Foundation
import PinproxyCertificates
import PinproxyProxy
import Testing

/// The rotation profiles on their own, in process: what each shows for the
/// genuine localhost leaf with the team's CA and the one it moves to.
@Suite("Rotation profiles")
struct RotationProfileTests {
    let world: AttackWorld
    let team: CertificateAuthority
    let next: CertificateAuthority
    let resources: AttackResources

    init() throws {
        world = try AttackWorld()
        var options = CertificateAuthority.Options()
        options.commonName = "Team Staging CA"
        team = try CertificateAuthority.create(options)
        options.commonName = "Team Next CA"
        next = try CertificateAuthority.create(options)
        resources = try AttackResources(authority: world.proxyCA, rotationAuthorities: [team, next])
    }

    func present(_ profile: AttackProfile, host: HostName = .dns("localhost"), resources: AttackResources? = nil) throws -> PresentedChain {
        let context = AttackContext(host: host, upstreamChain: world.presented, genuineChain: world.genuine,
                                    resources: resources ?? self.resources)
        return try AttackCatalog.withRotations.requireStrategy(for: profile).present(context)
    }

    @Test func rekeyIsTheTeamCAsLeafWithAFreshKeyForEveryHost() throws {
        let chain = try present(.rotateRekey)
        #expect(chain.chain == [team.certificate])
        #expect(chain.certificate.isIssued(by: team.certificate))
        #expect(chain.certificate.subjectAlternativeNames.map(\.description).contains("DNS:localhost"))
        let other = try present(.rotateRekey, host: .dns("other.test"))
        #expect(other.certificate.spkiPin != chain.certificate.spkiPin)
        #expect(chain.certificate.spkiPin != world.genuineLeaf.spkiPin)
    }

    @Test func aNewIntermediateIsSentWithTheTeamCAAfterIt() throws {
        // The re-keyed leaf of the same host is cached first: each profile keeps its own leaf.
        let rekeyed = try present(.rotateRekey)
        let chain = try present(.rotateNewIntermediate)
        #expect(chain.certificate !== rekeyed.certificate)
        try #require(chain.chain.count == 2)
        let intermediate = chain.chain[0]
        #expect(intermediate != team.certificate)
        #expect(chain.certificate.isIssued(by: intermediate))
        #expect(intermediate.isIssued(by: team.certificate))
        #expect(chain.chain[1] == team.certificate)
    }

    @Test func theNewIntermediateLastsAYearAndNeverOutlivesTheTeamCA() throws {
        // It began a day before the proxy started, for clients whose clocks lag.
        let started = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let clocked = try AttackResources(authority: world.proxyCA, rotationAuthorities: [team], clock: { started })
        let intermediate = try #require(try present(.rotateNewIntermediate, resources: clocked).chain.first)
        #expect(intermediate.notBefore == started.addingTimeInterval(-86_400))
        #expect(intermediate.notAfter == started.addingTimeInterval(364 * 86_400))
        var options = CertificateAuthority.Options()
        options.commonName = "Team CA Ending Soon"
        options.validityDays = 30
        let ending = try CertificateAuthority.create(options)
        let short = try AttackResources(authority: world.proxyCA, rotationAuthorities: [ending])
        let underEnding = try #require(try present(.rotateNewIntermediate, resources: short).chain.first)
        #expect(underEnding.isIssued(by: ending.certificate))
        #expect(underEnding.notAfter == ending.certificate.notAfter)
    }

    @Test func aCASwitchIsTheSecondCAsLeafAndNeedsThatCA() throws {
        let chain = try present(.rotateCASwitch)
        #expect(chain.chain == [next.certificate])
        #expect(chain.certificate.isIssued(by: next.certificate))

        let one = try AttackResources(authority: world.proxyCA, rotationAuthorities: [team])
        #expect(throws: PinproxyError.self) { try present(.rotateCASwitch, resources: one) }
        #expect(try present(.rotateRekey, resources: one).certificate.isIssued(by: team.certificate))
        let bare = try AttackResources(authority: world.proxyCA)
        #expect(throws: PinproxyError.self) { try present(.rotateRekey, resources: bare) }

        let catalog = AttackCatalog.withRotations
        var configured = ProxyConfiguration()
        #expect(try catalog.requireStrategy(for: .rotateRekey).unavailability(in: configured)?.contains("--rotation-ca") == true)
        configured.rotationAuthorities = [team]
        #expect(try catalog.requireStrategy(for: .rotateRekey).unavailability(in: configured) == nil)
        #expect(try catalog.requireStrategy(for: .rotateNewIntermediate).unavailability(in: configured) == nil)
        #expect(try catalog.requireStrategy(for: .rotateCASwitch).unavailability(in: configured)?.contains("--rotation-ca twice") == true)
        configured.rotationAuthorities = [team, next]
        #expect(try catalog.requireStrategy(for: .rotateCASwitch).unavailability(in: configured) == nil)
    }
}
