import Dispatch
import Foundation
import Testing
import PinproxyCertificates
@testable import PinproxyProxy

/// A fresh directory under the system temporary directory, removed by the caller.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("pinproxy-capture-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func sampleFlow(
    _ index: Int, requestBody: [UInt8] = [], responseBody: [UInt8] = [], limit: Int = 1024, failed: Bool = false
) -> Flow {
    var requestCapture = BodyCapture(limit: limit)
    requestCapture.append(requestBody)
    var responseCapture = BodyCapture(limit: limit)
    responseCapture.append(responseBody)
    let request = FlowRequest(
        method: requestBody.isEmpty ? "GET" : "POST", url: "https://api.example.test/items/\(index)?q=a+b&x=%2F",
        headers: [FlowHeader(name: "Host", value: "api.example.test"), FlowHeader(name: "Cookie", value: "s=1; t=2"),
                  FlowHeader(name: "Content-Type", value: "application/octet-stream")],
        headersSize: 120, bodySize: requestCapture.size, body: requestCapture.captured)
    let response = failed ? nil : FlowResponse(
        status: 200, reason: "OK",
        headers: [FlowHeader(name: "Content-Type", value: "application/json"), FlowHeader(name: "Set-Cookie", value: "id=9; Path=/")],
        headersSize: 80, bodySize: responseCapture.size, body: responseCapture.captured)
    let outcome = TLSOutcomeEvent(kind: .intercepted, host: "api.example.test", port: 443, clientAddress: "127.0.0.1:5\(index)",
                                  time: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))
    return Flow(
        id: "flow-\(index)", startedAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)),
        clientAddress: "127.0.0.1:5\(index)", scheme: "https", host: "api.example.test", port: 443,
        request: request, response: response,
        timings: FlowTimings(connect: 3, ssl: 2, send: 0.5, wait: 10, receive: 1.25),
        clientTLS: ClientTLSDetails(sni: "api.example.test", version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", alpn: "http/1.1",
                                    forgedLeafPin: "sha256/AAAA", forgedLeafSerial: "01ab", profile: "forge"),
        upstreamTLS: UpstreamTLSDetails(version: "TLSv1.3", cipher: "TLS_AES_256_GCM_SHA384", verified: !failed,
                                        verifierReason: failed ? "unable to get local issuer certificate" : nil,
                                        chain: [CertificateSummary(subject: "CN=api.example.test", issuer: "CN=Test CA", serial: "02",
                                                                   subjectAlternativeNames: ["DNS:api.example.test"])]),
        outcome: outcome, error: failed ? "502: upstream certificate did not verify" : nil)
}

func readJSON(_ url: URL) throws -> [String: Any] {
    let data = try Data(contentsOf: url)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// Checks the HAR 1.2 required fields of a whole document and returns its entries.
func validateHAR(_ document: [String: Any], creatorVersion: String? = nil) throws -> [[String: Any]] {
    let log = try #require(document["log"] as? [String: Any])
    #expect(log["version"] as? String == "1.2")
    let creator = try #require(log["creator"] as? [String: Any])
    #expect(creator["name"] as? String == "pinproxy")
    #expect(creator["version"] as? String == creatorVersion ?? PinproxyVersion.current)
    let entries = try #require(log["entries"] as? [[String: Any]])
    let iso = ISO8601DateFormatter()
    iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    for entry in entries {
        let started = try #require(entry["startedDateTime"] as? String)
        #expect(iso.date(from: started) != nil, "startedDateTime \(started) is not ISO 8601")
        #expect(entry["time"] is NSNumber)
        #expect(entry["cache"] is [String: Any])
        let request = try #require(entry["request"] as? [String: Any])
        for key in ["method", "url", "httpVersion"] { #expect(request[key] is String, "request.\(key)") }
        for key in ["cookies", "headers", "queryString"] { #expect(request[key] is [Any], "request.\(key)") }
        for key in ["headersSize", "bodySize"] { #expect(request[key] is NSNumber, "request.\(key)") }
        let response = try #require(entry["response"] as? [String: Any])
        #expect(response["status"] is NSNumber)
        for key in ["statusText", "httpVersion", "redirectURL"] { #expect(response[key] is String, "response.\(key)") }
        for key in ["cookies", "headers"] { #expect(response[key] is [Any], "response.\(key)") }
        for key in ["headersSize", "bodySize"] { #expect(response[key] is NSNumber, "response.\(key)") }
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["size"] is NSNumber)
        #expect(content["mimeType"] is String)
        let timings = try #require(entry["timings"] as? [String: Any])
        for key in ["send", "wait", "receive"] {
            let value = try #require(timings[key] as? Double, "timings.\(key)")
            #expect(value >= 0)
        }
    }
    return entries
}

@Suite("Capture: HAR writer")
struct CaptureHARTests {
    @Test func harIsValidAfterEveryRecord() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("flows.har")
        let writer = try HARWriter(path: url.path, creatorVersion: "1.0-test")
        #expect(try validateHAR(try readJSON(url), creatorVersion: "1.0-test").isEmpty)
        for index in 1...7 {
            try writer.record(sampleFlow(index, requestBody: index % 2 == 0 ? bytes("body \(index)") : []))
            // Read back before the next record: the file must already be a complete archive.
            let entries = try validateHAR(try readJSON(url), creatorVersion: "1.0-test")
            #expect(entries.count == index)
            #expect((entries.last?["_pinproxy"] as? [String: Any])?["id"] as? String == "flow-\(index)")
        }
        #expect(writer.entryCount == 7)
        writer.close()
        #expect(try validateHAR(try readJSON(url), creatorVersion: "1.0-test").count == 7)
        #expect(throws: (any Error).self) { try writer.record(sampleFlow(8)) }
    }

    @Test func harEntryContents() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("one.har")
        let writer = try HARWriter(path: url.path)
        try writer.record(sampleFlow(1, requestBody: bytes("{\"a\":1}"), responseBody: [0xff, 0x00, 0xfe]))
        try writer.record(sampleFlow(2, failed: true))
        writer.close()
        let entries = try validateHAR(try readJSON(url))
        #expect(entries.count == 2)
        let request = try #require(entries[0]["request"] as? [String: Any])
        #expect(request["method"] as? String == "POST")
        let postData = try #require(request["postData"] as? [String: Any])
        #expect(postData["text"] as? String == "{\"a\":1}")
        #expect(postData["encoding"] == nil)
        let query = try #require(request["queryString"] as? [[String: String]])
        #expect(query == [["name": "q", "value": "a b"], ["name": "x", "value": "/"]])
        let cookies = try #require(request["cookies"] as? [[String: String]])
        #expect(cookies.map { $0["name"] } == ["s", "t"])
        let response = try #require(entries[0]["response"] as? [String: Any])
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["encoding"] as? String == "base64")
        #expect(content["text"] as? String == Data([0xff, 0x00, 0xfe]).base64EncodedString())
        #expect(content["mimeType"] as? String == "application/json")
        #expect((response["cookies"] as? [[String: String]])?.first?["name"] == "id")
        let timings = try #require(entries[0]["timings"] as? [String: Double])
        #expect(timings["ssl"] == 2 && timings["connect"] == 3 && timings["wait"] == 10 && timings["dns"] == -1)
        #expect(entries[0]["time"] as? Double == 3 + 0.5 + 10 + 1.25)
        let extra = try #require(entries[0]["_pinproxy"] as? [String: Any])
        #expect((extra["clientTLS"] as? [String: Any])?["sni"] as? String == "api.example.test")
        #expect((extra["outcome"] as? [String: Any])?["kind"] as? String == "intercepted")

        let failed = try #require(entries[1]["response"] as? [String: Any])
        #expect(failed["status"] as? Int == 0)
        #expect(entries[1]["comment"] as? String == "502: upstream certificate did not verify")
        let upstream = try #require((entries[1]["_pinproxy"] as? [String: Any])?["upstreamTLS"] as? [String: Any])
        #expect(upstream["verified"] as? Bool == false)
        #expect(upstream["verifierReason"] as? String == "unable to get local issuer certificate")
    }

    @Test func harEntryCarriesStatusSizesTimingsAndRedirect() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("values.har")
        let writer = try HARWriter(path: url.path)
        var moved = sampleFlow(1, responseBody: bytes("moved"))
        moved.response?.status = 301
        moved.response?.reason = "Moved Permanently"
        moved.response?.headers.append(FlowHeader(name: "Location", value: "https://api.example.test/new"))
        try writer.record(moved)
        var failed = sampleFlow(2, failed: true)
        failed.request.httpVersion = "HTTP/2"
        try writer.record(failed)
        writer.close()
        let entries = try validateHAR(try readJSON(url))
        try #require(entries.count == 2)
        let request = try #require(entries[0]["request"] as? [String: Any])
        #expect(request["headersSize"] as? Int == 120)
        #expect(request["bodySize"] as? Int == 0)
        let response = try #require(entries[0]["response"] as? [String: Any])
        #expect(response["status"] as? Int == 301)
        #expect(response["statusText"] as? String == "Moved Permanently")
        #expect(response["httpVersion"] as? String == "HTTP/1.1")
        #expect(response["redirectURL"] as? String == "https://api.example.test/new")
        #expect(response["headersSize"] as? Int == 80)
        #expect(response["bodySize"] as? Int == 5)
        #expect((response["content"] as? [String: Any])?["size"] as? Int == 5)
        let headers = try #require(response["headers"] as? [[String: String]])
        #expect(headers.map { $0["name"] ?? "" } == ["Content-Type", "Set-Cookie", "Location"])
        let timings = try #require(entries[0]["timings"] as? [String: Double])
        #expect(timings["send"] == 0.5 && timings["receive"] == 1.25 && timings["blocked"] == -1)

        // No response: status 0 in the request's HTTP version, sizes unknown, no redirect.
        let none = try #require(entries[1]["response"] as? [String: Any])
        #expect(none["httpVersion"] as? String == "HTTP/2")
        #expect(none["statusText"] as? String == "")
        #expect(none["redirectURL"] as? String == "")
        #expect(none["headersSize"] as? Int == -1 && none["bodySize"] as? Int == -1)
        #expect((none["content"] as? [String: Any])?["size"] as? Int == 0)
    }

    @Test func harSaysWhenABodyWasCut() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("cut.har")
        let writer = try HARWriter(path: url.path)
        try writer.record(sampleFlow(1, requestBody: bytes("0123456789"), responseBody: bytes("abcdefghij"), limit: 4))
        try writer.record(sampleFlow(2, requestBody: bytes("0123"), responseBody: bytes("abcd"), limit: 4))
        writer.close()
        let entries = try validateHAR(try readJSON(url))
        try #require(entries.count == 2)
        let postData = try #require((entries[0]["request"] as? [String: Any])?["postData"] as? [String: Any])
        #expect(postData["text"] as? String == "0123")
        #expect(postData["comment"] as? String == "truncated to the first 4 bytes")
        let response = try #require(entries[0]["response"] as? [String: Any])
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["text"] as? String == "abcd")
        #expect(content["comment"] as? String == "truncated to the first 4 bytes")
        #expect(content["size"] as? Int == 10 && response["bodySize"] as? Int == 10)
        // A body that fits is whole: no comment.
        let whole = try #require((entries[1]["response"] as? [String: Any])?["content"] as? [String: Any])
        #expect(whole["text"] as? String == "abcd" && whole["comment"] == nil)
        #expect(((entries[1]["request"] as? [String: Any])?["postData"] as? [String: Any])?["comment"] == nil)
    }

    @Test func harWriterTruncatesAnExistingFile() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("old.har")
        try Data(String(repeating: "garbage ", count: 1000).utf8).write(to: url)
        let writer = try HARWriter(path: url.path)
        try writer.record(sampleFlow(1))
        #expect(try validateHAR(try readJSON(url)).count == 1)
        writer.close()
    }

    @Test func unwritablePathIsAnError() {
        #expect(throws: (any Error).self) { try HARWriter(path: "/nonexistent-dir-\(UUID().uuidString)/x.har") }
    }
}

@Suite("Capture: JSON lines, bodies, concurrency")
struct CaptureJSONLinesTests {
    @Test func oneObjectPerLine() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("events.jsonl")
        let writer = try JSONLinesWriter(path: url.path)
        try writer.record(TLSOutcomeEvent(kind: .clientAlert, host: "pinned.example.test", clientAddress: "10.0.0.2:4000", alert: "unknown_ca"))
        try writer.record(sampleFlow(1))
        try writer.record(TLSOutcomeEvent(kind: .closedAfterHandshakeWithoutRequest, host: "pinned.example.test", clientAddress: "10.0.0.3:4000"))
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.hasSuffix("\n"))
        let lines = text.split(separator: "\n")
        #expect(lines.count == 3)
        let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["type"] as? String } == ["event", "flow", "event"])
        let event = try #require(objects[0]["event"] as? [String: Any])
        #expect(event["kind"] as? String == "client-alert")
        #expect(event["alert"] as? String == "unknown_ca")
        #expect((event["message"] as? String)?.contains("refused the forged certificate for pinned.example.test (alert unknown_ca)") == true)
        #expect(event["time"] is String)
        let flow = try #require(objects[1]["flow"] as? [String: Any])
        #expect(flow["id"] as? String == "flow-1")
        writer.close()

        let appended = try JSONLinesWriter(path: url.path, truncate: false)
        try appended.record(sampleFlow(2))
        appended.close()
        #expect(try String(contentsOf: url, encoding: .utf8).split(separator: "\n").count == 4)
    }

    @Test func flowsRoundTripThroughJSON() throws {
        let flow = sampleFlow(3, requestBody: bytes("abc"), responseBody: [1, 2, 3, 250])
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let decoded = try decoder.decode(Flow.self, from: encoder.encode(flow))
        #expect(decoded == flow)
    }

    @Test func flowsAreValuesThoughTheyShareStorage() throws {
        let original = sampleFlow(4, requestBody: bytes("abc"))
        var copy = original
        #expect(copy == original)
        copy.request.bodySize = 99
        copy.error = "changed"
        copy.response?.status = 503
        #expect(original.request.bodySize == 3)
        #expect(original.error == nil)
        #expect(original.response?.status == 200)
        #expect(copy != original)
        #expect(Set([original, copy, original]).count == 2)
        // Encoded like a struct with stored fields: absent optionals are left out.
        let json = try #require(String(data: JSONEncoder().encode(original), encoding: .utf8))
        #expect(!json.contains("\"error\""))
        #expect(json.contains("\"clientAddress\""))
    }

    @Test func flowIDsAreDistinctVersion4UUIDs() throws {
        let ids = (0..<1000).map { _ in FlowID.next() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(50) {
            let uuid = try #require(UUID(uuidString: id), "\(id) is not a UUID")
            // Formatted like UUID's own upper-case text, version 4, RFC 4122 variant.
            #expect(uuid.uuidString == id)
            #expect(uuid.uuid.6 >> 4 == 4)
            #expect(uuid.uuid.8 >> 6 == 0b10)
        }
    }

    @Test(arguments: [(0, 100, nil as Int?, false), (10, 25, 10, true), (64, 64, 64, false), (64, 10, 10, false), (5, 0, nil, false)])
    func bodyCaptureIsBounded(_ limit: Int, _ bodySize: Int, _ kept: Int?, _ truncated: Bool) {
        var capture = BodyCapture(limit: limit)
        let body = (0..<bodySize).map { UInt8($0 % 251) }
        var offset = 0
        while offset < body.count {
            capture.append(body[offset..<min(body.count, offset + 7)])
            offset += 7
        }
        #expect(capture.size == bodySize)
        #expect(capture.captured?.data.count == kept)
        #expect(capture.captured?.truncated ?? false == truncated)
        if let kept { #expect(capture.captured?.data == Data(body.prefix(kept))) }
    }

    @Test func recorderUsesItsBodyLimit() {
        let off = CaptureRecorder(bodyCaptureLimit: 0)
        var capture = off.makeBodyCapture()
        capture.append(bytes("secret"))
        #expect(capture.captured == nil)
        #expect(capture.size == 6)
        let on = CaptureRecorder(bodyCaptureLimit: 3)
        var kept = on.makeBodyCapture()
        kept.append(bytes("secret"))
        #expect(kept.captured?.text == "sec")
    }

    @Test func concurrentRecordingLosesNothing() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let har = try HARWriter(path: directory.appendingPathComponent("c.har").path)
        let lines = try JSONLinesWriter(path: directory.appendingPathComponent("c.jsonl").path)
        let recent = RecentCapture(flowCapacity: 10_000, eventCapacity: 10_000)
        let recorder = CaptureRecorder(sinks: [har, lines], recent: recent)
        let threads = 8, perThread = 40
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let number = thread * 1000 + index
                recorder.record(sampleFlow(number, requestBody: bytes(String(repeating: "z", count: index))))
                recorder.record(TLSOutcomeEvent(kind: index % 2 == 0 ? .intercepted : .reset, host: "h\(thread).test",
                                                clientAddress: "127.0.0.\(thread):\(index)"))
            }
        }
        recorder.close()
        let entries = try validateHAR(try readJSON(directory.appendingPathComponent("c.har")))
        let expected = Set((0..<threads).flatMap { t in (0..<perThread).map { "flow-\(t * 1000 + $0)" } })
        let harIDs = Set(entries.compactMap { ($0["_pinproxy"] as? [String: Any])?["id"] as? String })
        #expect(entries.count == threads * perThread)
        #expect(harIDs == expected)
        let jsonl = try String(contentsOf: directory.appendingPathComponent("c.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(jsonl.count == 2 * threads * perThread)
        var lineIDs = Set<String>()
        for line in jsonl {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if let id = (object["flow"] as? [String: Any])?["id"] as? String { lineIDs.insert(id) }
        }
        #expect(lineIDs == expected)
        #expect(recent.flows.count == threads * perThread)
        #expect(recent.events.count == threads * perThread)
    }
}

@Suite("Capture: TLS outcomes and the recent ring")
struct CaptureOutcomeTests {
    @Test func messagesExplainInPlainWords() {
        func message(_ kind: TLSOutcomeEvent.Kind, alert: String? = nil, reason: String? = nil) -> String {
            TLSOutcomeEvent(kind: kind, host: "api.example.test", clientAddress: "127.0.0.1:1", alert: alert, reason: reason).message
        }
        #expect(message(.clientAlert, alert: "unknown_ca")
                == "client refused the forged certificate for api.example.test (alert unknown_ca) — it does not trust the proxy CA or it pins")
        #expect(message(.clientAlert, alert: "bad_certificate").contains("refused the forged certificate"))
        #expect(message(.clientAlert, alert: "protocol_version").contains("aborted the handshake"))
        #expect(message(.closedAfterHandshakeWithoutRequest).contains("pinning"))
        #expect(message(.upstreamVerificationFailed, reason: "certificate has expired").contains("certificate has expired"))
        #expect(message(.intercepted).contains("accepted the forged certificate"))
        #expect(message(.passthrough).contains("without interception"))
        #expect(message(TLSOutcomeEvent.Kind("future-kind")).contains("future-kind"))
        #expect(TLSOutcomeEvent.Kind.reset.isClientRejection)
        #expect(!TLSOutcomeEvent.Kind.intercepted.isClientRejection)
    }

    @Test func outcomeRoundTripsAndCarriesItsMessage() throws {
        let event = TLSOutcomeEvent(kind: .handshakeTimeout, host: "slow.test", port: 443, clientAddress: "[::1]:9",
                                    time: Date(timeIntervalSince1970: 1_700_000_000))
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(event)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["kind"] as? String == "handshake-timeout")
        #expect(object["message"] as? String == event.message)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        #expect(try decoder.decode(TLSOutcomeEvent.self, from: data) == event)
    }

    @Test func hostSummariesTellWhoAcceptedAndWhoRefused() throws {
        let recent = RecentCapture()
        recent.record(TLSOutcomeEvent(kind: .intercepted, host: "a.test", clientAddress: "10.0.0.1:1000"))
        recent.record(TLSOutcomeEvent(kind: .intercepted, host: "a.test", clientAddress: "10.0.0.1:1001"))
        recent.record(TLSOutcomeEvent(kind: .clientAlert, host: "a.test", clientAddress: "10.0.0.2:1000", alert: "unknown_ca", profile: "expired"))
        recent.record(TLSOutcomeEvent(kind: .closedAfterHandshakeWithoutRequest, host: "b.test", clientAddress: "[::1]:5"))
        let summaries = recent.hostSummaries
        #expect(summaries.map(\.host) == ["a.test", "b.test"])
        #expect(summaries[0].acceptedBy == ["10.0.0.1"])
        #expect(summaries[0].refusedBy.map(\.client) == ["10.0.0.2"])
        #expect(summaries[0].refusedBy.first?.alert == "unknown_ca")
        #expect(summaries[0].counts == ["intercepted": 2, "client-alert": 1])
        #expect(summaries[0].countsByProfile == ["expired": ["client-alert": 1]])
        #expect(summaries[0].refusedBy.first?.profile == "expired")
        #expect(summaries[1].refusedBy.map(\.client) == ["::1"])

        let json = try #require(try JSONSerialization.jsonObject(with: Data(recent.eventsJSON())) as? [String: Any])
        let hosts = try #require(json["hosts"] as? [[String: Any]])
        #expect(hosts.count == 2)
        let events = try #require(json["events"] as? [[String: Any]])
        #expect(events.count == 4)
        #expect(events.first?["host"] as? String == "b.test") // newest first
    }

    @Test func aRefusalStaysListedWhenTheSameAddressAlsoAccepts() throws {
        // On a test machine every client is 127.0.0.1: a pinning client's
        // refusal must survive an unpinned client's acceptance, and the other way round.
        let recent = RecentCapture()
        recent.record(TLSOutcomeEvent(kind: .closedAfterHandshakeWithoutRequest, host: "pin.test", clientAddress: "127.0.0.1:4000"))
        recent.record(TLSOutcomeEvent(kind: .intercepted, host: "pin.test", clientAddress: "127.0.0.1:4001"))
        recent.record(TLSOutcomeEvent(kind: .clientAlert, host: "pin.test", clientAddress: "127.0.0.1:4002", alert: "unknown_ca"))
        recent.record(TLSOutcomeEvent(kind: .intercepted, host: "pin.test", clientAddress: "127.0.0.1:4003"))
        let summary = try #require(recent.hostSummaries.first)
        let refusals = summary.counts.filter { TLSOutcomeEvent.Kind($0.key).isClientRejection }.values.reduce(0, +)
        #expect(refusals == 2)
        #expect(summary.refusedBy.map(\.client) == ["127.0.0.1"])
        #expect(summary.refusedBy.first?.kind == .clientAlert)
        #expect(summary.refusedBy.first?.alert == "unknown_ca")
        #expect(summary.acceptedBy == ["127.0.0.1"])

        let json = try #require(try JSONSerialization.jsonObject(with: Data(recent.eventsJSON())) as? [String: Any])
        let hosts = try #require(json["hosts"] as? [[String: Any]])
        #expect((hosts.first?["refusedBy"] as? [Any])?.count == 1)
    }

    @Test func ringsAndHostsAreBounded() throws {
        let recent = RecentCapture(flowCapacity: 5, eventCapacity: 3, maxHosts: 2)
        for index in 1...12 { recent.record(sampleFlow(index)) }
        #expect(recent.flows.map(\.id) == (8...12).reversed().map { "flow-\($0)" })
        for index in 1...4 {
            recent.record(TLSOutcomeEvent(kind: .reset, host: "h\(index).test", clientAddress: "c:1",
                                          time: Date(timeIntervalSince1970: Double(index))))
        }
        #expect(recent.events.map(\.host) == ["h4.test", "h3.test", "h2.test"])
        #expect(recent.hostSummaries.map(\.host) == ["h3.test", "h4.test"])
        let flows = try #require(try JSONSerialization.jsonObject(with: Data(recent.flowsJSON(limit: 2))) as? [String: Any])
        #expect((flows["flows"] as? [Any])?.count == 2)
    }

    @Test func clientAddressWithoutPort() {
        #expect(RecentCapture.addressWithoutPort("1.2.3.4:80") == "1.2.3.4")
        #expect(RecentCapture.addressWithoutPort("[2001:db8::1]:443") == "2001:db8::1")
        #expect(RecentCapture.addressWithoutPort("2001:db8::1") == "2001:db8::1")
        #expect(RecentCapture.addressWithoutPort("unix") == "unix")
    }
}
