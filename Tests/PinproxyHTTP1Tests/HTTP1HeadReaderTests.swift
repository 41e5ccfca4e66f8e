import Foundation
import Testing
@testable import PinproxyHTTP1

/// The head reader on its own: lines handed over as the parser does, the
/// complete head with its framing, and (response mode) which request each
/// response answers.
@Suite struct HTTP1HeadReaderTests {
    /// What completing a head gave: its event and what it means for the message.
    enum Head {
        case request(HTTP1RequestHead, switchTo: HTTP1HeadReader.RequestSwitch)
        case response(HTTP1ResponseHead, answersConnect: Bool)
    }

    /// Hands `lines` (without line endings) to `reader` as one head, and completes it.
    private func read(_ reader: inout HTTP1HeadReader, _ lines: [String]) throws -> Head {
        let first = Array(lines[0].utf8)
        try first.withUnsafeBufferPointer { (line) throws(HTTP1Error) in try reader.readStartLine(line) }
        for field in lines.dropFirst() {
            let raw = Array((field + "\r").utf8)
            try raw.withUnsafeBufferPointer { (raw) throws(HTTP1Error) in
                try reader.addField(UnsafeBufferPointer(rebasing: raw[..<(raw.count - 1)]), raw: raw, limits: .default)
            }
        }
        let empty: [UInt8] = [Byte.cr]
        var events: [HTTP1Event] = []
        let completed = try empty.withUnsafeBufferPointer { (empty) throws(HTTP1Error) in try reader.complete(emptyLine: empty, into: &events) }
        #expect(events.count == 1)
        switch events.first {
        case .requestHead(let head):
            #expect(completed.framing == head.framing)
            return .request(head, switchTo: completed.switchTo)
        case .responseHead(let head):
            #expect(completed.framing == head.framing && completed.status == head.status)
            return .response(head, answersConnect: completed.answersConnect)
        default:
            throw HTTP1Error.malformed("no head event")
        }
    }

    private func response(_ head: Head) -> (HTTP1ResponseHead, Bool)? {
        if case .response(let response, let answersConnect) = head { return (response, answersConnect) }
        return nil
    }

    @Test func interimResponsesDoNotUseUpTheRequestTheyPrecede() throws {
        var reader = HTTP1HeadReader(mode: .response)
        reader.expectResponse(toMethod: "HEAD")
        reader.expectResponse(toMethod: "GET")
        let interim = try #require(response(try read(&reader, ["HTTP/1.1 100 Continue"])))
        #expect(interim.0.framing == .none)
        // The final answer to HEAD has no body whatever its Content-Length says.
        let head = try #require(response(try read(&reader, ["HTTP/1.1 200 OK", "Content-Length: 10"])))
        #expect(head.0.framing == .none)
        let get = try #require(response(try read(&reader, ["HTTP/1.1 200 OK", "Content-Length: 10"])))
        #expect(get.0.framing == .contentLength(10))
        // No request recorded: read as an answer to GET.
        let unasked = try #require(response(try read(&reader, ["HTTP/1.1 200 OK", "Content-Length: 3"])))
        #expect(unasked.0.framing == .contentLength(3))
    }

    @Test func aSuccessfulAnswerToConnectStartsATunnel() throws {
        var reader = HTTP1HeadReader(mode: .response)
        reader.expectResponse(toMethod: "CONNECT")
        reader.expectResponse(toMethod: "CONNECT")
        let refused = try #require(response(try read(&reader, ["HTTP/1.1 407 Proxy Authentication Required", "Content-Length: 0"])))
        #expect(refused.1)
        #expect(refused.0.framing == .contentLength(0))
        let accepted = try #require(response(try read(&reader, ["HTTP/1.1 200 Connection established", "Content-Length: 5"])))
        #expect(accepted.1)
        #expect(accepted.0.framing == .none)
    }

    @Test func manyAnsweredRequestsKeepTheOrderAfterTheQueueIsCompacted() throws {
        var reader = HTTP1HeadReader(mode: .response)
        for index in 0..<100 { reader.expectResponse(toMethod: index % 3 == 0 ? "HEAD" : "GET") }
        for index in 0..<100 {
            let answer = try #require(response(try read(&reader, ["HTTP/1.1 200 OK", "Content-Length: 4"])))
            #expect(answer.0.framing == (index % 3 == 0 ? .none : .contentLength(4)), "response \(index)")
        }
    }

    @Test func requestHeadsCarryTheirFramingAndWhatTheySwitchTo() throws {
        var reader = HTTP1HeadReader(mode: .request)
        guard case .request(let post, let postSwitch) = try read(&reader, ["POST /a HTTP/1.1", "Host: a.test", "Content-Length: 7"]) else {
            Issue.record("not a request head"); return
        }
        #expect(post.framing == .contentLength(7))
        #expect(postSwitch == .none)
        guard case .request(_, let connectSwitch) = try read(&reader, ["CONNECT a.test:443 HTTP/1.1", "Host: a.test:443"]) else {
            Issue.record("not a request head"); return
        }
        #expect(connectSwitch == .tunnel)
        guard case .request(_, let upgradeSwitch) = try read(&reader, ["GET /ws HTTP/1.1", "Host: a.test", "Connection: Upgrade", "Upgrade: websocket"]) else {
            Issue.record("not a request head"); return
        }
        #expect(upgradeSwitch == .upgrade)
        // The same start line again comes from memory, and parses the same.
        guard case .request(let again, _) = try read(&reader, ["POST /a HTTP/1.1", "Host: a.test", "Content-Length: 7"]) else {
            Issue.record("not a request head"); return
        }
        #expect(again.method == "POST" && again.framing == .contentLength(7))
    }

    @Test func aHeadNeedsAStartLineAndAnHTTP11RequestAHost() throws {
        var reader = HTTP1HeadReader(mode: .request)
        let empty: [UInt8] = []
        #expect(throws: HTTP1Error.self) {
            var events: [HTTP1Event] = []
            try empty.withUnsafeBufferPointer { (empty) throws(HTTP1Error) in _ = try reader.complete(emptyLine: empty, into: &events) }
        }
        #expect(throws: HTTP1Error.self) { _ = try read(&reader, ["GET / HTTP/1.1", "Accept: */*"]) }
        #expect(reader.start == nil)  // taken by the failed completion, not left for the next head
    }

    @Test func theFieldCountLimitApplies() throws {
        var reader = HTTP1HeadReader(mode: .request)
        var limits = HTTP1Limits.default
        limits.maxHeaderCount = 2
        let line = Array("GET / HTTP/1.1".utf8)
        try line.withUnsafeBufferPointer { (line) throws(HTTP1Error) in try reader.readStartLine(line) }
        for index in 0..<3 {
            let raw = Array("X-\(index): v".utf8)
            let added = Result { () throws(HTTP1Error) in
                try raw.withUnsafeBufferPointer { (raw) throws(HTTP1Error) in try reader.addField(raw, raw: raw, limits: limits) }
            }
            if index < 2 { #expect(throws: Never.self) { try added.get() } } else { #expect(throws: HTTP1Error.self) { try added.get() } }
        }
        #expect(reader.fieldCount == 2)
    }
}
