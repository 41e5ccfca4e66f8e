@testable import PinproxyPinning
import Testing

/// Which subjectAltName entries the JDK 17 name classes refuse (`URIName`, `RFC822Name`,
/// `IPAddressName`), each one failing the whole extension; verdicts against real OkHttp are in
/// `RealLibraryFindingTests`.
@Suite struct JDKSubjectAltNamesTests {
    @Test(arguments: [
        "https://example.test/a", "mailto:someone@example.test", "urn:isbn:0451450523", "http://[::1]:8443/",
        "a+b-c.d:x", "https://example.test/%41%e9", "https://example.test/caf\u{e9}", "ldap://host/o=x?cn#f",
    ])
    func aURIJavaParsesWithASchemeIsRead(_ uri: String) {
        #expect(JDKSubjectAltNames.uriProblem(Array(uri.utf8)) == nil)
    }

    @Test(arguments: [
        ("foo", "must include scheme"), ("/path:x", "must include scheme"), ("a/b:c", "must include scheme"),
        ("?q:x", "must include scheme"), ("", "must include scheme"),
        ("1abc:x", "Illegal character in scheme name"), ("a_b:x", "Illegal character in scheme name"), (":foo", "Expected scheme name"),
        ("foo:", "Expected scheme-specific part"),
        ("https://a b/", "a space"), ("https://x/<", "Illegal character"), ("https://x/\\", "Illegal character"),
        ("https://x/{}", "Illegal character"), ("https://x/\u{7}", "Illegal character"),
        ("https://x/%4", "Malformed escape pair"), ("https://x/%zz", "Malformed escape pair"), ("https://x/%", "Malformed escape pair"),
    ])
    func aURIJavaRefusesIsNotRead(_ uri: String, _ reason: String) {
        let problem = JDKSubjectAltNames.uriProblem(Array(uri.utf8))
        #expect(problem?.contains(reason) == true, "\(uri): \(problem ?? "read")")
    }

    @Test func emailsAreReadAsRFC822NameReadsThem() {
        for email in ["someone@example.test", "example.test", "@example.test", "a@b@", ".example.test", "a@.example.test"] {
            #expect(JDKSubjectAltNames.emailProblem(Array(email.utf8)) == nil, "\(email)")
        }
        let refused = [("", "may not be null or empty"), ("someone@", "may not end with @"), ("a@.", "may not be just ."), (".", "may not be just .")]
        for (email, reason) in refused {
            let problem = JDKSubjectAltNames.emailProblem(Array(email.utf8))
            #expect(problem?.contains(reason) == true, "\(email): \(problem ?? "read")")
        }
    }
}
