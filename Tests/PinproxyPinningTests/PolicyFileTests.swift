import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

@Suite("Policy files")
struct PolicyFileTests {
    let pki = PKI.shared

    func load(_ json: String, files: [String: String] = [:]) throws -> (any PinningPolicy, TemporaryDirectory) {
        try loadPolicyFile(json, files: files)
    }

    func failure(_ json: String, files: [String: String] = [:]) -> String {
        do {
            _ = try load(json, files: files)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func afnetworkingWithPathsRelativeToThePolicyFile() throws {
        let dir = try TemporaryDirectory()
        try dir.write("policies/certs/server.cer", bytes: pki.leaf.derEncoded)
        let path = try dir.write("policies/policy.json", """
            {"family": "afnetworking", "profile": "4.x", "SSLPinningMode": "certificate",
             "allowInvalidCertificates": false, "validatesDomainName": true,
             "pinnedCertificates": ["certs/server.cer"]}
            """)
        let policy = try #require(try PolicyFile.load(contentsOf: path) as? AFNetworkingPolicy)
        #expect(policy.mode == .certificate)
        #expect(policy.pinnedCertificates == [pki.leaf])
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(policy.evaluate(Scenario.forged.trust(pki)).decision == .reject)
    }

    @Test func everyJSONFamilyLoads() throws {
        let files = ["policies/ca.pem": pki.root.pemEncoded, "policies/key.pem": try PublicKey(of: pki.serverKey).derEncoded.pemPublicKey]
        let pin = pki.intermediate.spkiPin
        let backup = [UInt8](repeating: 3, count: 32).base64
        let documents: [(String, PolicyFamily)] = [
            (#"{"family":"custom-anchors","anchorCertificates":["ca.pem"],"anchorCertificatesOnly":true}"#, .customAnchors),
            (#"{"family":"alamofire","evaluators":{"api.example.com":{"type":"CompositeTrustEvaluator","evaluators":[{"type":"DefaultTrustEvaluator"},{"type":"PublicKeysTrustEvaluator","keys":["key.pem"]}]}}}"#, .alamofire),
            (#"{"family":"okhttp","profile":"presented-chain","certificatePinner":{"**.example.com":["\#(pin.okhttp)"]}}"#, .okhttp),
            (#"{"family":"trustkit","TSKSwizzleNetworkDelegates":false,"TSKPinnedDomains":{"example.com":{"TSKPublicKeyHashes":["\#(pin.base64)","\#(backup)"],"TSKIncludeSubdomains":true,"TSKEnforcePinning":false,"TSKExpirationDate":"2099-12-31","TSKReportURIs":["https://r.example.com/"]}}}"#, .trustkit),
            (#"{"family":"curl","pinnedpubkey":"\#(pki.leaf.spkiPin.curl);sha256//\#(backup)","insecure":false,"cacert":"ca.pem"}"#, .curl),
            (#"{"family":"curl","pinnedpubkey":"key.pem"}"#, .curl),
        ]
        for (json, family) in documents {
            let (policy, _) = try load(json, files: files)
            #expect(policy.family == family)
            #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept, "\(json)")
            #expect(policy.evaluate(Scenario.forged.trust(pki)).decision != .accept, "\(json)")
        }
    }

    @Test func androidByJSONWrapperAndDirectly() throws {
        let dir = try TemporaryDirectory()
        let xmlPath = try dir.write("res/xml/nsc.xml", "<network-security-config/>")
        let wrapper = try dir.write("android.json", #"{"family":"android-nsc","networkSecurityConfig":"res/xml/nsc.xml","targetSdkVersion":23}"#)
        let direct = try PolicyFile.load(contentsOf: xmlPath)
        #expect(direct.profile == "API 24")
        #expect(direct.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        let old = try PolicyFile.load(contentsOf: wrapper)
        #expect(old.profile == "API 23")
        #expect(old.evaluate(Scenario.forged.trust(pki)).decision == .accept)
    }

    @Test func trustKitInfoPlist() throws {
        let dir = try TemporaryDirectory()
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>CFBundleIdentifier</key><string>test.app</string>
              <key>TSKConfiguration</key><dict>
                <key>TSKPinnedDomains</key><dict>
                  <key>api.example.com</key><dict>
                    <key>TSKPublicKeyHashes</key><array>
                      <string>\(pki.intermediate.spkiPin.base64)</string>
                      <string>\([UInt8](repeating: 5, count: 32).base64)</string>
                    </array>
                  </dict>
                </dict>
              </dict>
            </dict></plist>
            """
        let path = try dir.write("Info.plist", plist)
        let policy = try PolicyFile.load(contentsOf: path)
        #expect(policy.family == .trustkit)
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(policy.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        let wrapper = try dir.write("tk.json", #"{"family":"trustkit","infoPlist":"Info.plist"}"#)
        #expect(try PolicyFile.load(contentsOf: wrapper).family == .trustkit)
    }

    /// An Info.plist whose TrustKit configuration uses real `<true/>`/`<false/>` booleans.
    func trustKitPlist(subdomains: String = "<true/>", enforce: String = "<false/>", swizzle: String = "<false/>") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
          <key>TSKConfiguration</key><dict>
            <key>TSKSwizzleNetworkDelegates</key>\(swizzle)
            <key>TSKPinnedDomains</key><dict>
              <key>example.com</key><dict>
                <key>TSKIncludeSubdomains</key>\(subdomains)
                <key>TSKEnforcePinning</key>\(enforce)
                <key>TSKDisableDefaultReportUri</key><true/>
                <key>TSKPublicKeyHashes</key><array>
                  <string>\(pki.intermediate.spkiPin.base64)</string>
                  <string>\([UInt8](repeating: 5, count: 32).base64)</string>
                </array>
              </dict>
            </dict>
          </dict>
        </dict></plist>
        """
    }

    @Test func trustKitInfoPlistBooleans() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("App/Info.plist", trustKitPlist())
        let wrapper = try dir.write("tk.json", #"{"family":"trustkit","infoPlist":"App/Info.plist"}"#)
        for file in [path, wrapper] {
            let policy = try #require(try PolicyFile.load(contentsOf: file) as? TrustKitPolicy)
            let entry = try #require(policy.domains.first)
            #expect(entry.includeSubdomains)
            #expect(!entry.enforcePinning)
            // api.example.com is covered only through TSKIncludeSubdomains; a pin mismatch only reports.
            #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
            #expect(policy.evaluate(Scenario.forged.trust(pki)).decision == .reportOnly)
        }
        let strict = try #require(try PolicyFile.load(contentsOf: try dir.write("strict.plist", trustKitPlist(subdomains: "<false/>", enforce: "<true/>", swizzle: "<true/>"))) as? TrustKitPolicy)
        #expect(strict.domains.first?.includeSubdomains == false)
        #expect(strict.domains.first?.enforcePinning == true)
    }

    @Test("a plist number or string is not a boolean", arguments: ["<integer>1</integer>", "<integer>0</integer>", "<string>YES</string>", "<real>1</real>"])
    func trustKitInfoPlistNonBoolean(value: String) throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("Info.plist", trustKitPlist(enforce: value))
        #expect {
            _ = try PolicyFile.load(contentsOf: path)
        } throws: { error in
            "\(error)".contains(#"key 'TSKConfiguration.TSKPinnedDomains["example.com"].TSKEnforcePinning': must be true or false"#)
        }
    }

    @Test func booleanDetection() throws {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(#"{"t":true,"f":false,"one":1,"zero":0,"half":0.5}"#.utf8)) as? [String: Any])
        #expect(PolicyObject.isBoolean(json["t"]!))
        #expect(PolicyObject.isBoolean(json["f"]!))
        #expect(!PolicyObject.isBoolean(json["one"]!))
        #expect(!PolicyObject.isBoolean(json["zero"]!))
        #expect(!PolicyObject.isBoolean(json["half"]!))
        let plist = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>t</key><true/><key>f</key><false/><key>one</key><integer>1</integer><key>zero</key><integer>0</integer></dict></plist>"#
        let values = try #require(try PropertyListSerialization.propertyList(from: Data(plist.utf8), options: [], format: nil) as? [String: Any])
        #expect(PolicyObject.isBoolean(values["t"]!))
        #expect(PolicyObject.isBoolean(values["f"]!))
        #expect(!PolicyObject.isBoolean(values["one"]!))
        #expect(!PolicyObject.isBoolean(values["zero"]!))
        #expect(PolicyObject.isBoolean(true as Any))
        #expect(!PolicyObject.isBoolean(1 as Any))
        #expect(!PolicyObject.isBoolean("true" as Any))
    }

    @Test func curlPinnedPublicKeyFileMustBeAPublicKey() throws {
        let spki = try PublicKey(of: pki.serverKey).derEncoded
        let files = [
            "policies/leaf.pem": pki.leaf.pemEncoded,
            "policies/key.pem": spki.pemPublicKey,
            "policies/both.pem": pki.leaf.pemEncoded + spki.pemPublicKey,
            "policies/private.pem": try pki.serverKey.pemEncoded(),
        ]
        for name in ["key.pem", "both.pem"] {
            let (policy, _) = try load(#"{"family":"curl","pinnedpubkey":"\#(name)"}"#, files: files)
            #expect((policy as? CurlPolicy)?.pinnedPublicKeys == [pki.leaf.spkiPin], "\(name)")
            #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        }
        let certificate = failure(#"{"family":"curl","pinnedpubkey":"leaf.pem"}"#, files: files)
        for fragment in ["key 'pinnedpubkey'", "leaf.pem (relative to the policy file) is a certificate, not a public key", "curl --pinnedpubkey needs a public key file", "error 90",
                         "openssl x509 -in cert.pem -pubkey -noout > key.pem"] {
            #expect(certificate.contains(fragment), "\(certificate)")
        }
        let dir = try TemporaryDirectory()
        try dir.write("leaf.der", bytes: pki.leaf.derEncoded)
        try dir.write("key.der", bytes: spki)
        let der = try dir.write("der.json", #"{"family":"curl","pinnedpubkey":"leaf.der"}"#)
        #expect(throws: PinproxyError.self) { try PolicyFile.load(contentsOf: der) }
        do { _ = try PolicyFile.load(contentsOf: der) } catch { #expect("\(error)".contains("leaf.der (relative to the policy file) is a DER certificate, not a public key"), "\(error)") }
        let derKey = try dir.write("derkey.json", #"{"family":"curl","pinnedpubkey":"key.der"}"#)
        #expect((try PolicyFile.load(contentsOf: derKey) as? CurlPolicy)?.pinnedPublicKeys == [pki.leaf.spkiPin])
        let privateKey = failure(#"{"family":"curl","pinnedpubkey":"private.pem"}"#, files: files)
        #expect(privateKey.contains("is a private key"), "\(privateKey)")
        #expect(!privateKey.contains("PRIVATE KEY-----"))
    }

    @Test func curlHashesAreReadAsCurlReadsThem() throws {
        // A digest whose base64 starts with '/': curl's sha256/// notation.
        let digest = [UInt8](repeating: 0xFC, count: 32)
        #expect(digest.base64.hasPrefix("/"))
        let other = try SPKIPin(sha256: digest), leaf = pki.leaf.spkiPin
        func read(_ value: String) -> [String] {
            let (pins, never) = CurlPolicy.readPins(value)
            return pins.map(\.base64) + never.map { "never:" + $0 }
        }
        #expect(read("sha256//\(other.base64);sha256//\(leaf.base64)") == [other.base64, leaf.base64])
        // Entries run from sha256// to the next ;sha256//, compared as written (real curl: RealLibraryFindingTests).
        #expect(read("sha256//\(other.base64);;sha256//\(leaf.base64)") == [leaf.base64, "never:\(other.base64);"])
        #expect(read("sha256//\(leaf.base64);") == ["never:\(leaf.base64);"])
        #expect(read("sha256//\(other.base64); sha256//\(leaf.base64)") == ["never:\(other.base64); sha256//\(leaf.base64)"])
        #expect(read("sha256//\(other.base64);SHA256//\(leaf.base64)") == ["never:\(other.base64);SHA256//\(leaf.base64)"])
        #expect(read("sha256//\(leaf.base64.dropLast())") == ["never:\(leaf.base64.dropLast())"])
        #expect(read("sha256//") == ["never:"])
    }

    @Test func aCurlPinThatNeverMatchesLoadsAndRefusesAsCurlDoes() throws {
        let leaf = pki.leaf.spkiPin.base64
        let dir = try TemporaryDirectory()
        func load(_ json: String) throws -> any PinningPolicy { try PolicyFile.load(contentsOf: try dir.write("curl.json", json)) }
        // curl takes these values without a word and fails every connection they alone pin (error 90).
        for (value, why) in [("sha256//\(leaf);", "'\(leaf);' (curl splits only at ;sha256//)"),
                             ("sha256//AAAA", "'AAAA' (not the base64 of a SHA-256 hash)"),
                             ("sha256//\(leaf.replacingOccurrences(of: "=", with: ""))", "(the base64 without its padding)"),
                             ("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=; sha256//\(leaf)", "(curl trims no space)")] {
            let policy = try load(#"{"family":"curl","pinnedpubkey":"\#(value)"}"#)
            let verdict = policy.evaluate(Scenario.genuine.trust(pki))
            #expect(verdict.decision == .reject, "\(value)")
            #expect(verdict.explained.contains("curl: (90)") && verdict.explained.contains("entries that never match, as curl compares them: ")
                    && verdict.explained.contains(why), "\(value): \(verdict.explained)")
        }
        // With a pin that matches beside it, the connection goes on, and the verdict still names the dead entry.
        let verdict = try load(#"{"family":"curl","pinnedpubkey":"sha256//AAAA;;sha256//\#(leaf)"}"#).evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .accept && verdict.explained.contains("'AAAA;' (curl splits only at ;sha256//)"), "\(verdict.explained)")
    }

    struct Bad: Sendable, CustomStringConvertible {
        let json: String
        let fragments: [String]
        var description: String { fragments.joined(separator: " / ") }
    }

    static let bad: [Bad] = [
        Bad(json: "{", fragments: ["policy.json:1:1: not valid JSON", "never closed"]),
        Bad(json: "{\n  \"family\": \"curl\",\n  \"pinnedpubkey\": sha256\n}", fragments: ["policy.json:3:19: not valid JSON: expected a value, found 'sha256'"]),
        Bad(json: "{\"family\": \"curl\",}", fragments: ["policy.json:1:18: not valid JSON: a comma before '}'"]),
        Bad(json: "{\"family\": \"curl\", \"family\": \"okhttp\"}", fragments: ["policy.json:1:20: not valid JSON: key \"family\" appears twice"]),
        Bad(json: "{\"family\": \"é\" \"x\": 1}", fragments: ["policy.json:1:16: not valid JSON: expected ',' or '}' after the value of \"family\", found '\"'"]),
        Bad(json: "[]", fragments: ["policy.json", "top level"]),
        Bad(json: #"{"SSLPinningMode":"none"}"#, fragments: ["key 'family'", "is required: one of afnetworking, custom-anchors, alamofire, okhttp"]),
        Bad(json: #"{"family":"afnet"}"#, fragments: ["key 'family'", "unknown family 'afnet'"]),
        Bad(json: #"{"family":"afnetworking","SSLPinningMod":"none"}"#, fragments: ["key 'SSLPinningMod'", "unknown key (did you mean 'SSLPinningMode'?); known keys here: ", "validatesDomainName"]),
        // A misspelt required key is named before the key it stands for is missed.
        Bad(json: #"{"family":"okhttp","certPinner":{}}"#, fragments: ["key 'certPinner': unknown key (did you mean 'certificatePinner'?)"]),
        Bad(json: #"{"familly":"okhttp","certificatePinner":{}}"#, fragments: ["key 'familly': unknown key (did you mean 'family'?)"]),
        Bad(json: #"{"family":"trustkit","TSKPinnedDomain":{}}"#, fragments: ["key 'TSKPinnedDomain': unknown key (did you mean 'TSKPinnedDomains'?)"]),
        Bad(json: #"{"family":"alamofire","evaluators":{"api.example.com":{"typ":"DefaultTrustEvaluator"}}}"#, fragments: [#"key 'evaluators["api.example.com"].typ': unknown key (did you mean 'type'?)"#]),
        Bad(json: #"{"family":"afnetworking","SSLPinningMode":"pubkey"}"#, fragments: ["key 'SSLPinningMode'", "'pubkey'"]),
        Bad(json: #"{"family":"afnetworking","allowInvalidCertificates":1}"#, fragments: ["key 'allowInvalidCertificates'", "true or false"]),
        Bad(json: #"{"family":"afnetworking","validatesDomainName":"yes"}"#, fragments: ["key 'validatesDomainName'", "true or false"]),
        Bad(json: #"{"family":"afnetworking","profile":"3.0"}"#, fragments: ["key 'profile'", "unknown profile"]),
        Bad(json: #"{"family":"afnetworking","pinnedCertificates":["missing.cer"]}"#, fragments: ["key 'pinnedCertificates[0]'", "/policies/missing.cer (relative to the policy file)", "no such file"]),
        Bad(json: #"{"family":"afnetworking","pinnedCertificates":["garbage.cer"]}"#, fragments: ["key 'pinnedCertificates[0]'", "garbage.cer (relative to the policy file)", "neither PEM nor a DER certificate"]),
        Bad(json: #"{"family":"afnetworking","pinnedCertificates":"server.cer"}"#, fragments: ["key 'pinnedCertificates'", "must be a list"]),
        Bad(json: #"{"family":"okhttp","certificatePinner":{"api.example.com":["sha256/A"]}}"#, fragments: ["key 'certificatePinner[\"api.example.com\"]'", "pins must be base64"]),
        Bad(json: #"{"family":"okhttp","certificatePinner":{"api.example.com":["sha256/@@@@"]}}"#, fragments: [#"certificatePinner["api.example.com"]"#, "not valid base64"]),
        Bad(json: #"{"family":"okhttp","certificatePinner":{"api.example.com":[]}}"#, fragments: [#"certificatePinner["api.example.com"]"#, "lists no pins"]),
        Bad(json: #"{"family":"okhttp","profile":"raw","certificatePinner":{}}"#, fragments: ["key 'profile'"]),
        // A bad pattern is the key's fault, not its first pin's; where a key with dots ends is plain.
        Bad(json: #"{"family":"okhttp","certificatePinner":{"*.*.example.com":["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}"#,
            fragments: [#"key 'certificatePinner["*.*.example.com"]': unexpected pattern '*.*.example.com'"#]),
        Bad(json: #"{"family":"okhttp","certificatePinner":{"a\"b.example.com":["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}"#,
            fragments: [#"key 'certificatePinner["a\"b.example.com"]': pattern"#]),
        Bad(json: #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}}"#, fragments: ["TSKPinnedDomains", "at least two"]),
        Bad(json: #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":["AAAA","BBBB"]}}}"#, fragments: [#"key 'TSKPinnedDomains["api.example.com"].TSKPublicKeyHashes'"#, "3 bytes"]),
        Bad(json: #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":[],"TSKEnforcePining":true}}}"#, fragments: ["TSKEnforcePining", "unknown key"]),
        Bad(json: #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":[],"TSKExpirationDate":"31/12/2030"}}}"#, fragments: ["TSKExpirationDate", "yyyy-MM-dd"]),
        Bad(json: #"{"family":"alamofire","evaluators":{"api.example.com":{"type":"PinnedCertificateTrustEvaluator"}}}"#, fragments: [#"key 'evaluators["api.example.com"].type'"#, "unknown evaluator 'PinnedCertificateTrustEvaluator' (did you mean 'PinnedCertificatesTrustEvaluator'?)"]),
        Bad(json: #"{"family":"alamofire","evaluators":{"api.example.com":{"type":"DefaultTrustEvaluator","validateHosts":true}}}"#, fragments: [#"evaluators["api.example.com"].validateHosts"#, "unknown key"]),
        Bad(json: #"{"family":"curl","pinnedpubkey":"nokey.pem"}"#, fragments: ["key 'pinnedpubkey'", "nokey.pem"]),
        Bad(json: #"{"family":"curl","pinnedpubkey":"sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#,
            fragments: ["key 'pinnedpubkey'", "sha256/AAAA", "sha256//<base64> (two slashes)"]),
        Bad(json: #"{"family":"curl","pinnedpubkey":"garbage.cer"}"#, fragments: ["key 'pinnedpubkey'", "garbage.cer", "PUBLIC KEY"]),
        Bad(json: #"{"family":"custom-anchors"}"#, fragments: ["key 'anchorCertificates'", "is required"]),
        Bad(json: #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA="]}}}"#,
            fragments: ["TSKPublicKeyHashes", "entry 0", "starts with 'sha256/'", "bare base64"]),
        Bad(json: #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA="],"TSKReportURIs":["https://r.example.com/",7]}}}"#,
            fragments: ["TSKReportURIs", "entry 1 is not a string"]),
        Bad(json: #"{"family":"alamofire","evaluators":{"api.example.com":{"type":"PublicKeysTrustEvaluator","keys":["server.key"]}}}"#,
            fragments: [#"key 'evaluators["api.example.com"].keys[0]'"#, "server.key (relative to the policy file) is a private key", "openssl pkey -in server.key -pubout"]),
        Bad(json: #"{"family":"android-nsc","networkSecurityConfig":"nothere.xml"}"#, fragments: ["nothere.xml", "no such file"]),
        // A mistyped name gets the nearest known one; a name far from all of them gets the list alone.
        Bad(json: #"{"family":"okhtp"}"#, fragments: ["unknown family 'okhtp' (did you mean 'okhttp'?); expected one of"]),
        Bad(json: #"{"family":"frobnicate"}"#, fragments: ["unknown family 'frobnicate'; expected one of"]),
        Bad(json: #"{"family":"okhttp","profile":"cleaned_chain","certificatePinner":{}}"#,
            fragments: ["unknown profile 'cleaned_chain' (did you mean 'cleaned-chain'?); expected cleaned-chain or presented-chain"]),
        Bad(json: #"{"family":"okhttp","platform":"JVM","certificatePinner":{}}"#, fragments: ["unknown platform 'JVM' (did you mean 'jvm'?)"]),
        Bad(json: #"{"family":"afnetworking","SSLPinningMode":"PublicKey"}"#,
            fragments: ["key 'SSLPinningMode'", "'PublicKey' (did you mean 'publicKey'?) is not none, publicKey or certificate"]),
    ]

    static let privateKeyPEM = try! PrivateKey.generate(.ecP256).pemEncoded()

    @Test("bad policy files name file, key and problem", arguments: bad)
    func badFile(_ c: Bad) {
        let message = failure(c.json, files: ["policies/garbage.cer": "not a certificate", "policies/server.key": PolicyFileTests.privateKeyPEM])
        for fragment in c.fragments {
            #expect(message.contains(fragment), "\(message)")
        }
    }
}

extension Array where Element == UInt8 {
    /// A `PUBLIC KEY` PEM block of these DER bytes.
    var pemPublicKey: String {
        let body = Data(self).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PUBLIC KEY-----\n\(body)\n-----END PUBLIC KEY-----\n"
    }
}

@Suite("JSON syntax positions")
struct JSONSyntaxTests {
    @Test("well-formed JSON passes", arguments: [
        #"{}"#, #"{"a":[1,-2.5e3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{"c":[]}}"#, "\u{FEFF}{\"a\": 0}", " [ ] ",
    ])
    func wellFormed(text: String) {
        #expect(JSONSyntax.check(Array(text.utf8)) == nil)
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) != nil)
    }

    @Test("errors have the line and column of the fault", arguments: [
        ("{\n  \"a\": tru\n}", 2, 8, "expected a value, found 'tru'"),
        ("{\"a\": 01}", 1, 7, "'01' is not a JSON number"),
        ("{\"a\": \"x\n\"}", 1, 7, "runs to the end of the line"),
        ("{'a': 1}", 1, 2, "expected a key in double quotes"),
        ("{\"a\": 1} x", 1, 10, "after the end of the top-level value"),
        ("[1, 2,]", 1, 6, "a comma before ']'"),
        ("{\"a\": [1, 2}", 1, 12, "expected ',' or ']'"),
        ("{\"a\": [1,\n", 1, 7, "the list opened at line 1, column 7 is never closed"),
        ("", 1, 1, "the file is empty"),
        ("{\"a\": \"\\q\"}", 1, 8, "'\\q' is not a JSON escape"),
        ("{\n\t\"é€\": // c\n}", 2, 8, "JSON has no comments"),
    ])
    func positions(text: String, line: Int, column: Int, message: String) throws {
        let bytes = Array(text.utf8)
        let problem = try #require(JSONSyntax.check(bytes))
        let position = JSONSyntax.position(of: problem.offset, in: bytes)
        #expect(position.line == line && position.column == column, "\(position) \(problem.message)")
        #expect(problem.message.contains(message), "\(problem.message)")
    }

    @Test func parserErrorOffset() {
        let error = NSError(domain: NSCocoaErrorDomain, code: 3840, userInfo: [NSDebugDescriptionErrorKey: "Invalid value around character 40."])
        #expect(JSONSyntax.offset(inParserError: error) == 40)
        #expect(JSONSyntax.offset(inParserError: NSError(domain: NSCocoaErrorDomain, code: 3840)) == nil)
    }
}
