import PinproxyCertificates
@testable import PinproxyProxy
import Testing

/// Which targets reach the proxy's own listeners, by address and port.
@Suite("Own addresses")
struct OwnAddressesTests {
    /// A machine with one interface address besides loopback.
    static let interface: [UInt8] = [192, 0, 2, 7]

    static func addresses(proxy: String, admin: String = "127.0.0.1:9091") throws -> OwnAddresses {
        let own = OwnAddresses(interfaceAddresses: { [[127, 0, 0, 1], OwnAddresses.loopback6, OwnAddressesTests.interface] })
        own.add(try ListenAddress(parsing: proxy), role: .proxy)
        own.add(try ListenAddress(parsing: admin), role: .controlAPI)
        return own
    }

    @Test("a loopback listener: its own address, localhost, the any address and the v4-mapped form; not other ports or loopback addresses")
    func loopbackListener() throws {
        let own = try Self.addresses(proxy: "127.0.0.1:9090")
        for (host, port) in [("127.0.0.1", 9090), ("localhost", 9090), ("0.0.0.0", 9090), ("::ffff:127.0.0.1", 9090), ("127.0.0.1", 9091)] {
            #expect(own.endpoint(named: try HostName(validating: host), port: port) != nil, "\(host):\(port)")
        }
        #expect(own.endpoint(named: try HostName(validating: "localhost"), port: 9091)?.role == .controlAPI)
        for (host, port) in [("127.0.0.1", 9092), ("127.0.0.2", 9090), ("192.0.2.7", 9090), ("example.test", 9090)] {
            #expect(own.endpoint(named: try HostName(validating: host), port: port) == nil, "\(host):\(port)")
        }
    }

    @Test("an any-address listener (--allow-remote): loopback and every local interface reach it")
    func anyAddressListener() throws {
        let own = try Self.addresses(proxy: "0.0.0.0:8080")
        for host in ["127.0.0.1", "127.0.0.2", "localhost", "192.0.2.7", "::1", "0.0.0.0"] {
            #expect(own.endpoint(named: try HostName(validating: host), port: 8080)?.role == .proxy, "\(host)")
        }
        #expect(own.endpoint(named: try HostName(validating: "192.0.2.8"), port: 8080) == nil)
        // The control API stays on loopback: the interface address does not reach it.
        #expect(own.endpoint(named: try HostName(validating: "192.0.2.7"), port: 9091) == nil)
        let v6 = try Self.addresses(proxy: "[::]:8080")
        #expect(v6.endpoint(named: try HostName(validating: "192.0.2.7"), port: 8080)?.role == .proxy)
    }

    @Test("the refusal names the endpoint and, for the control API, the way to reach it")
    func refusalText() throws {
        let own = try Self.addresses(proxy: "127.0.0.1:9090")
        let admin = try #require(own.endpoint(named: .ipv4([127, 0, 0, 1]), port: 9091))
        #expect(admin.refusal.contains("addressed to pinproxy itself (pinproxy's control API 127.0.0.1:9091)"), "\(admin.refusal)")
        #expect(admin.refusal.contains("call the control API directly"), "\(admin.refusal)")
    }
}
