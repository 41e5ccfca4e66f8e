import PinproxyTestSupport
import Testing
@testable import PinproxyBase

@Suite struct HostNameTests {
    @Test(arguments: [
        ("example.test", "example.test"),
        ("API.Example.TEST", "api.example.test"),
        ("example.test.", "example.test"),
        ("*.example.test", "*.example.test"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("a-b.c-d.test", "a-b.c-d.test"),
        ("localhost", "localhost"),
        ("1x.test", "1x.test"),
        // Docker Compose and Kubernetes names, SRV-style labels.
        ("my_api", "my_api"),
        ("Shop_DB.internal.test", "shop_db.internal.test"),
        ("_dmarc.example.test", "_dmarc.example.test"),
        ("a_.test", "a_.test"),
        ("*.svc_net.test", "*.svc_net.test"),
    ])
    func acceptsDNSNames(input: String, canonical: String) throws {
        let name = try HostName(validating: input)
        guard case .dns(let dns) = name else { Issue.record("\(input) parsed as \(name)"); return }
        #expect(dns == canonical)
        #expect(name.description == canonical)
    }

    @Test func acceptsMaximumLengths() throws {
        let label = String(repeating: "a", count: 63)
        _ = try HostName(validating: "\(label).test")
        // 4 labels of 61 + 3 dots + ".abcde" = 253 characters.
        let long = (0..<4).map { _ in String(repeating: "b", count: 61) }.joined(separator: ".") + ".abcde"
        #expect(long.count == 253)
        _ = try HostName(validating: long)
    }

    @Test(arguments: [
        ("127.0.0.1", [UInt8]([127, 0, 0, 1])),
        ("10.20.30.40", [10, 20, 30, 40]),
        ("0.0.0.0", [0, 0, 0, 0]),
    ])
    func acceptsIPv4(input: String, bytes: [UInt8]) throws {
        #expect(try HostName(validating: input) == .ipv4(bytes))
    }

    @Test(arguments: ["::1", "[::1]", "2001:db8::1", "[2001:DB8::1]", "::ffff:1.2.3.4"])
    func acceptsIPv6(input: String) throws {
        let name = try HostName(validating: input)
        guard case .ipv6(let bytes) = name else { Issue.record("\(input) parsed as \(name)"); return }
        #expect(bytes.count == 16)
        #expect(name.uriHost.hasPrefix("["))
    }

    @Test func formatsIPv6Canonically() throws {
        #expect(try HostName(validating: "2001:0DB8:0000:0000:0000:0000:0000:0001").description == "2001:db8::1")
    }

    @Test(arguments: [
        ("", "empty"),
        ("a.test,DNS:evil.com", "','"),
        ("DNS:evil.com", "':'"),
        ("a.test\u{0}.evil.com", "NUL"),
        ("a test.com", "space"),
        ("a..test", "empty label"),
        (".a.test", "empty label"),
        ("a_b.test/x", "'/'"),
        ("*_.example.test", "wildcard"),
        ("a_-.test", "starts or ends"),
        ("foo.*.test", "wildcard"),
        ("f*o.test", "wildcard"),
        ("*.test", "at least two labels"),
        ("-a.test", "starts or ends"),
        ("a-.test", "starts or ends"),
        ("ab--cd.test", "xn--"),
        ("xn--.test", "'-'"),
        ("xn--a@b.test", "'@'"),
        ("xn--999999999999999999999.test", "Punycode"),
        ("bücher.example", "A-label"),
        ("1.2.3", "numeric"),
        ("01.2.3.4", "numeric"),
        ("1.2.3.256", "numeric"),
        ("fe80::1%eth0", "zone"),
        ("[::1", "brackets"),
        ("[example.test]", "IPv6"),
        ("a:b", "IPv6"),
        ("a.test/path", "'/'"),
        ("a.test\r\nX: y", "0x0d"),
        ("evil.test:443", "IPv6"),
    ])
    func refusesHostileNames(input: String, why: String) {
        do {
            let name = try HostName(validating: input)
            Issue.record("accepted \(input.debugDescription) as \(name)")
        } catch let error as PinproxyError {
            #expect(error.code == .invalidHostName)
            #expect(error.reason.contains(why), "reason for \(input.debugDescription): \(error.reason)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func refusesOverlongNames() {
        let label64 = String(repeating: "a", count: 64) + ".test"
        #expect(throws: PinproxyError(.invalidHostName, "")) { try HostName(validating: label64) }
        let name300 = (0..<5).map { _ in String(repeating: "c", count: 59) }.joined(separator: ".") + ".test"
        #expect(name300.count > 253)
        #expect(throws: PinproxyError(.invalidHostName, "")) { try HostName(validating: name300) }
    }

    @Test func punycodeDecodesKnownLabels() {
        #expect(Punycode.decode("bcher-kva") == "bücher")
        #expect(Punycode.decode("mnchen-3ya") == "münchen")
        #expect(Punycode.decode("!!!") == nil)
    }
}
