import Foundation
import Synchronization

/// The most recent flows and TLS outcomes, and per-host summaries of which
/// clients accepted the forged chain and which refused it, for the control API.
///
/// Everything is bounded: old flows and events fall out of fixed-size rings,
/// and the least recently seen host is forgotten when there are too many.
public final class RecentCapture: Sendable {
    /// Per-host tally of TLS outcomes.
    public struct HostSummary: Hashable, Sendable, Codable {
        public var host: String
        public var lastSeen: Date
        /// Outcomes by kind (`intercepted`, `client-alert`, ...).
        public var counts: [String: Int]
        /// The same counts by attack profile first (`{"expired": {"intercepted": 1}}`), to
        /// answer which attack a client accepted; outcomes without a profile are not in it.
        public var countsByProfile: [String: [String: Int]] = [:]
        /// Client addresses (without port) that trusted the forged certificate,
        /// most recent last.
        public var acceptedBy: [String]
        /// Client addresses (without port) that refused it, with how (the
        /// latest refusal per address), most recent last. An address can be
        /// in both lists: several clients may share it.
        public var refusedBy: [Refusal]
        /// The plain-words message of the latest outcome.
        public var lastMessage: String

        public struct Refusal: Hashable, Sendable, Codable {
            public var client: String
            public var kind: TLSOutcomeEvent.Kind
            public var alert: String?
            public var time: Date
            /// The profile that served the refused connection.
            public var profile: String? = nil
        }
    }

    private struct State {
        var flows: Ring<Flow>
        var events: Ring<TLSOutcomeEvent>
        var hosts: [String: HostSummary] = [:]
    }

    public let maxHosts: Int
    /// Distinct clients remembered per host and list.
    public let maxClientsPerHost = 32
    private let state: Mutex<State>

    public init(flowCapacity: Int = 500, eventCapacity: Int = 1000, maxHosts: Int = 1000) {
        self.maxHosts = max(1, maxHosts)
        state = Mutex(State(flows: Ring(capacity: flowCapacity), events: Ring(capacity: eventCapacity)))
    }

    public func record(_ flow: Flow) {
        // The flow pushed out is released after the lock: freeing its strings
        // and arrays inside would hold every other connection's record back.
        let evicted = state.withLock { $0.flows.append(flow) }
        _ = evicted
    }

    public func record(_ event: TLSOutcomeEvent) {
        let client = RecentCapture.addressWithoutPort(event.clientAddress)
        let maxClients = maxClientsPerHost
        let maxHosts = maxHosts
        state.withLock { state in
            _ = state.events.append(event)
            var summary = state.hosts[event.host] ?? HostSummary(
                host: event.host, lastSeen: event.time, counts: [:], acceptedBy: [], refusedBy: [], lastMessage: "")
            summary.lastSeen = max(summary.lastSeen, event.time)
            summary.counts[event.kind.rawValue, default: 0] += 1
            if let profile = event.profile { summary.countsByProfile[profile, default: [:]][event.kind.rawValue, default: 0] += 1 }
            summary.lastMessage = event.message
            // One address often stands for several clients (every test on a
            // loopback machine is 127.0.0.1): an acceptance must not erase a
            // refusal from the same address, or the other way round.
            if event.kind == .intercepted {
                summary.acceptedBy.removeAll { $0 == client }
                summary.acceptedBy.append(client)
                if summary.acceptedBy.count > maxClients { summary.acceptedBy.removeFirst() }
            } else if event.kind.isClientRejection {
                summary.refusedBy.removeAll { $0.client == client }
                summary.refusedBy.append(HostSummary.Refusal(client: client, kind: event.kind, alert: event.alert, time: event.time, profile: event.profile))
                if summary.refusedBy.count > maxClients { summary.refusedBy.removeFirst() }
            }
            state.hosts[event.host] = summary
            if state.hosts.count > maxHosts,
               let oldest = state.hosts.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                state.hosts.removeValue(forKey: oldest)
            }
        }
    }

    /// Forgets every recent flow (`DELETE /flows`); files already written are untouched.
    public func clearFlows() { state.withLock { $0.flows.removeAll() } }

    /// Forgets every recent event and the per-host summaries (`DELETE /events`).
    public func clearEvents() {
        state.withLock {
            $0.events.removeAll()
            $0.hosts.removeAll()
        }
    }

    /// Recent flows, newest first.
    public var flows: [Flow] { state.withLock { $0.flows.elements.reversed() } }
    /// Recent events, newest first.
    public var events: [TLSOutcomeEvent] { state.withLock { $0.events.elements.reversed() } }
    /// Per-host summaries, sorted by host.
    public var hostSummaries: [HostSummary] {
        state.withLock { $0.hosts.values.sorted { $0.host < $1.host } }
    }

    /// `{"flows":[...]}`, newest first, at most `limit` flows.
    public func flowsJSON(limit: Int = .max) -> [UInt8] {
        var output = JSONOutput(capacity: 4096)
        output.beginObject()
        output.key("flows")
        output.beginArray()
        for flow in flows.prefix(limit) { output.flow(flow) }
        output.endArray()
        output.endObject()
        return output.bytes
    }

    /// `{"hosts":[summaries],"events":[recent, newest first]}`.
    public func eventsJSON(limit: Int = .max) -> [UInt8] {
        struct Body: Encodable {
            var hosts: [HostSummary]
            var events: [TLSOutcomeEvent]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(HARFormat.timestamp(date))
        }
        let body = Body(hosts: hostSummaries, events: Array(events.prefix(limit)))
        return (try? Array(encoder.encode(body))) ?? Array(#"{"hosts":[],"events":[]}"#.utf8)
    }

    /// `1.2.3.4:5678` → `1.2.3.4`, `[::1]:5678` → `::1`; anything else unchanged.
    static func addressWithoutPort(_ address: String) -> String {
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            return String(address[address.index(after: address.startIndex)..<close])
        }
        let colons = address.filter { $0 == ":" }.count
        if colons == 1, let colon = address.firstIndex(of: ":") { return String(address[..<colon]) }
        return address
    }
}

/// A fixed-capacity buffer that drops the oldest element when full.
struct Ring<Element> {
    let capacity: Int
    private var storage: [Element] = []
    private var head = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Appends `element`; returns the oldest one when it had to make room.
    @discardableResult
    mutating func append(_ element: Element) -> Element? {
        if storage.count < capacity {
            storage.append(element)
            return nil
        }
        let evicted = storage[head]
        storage[head] = element
        head = (head + 1) % capacity
        return evicted
    }

    /// Oldest first.
    var elements: [Element] { Array(storage[head...] + storage[..<head]) }
    var count: Int { storage.count }

    mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        head = 0
    }
}

extension Ring: Sendable where Element: Sendable {}
