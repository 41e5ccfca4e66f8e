@testable import PinproxyProxy
import Testing

/// Where the pump decrypts a record (``RecordSizing``): a run of large
/// records goes straight into the arrays handed on, a small record never
/// keeps a full record's storage, and two small records in a row end the run.
@Suite struct RecordSizingTests {
    private let full = RecordSizing.fullRecord

    @Test func aNewConnectionStartsThroughScratch() {
        let sizing = RecordSizing()
        #expect(!sizing.decryptsIntoFullArray(buffered: 0))
        #expect(!sizing.decryptsIntoFullArray(buffered: full))
        // More than a full record already waiting: a bulk transfer is arriving.
        #expect(sizing.decryptsIntoFullArray(buffered: full + 1))
    }

    @Test func largeRecordsFromHalfAFullRecordUpStartARun() {
        var sizing = RecordSizing()
        #expect(sizing.noteRecord(full / 2 - 1) == .small)
        #expect(!sizing.decryptsIntoFullArray(buffered: 0))
        #expect(sizing.noteRecord(full / 2) == .large)
        #expect(sizing.decryptsIntoFullArray(buffered: 0))
        #expect(sizing.noteRecord(full) == .large)
        #expect(sizing.decryptsIntoFullArray(buffered: 0))
    }

    @Test func oneSmallRecordBetweenLargeOnesKeepsTheRunAndTwoEndIt() {
        var sizing = RecordSizing()
        sizing.noteRecord(full)
        // An HTTP/2 origin's pattern: full records, a frame's tail between them.
        for _ in 0..<5 {
            #expect(sizing.noteRecord(36) == .small)
            #expect(sizing.decryptsIntoFullArray(buffered: 0))
            #expect(sizing.noteRecord(8_201) == .large)
            #expect(sizing.decryptsIntoFullArray(buffered: 0))
        }
        sizing.noteRecord(100)
        sizing.noteRecord(100)
        #expect(!sizing.decryptsIntoFullArray(buffered: 0))
        // Small records for a long while stay through scratch.
        for _ in 0..<1_000 { sizing.noteRecord(1) }
        #expect(!sizing.decryptsIntoFullArray(buffered: 0))
        #expect(sizing.smallInARow == 2)
        sizing.noteRecord(full)
        #expect(sizing.decryptsIntoFullArray(buffered: 0))
    }
}
