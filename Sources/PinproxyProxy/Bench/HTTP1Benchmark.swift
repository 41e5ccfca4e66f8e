import Foundation

/// `pinproxy bench http1`: the HTTP/1 work of one keep-alive exchange, as
/// ``HTTPSession`` does it, against a plain scan-and-copy of the same bytes.
///
/// One exchange is wrk's `GET /small` and nginx's 200 response with a
/// 1024-byte body: the request parser is fed the request, the head is turned
/// into the upstream request and serialized, the response parser is fed the
/// response, the response head is turned into the client's and serialized,
/// and the keep-alive, upgrade and 100-continue questions the session asks
/// are asked. Both parsers live across exchanges, as on a keep-alive
/// connection.
///
/// The baseline, timed in the same run, finds every LF of the same bytes with
/// `firstIndex(of:)` and copies them once: the least any HTTP/1 layer that
/// looks at every byte must do. The ratio to it is comparable across machines
/// where the nanoseconds are not.
public enum HTTP1Benchmark {
    public struct Result: Sendable {
        public var exchanges: Int
        /// Nanoseconds per exchange through the calls the session makes.
        public var exchangeNanoseconds: Double
        /// Nanoseconds per exchange for the baseline scan and copy.
        public var baselineNanoseconds: Double
        /// Exchange time over baseline time.
        public var exchangeOverBaseline: Double { exchangeNanoseconds / baselineNanoseconds }
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
        var baseline = Baseline()
        // Warm up allocator, caches and branch predictors.
        for _ in 0..<min(exchanges, 2_000) {
            try session.exchange()
            baseline.exchange()
        }
        var best = (exchange: Double.infinity, baseline: Double.infinity)
        for _ in 0..<rounds {
            best.exchange = min(best.exchange, try time(exchanges) { try session.exchange() })
            best.baseline = min(best.baseline, try time(exchanges) { baseline.exchange() })
        }
        guard session.checksum != 0, baseline.checksum != 0 else {
            throw HTTP1Error.malformed("the benchmark exchange produced nothing")
        }
        return Result(exchanges: exchanges, exchangeNanoseconds: best.exchange, baselineNanoseconds: best.baseline)
    }

    private static func time(_ n: Int, _ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<n { try body() }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(max(n, 1))
    }

    /// The calls ``HTTPSession`` makes for one exchange, in its order.
    struct SessionLike {
        var requests = HTTP1Parser(mode: .request)
        var responses = HTTP1Parser(mode: .response)
        /// Folds in what each call returned, so that no work can be optimised away.
        var checksum = 0

        mutating func exchange() throws {
            var request: HTTP1RequestHead?
            for event in try requests.feed(Array(HTTP1Benchmark.request[...])) {
                switch event {
                case .requestHead(let head):
                    let forwarded = HTTP1Forwarding.requestForUpstream(head, via: nil)
                    checksum &+= forwarded.serialized().count
                    responses.expectResponse(toMethod: head.method)
                    request = head
                case .end(let trailers):
                    checksum &+= trailers.count
                default:
                    throw HTTP1Error.malformed("unexpected request event \(event)")
                }
            }
            guard let request else { throw HTTP1Error.malformed("no request head") }
            for event in try responses.feed(Array(HTTP1Benchmark.response[...])) {
                switch event {
                case .responseHead(let head):
                    if head.isInformational { checksum &+= request.expectsContinue ? 1 : 0 }
                    let forClient = HTTP1Forwarding.responseForClient(head, to: request, closeConnection: false, via: nil)
                    checksum &+= forClient.serialized().count
                    checksum &+= head.keepAlive ? 1 : 0
                    checksum &+= forClient.keepAlive ? 1 : 0
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
