import PinproxyBench
import PinproxyHTTP1
import Testing

/// The exchange `pinproxy bench http1` times is one the proxy forwards as it should.
@Suite("bench http1 exchange")
struct HTTP1BenchmarkTests {
    @Test func theBenchmarkExchangeForwardsTheSameBytesEitherWay() throws {
        var requests = HTTP1Parser(mode: .request)
        var responses = HTTP1Parser(mode: .response)
        responses.expectResponse(toMethod: "GET")
        guard case .requestHead(let request)? = try requests.feed(HTTP1Benchmark.request).first,
              case .responseHead(let response)? = try responses.feed(HTTP1Benchmark.response).first else {
            Issue.record("the benchmark exchange does not parse")
            return
        }
        #expect(HTTP1Forwarding.serializedRequestForUpstream(request, via: nil).bytes
                    == HTTP1Forwarding.requestForUpstream(request, via: nil).serialized())
        let direct = HTTP1Forwarding.serializedResponseForClient(response, to: request, via: nil)
        #expect(direct.bytes == HTTP1Forwarding.responseForClient(response, to: request, via: nil).serialized())
        #expect(String(decoding: direct.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"))
        #expect(!String(decoding: direct.bytes, as: UTF8.self).contains("Connection"))
        #expect(direct.keepAlive && direct.framing == .contentLength(1024))
    }
}
