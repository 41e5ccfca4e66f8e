import Foundation
import Testing
@testable import PinproxyProxy

/// The capture writers replay the bytes of values a flow repeats (requests,
/// responses, header lists, TLS details, outcomes, the second of a date):
/// what they write must be exactly what encoding each flow afresh writes.
@Suite("Capture: repeated values replayed")
struct CaptureReplayTests {
    /// Flows that repeat, almost repeat and stop repeating what the one before held.
    private func variations() -> [Flow] {
        let base = sampleFlow(1)
        var flows = [base, base, sampleFlow(1)]  // the same values, and equal copies in other storage
        var otherURL = base
        otherURL.request.url = "https://api.example.test/items/2"  // same header list, another request
        flows.append(otherURL)
        var otherValue = base
        otherValue.request.headers[0].value = "api.example.tesT"  // one byte of one field
        flows.append(otherValue)
        var otherName = base
        otherName.request.headers[1].name = "cookie"
        flows.append(otherName)
        var moreFields = base
        moreFields.request.headers.append(FlowHeader(name: "X-Seq", value: "7"))
        flows.append(moreFields)
        var newDate = base
        newDate.response?.headers.append(FlowHeader(name: "Date", value: "Tue, 24 Nov 2026 10:11:32 GMT"))
        flows += [newDate, newDate]
        var otherStatus = newDate
        otherStatus.response?.status = 404
        otherStatus.response?.reason = "Not Found"
        flows.append(otherStatus)
        var noHeaders = base
        noHeaders.request.headers = []
        noHeaders.response?.headers = []
        flows += [noHeaders, base]
        flows += [sampleFlow(2, failed: true), base, sampleFlow(3, requestBody: bytes("a\u{1}b"), responseBody: [0, 1])]
        var otherTLS = base
        otherTLS.clientTLS?.profile = "expired"
        otherTLS.outcome?.profile = "expired"
        otherTLS.upstreamTLS?.resumed = true
        flows += [otherTLS, base]
        // Dates within one second, across a second, and the second before again.
        for seconds in [1_700_000_000.001, 1_700_000_000.999, 1_700_000_001.0, 1_699_999_999.5, 1_700_000_001.25] {
            var dated = base
            dated.startedAt = Date(timeIntervalSince1970: seconds)
            flows.append(dated)
        }
        return flows
    }

    @Test("a JSON line or HAR entry written after others equals the same flow written first")
    func replayedBytesEqualFreshOnes() throws {
        var lines = JSONOutput(), entries = JSONOutput()
        for (index, flow) in variations().enumerated() {
            expectReplayedEqualsFresh(flow, lines: &lines, entries: &entries, "flow \(index)")
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(entries.bytes)) as? [String: Any])
            let headers = (entry["request"] as? [String: Any])?["headers"] as? [[String: String]]
            #expect(headers == flow.request.headers.map { ["name": $0.name, "value": $0.value] }, "flow \(index)")
        }
    }

    @Test("one output writing both formats keeps each format's replays apart")
    func bothFormatsInOneOutput() throws {
        var output = JSONOutput()
        for flow in variations() {
            output.reset()
            output.harEntry(flow)
            output.raw([0x0a])
            output.nextDocument()
            output.line(.flow(flow))
            var fresh = JSONOutput()
            fresh.harEntry(flow)
            fresh.raw([0x0a])
            fresh.nextDocument()
            fresh.line(.flow(flow))
            #expect(output.bytes == fresh.bytes)
        }
    }
}

/// Writes `flow` as a JSON line into `lines` and as a HAR entry into
/// `entries` (both reset first, their replay state kept) and expects each to
/// equal what a fresh output writes for it.
func expectReplayedEqualsFresh(_ flow: Flow, lines: inout JSONOutput, entries: inout JSONOutput, _ label: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
    lines.reset()
    lines.line(.flow(flow))
    var freshLine = JSONOutput()
    freshLine.line(.flow(flow))
    #expect(lines.bytes == freshLine.bytes, "line of \(label)", sourceLocation: sourceLocation)
    entries.reset()
    entries.harEntry(flow)
    var freshEntry = JSONOutput()
    freshEntry.harEntry(flow)
    #expect(entries.bytes == freshEntry.bytes, "HAR entry of \(label)", sourceLocation: sourceLocation)
}
