import PinproxyHTTP1
@testable import PinproxyProxy
import Testing

/// The control API's access rules (``AdminAccess``, ``AdminToken``) at their edges, request by
/// request, without a daemon: what `ControlAPIAccessTests` and `ControlAPITokenTests` show
/// through curl, here for the forms curl does not send.
@Suite struct AdminAccessRulesTests {
    static let secret = "0123456789abcdef0123456789abcdef"
    /// A loopback listener without a token, and one with.
    static let open = AdminAccess(listenHost: "127.0.0.1", port: 8081, token: nil)
    static func guarded() throws -> AdminAccess {
        AdminAccess(listenHost: "0.0.0.0", port: 8081, token: try AdminToken(secret, source: "the test"))
    }

    static func request(_ fields: [(String, String)], method: String = "GET") -> HTTP1RequestHead {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name: name, value: value) }
        return HTTP1RequestHead(method: method, target: .origin("/flows"), headers: headers)
    }

    @Test func twoHostFieldsAreRefusedEvenWhenBothNameTheListener() {
        let refusal = Self.open.refusal(for: Self.request([("Host", "127.0.0.1:8081"), ("Host", "localhost:8081")]))
        #expect(refusal?.status == 403, "\(String(describing: refusal))")
        #expect(Self.open.refusal(for: Self.request([("Host", "127.0.0.1:8081")])) == nil)
    }

    @Test(arguments: ["notlocalhost", "evil-localhost:8081", "localhost.attacker.example", "attacker.example", "127.0.0.1.attacker.example"])
    func onlyLocalhostItselfIsALoopbackName(_ host: String) {
        let refusal = Self.open.refusal(for: Self.request([("Host", host)]))
        #expect(refusal?.status == 403, "Host \(host) was served")
    }

    @Test(arguments: ["localhost", "LOCALHOST:8081", "127.0.0.1", "127.9.9.9:8081", "[::1]:8081"])
    func theListenersOwnNamesAreServed(_ host: String) {
        #expect(Self.open.refusal(for: Self.request([("Host", host)])) == nil, "Host \(host) was refused")
    }

    @Test func aPortWithMoreThanFiveDigitsIsNoPort() {
        #expect(AdminAccess.split("localhost:08081")?.port == 8081)
        #expect(AdminAccess.split("localhost:008081") == nil)
        #expect(Self.open.refusal(for: Self.request([("Host", "localhost:0000000008081")]))?.status == 403)
    }

    @Test func twoAuthorizationFieldsAreRefusedEvenWhenOneCarriesTheToken() throws {
        let access = try Self.guarded()
        let right = ("Authorization", "Bearer \(Self.secret)")
        #expect(access.refusal(for: Self.request([right])) == nil)
        for fields in [[right, ("Authorization", "Bearer something-else-entirely")], [("Authorization", "Basic eA=="), right], [right, right]] {
            let refusal = access.refusal(for: Self.request(fields))
            #expect(refusal?.status == 401, "\(fields.map(\.1))")
        }
    }

    /// Every token that differs from the right one in one character, and every one of
    /// the right length made of a single character: refused, each of them (a comparison
    /// that looked at part of the digest would let about one in 256 through).
    @Test func everyOtherTokenIsRefused() throws {
        let token = try AdminToken(Self.secret, source: "the test")
        #expect(token.admits(authorization: "Bearer \(Self.secret)"))
        #expect(token.admits(authorization: "bearer   \(Self.secret) "))
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=")
        var admitted: [String] = []
        var tried = 0
        for position in 0..<Self.secret.count {
            for replacement in alphabet {
                var characters = Array(Self.secret)
                guard characters[position] != replacement else { continue }
                characters[position] = replacement
                let other = String(characters)
                tried += 1
                if token.admits(authorization: "Bearer \(other)") { admitted.append(other) }
            }
        }
        for character in alphabet {
            let other = String(repeating: character, count: Self.secret.count)
            tried += 1
            if token.admits(authorization: "Bearer \(other)") { admitted.append(other) }
        }
        #expect(tried > 2_000)
        #expect(admitted.isEmpty, "admitted \(admitted.count) of \(tried) wrong tokens, e.g. \(admitted.prefix(3))")
        // The token under another scheme, or without one.
        #expect(!token.admits(authorization: "Basic \(Self.secret)"))
        #expect(!token.admits(authorization: Self.secret))
        #expect(!token.admits(authorization: nil))
    }

    @Test func aTokenOfSixteenCharactersIsTheShortestAccepted() throws {
        #expect(throws: Never.self) { try AdminToken(String(repeating: "a", count: 16), source: "the test") }
        #expect(throws: (any Error).self) { try AdminToken(String(repeating: "a", count: 15), source: "the test") }
        #expect(throws: (any Error).self) { try AdminToken(String(repeating: "a", count: 16) + " ", source: "the test") }
    }
}
