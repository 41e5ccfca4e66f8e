import Foundation
import PinproxyTestSupport
import Testing

/// `pinproxy serve` command lines that cannot work are refused before anything starts.
@Suite struct ServeValidationTests {
    @Test(arguments: [
        (["--listen", "127.0.0.1:8092", "--admin", "127.0.0.1:8092"],
         "--listen and --admin are both 127.0.0.1:8092: the proxy and its control API need two ports (e.g. --admin 127.0.0.1:8093)"),
        (["--listen", "127.0.0.1:8092", "--log-level", "verbose"],
         "unknown --log-level 'verbose': use trace, debug, info, notice, warning or error"),
    ])
    func aCommandLineThatCannotWorkIsOneLine(arguments: [String], message: String) throws {
        let directory = try TemporaryDirectory()
        let r = try pinproxy(["serve", "--dir", directory.file("ca")] + arguments)
        ErrorReportingTests.expectOneErrorLine(r, containing: message)
        #expect(!FileManager.default.fileExists(atPath: directory.file("ca")), "no CA is created for a refused command line")
    }
}
