import Foundation
import PinproxyHTTP1

/// `pinproxy bench http1`: the HTTP/1 work of one keep-alive exchange against
/// a plain scan-and-copy of the same bytes.
///
/// One exchange is wrk's `GET /small` and nginx's 200 response with a
/// 1024-byte body: the request parser is fed the request, the head is turned
/// into the upstream request and serialized, the response parser is fed the
/// response, the response head is turned into the client's and serialized,
/// and the keep-alive, upgrade and 100-continue questions the session asks
/// are asked. Both parsers live across exchanges, as on a keep-alive
/// connection.
///
/// Every exchange repeats the previous one byte for byte, as wrk's requests
/// and nginx's responses within one second do (`Date` changes once a
/// second), so the parsers recognise each head as a repeat
/// (``HTTP1HeadMemory``). A head that differs in a line is read line by line
/// and costs more: about 2.4 times the parsing work here when every response
/// carries a new `Date`.
///
/// Two figures: through the general entry points (each read copied into an
/// array, forwarded heads built and then serialized), and through the entry
/// points that avoid copies, which ``HTTP1ExchangeLayer`` uses: the slice the
/// transport delivered fed to the parser (the session takes a fresh events
/// array per read; here one is reused), and the forwarded heads written
/// straight to bytes
/// (``HTTP1Forwarding/serializedRequestForUpstream(_:via:host:)``,
/// ``HTTP1Forwarding/serializedResponseForClient(_:to:closeConnection:via:)``).
///
/// The baseline, timed in the same run, finds every LF of the same bytes with
/// `firstIndex(of:)` and copies them once: the least any HTTP/1 layer that
/// looks at every byte must do. The ratio to it is comparable across machines
/// where the nanoseconds are not.
public enum HTTP1Benchmark {
    public struct Result: Sendable {
        public var exchanges: Int
        /// Nanoseconds per exchange through the general entry points (reads copied, heads built then serialized).
        public var exchangeNanoseconds: Double
        /// Nanoseconds per exchange through the copy-free entry points the proxy uses.
        public var newAPIExchangeNanoseconds: Double
        /// Nanoseconds per exchange for the baseline scan and copy.
        public var baselineNanoseconds: Double
        /// Exchange time over baseline time.
        public var exchangeOverBaseline: Double { exchangeNanoseconds / baselineNanoseconds }
        public var newAPIExchangeOverBaseline: Double { newAPIExchangeNanoseconds / baselineNanoseconds }
    }

    /// wrk's request, byte for byte.
    public static let request: [UInt8] = Array("GET /small HTTP/1.1\r\nHost: 127.0.0.1:9444\r\n\r\n".utf8)

    /// nginx's response head and a 1024-byte body, byte for byte.
    public static let response: [UInt8] = Array((
        "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 15:26:08 GMT\r\n"
            + "Content-Type: text/plain\r\nContent-Length: 1024\r\n"
            + "Last-Modified: Sun, 22 Nov 2026 15:22:26 GMT\r\nConnection: keep-alive\r\n"
            + "ETag: \"6b0308b2-400\"\r\nAccept-Ranges: bytes\r\n\r\n"
    ).utf8) + Array(repeating: UInt8(ascii: "x"), count: 1024)

    /// Runs `exchanges` exchanges per round and keeps the fastest of `rounds`
    /// rounds of each measurement (the least disturbed by the rest of the machine).
    public static func run(exchanges: Int, rounds: Int = 5) throws -> Result {
        var session = SessionLike()
        var newAPIs = SessionLike()
        var baseline = Baseline()
        // Warm up allocator, caches and branch predictors.
        for _ in 0..<min(exchanges, 2_000) {
            try session.exchange()
            try newAPIs.exchangeWithNewAPIs()
            baseline.exchange()
        }
        var best = (exchange: Double.infinity, newAPIs: Double.infinity, baseline: Double.infinity)
        for _ in 0..<rounds {
            best.exchange = min(best.exchange, try time(exchanges) { try session.exchange() })
            best.newAPIs = min(best.newAPIs, try time(exchanges) { try newAPIs.exchangeWithNewAPIs() })
            best.baseline = min(best.baseline, try time(exchanges) { baseline.exchange() })
        }
        guard session.checksum != 0, session.checksum == newAPIs.checksum, baseline.checksum != 0 else {
            throw HTTP1Error.malformed("the benchmark exchanges produced nothing, or different things")
        }
        return Result(exchanges: exchanges, exchangeNanoseconds: best.exchange, newAPIExchangeNanoseconds: best.newAPIs,
                      baselineNanoseconds: best.baseline)
    }

    private static func time(_ n: Int, _ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<n { try body() }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(max(n, 1))
    }

    /// The calls ``HTTP1ExchangeLayer`` makes for one exchange, in its order.
    struct SessionLike {
        var requests = HTTP1Parser(mode: .request)
        var responses = HTTP1Parser(mode: .response)
        /// Folds in what each call returned, so that no work can be optimised away.
        var checksum = 0
        /// Events of one read, for ``exchangeWithNewAPIs()``.
        private var events: [HTTP1Event] = []

        /// The exchange through the general entry points: each read copied into an array.
        mutating func exchange() throws {
            let request = try handleRequest(try requests.feed(Array(HTTP1Benchmark.request[...])), newAPIs: false)
            try handleResponse(try responses.feed(Array(HTTP1Benchmark.response[...])), to: request, newAPIs: false)
        }

        /// The exchange through the copy-free entry points: reads fed as the slices
        /// the transport delivers, into one reused events array, and heads
        /// forwarded straight to bytes.
        mutating func exchangeWithNewAPIs() throws {
            var events = self.events
            self.events = []
            defer { self.events = events }
            events.removeAll(keepingCapacity: true)
            try requests.feed(HTTP1Benchmark.request[...], into: &events)
            let request = try handleRequest(events, newAPIs: true)
            events.removeAll(keepingCapacity: true)
            try responses.feed(HTTP1Benchmark.response[...], into: &events)
            try handleResponse(events, to: request, newAPIs: true)
        }

        private mutating func handleRequest(_ events: [HTTP1Event], newAPIs: Bool) throws -> HTTP1RequestHead {
            var request: HTTP1RequestHead?
            for event in events {
                switch event {
                case .requestHead(let head):
                    if newAPIs {
                        checksum &+= HTTP1Forwarding.serializedRequestForUpstream(head, via: nil).bytes.count
                    } else {
                        checksum &+= HTTP1Forwarding.requestForUpstream(head, via: nil).serialized().count
                    }
                    responses.expectResponse(toMethod: head.method)
                    request = head
                case .end(let trailers):
                    checksum &+= trailers.count
                default:
                    throw HTTP1Error.malformed("unexpected request event \(event)")
                }
            }
            guard let request else { throw HTTP1Error.malformed("no request head") }
            return request
        }

        private mutating func handleResponse(_ events: [HTTP1Event], to request: HTTP1RequestHead, newAPIs: Bool) throws {
            for event in events {
                switch event {
                case .responseHead(let head):
                    if head.isInformational { checksum &+= request.expectsContinue ? 1 : 0 }
                    if newAPIs {
                        let forClient = HTTP1Forwarding.serializedResponseForClient(head, to: request, closeConnection: false, via: nil)
                        checksum &+= forClient.bytes.count
                        checksum &+= forClient.keepAlive ? 1 : 0
                    } else {
                        let forClient = HTTP1Forwarding.responseForClient(head, to: request, closeConnection: false, via: nil)
                        checksum &+= forClient.serialized().count
                        checksum &+= forClient.keepAlive ? 1 : 0
                    }
                    checksum &+= head.keepAlive ? 1 : 0
                case .body(let bytes):
                    checksum &+= bytes.count
                case .end(let trailers):
                    checksum &+= trailers.count
                    checksum &+= request.requestsUpgrade ? 1 : 0
                default:
                    throw HTTP1Error.malformed("unexpected response event \(event)")
                }
            }
        }
    }

    /// Finds every LF of the exchange's bytes and copies them once.
    struct Baseline {
        var copy: [UInt8] = []
        var checksum = 0

        mutating func exchange() {
            scanAndCopy(HTTP1Benchmark.request)
            scanAndCopy(HTTP1Benchmark.response)
        }

        private mutating func scanAndCopy(_ input: [UInt8]) {
            var index = input.startIndex
            while let newline = input[index...].firstIndex(of: Byte.lf) {
                checksum &+= newline
                index = newline + 1
            }
            copy.removeAll(keepingCapacity: true)
            copy.append(contentsOf: input)
            checksum &+= copy.count
        }
    }
}
