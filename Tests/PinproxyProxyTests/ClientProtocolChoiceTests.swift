@testable import PinproxyProxy
import Testing

/// The ALPN rule: every row of ``ClientProtocolChoice``'s table.
@Suite("Client protocol choice")
struct ClientProtocolChoiceTests {
    static let both = ["h2", "http/1.1"]

    static func choose(http2: Bool = true, upstreamHTTP2: Bool = true, client: [String], tls: Bool = true, upstream: String?,
                       failed: Bool = false) -> ClientProtocolChoice {
        ClientProtocolChoice.choose(http2: http2, upstreamHTTP2: upstreamHTTP2, clientOffers: client, upstreamTLS: tls, upstreamALPN: upstream,
                                    upstreamFailed: failed)
    }

    @Test("--http2 off, or a client without h2: HTTP/1.1 whatever the upstream")
    func http1() {
        #expect(Self.choose(http2: false, client: Self.both, upstream: "h2") == .http1)
        #expect(Self.choose(http2: false, client: ["h2"], tls: false, upstream: nil) == .http1)
        #expect(Self.choose(client: ["http/1.1"], upstream: "h2") == .http1)
        #expect(Self.choose(client: [], tls: false, upstream: nil) == .http1)
        #expect(ClientProtocolChoice.http1.clientALPN == nil)
    }

    @Test("an upstream that chose h2: relayed, whether or not the client offers http/1.1 too")
    func relay() {
        #expect(Self.choose(client: Self.both, upstream: "h2") == .relayHTTP2)
        #expect(Self.choose(client: ["h2"], upstream: "h2") == .relayHTTP2)
        #expect(ClientProtocolChoice.relayHTTP2.clientALPN == ["h2", "http/1.1"])
    }

    @Test("a client offering both gets what the upstream chose: HTTP/1.1 mirrored")
    func mirror() {
        #expect(Self.choose(client: Self.both, upstream: "http/1.1") == .http1)
        #expect(Self.choose(client: ["http/1.1", "h2"], upstream: nil) == .http1)
        #expect(Self.choose(client: Self.both, upstream: nil, failed: true) == .http1)
    }

    @Test("translated: an h2-only client to an HTTP/1.1 upstream, and any h2 client to a plain http:// origin")
    func translate() {
        #expect(Self.choose(client: ["h2"], upstream: "http/1.1") == .translate)
        #expect(Self.choose(client: ["h2"], upstream: nil) == .translate)
        #expect(Self.choose(client: Self.both, tls: false, upstream: nil) == .translate)
        #expect(Self.choose(client: ["h2"], tls: false, upstream: nil) == .translate)
        #expect(Self.choose(client: ["h2"], upstream: nil, failed: true) == .translate)
        #expect(ClientProtocolChoice.translate.clientALPN == ["h2", "http/1.1"])
    }

    @Test("a failed upstream: HTTP/1.1 for a client that offers it, whether the upstream was TLS, plain or had chosen h2")
    func failed() {
        #expect(Self.choose(client: Self.both, tls: false, upstream: nil, failed: true) == .http1)
        #expect(Self.choose(client: ["h2"], tls: false, upstream: nil, failed: true) == .translate)
        #expect(Self.choose(client: Self.both, upstream: "h2", failed: true) == .http1)
        #expect(Self.choose(client: ["h2"], upstream: "h2", failed: true) == .translate)
    }

    @Test("--upstream-http2 off: a client offering h2 gets HTTP/2 translated, whatever else it offers and whatever became of the upstream")
    func upstreamHTTP2Off() {
        #expect(Self.choose(upstreamHTTP2: false, client: Self.both, upstream: "http/1.1") == .translate)
        #expect(Self.choose(upstreamHTTP2: false, client: Self.both, upstream: nil) == .translate)
        #expect(Self.choose(upstreamHTTP2: false, client: ["h2"], upstream: "http/1.1") == .translate)
        #expect(Self.choose(upstreamHTTP2: false, client: Self.both, upstream: nil, failed: true) == .translate)
        #expect(Self.choose(upstreamHTTP2: false, client: Self.both, tls: false, upstream: nil) == .translate)
        // An upstream that refused HTTP/1.1 and was reached over h2 is relayed.
        #expect(Self.choose(upstreamHTTP2: false, client: Self.both, upstream: "h2") == .relayHTTP2)
        // A client without h2, or --http2 off, speaks HTTP/1.1 as before.
        #expect(Self.choose(upstreamHTTP2: false, client: ["http/1.1"], upstream: "http/1.1") == .http1)
        #expect(Self.choose(http2: false, upstreamHTTP2: false, client: Self.both, upstream: "http/1.1") == .http1)
    }
}
