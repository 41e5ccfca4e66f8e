import Testing
@testable import PinproxyHTTP2

/// The stream map against a `Dictionary` doing the same
/// insertions and removals: identifiers that share slots, runs that wrap
/// around the end of the table, growth, and removal from the middle of a run.
@Suite struct HTTP2StreamMapTests {
    @Test("inserts, looks up and removes like a dictionary, through growth and wrapped runs")
    func matchesDictionary() {
        var table = HTTP2StreamMap<HTTP2StreamState>()
        var reference: [Int32: HTTP2StreamState] = [:]
        var generator = SystemRandomNumberGenerator()
        // Odd identifiers as a client opens them, some 16 and 32 slots apart
        // so that they collide, removed in random order as streams end.
        var next: Int32 = 1
        for round in 0..<4000 {
            if reference.count < 40 && (round % 3 != 2 || reference.isEmpty) {
                let id = round % 7 == 0 ? next + 32 * Int32.random(in: 1...3, using: &generator) : next
                next += 2
                guard reference[id] == nil else { continue }
                let state = HTTP2StreamState()
                table[id] = state
                reference[id] = state
            } else {
                let id = reference.keys.randomElement(using: &generator)!
                #expect(table.removeValue(forKey: id) === reference.removeValue(forKey: id))
            }
            #expect(table.count == reference.count)
            // The count of keys away from home, which lets a removal skip the
            // backward shift, is the true one.
            let away = table.keys.indices.filter { table.keys[$0] != 0 && table.home(table.keys[$0]) != $0 }.count
            #expect(table.displaced == away, "round \(round)")
            if round % 50 == 0 {
                for (id, state) in reference { #expect(table[id] === state, "stream \(id)") }
                #expect(table.entries.map(\.stream.rawValue).sorted() == reference.keys.sorted())
            }
        }
        for id in Array(reference.keys) { #expect(table.removeValue(forKey: id) === reference.removeValue(forKey: id)) }
        #expect(table.count == 0)
        #expect(table[1] == nil && table.removeValue(forKey: 3) == nil)
    }

    @Test("a full run that wraps past the last slot keeps every stream findable after removals")
    func wrappedRun() {
        var table = HTTP2StreamMap<HTTP2StreamState>()
        // Identifiers whose home is the last slot (15 of 16): 31, 63, 95 … collide and wrap to slot 0 on.
        let ids: [Int32] = [31, 63, 95, 127, 1, 3]
        let states = ids.map { _ in HTTP2StreamState() }
        for (id, state) in zip(ids, states) { table[id] = state }
        #expect(table.removeValue(forKey: 63) === states[1])
        for (id, state) in zip(ids, states) where id != 63 { #expect(table[id] === state, "stream \(id)") }
        #expect(table.removeValue(forKey: 31) === states[0])
        for (id, state) in zip(ids, states) where id != 63 && id != 31 { #expect(table[id] === state, "stream \(id)") }
        #expect(table[63] == nil && table[31] == nil)
    }
}
