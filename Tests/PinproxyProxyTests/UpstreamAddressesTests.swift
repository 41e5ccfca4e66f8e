import PinproxyBase
import PinproxyProxy
import Testing

/// `PUT /resolve`'s map: two spellings of one host name (case, a trailing dot) are one entry,
/// and they may not ask for two addresses.
@Suite struct UpstreamAddressesTests {
    @Test func twoSpellingsOfOneNameAreOneEntry() throws {
        let addresses = UpstreamAddresses()
        try addresses.replace(with: ["shop.example.com": "127.0.0.1", "SHOP.example.com": "127.0.0.1", "shop.example.com.": "127.0.0.1"])
        #expect(addresses.all == ["shop.example.com": "127.0.0.1"])
    }

    @Test func twoSpellingsWithTwoAddressesAreRefusedAndChangeNothing() throws {
        let addresses = UpstreamAddresses()
        try addresses.replace(with: ["api.example.com": "10.0.0.1"])
        do {
            try addresses.replace(with: ["shop.example.com": "127.0.0.1", "SHOP.example.com": "10.0.0.2"])
            Issue.record("two addresses for one name were taken")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("'SHOP.example.com' and 'shop.example.com' are the same name (shop.example.com) with two addresses"), "\(error.reason)")
        }
        #expect(addresses.all == ["api.example.com": "10.0.0.1"])
    }
}
