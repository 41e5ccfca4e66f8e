import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// `<pin-set expiration="yyyy-MM-dd">` as Android reads and applies it: `XmlConfigSource.parsePinSet`
/// parses the date with a non-lenient `SimpleDateFormat("yyyy-MM-dd")`, so a day that does not
/// exist is an error; `NetworkSecurityTrustManager.checkPins` stops enforcing the pins once the
/// time is past the start of that day (`System.currentTimeMillis() > pinSet.expirationTime`).
@Suite("Android pin-set expiration")
struct AndroidPinSetExpirationTests {
    let pki = PKI.shared

    func config(expiration: String) throws -> NetworkSecurityConfig {
        let xml = """
            <network-security-config><domain-config><domain>api.example.com</domain>
            <pin-set expiration="\(expiration)"><pin digest="SHA-256">\([UInt8](repeating: 7, count: 32).base64)</pin></pin-set>
            </domain-config></network-security-config>
            """
        return try NetworkSecurityConfig.parse(Data(xml.utf8), file: "nsc.xml") { _, _ in ("", []) }
    }

    @Test("a day that does not exist in its month is refused", arguments: ["2023-02-29", "2030-04-31", "2030-06-00"])
    func aDayOutsideItsMonthIsRefused(_ date: String) {
        #expect {
            _ = try config(expiration: date)
        } throws: { error in
            "\(error)".contains("not a yyyy-MM-dd date")
        }
    }

    @Test("a leap day is a valid expiration date")
    func aLeapDayIsAccepted() throws {
        let pinSet = try #require(try config(expiration: "2024-02-29").domainConfigs.first?.pinSet)
        #expect(pinSet.expiration.map { ISO8601DateFormatter().string(from: $0) } == "2024-02-29T00:00:00Z")
    }

    @Test("pins stop being enforced from the start of the expiration day, not at its end")
    func pinsExpireAtTheStartOfTheDay() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let today = calendar.startOfDay(for: pki.now)
        let day = calendar.dateComponents([.year, .month, .day], from: today)
        let text = String(format: "%04d-%02d-%02d", day.year!, day.month!, day.day!)
        let policy = AndroidPolicy(config: try config(expiration: text))
        // The genuine chain does not carry the pinned key: a mismatch whenever the pins count.
        let before = policy.evaluate(pki.trust(Scenario.genuine.chain(pki), at: today.addingTimeInterval(-6 * 3600)))
        #expect(before.decision == .reject, "\(before.steps)")
        let during = policy.evaluate(pki.trust(Scenario.genuine.chain(pki), at: today.addingTimeInterval(6 * 3600)))
        #expect(during.decision == .accept, "\(during.steps)")
        #expect(during.steps.last?.outcome.contains("pins are no longer enforced") == true, "\(during.steps)")
        // At the very instant of expiration the pins still hold: Android skips them only when
        // currentTimeMillis() > expirationTime (NetworkSecurityTrustManager.checkPins).
        let atTheInstant = policy.evaluate(pki.trust(Scenario.genuine.chain(pki), at: today))
        #expect(atTheInstant.decision == .reject, "\(atTheInstant.steps)")
        let justAfter = policy.evaluate(pki.trust(Scenario.genuine.chain(pki), at: today.addingTimeInterval(0.001)))
        #expect(justAfter.decision == .accept, "\(justAfter.steps)")
    }
}
