import Dispatch
import Foundation
import Logging
import PinproxyCertificates
import Synchronization

/// Moves capture writes off the connections' event loops: records are
/// queued (appending one reference under a lock) and a writer on its own
/// queue encodes and writes them in groups.
///
/// Grouping: the writer takes everything queued so far as one group, writes
/// it to every sink (one `write`/`pwrite` per file per group), then waits
/// ``groupWindow`` before looking again. Under load a group holds every
/// record of that window; a lone record is written at once. A record is in
/// the files at most about one window plus one write after it was queued;
/// ``flush()`` and ``close()`` wait for everything queued before them.
///
/// Memory is bounded: past ``highWater`` queued records (10,000 by
/// default, a few tens of megabytes of flows) the recording
/// thread writes the queue itself, which slows traffic rather than losing
/// records or growing without end (a slow disk shows as slower requests).
final class CaptureWriterQueue: Sendable {
    private struct Pending {
        var records: [CaptureRecord] = []
        /// Whether the writer has been started and has not yet found the queue empty.
        var scheduled = false
        var closed = false
    }

    /// The writer's state: only touched while holding `writing`.
    private struct Writer {
        /// The previous group's array, kept for its capacity.
        var spare: [CaptureRecord] = []
        /// Per sink: records lost since it started failing, nil while it works.
        var failing: [Int?]
    }

    let sinks: [any CaptureSink]
    let groupWindow: DispatchTimeInterval
    let highWater: Int
    private let pending = Mutex(Pending())
    private let writing: Mutex<Writer>
    private let statistics = Mutex(CaptureStatistics())
    /// The event loops' priority: at a lower one (utility runs at nice +2 on
    /// Linux) the writer fell behind on a busy machine and the queue grew.
    private let queue = DispatchQueue(label: "pinproxy.capture-writer", qos: .userInitiated)
    private let logger: Logger?

    init(sinks: [any CaptureSink], groupWindow: DispatchTimeInterval = .milliseconds(1), highWater: Int = 10_000, logger: Logger?) {
        self.sinks = sinks
        self.groupWindow = groupWindow
        self.highWater = max(1, highWater)
        self.logger = logger
        writing = Mutex(Writer(failing: Array(repeating: nil, count: sinks.count)))
    }

    /// Queues `record` for every sink; records after ``close()`` are counted as lost.
    func enqueue(_ record: CaptureRecord) {
        enum Next { case nothing, startWriter, writeHere, refused }
        let next: Next = pending.withLock { p in
            if p.closed { return .refused }
            p.records.append(record)
            if p.records.count >= highWater { return .writeHere }
            if p.scheduled { return .nothing }
            p.scheduled = true
            return .startWriter
        }
        switch next {
        case .nothing: break
        case .startWriter: queue.async { self.run() }
        case .writeHere: _ = writeGroup()
        case .refused:
            let first = statistics.withLock { s -> Bool in
                s.lostAfterClose += 1
                return s.lostAfterClose == 1
            }
            if first { logger?.error("capture records arrived after the capture files were closed; they are not in them") }
        }
    }

    /// The writer: groups until the queue stays empty for one window.
    private func run() {
        while true {
            if writeGroup() > 0 {
                Thread.sleep(forTimeInterval: groupWindow.seconds)
                continue
            }
            let idle = pending.withLock { p in
                guard p.records.isEmpty else { return false }
                p.scheduled = false
                return true
            }
            if idle { return }
        }
    }

    /// Writes everything queued so far as one group; returns how many records it held.
    @discardableResult
    private func writeGroup() -> Int {
        writing.withLock { writer in
            var group = writer.spare
            pending.withLock { swap(&$0.records, &group) }
            let count = group.count
            if count > 0 { write(group, &writer) }
            group.removeAll(keepingCapacity: true)
            writer.spare = group
            return count
        }
    }

    private func write(_ group: [CaptureRecord], _ writer: inout Writer) {
        var flows = 0
        for case .flow in group { flows += 1 }
        for (index, sink) in sinks.enumerated() {
            do {
                try sink.write(group)
                if let lost = writer.failing[index] {
                    writer.failing[index] = nil
                    logger?.notice("\(sink.name): capture records are written again; \(lost) record(s) were lost while writing failed")
                }
            } catch {
                let lost = writer.failing[index]
                writer.failing[index] = (lost ?? 0) + group.count
                statistics.withLock {
                    $0.lost += group.count
                    $0.lastError = error.reason
                }
                if lost == nil {
                    // Once per failure, not once per group: a full disk would flood the log.
                    logger?.error("could not write \(group.count) capture record(s) to \(sink.name): \(error.reason); the proxy keeps serving, and records are lost until writing works again")
                }
            }
        }
        statistics.withLock {
            $0.groups += 1
            $0.flows += flows
            $0.events += group.count - flows
            $0.largestGroup = max($0.largestGroup, group.count)
        }
    }

    /// Returns once everything queued before the call is written.
    func flush() {
        while pending.withLock({ !$0.records.isEmpty }) { writeGroup() }
        // A group the writer took before this call may still be in progress:
        // taking the writing lock waits for it.
        writing.withLock { _ in }
    }

    /// Writes what is queued, refuses later records and closes every sink.
    func close() {
        pending.withLock { $0.closed = true }
        flush()
        for sink in sinks { sink.close() }
    }

    var currentStatistics: CaptureStatistics { statistics.withLock { $0 } }
}

/// What the capture writer has done since the start.
public struct CaptureStatistics: Sendable, Equatable {
    /// Groups written (each a `write` per file).
    public var groups = 0
    /// Flows and events handed to the sinks.
    public var flows = 0
    public var events = 0
    /// The most records in one group.
    public var largestGroup = 0
    /// Records a sink failed to write, counted once per failing sink.
    public var lost = 0
    /// Records that arrived after the files were closed.
    public var lostAfterClose = 0
    /// The last write error, in words.
    public var lastError: String?

    public init(groups: Int = 0, flows: Int = 0, events: Int = 0, largestGroup: Int = 0, lost: Int = 0,
                lostAfterClose: Int = 0, lastError: String? = nil) {
        self.groups = groups
        self.flows = flows
        self.events = events
        self.largestGroup = largestGroup
        self.lost = lost
        self.lostAfterClose = lostAfterClose
        self.lastError = lastError
    }
}

extension DispatchTimeInterval {
    var seconds: Double {
        switch self {
        case .seconds(let s): return Double(s)
        case .milliseconds(let ms): return Double(ms) / 1e3
        case .microseconds(let us): return Double(us) / 1e6
        case .nanoseconds(let ns): return Double(ns) / 1e9
        case .never: return 0
        @unknown default: return 0
        }
    }
}
