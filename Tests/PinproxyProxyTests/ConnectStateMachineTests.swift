import PinproxyCertificates
import PinproxyHTTP1
@testable import PinproxyProxy
import Testing

/// The CONNECT layer's decisions, driven without sockets: a CONNECT request
/// and the client's first bytes in, the actions out.
@Suite("CONNECT layer")
struct ConnectStateMachineTests {
    static let ownEndpoint = OwnAddresses.Endpoint(role: .proxy, address: [127, 0, 0, 1], port: 8080)

    /// A forward-mode machine: `passthrough` hosts are passed through, `127.0.0.1:8080` is the proxy itself.
    static func machine(credentials: String? = nil, passthrough: Set<String> = []) -> ConnectStateMachine {
        ConnectStateMachine(
            credentials: credentials,
            ownEndpoint: { host, port in host.description == "127.0.0.1" && port == 8080 ? ownEndpoint : nil },
            profile: { passthrough.contains($0.description) ? .passthrough : .forge })
    }

    static func connect(_ authority: String, headers: [(String, String)] = []) throws -> HTTP1RequestHead {
        var parser = HTTP1Parser(mode: .request)
        var text = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        let events = try parser.feed(Array((text + "\r\n").utf8))
        for event in events { if case .requestHead(let head) = event { return head } }
        throw PinproxyError(.invalidArgument, "no request head")
    }

    static let clientHello: ArraySlice<UInt8> = [0x16, 0x03, 0x01, 0x00, 0x05, 0x01]
    static func host(_ name: String) throws -> HostName { try HostName(validating: name) }

    @Test("CONNECT with no bytes after it: 200, the handshake deadline, then read the first bytes")
    func establishesAndWaits() throws {
        var machine = Self.machine()
        let actions = machine.connect(try Self.connect("example.com:443"), tail: [])
        let host = try Self.host("example.com")
        #expect(actions == [.establish(host: host, port: 443), .armHandshakeDeadline(host: host, port: 443), .readFirstBytes])
        #expect(machine.state == .awaitingFirstBytes(host: host, port: 443, reverse: false))
    }

    @Test("a TLS record first is intercepted, with the bytes read so far")
    func tlsIsIntercepted() throws {
        var machine = Self.machine()
        _ = machine.connect(try Self.connect("example.com:443"), tail: [])
        #expect(machine.firstBytes(Self.clientHello) == [.intercept(initial: Self.clientHello)])
        #expect(machine.state == .done)
        #expect(machine.firstBytes(Self.clientHello) == [], "decided once")
    }

    @Test("a ClientHello sent with the CONNECT is sniffed at once")
    func tailIsSniffed() throws {
        var machine = Self.machine()
        let host = try Self.host("example.com")
        let actions = machine.connect(try Self.connect("example.com:443"), tail: Self.clientHello)
        #expect(actions == [.establish(host: host, port: 443), .armHandshakeDeadline(host: host, port: 443),
                            .intercept(initial: Self.clientHello)])
    }

    @Test("anything but TLS after CONNECT is tunnelled raw, beginning with those bytes")
    func plainIsTunnelled() throws {
        var machine = Self.machine()
        _ = machine.connect(try Self.connect("example.com:25"), tail: [])
        let smtp = ArraySlice(Array("EHLO x\r\n".utf8))
        #expect(machine.firstBytes(smtp) == [.tunnel(host: try Self.host("example.com"), port: 25, initial: smtp, sniffed: true)])
    }

    @Test("one byte sent with the CONNECT decides as the whole tail would, and is kept", arguments: [[0x16], [0x47], [0x80]] as [[UInt8]])
    func oneByteTail(byte: [UInt8]) throws {
        var machine = Self.machine()
        let host = try Self.host("example.com")
        let tail = ArraySlice(byte)
        let decided: ConnectStateMachine.Action = byte == [0x16] ? .intercept(initial: tail) : .tunnel(host: host, port: 443, initial: tail, sniffed: true)
        #expect(machine.connect(try Self.connect("example.com:443"), tail: tail)
                    == [.establish(host: host, port: 443), .armHandshakeDeadline(host: host, port: 443), decided])
        #expect(machine.state == .done)
    }

    @Test("only a TLS handshake record is intercepted: an SSLv2-style hello or SSH is tunnelled as it is")
    func onlyTLSRecordsAreIntercepted() throws {
        let host = try Self.host("example.com")
        for first in [ArraySlice<UInt8>([0x80, 0x2e, 0x01, 0x03, 0x01]), ArraySlice(Array("SSH-2.0-x\r\n".utf8)), [0x17, 0x03, 0x03, 0x00, 0x01]] {
            var machine = Self.machine()
            _ = machine.connect(try Self.connect("example.com:443"), tail: [])
            #expect(machine.firstBytes(first) == [.tunnel(host: host, port: 443, initial: first, sniffed: true)], "\(Array(first))")
        }
    }

    @Test("a second CONNECT on a connection waiting for its first bytes changes nothing")
    func secondConnectIsIgnored() throws {
        var machine = Self.machine()
        let host = try Self.host("example.com")
        _ = machine.connect(try Self.connect("example.com:443"), tail: [])
        #expect(machine.connect(try Self.connect("other.example:443"), tail: []) == [])
        #expect(machine.state == .awaitingFirstBytes(host: host, port: 443, reverse: false))
        #expect(machine.firstBytes(Self.clientHello) == [.intercept(initial: Self.clientHello)])
    }

    @Test("a passthrough host is tunnelled right after 200, without a handshake deadline")
    func passthroughTunnels() throws {
        var machine = Self.machine(passthrough: ["bank.example"])
        let host = try Self.host("bank.example")
        let actions = machine.connect(try Self.connect("bank.example:443"), tail: Self.clientHello)
        #expect(actions == [.establish(host: host, port: 443), .recordPassthrough(host: host, port: 443),
                            .tunnel(host: host, port: 443, initial: Self.clientHello, sniffed: false)])
        #expect(machine.state == .done)
    }

    @Test("CONNECT to the proxy itself: recorded and refused with 403, no 200")
    func selfAddressedIsRefused() throws {
        var machine = Self.machine()
        let actions = machine.connect(try Self.connect("127.0.0.1:8080"), tail: [])
        #expect(actions == [.recordSelfAddressed(Self.ownEndpoint, host: try Self.host("127.0.0.1"), port: 8080),
                            .refuse(status: 403, reason: Self.ownEndpoint.refusal, challenge: false)])
    }

    @Test("a CONNECT target that is not host:port with a usable port is a 400", arguments: [
        HTTP1RequestTarget.origin("/"), .authority(host: try! HostName(validating: "example.com"), port: 0),
        .authority(host: try! HostName(validating: "example.com"), port: 65536),
    ])
    func badTargetIsRefused(target: HTTP1RequestTarget) throws {
        var machine = Self.machine()
        let actions = machine.connect(HTTP1RequestHead(method: "CONNECT", target: target), tail: [])
        #expect(actions == [.refuse(status: 400, reason: "CONNECT needs host:port with a port from 1 to 65535", challenge: false)])
        #expect(machine.state == .done)
    }

    @Test("Proxy-Authorization: missing or wrong is a 407 with a challenge; right goes on")
    func proxyAuthorization() throws {
        let credentials = "dXNlcjpwYXNz"  // user:pass
        var missing = Self.machine(credentials: credentials)
        #expect(missing.connect(try Self.connect("example.com:443"), tail: [])
                    == [.refuse(status: 407, reason: ProxyAuthorization.refusal, challenge: true)])
        var wrong = Self.machine(credentials: credentials)
        // Sent and wrong is said to be wrong, not missing.
        #expect(wrong.connect(try Self.connect("example.com:443", headers: [("Proxy-Authorization", "Basic eDp5")]), tail: [])
                    == [.refuse(status: 407, reason: "the Proxy-Authorization credentials are wrong (this proxy takes Basic)", challenge: true)])
        var right = Self.machine(credentials: credentials)
        let actions = right.connect(try Self.connect("example.com:443", headers: [("Proxy-Authorization", "basic \(credentials)")]), tail: [])
        #expect(actions.first == .establish(host: try Self.host("example.com"), port: 443))
        // The right credentials under another scheme, or with more after them, are wrong.
        for value in ["Bearer \(credentials)", "Basic \(credentials) extra", credentials, "Basic  \(credentials)x"] {
            var other = Self.machine(credentials: credentials)
            #expect(other.connect(try Self.connect("example.com:443", headers: [("Proxy-Authorization", value)]), tail: [])
                        == [.refuse(status: 407, reason: "the Proxy-Authorization credentials are wrong (this proxy takes Basic)", challenge: true)], "\(value)")
        }
    }

    @Test("reverse mode: the deadline runs from accept; TLS is intercepted, anything else is a 400")
    func reverseMode() throws {
        let origin = try Self.host("origin.test")
        var machine = ConnectStateMachine(reverseTo: origin, port: 8443)
        #expect(machine.reverseStarted() == [.armHandshakeDeadline(host: origin, port: 8443), .readFirstBytes])
        #expect(machine.firstBytes(Self.clientHello) == [.intercept(initial: Self.clientHello)])

        var plain = ConnectStateMachine(reverseTo: origin, port: 8443)
        _ = plain.reverseStarted()
        #expect(plain.firstBytes(ArraySlice(Array("GET / HTTP/1.1\r\n".utf8)))
                    == [.refuse(status: 400, reason: "this port speaks TLS (reverse proxy for origin.test); use https://", challenge: false)])
        #expect(plain.connect(try Self.connect("example.com:443"), tail: []) == [], "no CONNECT on a reverse-mode connection")
    }
}
