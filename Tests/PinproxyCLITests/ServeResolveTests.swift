import Foundation
import PinproxyTestSupport
import Testing

/// `pinproxy serve --resolve HOST:ADDRESS`: each entry is checked before anything starts.
@Suite struct ServeResolveTests {
    @Test(arguments: [
        ("api.example.test:443:127.0.0.1", "--resolve 'api.example.test:443:127.0.0.1': give HOST:ADDRESS without a port (api.example.test:127.0.0.1); the CONNECT target carries the port"),
        ("api.example.test:443:[::1]", "without a port (api.example.test:[::1])"),
        ("api.example.test", "--resolve wants HOST:ADDRESS, e.g. api.example.test:127.0.0.1, not 'api.example.test'"),
        ("api.example.test:example.org", "--resolve 'api.example.test:example.org': 'example.org' for api.example.test is not a numeric IPv4 or IPv6 address"),
        ("api.example.test:", "'' for api.example.test is not a numeric IPv4 or IPv6 address"),
        ("*.example.test:127.0.0.1", "'*.example.test' is a wildcard; give one host name"),
        ("*.app_net:127.0.0.1", "'*.app_net' is a wildcard; give one host name"),
        ("api.example.test:127.0.0.256", "'127.0.0.256' for api.example.test is not a numeric IPv4 or IPv6 address"),
        ("[2001:db8::7:127.0.0.1", "--resolve wants HOST:ADDRESS"),
        ("a!b.example.test:127.0.0.1", "--resolve 'a!b.example.test:127.0.0.1': invalid host name \"a!b.example.test\""),
        (":127.0.0.1", "invalid host name \"\": it is empty"),
    ])
    func aBadEntryStopsServeWithOneLine(entry: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let r = try pinproxy(["serve", "--dir", directory.file("ca"), "--listen", "127.0.0.1:0", "--resolve", entry])
        ErrorReportingTests.expectOneErrorLine(r, containing: message)
        #expect(!FileManager.default.fileExists(atPath: directory.file("ca")), "no CA is created for a refused command line")
    }

    @Test func theHelpNamesTheOption() throws {
        let help = try pinproxy(["serve", "--help"])
        #expect(help.stdout.contains("--resolve <host:address>"), "\(help.stdout)")
    }
}
