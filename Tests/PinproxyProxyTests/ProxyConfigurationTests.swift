import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTLS
import Testing

@Suite("Proxy configuration and rules")
struct ProxyConfigurationTests {
    @Test("host patterns follow OkHttp: exact, *.host one label, **.host any labels")
    func hostPatterns() throws {
        let exact = try HostPattern(parsing: "api.example.test")
        let one = try HostPattern(parsing: "*.example.test")
        let any = try HostPattern(parsing: "**.example.test")
        let apex = HostName.dns("example.test")
        let api = HostName.dns("api.example.test")
        let deep = HostName.dns("a.b.example.test")
        #expect(exact.matches(api) && !exact.matches(apex))
        #expect(one.matches(api) && !one.matches(apex) && !one.matches(deep))
        #expect(any.matches(api) && any.matches(apex) && any.matches(deep))
        #expect(!any.matches(.dns("notexample.test")))
        #expect(throws: PinproxyError.self) { try HostPattern(parsing: "a,b.test") }
        #expect(throws: PinproxyError.self) { try HostPattern(parsing: "*") }
        // A label boundary, not a text suffix.
        #expect(!one.matches(.dns("apiexample.test")) && !one.matches(.dns("a.notexample.test")))
        #expect(!any.matches(.dns("a.notexample.test")) && !exact.matches(.dns("xapi.example.test")))
        #expect(try HostPattern(parsing: "*.EXAMPLE.test").matches(api), "patterns are case-insensitive")
        // One wildcard, at the front: a wildcard inside the rest is no pattern.
        for text in ["*.*.example.test", "**.*.example.test", "*.**.example.test", "a.*.example.test", "*example.test", "**"] {
            #expect(throws: PinproxyError.self, "\(text)") { try HostPattern(parsing: text) }
        }
    }

    @Test("rules: passthrough first, then the first matching rule, then the default")
    func rulesPrecedence() throws {
        let rules = InterceptionRules(
            defaultProfile: .forge,
            passthrough: [try HostPattern(parsing: "**.bank.test")],
            rules: [.init(pattern: try HostPattern(parsing: "*.cdn.test"), profile: .passthrough)])
        #expect(rules.profile(for: .dns("www.bank.test")) == .passthrough)
        #expect(rules.profile(for: .dns("img.cdn.test")) == .passthrough)
        #expect(rules.profile(for: .dns("api.test")) == .forge)
        #expect(throws: PinproxyError.self) {
            try InterceptionRules(defaultProfile: AttackProfile("nonsense")).validate(against: .standard)
        }
        let decoded = try JSONDecoder().decode(InterceptionRules.self, from: Data(#"{"passthrough":["*.x.test"]}"#.utf8))
        #expect(decoded.defaultProfile == .forge && decoded.passthrough.count == 1 && decoded.rules.isEmpty)
    }

    @Test("rules: a passthrough pattern wins over a matching rule, and the earlier of two matching rules wins")
    func rulesOrder() throws {
        let rules = InterceptionRules(
            defaultProfile: .forge,
            passthrough: [try HostPattern(parsing: "pay.shop.test")],
            rules: [.init(pattern: try HostPattern(parsing: "*.shop.test"), profile: .expired),
                    .init(pattern: try HostPattern(parsing: "**.shop.test"), profile: .selfSigned)])
        #expect(rules.profile(for: .dns("pay.shop.test")) == .passthrough)
        #expect(rules.profile(for: .dns("www.shop.test")) == .expired)
        #expect(rules.profile(for: .dns("shop.test")) == .selfSigned)
        #expect(rules.profile(for: .dns("a.b.shop.test")) == .selfSigned)
        #expect(rules.profile(for: .dns("other.test")) == .forge)
        // Patterns are written back as they were given, wildcards included.
        let encoded = try JSONEncoder().encode(rules)
        #expect(try JSONDecoder().decode(InterceptionRules.self, from: encoded) == rules)
        let text = try #require(String(data: encoded, encoding: .utf8))
        #expect(text.contains(#""*.shop.test""#) && text.contains(#""**.shop.test""#) && text.contains(#""pay.shop.test""#))
    }

    @Test("listen addresses, loopback checks and modes")
    func addressesAndModes() throws {
        #expect(try ListenAddress(parsing: "127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(try ListenAddress(parsing: "[::1]:9000").isLoopback)
        #expect(try ListenAddress(parsing: "8081").port == 8081)
        #expect(try !ListenAddress(parsing: "0.0.0.0:8080").isLoopback)
        #expect(throws: PinproxyError.self) { try ListenAddress(parsing: "example.com:80") }
        #expect(throws: PinproxyError.self) { try ListenAddress(parsing: "127.0.0.1:70000") }
        // A missing or non-numeric port names the accepted forms; an out-of-range one says the range.
        for text in ["nope", "127.0.0.1:abc"] {
            let error = #expect(throws: PinproxyError.self) { try ListenAddress(parsing: text) }
            #expect(error?.reason.contains("expected HOST:PORT, [IPv6]:PORT or a bare PORT") == true, "\(String(describing: error))")
        }
        let range = #expect(throws: PinproxyError.self) { try ListenAddress(parsing: "127.0.0.1:70000") }
        #expect(range?.reason.contains("port must be 0–65535") == true)
        var c = ProxyConfiguration()
        c.listen = try ListenAddress(parsing: "0.0.0.0:8080")
        #expect(throws: PinproxyError.self) { try c.validate() }
        c.allowRemote = true
        try c.validate()
        for loops in [0, 257] {
            c.eventLoops = loops
            #expect(throws: PinproxyError.self) { try c.validate() }
        }
        c.eventLoops = 1
        try c.validate()
        #expect(try ProxyConfiguration.Mode(parsing: "reverse:https://api.example.test:8443")
                == .reverse(scheme: "https", host: .dns("api.example.test"), port: 8443))
        #expect(try ProxyConfiguration.Mode(parsing: "forward") == .forward)
        #expect(throws: PinproxyError.self) { try ProxyConfiguration.Mode(parsing: "reverse:ftp://x") }
    }

    @Test("TLS alerts are named as RFC 8446 spells them")
    func alertNames() {
        #expect(TLSAlert(code: 48).name == "unknown_ca")
        #expect(TLSAlert(code: 42).name == "bad_certificate")
        #expect(TLSAlert(code: 46).name == "certificate_unknown")
        #expect(TLSAlert(code: 48).rejectsCertificate)
        #expect(!TLSAlert(code: 112).rejectsCertificate)
        #expect(TLSAlert(code: 250).name == "alert_250")
    }

    @Test("listen addresses: IPv4, bracketed IPv6, localhost and a bare port; other names refused")
    func listenForms() throws {
        #expect(try ListenAddress(parsing: "127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(try ListenAddress(parsing: "[::1]:0") == ListenAddress(host: "::1", port: 0))
        #expect(try ListenAddress(parsing: "localhost:9090") == ListenAddress(host: "127.0.0.1", port: 9090))
        #expect(try ListenAddress(parsing: "9090") == ListenAddress(host: "127.0.0.1", port: 9090))
        #expect(throws: PinproxyError.self) { try ListenAddress(parsing: "example.test:80") }
    }
}
