import PinproxyHTTP1

/// One byte stream parsed by ``HTTP1Parser`` the way a connection feeds it,
/// with what came out merged so that runs over different splits compare.
struct HTTP1StreamRun {
    /// What the parser reported, body pieces joined.
    enum Merged: Equatable {
        case requestHead(HTTP1RequestHead)
        case responseHead(HTTP1ResponseHead)
        case body([UInt8])
        case end(HTTPHeaders)
        /// The protocol switched: the tail and every raw byte after it.
        case switched([UInt8])
    }

    /// Events of every feed that succeeded, merged.
    var events: [Merged] = []
    /// The error that stopped the parser, if one did.
    var error: HTTP1Error?

    /// Parses `stream` fed as `pieces`, then reports the end of input.
    ///
    /// In request mode a paused upgrade request is accepted or declined as
    /// `acceptUpgrades` says, at once, as a connection does when the answer
    /// comes. In response mode the parser is told `methods` before any
    /// byte, as if those requests had been forwarded.
    init(
        _ stream: [UInt8], pieces: [Range<Int>], mode: HTTP1Parser.Mode, limits: HTTP1Limits = .default,
        methods: [String] = [], acceptUpgrades: Bool = false
    ) {
        var parser = HTTP1Parser(mode: mode, limits: limits)
        for method in methods { parser.expectResponse(toMethod: method) }
        var raw: [HTTP1Event] = []
        do {
            for piece in pieces {
                var fed = try parser.feed(stream[piece])
                while parser.isAwaitingUpgradeDecision {
                    if acceptUpgrades {
                        fed.append(.upgrade(tail: parser.acceptUpgrade()[...]))
                    } else {
                        fed += try parser.declineUpgrade()
                    }
                }
                raw += fed
            }
            raw += try parser.finish()
        } catch {
            self.error = error
        }
        events = Self.merge(raw)
    }

    static func merge(_ raw: [HTTP1Event]) -> [Merged] {
        var out: [Merged] = []
        for event in raw {
            switch event {
            case .requestHead(let head): out.append(.requestHead(head))
            case .responseHead(let head): out.append(.responseHead(head))
            case .body(let bytes):
                if case .body(let previous)? = out.last { out[out.count - 1] = .body(previous + bytes) }
                else { out.append(.body(Array(bytes))) }
            case .end(let trailers): out.append(.end(trailers))
            case .upgrade(let bytes), .raw(let bytes):
                if case .switched(let previous)? = out.last { out[out.count - 1] = .switched(previous + bytes) }
                else { out.append(.switched(Array(bytes))) }
            }
        }
        // An empty body piece carries nothing: drop it so that splits compare.
        return out.filter { if case .body(let bytes) = $0 { return !bytes.isEmpty } else { return true } }
    }

    /// One message: its head, its whole body, and its trailers once it ended.
    struct Message {
        var request: HTTP1RequestHead?
        var response: HTTP1ResponseHead?
        var body: [UInt8] = []
        /// Nil while the message is incomplete.
        var trailers: HTTPHeaders?
    }

    /// The messages in order; the last may be incomplete.
    var messages: [Message] {
        var out: [Message] = []
        for event in events {
            switch event {
            case .requestHead(let head): out.append(Message(request: head))
            case .responseHead(let head): out.append(Message(response: head))
            case .body(let bytes): if !out.isEmpty { out[out.count - 1].body += bytes }
            case .end(let trailers): if !out.isEmpty { out[out.count - 1].trailers = trailers }
            case .switched: break
            }
        }
        return out
    }

    /// Checks that `split` saw what this whole-stream run saw: the same
    /// events when both succeeded, and failure exactly when this run failed.
    func requireSameOutcome(as split: HTTP1StreamRun, _ how: String) throws(FuzzFailure) {
        switch (error, split.error) {
        case (nil, nil):
            try require(events == split.events, "fed \(how), the stream parsed differently:\n\(events)\nvs\n\(split.events)")
        case (let whole?, let other?):
            try require(whole.code == other.code,
                        "fed \(how), the stream failed with \(other.code) (\(other.reason)) instead of \(whole.code) (\(whole.reason))")
        case (let whole?, nil):
            throw fail("fed \(how), the stream parsed although it fails whole with \(whole.code): \(whole.reason)")
        case (nil, let other?):
            throw fail("fed \(how), the stream failed with \(other.code) (\(other.reason)) although it parses whole")
        }
    }
}
