import PinproxyCertificates
import PinproxyTLS

// The ClientHello and SNI path of the intercepting side: bytes a client
// sends first, fed to a server TLSConnection in memory (no socket) in two
// pieces, with the handshake driven as ClientConnection drives it: the
// paused ClientHello is read (server name, ALPN), a certificate forged for
// the name is installed, and the handshake goes on with what is left.

extension FuzzTarget {
    public static let clientHello = FuzzTarget(
        "clienthello",
        "TLS records into an in-memory server TLSConnection; ClientHello server name and ALPN, then the handshake with a forged leaf"
    ) { input throws(FuzzFailure) in
        try ClientHelloFuzz.run(input)
    }
}

enum ClientHelloFuzz {
    static let context: TLSContext = {
        do { return try TLSContext.server(alpn: ["h2", "http/1.1"]) } catch { fatalError("cannot make a TLS server context: \(error)") }
    }()

    static func run(_ input: [UInt8]) throws(FuzzFailure) {
        let fixtures = FuzzFixtures.shared
        let connection: TLSConnection
        do { connection = try TLSConnection(context: context) } catch { throw fail("cannot make a TLS connection: \(error)") }
        var choices = FuzzChoices(seededBy: input)
        let cut = input.isEmpty ? 0 : Int.random(in: 0...input.count, using: &choices)
        connection.feed(Array(input[..<cut]))
        var result = connection.handshake()
        if case .wantRead = result {
            connection.feed(Array(input[cut...]))
            result = connection.handshake()
        }
        guard case .clientHello(let hello) = result else {
            FuzzLog.note("no ClientHello: \(result)")
            return
        }
        FuzzLog.note("ClientHello: SNI \(hello.serverNameRaw ?? "none") -> \(hello.serverName?.description ?? hello.serverNameProblem ?? "none"), ALPN \(hello.alpn)")
        try check(hello)
        try require(connection.clientHello == hello, "the connection keeps another ClientHello than the handshake reported")

        let leaf: ForgedLeaf
        do {
            leaf = try fixtures.forger.forge(LeafRequest(hello.serverName ?? fixtures.host))
            try connection.installCertificate(leaf)
        } catch {
            throw fail("cannot forge or install a leaf for \(String(describing: hello.serverName)): \(error)")
        }
        var steps = 0
        while steps < 4 {
            steps += 1
            switch connection.handshake() {
            case .wantRead, .wantWrite, .closed, .failed:
                connection.feedEndOfInput()
                _ = connection.handshake()
                return
            case .complete:
                throw fail("a handshake completed on the client's first flight alone")
            case .clientHello:
                throw fail("the ClientHello paused the handshake again after a certificate was installed")
            }
        }
    }

    /// What the server side reports of the ClientHello must be consistent:
    /// a name is only given when it validates and is no wildcard, else a problem says why.
    static func check(_ hello: ClientHello) throws(FuzzFailure) {
        guard let raw = hello.serverNameRaw else {
            try require(hello.serverName == nil && hello.serverNameProblem == nil, "a server name without the SNI it came from")
            return
        }
        if let name = hello.serverName {
            try require(hello.serverNameProblem == nil, "server name \(name) and a problem: \(hello.serverNameProblem ?? "")")
            try require(!name.isWildcard, "wildcard server name \(name) was accepted")
            let again = try? HostName(validating: raw)
            try require(again == name, "SNI \(HostNameFuzz.quoted(raw)) reported as \(name), validates as \(String(describing: again))")
        } else {
            try require(hello.serverNameProblem != nil, "SNI \(HostNameFuzz.quoted(raw)) refused without a reason")
        }
    }
}
