import Foundation
import Testing
@testable import PinproxyTLS

/// The ClientHello's server_name and ALPN extensions read from their wire
/// bytes, and the protocol chosen from the client's list, without a handshake.
@Suite struct ClientHelloReaderTests {
    /// A server_name extension body: u16 list length, then (u8 type, u16 length, name) entries.
    private func serverNameExtension(_ entries: [(UInt8, [UInt8])]) -> [UInt8] {
        var list: [UInt8] = []
        for (type, name) in entries { list += [type, UInt8(name.count >> 8), UInt8(name.count & 0xff)] + name }
        return [UInt8(list.count >> 8), UInt8(list.count & 0xff)] + list
    }

    /// An ALPN list without its u16 length: length-prefixed names.
    private func protocolList(_ names: [String]) -> [UInt8] {
        names.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
    }

    @Test func theFirstHostNameEntryIsTheServerName() {
        let ext = serverNameExtension([(1, Array("not-a-host-name".utf8)), (0, Array("api.example.test".utf8)), (0, Array("second.test".utf8))])
        #expect(ClientHelloReader.serverName(inExtension: ext) == "api.example.test")
        let hello = ClientHelloReader.clientHello(serverNameExtension: ext, alpnExtension: nil)
        #expect(hello.serverName?.description == "api.example.test")
        #expect(hello.serverNameProblem == nil)
        #expect(hello.alpn == [])
    }

    @Test func aNameLongerThanItsExtensionIsCutWhereTheBytesEnd() {
        var ext = serverNameExtension([(0, Array("host.test".utf8))])
        ext[4] = 200  // the entry claims 200 bytes; 9 are there
        #expect(ClientHelloReader.serverName(inExtension: ext) == "host.test")
        #expect(ClientHelloReader.serverName(inExtension: [0, 1, 0]) == nil)
    }

    @Test func hostileBytesSurviveInTheRawNameAndAreRefusedAsAHostName() {
        let ext = serverNameExtension([(0, Array("evil.test".utf8) + [0, 0xe9] + Array(",x".utf8))])
        let hello = ClientHelloReader.clientHello(serverNameExtension: ext, alpnExtension: nil)
        #expect(hello.serverNameRaw == "evil.test\u{0}\u{e9},x")
        #expect(hello.serverName == nil)
        #expect(hello.serverNameProblem != nil)
    }

    @Test func aWildcardIsNoServerName() {
        let ext = serverNameExtension([(0, Array("*.example.test".utf8))])
        let hello = ClientHelloReader.clientHello(serverNameExtension: ext, alpnExtension: nil)
        #expect(hello.serverNameRaw == "*.example.test")
        #expect(hello.serverName == nil)
        #expect(hello.serverNameProblem?.contains("cannot be a wildcard") == true)
    }

    @Test func protocolsAreReadInTheClientsOrderUntilTheListStopsMakingSense() {
        let list = protocolList(["h2", "http/1.1"])
        let ext = [UInt8(list.count >> 8), UInt8(list.count & 0xff)] + list
        #expect(ClientHelloReader.protocols(inExtension: ext) == ["h2", "http/1.1"])
        let truncated = ext + [9, UInt8(ascii: "x")]  // a name claiming 9 bytes, 1 there
        #expect(ClientHelloReader.protocols(inExtension: truncated) == ["h2", "http/1.1"])
        #expect(ClientHelloReader.protocols(inExtension: [0, 0]) == [])
    }

    @Test func theServersPreferenceWinsOverTheClientsOrder() {
        let offered = protocolList(["http/1.1", "h2"])
        offered.withUnsafeBufferPointer { list in
            #expect(ClientHelloReader.select(from: ["h2", "http/1.1"], offered: list) == 10..<12)
            #expect(ClientHelloReader.select(from: ["http/1.1"], offered: list) == 1..<9)
            #expect(ClientHelloReader.select(from: ["h3", "spdy/3"], offered: list) == nil)
            // A prefix of an offered name is not that name.
            #expect(ClientHelloReader.select(from: ["h"], offered: list) == nil)
        }
        // Nor is an offered name that is a prefix of a wanted one.
        protocolList(["h", "http/1"]).withUnsafeBufferPointer { list in
            #expect(ClientHelloReader.select(from: ["h2", "http/1.1"], offered: list) == nil)
        }
    }
}
