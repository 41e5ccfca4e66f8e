import PinproxyHTTP1

// The HTTP/1 parser and the forwarding rules, fed what a client or an
// upstream server may send.
//
// Input: one control byte, then the byte stream. The stream is parsed three
// ways: whole, cut at random points (chosen from the input's hash), and
// one byte at a time (streams up to 512 bytes); all three must agree.
// Every message that parsed is then forwarded as the proxy forwards it and
// must parse back to the same message (see ``HTTP1ForwardingChecks``).

extension FuzzTarget {
    /// Longer streams are skipped: the bytes held while an upgrade is
    /// pending would reach the parser's limit whole but not in pieces.
    static let longestHTTP1Stream = 60_000

    /// Control byte: bit 0 accepts upgrade requests (else they are declined).
    public static let http1Request = FuzzTarget(
        "http1-request",
        "a client's byte stream into HTTP1Parser (request mode), then each request through HTTP1Forwarding"
    ) { input throws(FuzzFailure) in
        guard let control = input.first, input.count <= longestHTTP1Stream else { return }
        let stream = Array(input.dropFirst())
        let accept = control & 1 == 1
        let run = try HTTP1Fuzz.parseThreeWays(stream) { pieces in
            HTTP1StreamRun(stream, pieces: pieces, mode: .request, acceptUpgrades: accept)
        }
        for message in run.messages {
            guard let head = message.request else { continue }
            try HTTP1ForwardingChecks.checkRequest(head, body: message.body, trailers: message.trailers)
        }
    }

    /// Control byte: two bits per response, from the lowest, pick the method
    /// of the request it answers (GET, HEAD, CONNECT, POST), repeating every four responses.
    public static let http1Response = FuzzTarget(
        "http1-response",
        "an upstream server's byte stream into HTTP1Parser (response mode), then each response through HTTP1Forwarding"
    ) { input throws(FuzzFailure) in
        guard let control = input.first, input.count <= longestHTTP1Stream else { return }
        let stream = Array(input.dropFirst())
        let methods = HTTP1Fuzz.methods(control)
        let run = try HTTP1Fuzz.parseThreeWays(stream) { pieces in
            HTTP1StreamRun(stream, pieces: pieces, mode: .response, methods: methods)
        }
        var answered = 0
        for message in run.messages {
            guard let head = message.response else { continue }
            let method = answered < methods.count ? methods[answered] : "GET"
            // The parser's rule: an interim answer leaves the request waiting for its final one.
            if !(head.isInformational && head.status != 101) { answered += 1 }
            try HTTP1ForwardingChecks.checkResponse(head, method: method, body: message.body, trailers: message.trailers)
        }
        try HTTP1Fuzz.checkCompleteMessagesBeforeAnError(stream, methods: methods)
    }
}

enum HTTP1Fuzz {
    static let methodTable = ["GET", "HEAD", "CONNECT", "POST"]

    /// The methods of the first 64 requests a response stream answers.
    static func methods(_ control: UInt8) -> [String] {
        (0..<64).map { index in methodTable[Int(control >> UInt8(2 * (index % 4))) & 3] }
    }

    /// `feedKeepingCompleteMessages` on the whole stream: on success what `feed`
    /// gives; on error the same error, and whole messages only: those a
    /// byte-by-byte feed completed before its error.
    static func checkCompleteMessagesBeforeAnError(_ stream: [UInt8], methods: [String]) throws(FuzzFailure) {
        func parser() -> HTTP1Parser {
            var parser = HTTP1Parser(mode: .response)
            for method in methods { parser.expectResponse(toMethod: method) }
            return parser
        }
        var keeping = parser(), plain = parser()
        var kept: [HTTP1Event] = [], fed: [HTTP1Event] = []
        var keptError: HTTP1Error?, fedError: HTTP1Error?
        do { try keeping.feedKeepingCompleteMessages(stream[...], into: &kept) } catch { keptError = error }
        do { try plain.feed(stream[...], into: &fed) } catch { fedError = error }
        switch (keptError, fedError) {
        case (nil, nil):
            try require(HTTP1StreamRun.merge(kept) == HTTP1StreamRun.merge(fed), "keeping complete messages, the stream parsed differently")
        case (let keptFailure?, let fedFailure?):
            try require(keptFailure.code == fedFailure.code && keptFailure.status == fedFailure.status,
                        "keeping complete messages, the error was \(keptFailure.code) instead of \(fedFailure.code)")
            try require(kept.last?.isEnd ?? true, "after an error the kept events end inside a message: \(kept)")
            if stream.count <= 512 {
                var bytewise = parser()
                var events: [HTTP1Event] = []
                for index in stream.indices {
                    do { try bytewise.feed(stream[index...index], into: &events) } catch { break }
                }
                let merged = HTTP1StreamRun.merge(kept)
                try require(HTTP1StreamRun.merge(events).starts(with: merged),
                            "the messages kept before the error are not those a byte-by-byte feed completed: \(merged)")
            }
        default:
            throw fail("keeping complete messages changed whether the stream parses (\(String(describing: keptError)) against \(String(describing: fedError)))")
        }
    }

    /// Parses with `parse` whole, in random pieces and byte by byte; the
    /// runs must agree. Returns the run in pieces, as a connection reads.
    static func parseThreeWays(
        _ stream: [UInt8], _ parse: ([Range<Int>]) -> HTTP1StreamRun
    ) throws(FuzzFailure) -> HTTP1StreamRun {
        let whole = parse(stream.isEmpty ? [] : [0..<stream.count])
        var choices = FuzzChoices(seededBy: stream)
        let split = parse(choices.pieces(of: stream.count))
        try whole.requireSameOutcome(as: split, "in random pieces")
        if stream.count <= 512 {
            let bytewise = parse((0..<stream.count).map { $0..<($0 + 1) })
            try whole.requireSameOutcome(as: bytewise, "byte by byte")
        }
        return split
    }
}
