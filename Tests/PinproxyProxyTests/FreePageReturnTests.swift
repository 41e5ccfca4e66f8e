import Testing
@testable import PinproxyProxy

/// When a loop hands free pages back: after a burst, rationed; and once
/// after the tail of one, when the loop has gone quiet.
@Suite struct FreePageReturnTests {
    /// Sweeps `freed` then reports, for each sweep, whether it trimmed.
    static func run(_ schedule: inout FreePageReturn, _ freedPerSweep: [Int]) -> [Bool] {
        freedPerSweep.map { schedule.sweep(freed: $0) }
    }

    @Test func aBurstTrimsAtOnceAndThenAtMostEverySpacingSweeps() {
        var schedule = FreePageReturn()
        // 300 released in the first sweep: trimmed at once (no trim before it).
        #expect(Self.run(&schedule, [300]) == [true])
        // Bursts in every following sweep: one trim per five sweeps.
        let trims = Self.run(&schedule, Array(repeating: 300, count: 10))
        #expect(trims == [false, false, false, false, true, false, false, false, false, true])
    }

    @Test func theTailOfABurstGoesBackOnceTheLoopIsQuiet() {
        var schedule = FreePageReturn()
        #expect(Self.run(&schedule, [300]) == [true])
        // 100 more trickle in (under a burst), then nothing: trimmed on the
        // first quiet sweep that is far enough from the last trim.
        #expect(Self.run(&schedule, [40, 60, 0, 0, 0, 0]) == [false, false, false, false, true, false])
        #expect(schedule.freedSinceTrim == 0)
    }

    @Test func closesBetweenSweepsKeepTheLoopFromCountingAsQuiet() {
        var schedule = FreePageReturn()
        #expect(Self.run(&schedule, [300]) == [true])
        // Connections keep closing (noted between sweeps): not quiet, and under a burst, no trim.
        for _ in 0..<8 {
            schedule.noteFreed(10)
            #expect(schedule.sweep(freed: 0) == false)
        }
        // The closes stop: the next sweep is quiet and the 80 go back.
        #expect(schedule.sweep(freed: 0) == true)
    }

    @Test func aFewFreedTransportsDoNotCostATrim() {
        var schedule = FreePageReturn()
        #expect(Self.run(&schedule, [FreePageReturn.trailing - 1] + Array(repeating: 0, count: 20)).allSatisfy { !$0 })
        schedule.noteFreed()
        #expect(schedule.sweep(freed: 0) == false)  // freed between sweeps: not yet quiet
        #expect(schedule.sweep(freed: 0) == true)
    }
}
